//! The JWT bearer grant (RFC 7523 §2.1): a service account's signed assertion, exchanged for an access token. The
//! assertion authenticates itself, so no client is named. The checks, in order: the assertion's form and
//! algorithm, its key (by `kid`, a live key of the account `iss` names), the signature, the audience and lifetime,
//! the account enabled, no delegation, the scopes, and single use. Only then is anything written (the `jti`).

use super::{sign, Ports};
use crate::access_token::{AccessClaims, Holder, ServiceKeyId};
use crate::scope::{ScopeRegistry, ScopeSet, IDENTITY};
use crate::service_account::{Assertion, AssertionClaims, GrantRefusal};
use crate::time::UnixTime;
use crate::token::Form;
use crate::{ErrorCode, OAuthError};
use latchkey_proto::TokenResponse;

/// Checks the assertion in `form` and issues an access token: never a refresh token, never an id_token.
pub async fn run<P: Ports>(ports: &P, form: &Form<'_>, now: UnixTime) -> Result<TokenResponse, P::Error> {
    let raw = form.require("assertion")?;
    let assertion = Assertion::parse(raw).map_err(GrantRefusal::error)?;
    let iss = &assertion.claims().iss;
    let found = match assertion.kid() {
        Some(kid) => ports.service_key(kid).await?.filter(|k| &k.email == iss),
        None => None,
    };
    let Some(key) = found.filter(|k| k.key_disabled_at.is_none()) else {
        let refusal = match ports.service_account_exists(iss).await? {
            true => GrantRefusal::KeyNotFound,
            false => GrantRefusal::UnknownAccount,
        };
        return Err(refusal.error().into());
    };
    let settings = ports.settings();
    let (claims, remember_until) =
        assertion.verify(&key.public_key, settings.token_endpoint, now).map_err(GrantRefusal::error)?;
    if key.account_disabled_at.is_some() {
        return Err(GrantRefusal::DisabledAccount.error().into());
    }
    if claims.sub.as_deref().is_some_and(|sub| sub != claims.iss) {
        return Err(GrantRefusal::Delegation.error().into());
    }
    let scopes = scopes(settings.scopes, requested_scope(form, claims)?)?;
    let replay = replay_key(claims, assertion.signing_input(), remember_until);
    if ports.record_once(&[(replay, remember_until)], now).await?.is_some() {
        return Err(GrantRefusal::Replayed.error().into());
    }
    let key_id = ServiceKeyId::decode(&key.key_id)
        .ok_or_else(|| OAuthError::new(ErrorCode::ServerError, "The service account's key has an unreadable id."))?;
    let expires_at = now.plus(settings.access_token_lifetime);
    let token = sign(ports, &AccessClaims { holder: Holder::ServiceKey(key_id), expires_at, scopes })?;
    Ok(TokenResponse {
        access_token: token,
        expires_in: now.until(expires_at),
        id_token: None,
        refresh_token: None,
        refresh_token_expires_in: None,
        scope: settings.scopes.format(scopes),
        token_type: "Bearer".into(),
    })
}

/// The scopes asked for: the `scope` claim (the best-known provider's libraries) or the `scope` parameter (RFC 7521
/// §4.1, as other libraries send it); both may be sent only alike.
fn requested_scope<'a>(form: &Form<'a>, claims: &'a AssertionClaims) -> Result<Option<&'a str>, OAuthError> {
    match (form.get("scope"), claims.scope.as_deref()) {
        (Some(param), Some(claim)) if param != claim => Err(OAuthError::new(
            ErrorCode::InvalidScope,
            "Invalid scope: the scope parameter differs from the assertion's scope claim; send one, or both alike.",
        )),
        (param, claim) => Ok(param.or(claim)),
    }
}

/// The assertion's scopes: data-API scopes, at least one; an unknown one is `invalid_scope`, and so are the
/// identity scopes (a service account is not a person to sign in).
fn scopes(registry: &ScopeRegistry, scope: Option<&str>) -> Result<ScopeSet, OAuthError> {
    let asked = registry.parse(scope.unwrap_or(""))?;
    if asked.intersects(IDENTITY) {
        return Err(OAuthError::new(
            ErrorCode::InvalidScope,
            "Invalid scope: openid, email and profile sign a person in; a service account asks for data-API scopes.",
        ));
    }
    if asked.is_empty() {
        return Err(GrantRefusal::Scope.error());
    }
    Ok(asked)
}

/// What marks the assertion used until it expires: its issuer and `jti` (whatever its `exp`: another assertion with
/// the same `jti` is refused until the first one's `exp`), or without one its signed part (not the signature: an
/// ES256 signature `(r, s)` is as valid as `(r, n - s)`, so the same claims could come twice).
fn replay_key(claims: &AssertionClaims, signed: &str, until: UnixTime) -> Vec<u8> {
    match &claims.jti {
        Some(jti) => crate::dpop::untimed_key(&format!("jwt-bearer:{}:{jti}", claims.iss)),
        None => crate::dpop::time_ordered_key(until, &format!("jwt-bearer-assertion:{signed}")),
    }
}
