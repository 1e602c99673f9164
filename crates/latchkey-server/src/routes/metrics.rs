//! `GET /metrics`: the process's metrics in the Prometheus text format ([`crate::metrics`]), for a scraper that
//! sends one of the `[metrics]` tokens as a bearer token. Off (404) while no token is configured. On the main
//! HTTPS listener rather than a listener of its own: every endpoint stays behind TLS, there is one certificate and
//! one port to open, and each instance behind a load balancer is scraped at its own address as before
//! (`docs/operations.md#metrics-and-alerts`).

use crate::error::refusal::Surface;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use latchkey_store::DeliveryState;
use ring::digest::{digest, SHA256};
use subtle::ConstantTimeEq;

/// Serves the metrics to a scraper with a configured token.
pub async fn metrics_get(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let config = &state.config.metrics;
    if !config.enabled() {
        return Surface::ConsoleApi
            .refuse(StatusCode::NOT_FOUND, "Metrics are off: set [metrics] token or token_file to serve them.");
    }
    let tokens = match config.tokens() {
        Ok(tokens) => tokens,
        Err(e) => {
            tracing::warn!(error = %e, "reading [metrics] token_file");
            return Surface::ConsoleApi.refuse(StatusCode::SERVICE_UNAVAILABLE, "The metrics tokens cannot be read.");
        }
    };
    if tokens.is_empty() {
        tracing::warn!("[metrics] token_file holds no token of at least 16 characters: every scrape is refused");
    }
    // The scheme's name is case-insensitive (RFC 9110 §11.1).
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| digest(&SHA256, t.trim().as_bytes()));
    // Compared as hashes, in constant time, against every token (no early exit on a match).
    let allowed = presented.is_some_and(|p| {
        tokens.iter().fold(false, |ok, t| ok | bool::from(digest(&SHA256, t.as_bytes()).as_ref().ct_eq(p.as_ref())))
    });
    if !allowed {
        let mut refused = Surface::ConsoleApi
            .refuse(StatusCode::UNAUTHORIZED, "Send one of the [metrics] tokens: Authorization: Bearer <token>.");
        refused
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"latchkey-metrics\""));
        return refused;
    }
    // The outbox's depth is read now, once a scrape: no request pays for it.
    match state.store.delivery_counts().await {
        Ok(counts) => {
            let pending = counts.iter().find(|(s, _)| *s == DeliveryState::Pending).map_or(0, |(_, n)| *n);
            crate::metrics::OUTBOX_DEPTH.set(pending);
        }
        Err(e) => tracing::warn!(error = %e, "counting the security events due"),
    }
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        crate::metrics::render(),
    )
        .into_response()
}
