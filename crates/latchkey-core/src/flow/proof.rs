//! DPoP at the token endpoint (RFC 9449 §5, §8): reading the proof, the nonce rules, and recording single use.
//!
//! The order matters and is kept in one place: the stateless proof checks run first (`invalid_dpop_proof`);
//! nonce problems answer `use_dpop_nonce` and change no state; only then are the proof's `jti` and the nonce
//! recorded as used, so that a replay of either fails on every instance.
//!
//! **Single use across a loss of the records.** The records are kept off the durable path (in memory on SQLite,
//! in an unlogged table on PostgreSQL), so a restart of the process or the database, or a failover, loses them.
//! The store says from when its records are complete (`complete_since`, the moment it noticed the loss, after
//! it). A proof used before the loss was accepted at some second `u` no later than that moment, so its `iat` is
//! at most `u` plus the window's future allowance; and a nonce used before it was issued before it. So after the
//! records' moment:
//! - a nonce issued at or before that moment is refused (`use_dpop_nonce`, with a new one);
//! - a proof whose `iat` is at or before that moment plus the future allowance must carry a nonce issued after
//!   it (`use_dpop_nonce` otherwise): such a nonce did not exist before the loss, so the proof is not one used
//!   then. Clients answer `use_dpop_nonce` by sending a new proof with the nonce (RFC 9449 §8), so honest
//!   clients see one extra round trip, only within seconds of the loss.
//!
//! Every proof and nonce used before the loss is therefore refused after it, whatever its `iat`. The rule is
//! [`dpop::Admission`]; the store applies it to the moment it reads, in the same step as the recording, so that
//! a proof refused by it uses up neither its `jti` nor its nonce (a client sends the same code-hash `jti` again
//! with the nonce).

use super::{Ports, Settings};
use crate::dpop::{self, Nonce, NonceError, Proof, Unadmitted};
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

/// The nonce a proof carries, checked against `rule`: when it was issued and its expiry (how long its use must
/// be remembered) when there is one.
pub fn nonce_checked<P: Ports>(
    ports: &P,
    proof: &Proof,
    rule: NonceRule,
    now: UnixTime,
) -> Result<Option<Nonce>, OAuthError> {
    let Some(nonce) = &proof.nonce else {
        return match rule {
            NonceRule::Required => Err(use_dpop_nonce("A DPoP nonce is required: use the DPoP-Nonce header.")),
            NonceRule::IfPresent => Ok(None),
        };
    };
    match ports.with_mac_keys(|keys| dpop::check_nonce(keys, nonce, now)) {
        Ok(checked) => Ok(Some(checked)),
        Err(NonceError::Expired) => Err(use_dpop_nonce("The DPoP nonce expired: use the new DPoP-Nonce.")),
        Err(NonceError::Invalid) => Err(use_dpop_nonce("The DPoP nonce is not valid: use the new DPoP-Nonce.")),
    }
}

/// Checks the nonce rule and records the proof's `jti` (and the nonce) as used: a replay of either is refused,
/// also after the records were lost (see the module's doc).
pub async fn use_once<P: Ports>(ports: &P, proof: &Proof, rule: NonceRule, now: UnixTime) -> Result<(), P::Error> {
    let nonce = nonce_checked(ports, proof, rule, now)?;
    let window = ports.settings().dpop_window;
    let mut values = vec![(dpop::replay_key(proof), dpop::jti_expiry(now, window))];
    if let (Some(n), Some(checked)) = (&proof.nonce, nonce) {
        values.push((dpop::nonce_replay_key(n, checked.expires_at), checked.expires_at));
    }
    let admission =
        dpop::Admission { iat: proof.iat, nonce_issued_at: nonce.map(|n| n.issued_at), max_future: window.max_future };
    let recorded = ports.record_proof(&values, &admission, now).await?;
    match admission.check(recorded.complete_since) {
        Ok(()) => {}
        Err(Unadmitted::OldNonce) => {
            return Err(
                use_dpop_nonce("The DPoP nonce is older than the server's records: use the new DPoP-Nonce.").into()
            )
        }
        Err(Unadmitted::NonceNeeded) => {
            return Err(use_dpop_nonce("A DPoP nonce is required: use the DPoP-Nonce header.").into())
        }
    }
    match recorded.replayed {
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
