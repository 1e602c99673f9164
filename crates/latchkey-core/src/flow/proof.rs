//! DPoP at the token endpoint (RFC 9449 §5, §8): reading the proof, the nonce rules, and recording single use.
//!
//! The order matters and is kept in one place: the stateless proof checks run first (`invalid_dpop_proof`);
//! nonce problems answer `use_dpop_nonce` and change no state; only then are the proof's `jti` and the nonce
//! recorded as used, together, so that a replay of either fails on every instance.

use super::{Ports, Settings};
use crate::dpop::{self, NonceError, Proof};
use crate::time::UnixTime;
use crate::{ErrorCode, OAuthError};

/// Whether a nonce is needed for this proof, per the grant type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceRule {
    /// A valid, unused server nonce must be present.
    Required,
    /// A nonce is not needed; one that is present must still be valid.
    IfPresent,
}

/// Reads and checks the request's DPoP proof (the `DPoP` header values), if it has one: more than one header,
/// or one that is not visible ASCII, is refused, then [`dpop::verify`] runs the stateless checks.
pub fn read(values: &[&[u8]], settings: &Settings<'_>, now: UnixTime) -> Result<Option<Proof>, OAuthError> {
    let value = match values {
        [] => return Ok(None),
        [value] => *value,
        _ => return Err(invalid_dpop_proof("Send exactly one DPoP header.")),
    };
    // A header value is text when every byte is visible ASCII or a tab (as `http::HeaderValue::to_str` says).
    let text = value
        .iter()
        .all(|&b| b == b'\t' || (32..127).contains(&b))
        .then(|| std::str::from_utf8(value).ok())
        .flatten()
        .ok_or_else(|| invalid_dpop_proof("The DPoP header is not text."))?;
    Ok(Some(dpop::verify(text, "POST", settings.token_endpoint, now, settings.dpop_window)?))
}

/// The nonce a proof carries, checked against `rule`: its expiry (how long its use must be remembered) when
/// there is one.
pub fn nonce_checked<P: Ports>(
    ports: &P,
    proof: &Proof,
    rule: NonceRule,
    now: UnixTime,
) -> Result<Option<UnixTime>, OAuthError> {
    let Some(nonce) = &proof.nonce else {
        return match rule {
            NonceRule::Required => Err(use_dpop_nonce("A DPoP nonce is required: use the DPoP-Nonce header.")),
            NonceRule::IfPresent => Ok(None),
        };
    };
    match ports.with_mac_keys(|keys| dpop::check_nonce(keys, nonce, now)) {
        Ok(expiry) => Ok(Some(expiry)),
        Err(NonceError::Expired) => Err(use_dpop_nonce("The DPoP nonce expired: use the new DPoP-Nonce.")),
        Err(NonceError::Invalid) => Err(use_dpop_nonce("The DPoP nonce is not valid: use the new DPoP-Nonce.")),
    }
}

/// Checks the nonce rule and records the proof's `jti` (and the nonce) as used: a replay of either is refused.
pub async fn use_once<P: Ports>(ports: &P, proof: &Proof, rule: NonceRule, now: UnixTime) -> Result<(), P::Error> {
    let nonce_expiry = nonce_checked(ports, proof, rule, now)?;
    let jti_expiry = dpop::jti_expiry(now, ports.settings().dpop_window);
    let mut values = vec![(dpop::replay_key(proof), jti_expiry)];
    if let (Some(n), Some(expiry)) = (&proof.nonce, nonce_expiry) {
        values.push((dpop::nonce_replay_key(n, expiry), expiry));
    }
    match ports.record_once(&values, now).await? {
        None => Ok(()),
        Some(0) => Err(invalid_dpop_proof("The DPoP proof's jti was used before.").into()),
        Some(_) => Err(use_dpop_nonce("The DPoP nonce was used before: use the new DPoP-Nonce.").into()),
    }
}

/// `invalid_dpop_proof`.
pub fn invalid_dpop_proof(text: &'static str) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidDpopProof, text)
}

/// `use_dpop_nonce`.
fn use_dpop_nonce(text: &'static str) -> OAuthError {
    OAuthError::new(ErrorCode::UseDpopNonce, text)
}
