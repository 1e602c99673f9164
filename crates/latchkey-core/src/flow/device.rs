//! `grant_type=urn:ietf:params:oauth:grant-type:device_code` (RFC 8628 §3.4, §3.5): a device's poll, in order. The
//! client's type first (only TVs and Limited Input devices may use the grant), then the DPoP proof (a nonce asked
//! for is no poll: nothing is noted), then the poll itself, noted by the store, then what it found: expiry, the
//! person's decision, the pace. An approved device code issues what a code exchange issues, from the authorization
//! code stored under the device code's hash, once: a poll that loses the race, or comes after, gets `invalid_grant`
//! and revokes nothing.

use super::exchange::{issue, user_enabled};
use super::proof::{self, NonceRule};
use super::{Checked, Ports};
use crate::client::ClientType;
use crate::device::{self, Answer};
use crate::secret::Secret;
use crate::{ErrorCode, OAuthError};
use latchkey_proto::TokenResponse;

/// Runs a device's poll.
pub async fn run<P: Ports>(ports: &P, device_code: &Secret, checked: Checked<'_>) -> Result<TokenResponse, P::Error> {
    let Checked { client, proof, now, .. } = checked;
    if client.client_type != ClientType::Tv {
        let why = "Only clients of the type TVs and Limited Input devices may use the device authorization grant.";
        return Err(OAuthError::new(ErrorCode::UnauthorizedClient, why).into());
    }
    if let Some(proof) = proof {
        proof::use_once(ports, proof, NonceRule::IfPresent, now).await?;
    }
    let hash = device_code.hash();
    // Another client's device code is as unknown as one never issued, and its poll notes nothing.
    let Some(poll) = ports.poll_device(&hash, &client.client_id, now).await? else { return Err(unknown().into()) };
    let refused = |code, text: &'static str| Err(OAuthError::new(code, text).into());
    match device::answer(&poll, now) {
        Answer::Pending => refused(ErrorCode::AuthorizationPending, "The person has not decided yet."),
        Answer::SlowDown => refused(ErrorCode::SlowDown, "Polling too often: the interval grew by 5 seconds."),
        Answer::Denied => refused(ErrorCode::AccessDenied, "The person declined the request."),
        Answer::Expired => refused(ErrorCode::ExpiredToken, "The device code expired. Start again."),
        Answer::Issue => {
            let record = match ports.code(&hash).await? {
                Some(r) if !r.used => r,
                _ => return Err(used().into()),
            };
            let user = user_enabled(ports.user(&record.user_id).await?)?;
            match issue(ports, &record, Some(&user), checked).await? {
                Some(response) => Ok(response),
                None => Err(used().into()),
            }
        }
    }
}

fn unknown() -> OAuthError {
    OAuthError::invalid_grant("The device code is invalid or has expired.")
}

fn used() -> OAuthError {
    OAuthError::invalid_grant("The device code was already used.")
}
