//! `POST /revoke` (RFC 7009): revoking an access or a refresh token revokes its whole grant. The rules are the
//! core's (`latchkey_core::flow::revoke`).

use super::ports::StorePorts;
use super::token::{read_pairs, refused};
use crate::extract;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use latchkey_core::flow::revoke::{revoke, RevokeCall};
use latchkey_core::token::Form;

/// Handles a revocation request: 200 when the token is revoked or unknown (RFC 7009 §2.2), 400 when the
/// request is malformed.
pub async fn revoke_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let pairs = match read_pairs(&headers, &body) {
        Ok(p) => p,
        Err(e) => return refused(e, &headers, None),
    };
    let form = match Form::new(extract::borrowed(&pairs)) {
        Ok(f) => f,
        Err(e) => return refused(e.into(), &headers, None),
    };
    let authorization = extract::single_header(&headers, &header::AUTHORIZATION);
    let call = RevokeCall { form: &form, authorization: authorization.as_ref().copied(), now: state.clock.now() };
    match revoke(&StorePorts::new(&state, &headers), call).await {
        Ok(()) => {
            let mut r = StatusCode::OK.into_response();
            r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            r
        }
        Err(e) => refused(e, &headers, Some(&form)),
    }
}
