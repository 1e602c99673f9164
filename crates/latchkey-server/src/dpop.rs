//! DPoP at the token endpoint (RFC 9449 §5, §8): reading the proof, the nonce rules, and recording single use.
//!
//! The order matters and is kept in one place: the stateless proof checks run first (`invalid_dpop_proof`);
//! nonce problems answer `use_dpop_nonce` and change no state; only then are the proof's `jti` and the nonce
//! recorded as used, together, so that a replay of either fails on every instance.

use crate::error::TokenError;
use crate::routes::TOKEN_PATH;
use crate::state::AppState;
use axum::http::{HeaderMap, HeaderValue};
use latchkey_core::dpop::{self, NonceError, Proof, Window};
use latchkey_core::time::UnixTime;
use latchkey_core::{ErrorCode, OAuthError};

/// The DPoP header.
pub const DPOP: &str = "dpop";
/// The response header carrying a fresh nonce.
pub const DPOP_NONCE: &str = "dpop-nonce";

/// Reads and checks the request's DPoP proof, if it has one; more than one header is refused.
pub fn proof(state: &AppState, headers: &HeaderMap, now: UnixTime) -> Result<Option<Proof>, TokenError> {
    let mut values = headers.get_all(DPOP).iter();
    let Some(value) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(invalid("Send exactly one DPoP header.").into());
    }
    let text = value.to_str().map_err(|_| invalid("The DPoP header is not text."))?;
    let window = Window { max_age: state.config.dpop_max_age, max_future: state.config.dpop_max_future };
    let endpoint = format!("{}{TOKEN_PATH}", state.urls.token);
    Ok(Some(dpop::verify(text, "POST", &endpoint, now, window)?))
}

/// Whether a nonce is needed for this proof, per the grant type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceRule {
    /// A valid, unused server nonce must be present.
    Required,
    /// A nonce is not needed; one that is present must still be valid.
    IfPresent,
}

/// Checks the nonce rule and records the proof's `jti` (and the nonce) as used.
pub async fn use_proof(state: &AppState, proof: &Proof, rule: NonceRule, now: UnixTime) -> Result<(), TokenError> {
    let keys = state.keys.get();
    let nonce_expiry = match (&proof.nonce, rule) {
        (None, NonceRule::Required) => return Err(use_nonce("A DPoP nonce is required: use the DPoP-Nonce header.")),
        (None, NonceRule::IfPresent) => None,
        (Some(n), _) => match dpop::check_nonce(&keys.mac, n, now) {
            Ok(expiry) => Some(expiry),
            Err(NonceError::Expired) => return Err(use_nonce("The DPoP nonce expired: use the new DPoP-Nonce.")),
            Err(NonceError::Invalid) => return Err(use_nonce("The DPoP nonce is not valid: use the new DPoP-Nonce.")),
        },
    };
    let window = Window { max_age: state.config.dpop_max_age, max_future: state.config.dpop_max_future };
    let jti_expiry = dpop::jti_expiry(proof, window);
    let mut values = vec![(dpop::replay_key(proof, jti_expiry), jti_expiry)];
    if let (Some(n), Some(expiry)) = (&proof.nonce, nonce_expiry) {
        values.push((dpop::nonce_replay_key(n, expiry), expiry));
    }
    match state.store.record_once(&values, now).await? {
        None => Ok(()),
        Some(0) => Err(invalid("The DPoP proof's jti was used before.").into()),
        Some(_) => Err(use_nonce("The DPoP nonce was used before: use the new DPoP-Nonce.")),
    }
}

/// A fresh nonce for the response's `DPoP-Nonce` header.
pub fn fresh_nonce(state: &AppState, now: UnixTime) -> Option<HeaderValue> {
    let keys = state.keys.get();
    let nonce = dpop::issue_nonce(keys.mac_signer(), now.plus(state.config.dpop_nonce_lifetime));
    HeaderValue::from_str(&nonce).ok()
}

/// `invalid_dpop_proof`.
pub fn invalid(text: &'static str) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidDpopProof, text)
}

fn use_nonce(text: &'static str) -> TokenError {
    OAuthError::new(ErrorCode::UseDpopNonce, text).into()
}
