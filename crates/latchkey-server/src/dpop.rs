//! DPoP's HTTP side at the token endpoint (RFC 9449 §8): the header names and the fresh nonce every answer to a
//! request with a proof carries. The proof's rules are the core's (`latchkey_core::flow::proof`).

use crate::state::AppState;
use axum::http::HeaderValue;
use latchkey_admin::clock::OsRandom;
use latchkey_core::dpop;
use latchkey_core::time::UnixTime;

/// The DPoP header.
pub const DPOP: &str = "dpop";
/// The response header carrying a fresh nonce.
pub const DPOP_NONCE: &str = "dpop-nonce";

/// A fresh nonce for the response's `DPoP-Nonce` header.
pub fn fresh_nonce(state: &AppState, now: UnixTime) -> Option<HeaderValue> {
    let keys = state.keys.get();
    let expires_at = now.plus(state.config.dpop_nonce_lifetime);
    let nonce = dpop::issue_nonce(keys.mac_signer(), now, expires_at, &OsRandom);
    crate::metrics::DPOP_NONCES.inc();
    HeaderValue::from_str(&nonce).ok()
}
