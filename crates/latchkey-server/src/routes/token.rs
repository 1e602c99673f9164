//! `POST /token`: the code exchange (RFC 6749 §4.1.3, RFC 7636 §4.6) and refresh (§6).

use super::identity;
use crate::dpop::{self, NonceRule};
use crate::error::{no_store_json, TokenError};
use crate::extract;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use latchkey_core::access_token::{self, AccessClaims, GrantId};
use latchkey_core::client::{Client, LAST_USED_GRANULARITY};
use latchkey_core::dpop::Proof;
use latchkey_core::refresh_token;
use latchkey_core::scope::{ScopeSet, IDENTITY};
use latchkey_core::secret::{self, Secret};
use latchkey_core::time::UnixTime;
use latchkey_core::token::{self, AuthCode, Form, Grant, TokenGrant};
use latchkey_core::{ErrorCode, OAuthError};
use latchkey_proto::TokenResponse;
use latchkey_store::{GrantState, Redeemed};

/// Handles a token request. Every answer to a request with a DPoP header carries a fresh `DPoP-Nonce`.
pub async fn token_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let now = state.clock.now();
    let mut response = match handle(&state, &headers, &body, now).await {
        Ok((client, body)) => {
            // Unused clients are deleted after `client_unused_days`: record the use, at most one write an hour.
            // The client row was just read, so a fresh `last_used_at` costs no statement at all.
            let stale = client.last_used_at.is_none_or(|t| now.0 - t.0 >= LAST_USED_GRANULARITY);
            if stale {
                if let Err(e) = state.store.touch_client(&client.client_id, now).await {
                    tracing::warn!(error = %e, client_id = %client.client_id, "recording the client's last use");
                }
            }
            token_response(&body)
        }
        Err(mut e) => {
            e.basic_auth = headers.contains_key(header::AUTHORIZATION);
            e.into_response()
        }
    };
    if headers.contains_key(dpop::DPOP) {
        if let Some(nonce) = dpop::fresh_nonce(&state, now) {
            response.headers_mut().insert(dpop::DPOP_NONCE, nonce);
        }
    }
    response
}

async fn handle(
    state: &AppState,
    headers: &HeaderMap,
    body: &[u8],
    now: UnixTime,
) -> Result<(Client, TokenResponse), TokenError> {
    let pairs = extract::form(headers, body)?;
    let form = Form::new(extract::borrowed(&pairs))?;
    // A code presented again revokes what it issued, whatever else is wrong with the request (client
    // authentication, the DPoP proof, other parameters): so this check comes first.
    let code_record = match (form.get("grant_type"), form.get("code")) {
        (Some("authorization_code"), Some(code)) => {
            let code_hash = secret::hash(code);
            let record = state.store.code(&code_hash).await?;
            if record.as_ref().is_some_and(|r| r.used) {
                return Err(reused(state, &code_hash, now).await);
            }
            record
        }
        _ => None,
    };
    let authorization = extract::single_header(headers, &header::AUTHORIZATION)?;
    let request = token::parse(&form, authorization)?;
    let client = authenticate(state, &request.client).await?;
    crate::app_check::check(state, &client, headers, now).await?;
    let proof = dpop::proof(state, headers, now)?;
    let issued = match request.grant {
        TokenGrant::AuthorizationCode { code, code_verifier, redirect_uri } => {
            let record = code_record
                .ok_or_else(|| OAuthError::invalid_grant("The authorization code is invalid or has expired."))?;
            let exchange =
                Exchange { code: &code, record, verifier: code_verifier.as_ref(), redirect_uri: &redirect_uri };
            exchange.run(state, &client, proof.as_ref(), now).await
        }
        TokenGrant::RefreshToken { refresh_token, scope } => {
            refresh(state, &client, &refresh_token, scope.as_deref(), proof.as_ref(), now).await
        }
    }?;
    Ok((client, issued))
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

/// A code exchange, once the code is found and known unused.
struct Exchange<'a> {
    code: &'a Secret,
    record: AuthCode,
    verifier: Option<&'a Secret>,
    redirect_uri: &'a str,
}

impl Exchange<'_> {
    async fn run(
        self,
        state: &AppState,
        client: &Client,
        proof: Option<&Proof>,
        now: UnixTime,
    ) -> Result<TokenResponse, TokenError> {
        let Exchange { code, record, verifier, redirect_uri } = self;
        let code_hash = record.code_hash.clone();
        token::check_code(&record, &client.client_id, redirect_uri, verifier, now)?;
        if let Some(proof) = proof {
            // The spec's rule: a proof whose jti is the code's hash needs no nonce. Generic RFC 9449 clients send
            // another unique jti; they are accepted with a server nonce, unless the strict setting is on.
            let rule = if proof.jti == latchkey_core::dpop::code_jti(code.expose()) {
                NonceRule::IfPresent
            } else if state.config.dpop_strict_code_jti {
                return Err(dpop::invalid("The DPoP proof's jti must be Base64url(SHA-256(code)).").into());
            } else {
                NonceRule::Required
            };
            dpop::use_proof(state, proof, rule, now).await?;
        }
        let user = state.store.user(&record.user_id).await?.filter(|u| u.disabled_at.is_none());
        let Some(user) = user else {
            return Err(OAuthError::invalid_grant("The user account is deleted or disabled.").into());
        };
        let id = GrantId::generate_at(now);
        let refresh_token = refresh_token::generate(&id);
        let grant = Grant {
            id,
            client_id: client.client_id.clone(),
            user_id: record.user_id.clone(),
            scopes: record.scopes,
            refresh_hash: refresh_token.hash(),
            dpop_jkt: proof.map(|p| p.jkt.clone()),
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
    proof: Option<&Proof>,
    now: UnixTime,
) -> Result<TokenResponse, TokenError> {
    let found = grant_of_refresh(state, refresh_token.expose())
        .await?
        .ok_or_else(|| OAuthError::invalid_grant("Token has been expired or revoked."))?;
    token::check_refresh(&found.grant, &client.client_id, now)?;
    if !found.is_usable(now) {
        return Err(OAuthError::invalid_grant("Token has been expired or revoked.").into());
    }
    let scopes = token::narrow(&state.scopes, found.grant.scopes, scope)?;
    match (&found.grant.dpop_jkt, proof) {
        (Some(_), None) => {
            return Err(dpop::invalid("This refresh token is DPoP-bound: send a DPoP proof signed with its key.").into())
        }
        (Some(jkt), Some(p)) if *jkt != p.jkt => {
            return Err(OAuthError::invalid_grant("The DPoP proof is signed with another key than the token's.").into())
        }
        (Some(_), Some(p)) => dpop::use_proof(state, p, NonceRule::Required, now).await?,
        // An unbound refresh token with a proof still works as Bearer; the proof is still single use.
        (None, Some(p)) => dpop::use_proof(state, p, NonceRule::IfPresent, now).await?,
        (None, None) => {}
    }
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

/// The grant a refresh token belongs to: found through the grant id the token carries (by hash for a token of
/// the earlier form), and only when the token's hash is the grant's, compared in constant time.
pub(super) async fn grant_of_refresh(state: &AppState, token: &str) -> Result<Option<GrantState>, TokenError> {
    let hash = secret::hash(token);
    let found = match refresh_token::grant_id(token) {
        Some(id) => state.store.grant(&id).await?,
        None => state.store.legacy_grant_by_refresh(&hash).await?,
    };
    Ok(found.filter(|g| secret::ct_eq(&g.grant.refresh_hash, &hash)))
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
