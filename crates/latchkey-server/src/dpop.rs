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

/// A fresh nonce for the response's `DPoP-Nonce` header. It is issued after the moment the store's proof records
/// are complete from, as far as this instance knows it: when that moment is this second, the nonce says the next
/// (a nonce must be issued after it to be accepted, and a client sends this one at once).
pub fn fresh_nonce(state: &AppState, now: UnixTime) -> Option<HeaderValue> {
    let keys = state.keys.get();
    let expires_at = now.plus(state.config.dpop_nonce_lifetime);
    let issued_at = match state.store.proofs_complete_since() {
        Some(since) if now <= since => since.plus(1),
        _ => now,
    };
    let nonce = dpop::issue_nonce(keys.mac_signer(), issued_at, expires_at, &OsRandom);
    crate::metrics::DPOP_NONCES.inc();
    HeaderValue::from_str(&nonce).ok()
}
