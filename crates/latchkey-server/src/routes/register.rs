//! Dynamic client registration (RFC 7591) at `POST /register`, and the registration's own endpoint (RFC 7592) at
//! `/register/{client_id}`: read, replace and delete with the registration access token. Open only while a project
//! collects self-registered apps (else 403 `access_denied`), rate-limited per address by the hour. Every answer is
//! JSON with `Cache-Control: no-store`; every refusal is RFC 7591 §3.2.2's `{"error", "error_description"}`.

use crate::error::{no_store_json, registration_refusal, TokenError};
use crate::extract::{self, ClientAddr};
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use latchkey_admin::registrations::{self, Registered};
use latchkey_core::registration::{self, ClientMetadata};
use latchkey_core::{ErrorCode, OAuthError};
use serde::Serialize;

/// A registration's answer (RFC 7591 §3.2.1, RFC 7592 §3).
#[derive(Serialize)]
struct Answer<'a> {
    client_id: &'a str,
    client_id_issued_at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    registration_access_token: Option<&'a str>,
    registration_client_uri: String,
    #[serde(flatten)]
    metadata: ClientMetadata,
}

fn answer(state: &AppState, status: StatusCode, registered: &Registered) -> Response {
    let client = &registered.client;
    let body = Answer {
        client_id: &client.client_id,
        client_id_issued_at: client.created_at.0,
        registration_access_token: registered.token.as_ref().map(|t| t.expose()),
        registration_client_uri: format!("{}{}/{}", state.urls.token, crate::paths::REGISTER_PATH, client.client_id),
        metadata: registrations::metadata_of(client),
    };
    let mut response = (status, no_store_json(&body)).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The metadata of a request's JSON body, checked.
fn metadata(headers: &HeaderMap, body: &[u8]) -> Result<ClientMetadata, TokenError> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    if !json {
        let e = OAuthError::new(ErrorCode::InvalidClientMetadata, "The body is JSON (Content-Type: application/json).");
        return Err(TokenError { status: Some(StatusCode::UNSUPPORTED_MEDIA_TYPE), ..e.into() });
    }
    Ok(registration::parse(body)?)
}

/// The registration access token of a request (`Authorization: Bearer`).
fn bearer(headers: &HeaderMap) -> Result<&str, TokenError> {
    let value = extract::single_header(headers, &header::AUTHORIZATION)?;
    let token = value
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .filter(|t| !t.is_empty());
    token.ok_or_else(|| registration_refusal(registrations::not_authorized()))
}

/// `POST /register`: an app registers itself.
pub async fn register_post(
    State(state): State<AppState>,
    addr: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let registered = async {
        if let Some(Extension(ClientAddr(peer))) = addr {
            state.rate_limits.admit_registration(peer.ip()).map_err(TokenError::too_many)?;
        }
        let metadata = metadata(&headers, &body)?;
        let registered = registrations::register(&*state.store, metadata, state.clock.now()).await;
        registered.map_err(registration_refusal)
    };
    match registered.await {
        Ok(r) => {
            tracing::info!(client = %r.client.client_id, "an app registered itself");
            answer(&state, StatusCode::CREATED, &r)
        }
        Err(e) => e.into_response(),
    }
}

/// `GET /register/{client_id}`: the registration as it stands, with a new registration access token (RFC 7592
/// §2.1, §3).
pub async fn registration_get(
    State(state): State<AppState>,
    Path(client_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let read = async {
        let registered = registrations::read(&*state.store, &client_id, bearer(&headers)?).await;
        registered.map_err(registration_refusal)
    };
    match read.await {
        Ok(r) => answer(&state, StatusCode::OK, &r),
        Err(e) => e.into_response(),
    }
}

/// `PUT /register/{client_id}`: replaces the registration's metadata (RFC 7592 §2.2). The body names the client.
pub async fn registration_put(
    State(state): State<AppState>,
    Path(client_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let replaced = async {
        let token = bearer(&headers)?;
        registrations::registered(&*state.store, &client_id, token).await.map_err(registration_refusal)?;
        let named = serde_json::from_slice::<serde_json::Value>(&body).ok().and_then(|v| v.get("client_id").cloned());
        if named.as_ref().and_then(|v| v.as_str()) != Some(client_id.as_str()) {
            let why = "The body's client_id is the registration's own (RFC 7592 §2.2).";
            return Err(OAuthError::new(ErrorCode::InvalidClientMetadata, why).into());
        }
        let metadata = metadata(&headers, &body)?;
        registrations::reregister(&*state.store, &client_id, token, metadata).await.map_err(registration_refusal)
    };
    match replaced.await {
        Ok(r) => answer(&state, StatusCode::OK, &r),
        Err(e) => e.into_response(),
    }
}

/// `DELETE /register/{client_id}`: the app unregisters itself (RFC 7592 §2.3): 204, and its tokens stop working.
pub async fn registration_delete(
    State(state): State<AppState>,
    Path(client_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let deleted = async {
        let token = bearer(&headers)?;
        let now = state.clock.now();
        registrations::unregister(&*state.store, &client_id, token, now).await.map_err(registration_refusal)
    };
    match deleted.await {
        Ok(()) => {
            tracing::info!(client = %client_id, "a self-registered app deleted its registration");
            let mut response = StatusCode::NO_CONTENT.into_response();
            response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(e) => e.into_response(),
    }
}
