//! `POST /revoke` (RFC 7009): revoking an access or a refresh token revokes its whole grant.

use super::token::{authenticate, grant_of_refresh};
use crate::error::TokenError;
use crate::extract;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use latchkey_core::access_token::{self, AccessTokenError, GrantId};
use latchkey_core::time::UnixTime;
use latchkey_core::token::{self, Form};
use latchkey_core::OAuthError;

/// Handles a revocation request: 200 when the token is revoked or unknown (RFC 7009 §2.2), 400 when the
/// request is malformed.
pub async fn revoke_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    match handle(&state, &headers, &body).await {
        Ok(()) => {
            let mut r = StatusCode::OK.into_response();
            r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            r
        }
        Err(mut e) => {
            e.basic_auth = headers.contains_key(header::AUTHORIZATION);
            e.into_response()
        }
    }
}

async fn handle(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Result<(), TokenError> {
    let pairs = extract::form(headers, body)?;
    let form = Form::new(extract::borrowed(&pairs))?;
    let token = form.require("token")?;
    let authorization = extract::single_header(headers, &header::AUTHORIZATION)?;
    // Client authentication is optional here (public clients may send just the token); when present it must
    // be right, and the token must be the client's.
    let client = if authorization.is_some() || form.get("client_id").is_some() {
        Some(authenticate(state, &token::client_auth(&form, authorization)?).await?)
    } else {
        None
    };
    let now = state.clock.now();
    let Some((grant_id, owner)) = grant_of(state, token).await? else {
        return Ok(());
    };
    if let Some(client) = client {
        // A refresh token's lookup already named the grant's client; an access token's grant is read for it.
        let owner = match owner {
            Some(owner) => Some(owner),
            None => state.store.grant(&grant_id).await?.map(|g| g.grant.client_id),
        };
        if owner.is_some_and(|owner| owner != client.client_id) {
            return Err(OAuthError::invalid_request("The token was not issued to this client.").into());
        }
    }
    if state.store.revoke_grant(&grant_id, now).await? {
        tracing::info!(grant = %grant_id.encode(), "grant revoked");
    }
    Ok(())
}

/// The grant a token belongs to, if it is one of ours, with its client when the lookup read it. An expired access
/// token still names its grant.
async fn grant_of(state: &AppState, token: &str) -> Result<Option<(GrantId, Option<String>)>, TokenError> {
    if token.starts_with(access_token::PREFIX) {
        // Verify as of the start of time, so that expiry does not hide the grant. A key this instance does not
        // hold yet (rotated in through another instance) is looked up, as the data API does.
        let mut result = access_token::verify(&state.keys.get().mac, token, UnixTime(i64::MIN));
        if result == Err(AccessTokenError::UnknownKey)
            && state.keys.reload_on_demand(&*state.store, state.clock.now()).await?
        {
            result = access_token::verify(&state.keys.get().mac, token, UnixTime(i64::MIN));
        }
        return Ok(match result {
            Ok(c) => Some((c.grant_id, None)),
            Err(AccessTokenError::Expired | AccessTokenError::Invalid | AccessTokenError::UnknownKey) => None,
        });
    }
    Ok(grant_of_refresh(state, token).await?.map(|g| (g.grant.id, Some(g.grant.client_id))))
}
