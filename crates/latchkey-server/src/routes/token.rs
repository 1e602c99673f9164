//! `POST /token`: the code exchange (RFC 6749 §4.1.3, RFC 7636 §4.6), refresh (§6) and a service account's JWT
//! bearer grant (RFC 7523). The rules are the core's
//! (`latchkey_core::flow::token`); this handler reads the request, calls them with the store, and writes the answer.

use super::ports::StorePorts;
use crate::dpop;
use crate::error::{no_store_json, TokenError};
use crate::extract;
use crate::metrics;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use latchkey_core::client::LAST_USED_GRANULARITY;
use latchkey_core::flow::{self, Issued, TokenCall};
use latchkey_core::time::UnixTime;
use latchkey_core::token::Form;
use latchkey_proto::TokenResponse;
use std::time::Instant;

/// Handles a token request. Every answer to a request with a DPoP header carries a fresh `DPoP-Nonce`.
pub async fn token_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let started = Instant::now();
    let now = state.clock.now();
    let mut grant = metrics::grant_index(None);
    let mut response = answer(&state, &headers, &body, now, &mut grant).await;
    if headers.contains_key(dpop::DPOP) {
        if let Some(nonce) = dpop::fresh_nonce(&state, now) {
            response.headers_mut().insert(dpop::DPOP_NONCE, nonce);
        }
    }
    metrics::token_request(grant, started.elapsed().as_secs_f64());
    response
}

/// Reads the form once, runs the request and writes its answer; notes its grant type in `grant` once the form is
/// read (for its latency's metric). A refusal's log line names the client the form named.
async fn answer(state: &AppState, headers: &HeaderMap, body: &[u8], now: UnixTime, grant: &mut usize) -> Response {
    let pairs = match read_pairs(headers, body) {
        Ok(p) => p,
        Err(e) => return refused(e, headers, None),
    };
    let form = match Form::new(extract::borrowed(&pairs)) {
        Ok(f) => f,
        Err(e) => return refused(e.into(), headers, None),
    };
    *grant = metrics::grant_index(form.get("grant_type"));
    let authorization = extract::single_header(headers, &header::AUTHORIZATION);
    let dpop: Vec<&[u8]> = headers.get_all(dpop::DPOP).iter().map(HeaderValue::as_bytes).collect();
    let call = TokenCall { form: &form, authorization: authorization.as_ref().copied(), dpop: &dpop, now };
    match flow::token(&StorePorts::new(state, headers), call).await {
        Ok(Issued { client, response }) => {
            // Unused clients are deleted after `client_unused_days`: record the use, at most one write an hour.
            // The client row was just read, so a fresh `last_used_at` costs no statement at all.
            let stale = client.filter(|c| c.last_used_at.is_none_or(|t| now.0 - t.0 >= LAST_USED_GRANULARITY));
            if let Some(client) = stale {
                if let Err(e) = state.store.touch_client(&client.client_id, now).await {
                    tracing::warn!(error = %e, client_id = %client.client_id, "recording the client's last use");
                }
            }
            token_response(&response)
        }
        Err(e) => refused(e, headers, Some(&form)),
    }
}

/// A token or revocation request's form pairs, or the refusal of a body that is not a form (or not one any
/// such request could be).
pub(super) fn read_pairs(headers: &HeaderMap, body: &[u8]) -> Result<extract::Pairs, TokenError> {
    if !extract::is_form(headers) {
        return Err(crate::error::refusal::not_a_form());
    }
    Ok(extract::token_form(body)?)
}

/// The answer to a refused token or revocation request, naming the client its form named (for the log line).
pub(super) fn refused(mut e: TokenError, headers: &HeaderMap, form: Option<&Form<'_>>) -> Response {
    e.basic_auth = headers.contains_key(header::AUTHORIZATION);
    e.client_id = form.and_then(|form| client_named(headers, form));
    e.into_response()
}

/// The client a token or revocation request names (the form's `client_id` or HTTP Basic), read only once the
/// request is refused (for its log line).
fn client_named(headers: &HeaderMap, form: &Form<'_>) -> Option<String> {
    let authorization = extract::single_header(headers, &header::AUTHORIZATION).ok()?;
    Some(latchkey_core::token::client_auth(form, authorization).ok()?.client_id)
}

fn token_response(body: &TokenResponse) -> Response {
    let mut response = no_store_json(body);
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}
