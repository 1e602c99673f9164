//! OpenID Connect's UserInfo endpoint (the id_token's claims are [`super::id_token`]'s).

use super::api::{bearer, Bearer};
use super::id_token::profile_claims;
use crate::error::{no_store_json, ApiError};
use crate::state::AppState;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use latchkey_core::scope::Scope;
use serde_json::{Map, Value};

/// `GET`/`POST /v1/userinfo`: the signed-in user's claims, for a token carrying `openid`.
pub async fn userinfo(State(state): State<AppState>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let (claims, found) = match bearer(&state, &headers, query.as_deref()).await {
        Ok(ok) => ok,
        Err(e) => return e.into_response(),
    };
    // A service account's token never carries openid: it is not a person.
    let found = match found {
        Bearer::User(grant, _) if claims.scopes.has(Scope::OpenId) => grant,
        _ => return ApiError::insufficient_scope("openid").into_response(),
    };
    let user = match state.store.user(&found.grant.user_id).await {
        Ok(Some(u)) => u,
        Ok(None) => return ApiError::unauthenticated("The user account is deleted.", true).into_response(),
        Err(e) => return ApiError::from(e).into_response(),
    };
    let mut body = Map::new();
    body.insert("sub".into(), user.id.clone().into());
    profile_claims(&mut body, &user, claims.scopes);
    no_store_json(&Value::Object(body))
}
