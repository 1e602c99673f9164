//! `grant_type=authorization_code` (RFC 6749 §4.1.3, RFC 7636 §4.6): the code exchange's checks, in order.

use super::proof::{self, NonceRule};
use super::{code_reused, mint, Checked, Ports};
use crate::access_token::GrantId;
use crate::client::Client;
use crate::dpop::{self, Proof};
use crate::refresh_token;
use crate::scope::{IDENTITY, PROFILE_CLAIMS};
use crate::secret::Secret;
use crate::target;
use crate::time::UnixTime;
use crate::token::{self, AuthCode, Grant};
use crate::OAuthError;
use latchkey_proto::TokenResponse;

/// A code presented for exchange, with its record.
#[derive(Debug)]
pub struct Presented {
    /// The record: opened from the code when it is sealed, else the store's (a used one is refused before).
    pub record: AuthCode,
    /// Whether the record came from the code itself, the store not asked yet.
    pub sealed: bool,
}

impl Presented {
    /// The code's hash when the store was not asked about it yet.
    pub fn unasked(&self) -> Option<&[u8]> {
        self.sealed.then_some(&self.record.code_hash[..])
    }
}

/// A code exchange, as the request and the store gave it.
#[derive(Debug)]
pub struct Exchange<'a> {
    /// The code presented.
    pub code: &'a Secret,
    /// Its record, when the code is known.
    pub presented: Option<Presented>,
    /// The PKCE verifier.
    pub verifier: Option<&'a Secret>,
    /// The redirect URI presented.
    pub redirect_uri: &'a str,
}

/// Runs the code exchange's checks, in order, then issues the grant and its tokens. The store is asked once on
/// the way for a sealed code (the call that spends it); more only when something fails.
pub async fn run<P: Ports>(ports: &P, exchange: Exchange<'_>, checked: Checked<'_>) -> Result<TokenResponse, P::Error> {
    let presented = code_known(exchange.presented)?;
    let (record, sealed, now) = (&presented.record, presented.sealed, checked.now);
    let issued = async {
        token::check_code(record, &checked.client.client_id, exchange.redirect_uri, exchange.verifier, now)?;
        if let Some(proof) = checked.proof {
            let rule = nonce_rule(proof, exchange.code, ports.settings().dpop_strict_code_jti)?;
            proof::use_once(ports, proof, rule, now).await?;
        }
        // The store answers for the user of a sealed code when it is spent (it spends no code of a disabled account,
        // and a deleted account's codes are gone); the user is read first only when the id_token needs the account.
        let user = if !sealed || record.scopes.intersects(PROFILE_CLAIMS) {
            Some(user_enabled(ports.user(&record.user_id).await?)?)
        } else {
            None
        };
        issue(ports, record, user.as_ref(), checked).await
    };
    match issued.await {
        Ok(Some(response)) => Ok(response),
        Ok(None) => Err(refused(ports, &record.code_hash, now).await),
        Err(e) => Err(settle(ports, presented.unasked(), e, now).await),
    }
}

/// The error of a request that presented a sealed code and failed before spending it, once the store was asked
/// about the code: a code used already revokes what it issued whatever else failed, as it does when the store is
/// asked first. Otherwise, or when the store cannot answer, the error itself.
pub(super) async fn settle<P: Ports>(ports: &P, unasked: Option<&[u8]>, error: P::Error, now: UnixTime) -> P::Error {
    let Some(code_hash) = unasked else { return error };
    match ports.code(code_hash).await {
        Ok(Some(stored)) if stored.used => code_reused(ports, code_hash, now).await,
        _ => error,
    }
}

/// Why the store would not spend a code its reader had found good, with the messages the checks give when they
/// read the store's record first: used meanwhile (what it issued is revoked), its user disabled or deleted, expired
/// early (an organisation's change), or gone or its scopes narrowed since (a registered API's scope retired).
async fn refused<P: Ports>(ports: &P, code_hash: &[u8], now: UnixTime) -> P::Error {
    let stored = match ports.code(code_hash).await {
        Ok(stored) => stored,
        Err(e) => return e,
    };
    match stored {
        Some(stored) if stored.used => code_reused(ports, code_hash, now).await,
        Some(stored) => match ports.user(&stored.user_id).await {
            Ok(user) => match user_enabled(user).and_then(|_| token::code_unexpired(&stored, now)) {
                Err(e) => e.into(),
                Ok(()) => unknown_code().into(),
            },
            Err(e) => e,
        },
        None => unknown_code().into(),
    }
}

/// Issues the grant of an authorization code and its tokens (the id_token for identity scopes, with the profile
/// claims of `user` when given): `None` when the code was not spent (redeemed meanwhile, or refused by the store;
/// the caller decides what that means). The access token is narrowed to the request's resources, checked before the
/// code is spent; the grant and its refresh token keep every scope.
pub(super) async fn issue<P: Ports>(
    ports: &P,
    record: &AuthCode,
    user: Option<&P::User>,
    checked: Checked<'_>,
) -> Result<Option<TokenResponse>, P::Error> {
    let Checked { client, proof, now, resources } = checked;
    let scopes = target::narrow(ports.settings().scopes, record.scopes, resources)?;
    let (grant, refresh_token) = new_grant(ports, record, client, proof, now);
    // Minted and signed before the code is spent (a JWT's first RSA key is a write that may fail): a token minted
    // for a code redeemed meanwhile is never sent, and nothing after the spending can fail.
    let (access_token, expires_in) = mint(ports, &grant, scopes, Some(record.auth_time), now).await?;
    let id_token =
        if record.scopes.intersects(IDENTITY) { Some(ports.id_token(user, record, &access_token, now)?) } else { None };
    if !ports.redeem_code(&grant, now).await? {
        return Ok(None);
    }
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
pub fn code_known<T>(record: Option<T>) -> Result<T, OAuthError> {
    record.ok_or_else(unknown_code)
}

fn unknown_code() -> OAuthError {
    OAuthError::invalid_grant("The authorization code is invalid or has expired.")
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
