//! `POST /token`: the code exchange (RFC 6749 §4.1.3, RFC 7636 §4.6) and refresh (§6).

use super::identity;
use crate::error::{no_store_json, TokenError};
use crate::extract;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use latchkey_core::access_token::{self, AccessClaims, GrantId};
use latchkey_core::client::Client;
use latchkey_core::scope::{ScopeSet, IDENTITY};
use latchkey_core::secret::Secret;
use latchkey_core::time::UnixTime;
use latchkey_core::token::{self, Form, Grant, TokenGrant};
use latchkey_core::{ErrorCode, OAuthError};
use latchkey_proto::TokenResponse;
use latchkey_store::Redeemed;

/// Handles a token request.
pub async fn token_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    match handle(&state, &headers, &body).await {
        Ok(body) => token_response(&body),
        Err(mut e) => {
            e.basic_auth = headers.contains_key(header::AUTHORIZATION);
            e.into_response()
        }
    }
}

async fn handle(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Result<TokenResponse, TokenError> {
    let pairs = extract::form(headers, body)?;
    let form = Form::new(extract::borrowed(&pairs))?;
    let authorization = extract::single_header(headers, &header::AUTHORIZATION)?;
    let request = token::parse(&form, authorization)?;
    let client = authenticate(state, &request.client).await?;
    let now = state.clock.now();
    match request.grant {
        TokenGrant::AuthorizationCode { code, code_verifier, redirect_uri } => {
            exchange(state, &client, &code, code_verifier.as_ref(), &redirect_uri, now).await
        }
        TokenGrant::RefreshToken { refresh_token, scope } => {
            refresh(state, &client, &refresh_token, scope.as_deref(), now).await
        }
    }
}

/// Finds the client and checks its secret, if one was sent.
pub(super) async fn authenticate(state: &AppState, auth: &token::ClientAuth) -> Result<Client, TokenError> {
    let client = state
        .store
        .client(&auth.client_id)
        .await?
        .ok_or_else(|| OAuthError::new(ErrorCode::InvalidClient, "The OAuth client was not found."))?;
    if client.deleted_at.is_some() {
        return Err(OAuthError::new(ErrorCode::InvalidClient, "The OAuth client was deleted.").into());
    }
    auth.check_secret(&client.secret_hash)?;
    Ok(client)
}

async fn exchange(
    state: &AppState,
    client: &Client,
    code: &Secret,
    verifier: Option<&Secret>,
    redirect_uri: &str,
    now: UnixTime,
) -> Result<TokenResponse, TokenError> {
    let code_hash = code.hash();
    let record = state
        .store
        .code(&code_hash)
        .await?
        .ok_or_else(|| OAuthError::invalid_grant("The authorization code is invalid or has expired."))?;
    if record.used {
        return Err(reused(state, &code_hash, now).await);
    }
    token::check_code(&record, &client.client_id, redirect_uri, verifier, now)?;
    let user = state.store.user(&record.user_id).await?.filter(|u| u.disabled_at.is_none());
    let Some(user) = user else {
        return Err(OAuthError::invalid_grant("The user account is deleted or disabled.").into());
    };
    let refresh_token = Secret::generate("lkr_");
    let grant = Grant {
        id: GrantId::generate(),
        client_id: client.client_id.clone(),
        user_id: record.user_id.clone(),
        scopes: record.scopes,
        refresh_hash: refresh_token.hash(),
        dpop_jkt: None,
        created_at: now,
        expires_at: record.grant_lifetime.map(|l| now.plus(l)),
        revoked_at: None,
        code_hash: code_hash.clone(),
    };
    if state.store.redeem_code(&grant, state.grant_limits(), now).await? == Redeemed::AlreadyUsed {
        return Err(reused(state, &code_hash, now).await);
    }
    let (access_token, expires_in) = mint(state, &grant, grant.scopes, now);
    let id_token = if record.scopes.intersects(IDENTITY) {
        Some(identity::id_token(state, &user, &client.client_id, &record, &access_token, now)?)
    } else {
        None
    };
    tracing::info!(client_id = %client.client_id, user_id = %user.id, grant = %grant.id.encode(), "code exchanged");
    Ok(TokenResponse {
        access_token,
        expires_in,
        id_token,
        refresh_token: Some(refresh_token.into_inner()),
        refresh_token_expires_in: grant.expires_at.map(|e| now.until(e)),
        scope: state.scopes.format(grant.scopes),
        token_type: "Bearer".into(),
    })
}

/// A code presented again: everything issued from it is revoked (RFC 6749 §4.1.2).
async fn reused(state: &AppState, code_hash: &[u8], now: UnixTime) -> TokenError {
    match state.store.revoke_grants_of_code(code_hash, now).await {
        Ok(n) => {
            tracing::warn!(revoked = n, "authorization code reused; its grant is revoked");
            OAuthError::invalid_grant("The authorization code was already used. Tokens issued from it are revoked.")
                .into()
        }
        Err(e) => e.into(),
    }
}

async fn refresh(
    state: &AppState,
    client: &Client,
    refresh_token: &Secret,
    scope: Option<&str>,
    now: UnixTime,
) -> Result<TokenResponse, TokenError> {
    let found = state
        .store
        .grant_by_refresh(&refresh_token.hash())
        .await?
        .ok_or_else(|| OAuthError::invalid_grant("Token has been expired or revoked."))?;
    token::check_refresh(&found.grant, &client.client_id, now)?;
    if !found.is_usable(now) {
        return Err(OAuthError::invalid_grant("Token has been expired or revoked.").into());
    }
    let scopes = token::narrow(&state.scopes, found.grant.scopes, scope)?;
    let (access_token, expires_in) = mint(state, &found.grant, scopes, now);
    Ok(TokenResponse {
        access_token,
        expires_in,
        id_token: None,
        refresh_token: None,
        refresh_token_expires_in: found.grant.expires_at.map(|e| now.until(e)),
        scope: state.scopes.format(scopes),
        token_type: "Bearer".into(),
    })
}

/// Mints an access token for a grant; a time-limited grant caps its lifetime.
fn mint(state: &AppState, grant: &Grant, scopes: ScopeSet, now: UnixTime) -> (String, u64) {
    let mut expires_at = now.plus(state.config.access_token_lifetime);
    if let Some(end) = grant.expires_at {
        expires_at = expires_at.min(end);
    }
    let keys = state.keys.get();
    let token = access_token::mint(keys.mac_signer(), &AccessClaims { grant_id: grant.id, expires_at, scopes });
    (token, now.until(expires_at))
}

fn token_response(body: &TokenResponse) -> Response {
    let mut response = no_store_json(body);
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}
