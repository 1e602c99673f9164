//! Refresh-token rotation with reuse detection (RFC 9700 §4.14.2), for the grants whose token rotates
//! ([`GrantState::rotates`]): each refresh returns a new refresh token and retires the one presented; a retired
//! token presented again revokes the grant, unless it comes within the grace period and its successor is still
//! the grant's token (the response that carried it was lost), when it gets that same successor again.
//!
//! The new token is [`refresh_token::successor`] of the old one under the signing MAC key, so the grace period
//! needs no stored copy of it: only hashes are stored. The store retires the old token only while it is still the
//! grant's ([`Ports::rotate_refresh`]), so of concurrent refreshes with one token exactly one rotates it; the
//! others find it retired, and get the grace period's answer or revoke the grant.

use super::{grant_is_the_clients, grant_known, unknown};
use crate::client::Client;
use crate::flow::Ports;
use crate::refresh_token;
use crate::secret::{self, Secret};
use crate::time::UnixTime;
use crate::token::GrantState;
use crate::{ErrorCode, OAuthError};

/// A refresh token as a refresh request presented it.
#[derive(Debug, Clone, Copy)]
pub struct Presented<'a> {
    /// The token.
    pub token: &'a str,
    /// Its hash.
    pub hash: &'a [u8],
    /// The authenticated client that presented it.
    pub client: &'a Client,
    /// When.
    pub now: UnixTime,
}

/// The answer to a refresh token that is not its grant's current one: the grace period's successor, or
/// `invalid_grant` (the grant revoked when the token was one a rotation retired).
pub async fn retired<P: Ports>(ports: &P, found: &GrantState, presented: Presented<'_>) -> Result<Secret, P::Error> {
    let Presented { token, hash, client, now } = presented;
    let Some(retired_at) = ports.retired_refresh(hash).await? else {
        return Err(unknown().into());
    };
    grant_is_the_clients(found, client)?;
    if now.0 - retired_at.0 < ports.settings().refresh_rotation_grace && found.is_usable(now) {
        if let Some(next) = current_successor(ports, found, token) {
            return Ok(next);
        }
    }
    ports.revoke_reused(&found.grant.id, now).await?;
    Err(OAuthError::invalid_grant(
        "This refresh token was replaced by a newer one and used again: every token of the grant is revoked. \
         Sign in again.",
    )
    .into())
}

/// Rotates the grant's refresh token, the one presented: its successor, now the grant's token. A refresh
/// that lost the race to another with the same token is answered as a retired token is ([`retired`]).
pub async fn rotate<P: Ports>(ports: &P, found: &GrantState, presented: Presented<'_>) -> Result<Secret, P::Error> {
    let Presented { token, hash, now, .. } = presented;
    let id = &found.grant.id;
    let next = ports.with_mac_keys(|keys| keys.first().map(|k| refresh_token::successor(id, token, k)));
    let next = next.ok_or_else(|| OAuthError::new(ErrorCode::ServerError, "No key to sign refresh tokens."))?;
    if ports.rotate_refresh(id, hash, &secret::hash(next.expose()), now).await? {
        return Ok(next);
    }
    let again = grant_known(ports.grant(id).await?)?;
    retired(ports, &again, presented).await
}

/// The successor of `token` under one of the MAC keys, when it is the grant's token now.
fn current_successor<P: Ports>(ports: &P, found: &GrantState, token: &str) -> Option<Secret> {
    let id = &found.grant.id;
    ports.with_mac_keys(|keys| {
        keys.iter()
            .map(|k| refresh_token::successor(id, token, k))
            .find(|next| secret::ct_eq(&secret::hash(next.expose()), &found.grant.refresh_hash))
    })
}
