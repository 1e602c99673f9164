//! OpenID Connect's claims: the id_token of a code exchange, and the profile claims it shares with UserInfo.

use crate::error::TokenError;
use crate::state::AppState;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use latchkey_admin::clock::OsRandom;
use latchkey_core::flow::JwtAccessClaims;
use latchkey_core::scope::{Scope, ScopeSet};
use latchkey_core::time::UnixTime;
use latchkey_core::token::AuthCode;
use latchkey_core::OAuthError;
use latchkey_store::User;
use serde_json::{Map, Value};

/// The signed id_token for a code exchange that granted an identity scope: for the code's user and client, with
/// the profile claims of `user` (read when the code's scopes ask for them).
pub(super) fn id_token(
    state: &AppState,
    user: Option<&User>,
    code: &AuthCode,
    access_token: &str,
    now: UnixTime,
) -> Result<String, TokenError> {
    let mut claims = Map::new();
    claims.insert("iss".into(), state.urls.issuer.clone().into());
    claims.insert("sub".into(), code.user_id.clone().into());
    claims.insert("aud".into(), code.client_id.clone().into());
    claims.insert("azp".into(), code.client_id.clone().into());
    claims.insert("iat".into(), now.0.into());
    claims.insert("exp".into(), now.plus(state.config.access_token_lifetime).0.into());
    claims.insert("auth_time".into(), code.auth_time.0.into());
    claims.insert("at_hash".into(), at_hash(access_token).into());
    if let Some(nonce) = &code.nonce {
        claims.insert("nonce".into(), nonce.clone().into());
    }
    if let Some(user) = user {
        profile_claims(&mut claims, user, code.scopes);
    }
    sign(state, "JWT", claims, "the id_token")
}

/// A JWT access token (RFC 9068 §2): `typ` `at+jwt`, signed with the id_token key, so that an API verifies it with
/// the JWKS alone.
pub(super) async fn jwt_access_token(state: &AppState, c: &JwtAccessClaims<'_>) -> Result<String, TokenError> {
    let mut claims = Map::new();
    claims.insert("iss".into(), state.urls.issuer.clone().into());
    claims.insert("aud".into(), c.audience.into());
    claims.insert("sub".into(), c.subject.into());
    claims.insert("client_id".into(), c.client_id.into());
    claims.insert("scope".into(), c.scope.clone().into());
    claims.insert("iat".into(), c.issued_at.0.into());
    claims.insert("exp".into(), c.expires_at.0.into());
    claims.insert("jti".into(), c.id.clone().into());
    if let Some(at) = c.auth_time {
        claims.insert("auth_time".into(), at.0.into());
    }
    if !c.rs256 {
        return sign(state, "at+jwt", claims, "a JWT access token");
    }
    if state.keys.get().event_signer().is_none() {
        // The first RSA key: made here, or by another instance meanwhile (then loaded).
        let now = state.clock.now();
        latchkey_admin::keys::ensure_event_key(&state.keys, &*state.store, now).await?;
        state.keys.reload(&*state.store, now).await?;
    }
    let keys = state.keys.get();
    let signer = keys.event_signer().ok_or_else(|| unsigned("a JWT access token"))?;
    signer.sign("at+jwt", &Value::Object(claims), &OsRandom).map_err(|e| {
        tracing::error!(error = %e, "signing a JWT access token");
        unsigned("a JWT access token")
    })
}

fn unsigned(what: &str) -> TokenError {
    TokenError::from(OAuthError::new(latchkey_core::ErrorCode::ServerError, format!("Could not sign {what}.")))
}

/// Signs claims with the id_token key under `typ`.
fn sign(state: &AppState, typ: &str, claims: Map<String, Value>, what: &'static str) -> Result<String, TokenError> {
    let keys = state.keys.get();
    keys.id_token_signer().sign(typ, &Value::Object(claims), &OsRandom).map_err(|e| {
        tracing::error!(error = %e, "signing {what}");
        unsigned(what)
    })
}

/// The left half of the SHA-256 of the access token (OpenID Connect Core §3.1.3.6).
fn at_hash(access_token: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, access_token.as_bytes());
    URL_SAFE_NO_PAD.encode(&digest.as_ref()[..16])
}

/// `email`/`email_verified` for the `email` scope, `name` for `profile`.
pub(super) fn profile_claims(claims: &mut Map<String, Value>, user: &User, scopes: ScopeSet) {
    if scopes.has(Scope::Email) {
        claims.insert("email".into(), user.email.clone().into());
        // Accounts are created by the operator, who vouches for the address.
        claims.insert("email_verified".into(), true.into());
    }
    if scopes.has(Scope::Profile) {
        if let Some(name) = &user.name {
            claims.insert("name".into(), name.clone().into());
        }
    }
}
