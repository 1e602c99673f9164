//! `POST /v1/appcheck/debug`: the built-in debug App Check provider. A form with `client_id` and
//! `debug_secret` (registered with `latchkey admin client app-check debug-secret`) yields a one-hour App Check
//! token for that client: `{"token": ..., "expires_in": 3600}`. Errors are RFC 6749-style JSON.

use crate::app_check::{debug_issuer, DEBUG_TOKEN_LIFETIME};
use crate::error::{no_store_json, TokenError};
use crate::extract;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use latchkey_admin::clock::OsRandom;
use latchkey_core::client::ClientType;
use latchkey_core::secret;
use latchkey_core::{ErrorCode, OAuthError};
use serde_json::json;

/// Exchanges a debug secret for an App Check token.
pub async fn debug_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    match handle(&state, &headers, &body).await {
        Ok(v) => no_store_json(&v),
        Err(e) => e.into_response(),
    }
}

async fn handle(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Result<serde_json::Value, TokenError> {
    let pairs = extract::form(headers, body)?;
    let get = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let (Some(client_id), Some(debug_secret)) = (get("client_id"), get("debug_secret")) else {
        return Err(OAuthError::new(ErrorCode::InvalidRequest, "Send client_id and debug_secret.").into());
    };
    let refused = || TokenError::from(OAuthError::new(ErrorCode::InvalidClient, "Unknown client or debug secret."));
    let client = state.store.client(client_id).await?.filter(|c| c.deleted_at.is_none());
    let Some(client) = client.filter(|c| c.client_type == ClientType::Mobile) else { return Err(refused()) };
    let stored = state.store.app_check_debug_secret(&client.client_id).await?;
    if !stored.is_some_and(|h| secret::matches_hash(debug_secret, &h)) {
        return Err(refused());
    }
    let now = state.clock.now();
    let claims = json!({
        "iss": debug_issuer(&state.urls),
        "sub": client.client_id,
        "aud": client.client_id,
        "iat": now.0,
        "exp": now.0 + DEBUG_TOKEN_LIFETIME,
    });
    let token = state.keys.get().id_token_signer().sign("JWT", &claims, &OsRandom).map_err(|e| {
        tracing::error!(error = %e, "signing an App Check token");
        TokenError::from(OAuthError::new(ErrorCode::ServerError, "Could not sign the App Check token."))
    })?;
    Ok(json!({ "token": token, "expires_in": DEBUG_TOKEN_LIFETIME }))
}
