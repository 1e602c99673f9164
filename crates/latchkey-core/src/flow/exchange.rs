//! `grant_type=authorization_code` (RFC 6749 §4.1.3, RFC 7636 §4.6): the code exchange's checks, in order.

use super::proof::{self, NonceRule};
use super::{code_reused, mint, Checked, Ports};
use crate::access_token::GrantId;
use crate::client::Client;
use crate::dpop::{self, Proof};
use crate::refresh_token;
use crate::scope::IDENTITY;
use crate::secret::Secret;
use crate::target;
use crate::time::UnixTime;
use crate::token::{self, AuthCode, Grant};
use crate::OAuthError;
use latchkey_proto::TokenResponse;

/// A code exchange, as the request and the store gave it.
#[derive(Debug)]
pub struct Exchange<'a> {
    /// The code presented.
    pub code: &'a Secret,
    /// Its record, when the code is known (and not used: a used one is refused before).
    pub record: Option<AuthCode>,
    /// The PKCE verifier.
    pub verifier: Option<&'a Secret>,
    /// The redirect URI presented.
    pub redirect_uri: &'a str,
}

/// Runs the code exchange's checks, in order, then issues the grant and its tokens.
pub async fn run<P: Ports>(ports: &P, exchange: Exchange<'_>, checked: Checked<'_>) -> Result<TokenResponse, P::Error> {
    let Checked { client, proof, now, .. } = checked;
    let record = code_known(exchange.record)?;
    token::check_code(&record, &client.client_id, exchange.redirect_uri, exchange.verifier, now)?;
    if let Some(proof) = proof {
        let rule = nonce_rule(proof, exchange.code, ports.settings().dpop_strict_code_jti)?;
        proof::use_once(ports, proof, rule, now).await?;
    }
    let user = user_enabled(ports.user(&record.user_id).await?)?;
    match issue(ports, &record, &user, checked).await? {
        Some(response) => Ok(response),
        None => Err(code_reused(ports, &record.code_hash, now).await),
    }
}

/// Issues the grant of an authorization code and its tokens (the id_token for identity scopes): `None` when the
/// code was redeemed meanwhile (the caller decides what that means). The access token is narrowed to the request's
/// resources, checked before the code is spent; the grant and its refresh token keep every scope.
pub(super) async fn issue<P: Ports>(
    ports: &P,
    record: &AuthCode,
    user: &P::User,
    checked: Checked<'_>,
) -> Result<Option<TokenResponse>, P::Error> {
    let Checked { client, proof, now, resources } = checked;
    let scopes = target::narrow(ports.settings().scopes, record.scopes, resources)?;
    let (grant, refresh_token) = new_grant(ports, record, client, proof, now);
    // Minted before the code is spent (a JWT's first RSA key is a write that may fail): a token minted for a code
    // redeemed meanwhile is never sent.
    let (access_token, expires_in) = mint(ports, &grant, scopes, Some(record.auth_time), now).await?;
    if !ports.redeem_code(&grant, now).await? {
        return Ok(None);
    }
    let id_token =
        if record.scopes.intersects(IDENTITY) { Some(ports.id_token(user, record, &access_token, now)?) } else { None };
    Ok(Some(TokenResponse {
        access_token,
        expires_in,
        id_token,
        refresh_token: Some(refresh_token.into_inner()),
        refresh_token_expires_in: grant.expires_at.map(|e| now.until(e)),
        scope: ports.settings().scopes.format(scopes),
        token_type: "Bearer".into(),
    }))
}

/// The code is one the server issued and still holds.
pub fn code_known(record: Option<AuthCode>) -> Result<AuthCode, OAuthError> {
    record.ok_or_else(|| OAuthError::invalid_grant("The authorization code is invalid or has expired."))
}

/// The nonce rule of a code-exchange proof (`docs/decisions.md`, "DPoP"): a proof whose `jti` is the code's hash needs
/// no nonce. Generic RFC 9449 clients send another unique `jti`; they are accepted with a server nonce, unless the
/// strict setting is on.
pub fn nonce_rule(proof: &Proof, code: &Secret, strict: bool) -> Result<NonceRule, OAuthError> {
    if proof.jti == dpop::code_jti(code.expose()) {
        Ok(NonceRule::IfPresent)
    } else if strict {
        Err(proof::invalid_dpop_proof("The DPoP proof's jti must be Base64url(SHA-256(code))."))
    } else {
        Ok(NonceRule::Required)
    }
}

/// The code's user still exists and is enabled.
pub fn user_enabled<U>(user: Option<(U, Option<UnixTime>)>) -> Result<U, OAuthError> {
    match user {
        Some((user, None)) => Ok(user),
        _ => Err(OAuthError::invalid_grant("The user account is deleted or disabled.")),
    }
}

/// The grant a code exchange makes, with its refresh token: bound to the proof's key when there is one,
/// time-limited when the user chose so.
fn new_grant<P: Ports>(
    ports: &P,
    record: &AuthCode,
    client: &Client,
    proof: Option<&Proof>,
    now: UnixTime,
) -> (Grant, Secret) {
    let id = GrantId::generate_at(now, ports.random());
    let refresh_token = refresh_token::generate(&id, ports.random());
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
        code_hash: record.code_hash.clone(),
    };
    (grant, refresh_token)
}
