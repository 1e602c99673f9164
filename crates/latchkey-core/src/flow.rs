//! The authorization endpoint's, the token endpoint's and the revocation endpoint's flows: each an ordered list
//! of named checks over
//! [`Ports`], what the server provides (the store's records, its keys, App Check, randomness). Nothing here does
//! I/O itself; the server implements the ports with its store and maps the outcome to HTTP.
//!
//! - [`token`]: the checks every token request shares, then the grant type's own list
//!   ([`exchange`] for `authorization_code`, [`refresh`] for `refresh_token`); [`jwt_bearer`] for a service
//!   account's assertion, which authenticates itself (no client).
//! - [`revoke::revoke`]: RFC 7009.
//! - [`proof`]: DPoP at the token endpoint, the stateless checks, the nonce rule and single use.
//! - [`authorize`]: the authorization endpoint, over its own ports ([`authorize::AuthorizePorts`]): the request,
//!   the browser's accounts, the organisation's policy and consent, in one order.
//!
//! Adding a grant type means one module with its list of checks and one arm in [`token`].

pub mod authorize;
pub mod device;
pub mod exchange;
pub mod introspect;
pub mod jwt_bearer;
pub mod proof;
pub mod refresh;
pub mod revoke;

use crate::access_token::{self, AccessClaims, AccessTokenError, GrantId, Holder, MacKey};
use crate::auth_code;
use crate::client::Client;
use crate::dpop::{self, Window};
use crate::refresh_token;
use crate::scope::{ScopeRegistry, ScopeSet};
use crate::secret::{self, Random};
use crate::service_account::{self, ServiceKeyState};
use crate::time::UnixTime;
use crate::token::{self, AuthCode, ClientAuth, Form, Grant, GrantState, TokenGrant};
use crate::{ErrorCode, OAuthError};
use latchkey_proto::TokenResponse;

/// The server's settings the flows read.
#[derive(Debug, Clone, Copy)]
pub struct Settings<'a> {
    /// The window in which a DPoP proof's `iat` is accepted.
    pub dpop_window: Window,
    /// Whether a code-exchange proof must use Base64url(SHA-256(code)) as its `jti`.
    pub dpop_strict_code_jti: bool,
    /// Seconds an access token lives (a time-limited grant may cut it short).
    pub access_token_lifetime: i64,
    /// Seconds a JWT access token lives, at most (an API verifies it offline: a revoked grant's lives on).
    pub jwt_access_token_lifetime: i64,
    /// The token endpoint's public URL, which a DPoP proof's `htu` must name.
    pub token_endpoint: &'a str,
    /// The scopes this deployment knows.
    pub scopes: &'a ScopeRegistry,
    /// Seconds after a rotation during which the retired refresh token gets the same new one again (a response
    /// lost on its way); 0 for none.
    pub refresh_rotation_grace: i64,
}

/// What the flows ask of the server. Each method is one lookup or one write; the rules stay here. The server's
/// implementation is concrete, so the futures of its `async fn`s are `Send` where the handlers need it.
#[allow(async_fn_in_trait)]
pub trait Ports: Sync {
    /// The server's own failure (the store's), passed through; a protocol error becomes one.
    type Error: From<OAuthError> + Send;
    /// A user, as the server's id_token needs it.
    type User: Send + Sync;

    /// The settings in force.
    fn settings(&self) -> Settings<'_>;
    /// The randomness for ids, tokens and nonces.
    fn random(&self) -> &dyn Random;
    /// Calls `f` with the MAC keys, the signing one first.
    fn with_mac_keys<R>(&self, f: impl FnOnce(&[MacKey]) -> R) -> R;
    /// Reloads the keys because a token named a key id they lack; whether it did.
    async fn reload_keys(&self, now: UnixTime) -> Result<bool, Self::Error>;
    /// Admits one more request of this client, known and authenticated, or refuses it (a per-client rate limit).
    /// Default: admits.
    fn admit_client(&self, _client_id: &str) -> Result<(), Self::Error> {
        Ok(())
    }
    /// A client by id.
    async fn client(&self, client_id: &str) -> Result<Option<Client>, Self::Error>;
    /// Classifies and counts the request for App Check, refusing it when App Check is enforced.
    async fn app_check(&self, client: &Client, now: UnixTime) -> Result<(), Self::Error>;
    /// An authorization code by the hash of its value.
    async fn code(&self, code_hash: &[u8]) -> Result<Option<AuthCode>, Self::Error>;
    /// Revokes what a code issued; how many grants.
    async fn revoke_grants_of_code(&self, code_hash: &[u8], now: UnixTime) -> Result<u64, Self::Error>;
    /// A user by id, with when they were disabled.
    async fn user(&self, user_id: &str) -> Result<Option<(Self::User, Option<UnixTime>)>, Self::Error>;
    /// Notes a device's poll of its device code (RFC 8628) and returns what it found; `None` (nothing noted) for
    /// an unknown code or another client's.
    async fn poll_device(
        &self,
        device_code_hash: &[u8],
        client_id: &str,
        now: UnixTime,
    ) -> Result<Option<crate::device::Poll>, Self::Error>;
    /// Marks the grant's code used and stores the grant, in one unit; `false` when the store would not spend the
    /// code (used already, expired, its account disabled, its scopes narrowed since).
    async fn redeem_code(&self, grant: &Grant, now: UnixTime) -> Result<bool, Self::Error>;
    /// The id_token of a code exchange for `code` (its client's and its user's), with the access token issued with
    /// it; `user` is the code's user, read when the code's scopes ask for profile claims
    /// ([`crate::scope::PROFILE_CLAIMS`]).
    fn id_token(
        &self,
        user: Option<&Self::User>,
        code: &AuthCode,
        token: &str,
        now: UnixTime,
    ) -> Result<String, Self::Error>;
    /// A JWT access token (RFC 9068) with these claims, signed with the id_token key (ES256) or the RSA signing key
    /// (RS256, made when first needed); the server adds `iss`.
    async fn jwt_access_token(&self, claims: &JwtAccessClaims<'_>) -> Result<String, Self::Error>;
    /// A grant by id.
    async fn grant(&self, id: &GrantId) -> Result<Option<GrantState>, Self::Error>;
    /// A grant by its refresh token's hash (tokens of the earlier form, which name no grant id).
    async fn legacy_grant_by_refresh(&self, refresh_hash: &[u8]) -> Result<Option<GrantState>, Self::Error>;
    /// Revokes a grant; whether it was live.
    async fn revoke_grant(&self, id: &GrantId, now: UnixTime) -> Result<bool, Self::Error>;
    /// Revokes a grant if it is live, its refresh token's hash is `refresh_hash` and its client `client_id`
    /// (each when given), in one conditional write; whether it did.
    async fn revoke_presented(
        &self,
        id: &GrantId,
        refresh_hash: Option<&[u8]>,
        client_id: Option<&str>,
        now: UnixTime,
    ) -> Result<bool, Self::Error>;
    /// Replaces a live grant's refresh token (hash `old`) by the one of hash `new` and retires `old`, in one atomic
    /// step; false, with nothing changed, when `old` is no longer its token or the grant was revoked.
    async fn rotate_refresh(&self, id: &GrantId, old: &[u8], new: &[u8], now: UnixTime) -> Result<bool, Self::Error>;
    /// When a rotation retired the refresh token whose hash this is, if one did.
    async fn retired_refresh(&self, hash: &[u8]) -> Result<Option<UnixTime>, Self::Error>;
    /// Revokes a grant whose retired refresh token was presented again, with its events; whether it was live.
    async fn revoke_reused(&self, id: &GrantId, now: UnixTime) -> Result<bool, Self::Error>;
    /// Records each value until its expiry unless one is recorded already: `None` when all were new, else the
    /// index of the first that was not (nothing is recorded then).
    async fn record_once(&self, values: &[(Vec<u8>, UnixTime)], now: UnixTime) -> Result<Option<usize>, Self::Error>;
    /// Records a DPoP proof's single-use values (its `jti`, its nonce), each until its expiry, off the durable
    /// write path: all, or none when one was already or `admission` refuses the proof at the moment the records
    /// are complete from ([`crate::dpop::Recorded`]).
    async fn record_proof(
        &self,
        values: &[(Vec<u8>, UnixTime)],
        admission: &crate::dpop::Admission,
        now: UnixTime,
    ) -> Result<crate::dpop::Recorded, Self::Error>;
    /// A service account's key by its id (an assertion's `kid`), with its account.
    async fn service_key(&self, key_id: &str) -> Result<Option<ServiceKeyState>, Self::Error>;
    /// Whether a service account has this identifier (an unknown account is told apart from an unknown key).
    async fn service_account_exists(&self, email: &str) -> Result<bool, Self::Error>;
    /// A registered API by its id, with its introspection secrets' hashes. None by default (a deployment without
    /// registered APIs).
    async fn resource(&self, _id: &str) -> Result<Option<crate::resource::Resource>, Self::Error> {
        Ok(None)
    }
    /// Notes that a grant was used at `now` (its "last used" day on the account page); must not write on the
    /// request path. Nothing by default.
    fn grant_used(&self, _id: &GrantId, _now: UnixTime) {}
}

/// A token request as the handler read it.
#[derive(Clone, Copy)]
pub struct TokenCall<'a> {
    /// The form body.
    pub form: &'a Form<'a>,
    /// The `Authorization` header; more than one is an error, raised after the code-reuse check.
    pub authorization: Result<Option<&'a str>, &'a OAuthError>,
    /// The values of the `DPoP` headers, as bytes.
    pub dpop: &'a [&'a [u8]],
    /// When the request came.
    pub now: UnixTime,
}

/// What a grant type's checks run with, once the shared checks passed.
#[derive(Debug, Clone, Copy)]
pub struct Checked<'a> {
    /// The authenticated client.
    pub client: &'a Client,
    /// The request's DPoP proof, past its stateless checks.
    pub proof: Option<&'a dpop::Proof>,
    /// When the request came.
    pub now: UnixTime,
    /// The resources the access token is asked for (RFC 8707), to narrow it to.
    pub resources: &'a [&'a str],
}

/// A token response, with the client it was issued to.
#[derive(Debug)]
pub struct Issued {
    /// The authenticated client (none for a service account's assertion).
    pub client: Option<Client>,
    /// The response body.
    pub response: TokenResponse,
}

/// The token endpoint (RFC 6749 §3.2), in order: a reused code first, then the request, the client, App Check,
/// the DPoP proof's stateless checks, and the grant type's own checks.
pub async fn token<P: Ports>(ports: &P, call: TokenCall<'_>) -> Result<Issued, P::Error> {
    let now = call.now;
    if call.form.get("grant_type") == Some(service_account::JWT_BEARER) {
        return Ok(Issued { client: None, response: jwt_bearer::run(ports, call.form, now).await? });
    }
    let code = presented_code(ports, call.form, now).await?;
    let shared = async {
        let authorization = call.authorization.map_err(Clone::clone)?;
        let request = token::parse(call.form, authorization)?;
        let client = authenticate(ports, &request.client).await?;
        ports.app_check(&client, now).await?;
        let proof = proof::read(call.dpop, &ports.settings(), now)?;
        Ok::<_, P::Error>((request, client, proof))
    };
    let (request, client, proof) = match shared.await {
        Ok(checked) => checked,
        Err(e) => return Err(exchange::settle(ports, code.as_ref().and_then(|c| c.unasked()), e, now).await),
    };
    let resources = call.form.all("resource");
    let checked = Checked { client: &client, proof: proof.as_ref(), now, resources: &resources };
    let response = match request.grant {
        TokenGrant::AuthorizationCode { code: value, code_verifier, redirect_uri } => {
            let exchange = exchange::Exchange {
                code: &value,
                presented: code,
                verifier: code_verifier.as_ref(),
                redirect_uri: &redirect_uri,
            };
            exchange::run(ports, exchange, checked).await?
        }
        TokenGrant::DeviceCode { device_code } => device::run(ports, &device_code, checked).await?,
        TokenGrant::RefreshToken { refresh_token, scope } => {
            let refresh = refresh::Refresh { token: refresh_token.expose(), scope: scope.as_deref() };
            refresh::run(ports, refresh, checked).await?
        }
    };
    Ok(Issued { client: Some(client), response })
}

/// A code presented again revokes what it issued, whatever else is wrong with the request (client
/// authentication, the DPoP proof, other parameters): so this check comes first for a code the store is asked
/// about. A sealed code ([`crate::auth_code`]) is opened instead, without the store: whether it was used is known
/// when it is spent, or, should a check fail first, from the store then ([`exchange::settle`]). Returns the code's
/// record when the request is a code exchange and the code is known.
async fn presented_code<P: Ports>(
    ports: &P,
    form: &Form<'_>,
    now: UnixTime,
) -> Result<Option<exchange::Presented>, P::Error> {
    let (Some("authorization_code"), Some(code)) = (form.get("grant_type"), form.get("code")) else {
        return Ok(None);
    };
    if let Some(record) = ports.with_mac_keys(|keys| auth_code::open(keys, code)) {
        return Ok(Some(exchange::Presented { record, sealed: true }));
    }
    let code_hash = secret::hash(code);
    // A device code's authorization code is redeemed by the device grant alone: sent here, it is unknown, and
    // revokes nothing.
    let record = ports.code(&code_hash).await?.filter(|r| r.redirect_uri != crate::device::REDIRECT_URI);
    if record.as_ref().is_some_and(|r| r.used) {
        return Err(code_reused(ports, &code_hash, now).await);
    }
    Ok(record.map(|record| exchange::Presented { record, sealed: false }))
}

/// A code presented again: everything issued from it is revoked (RFC 6749 §4.1.2).
async fn code_reused<P: Ports>(ports: &P, code_hash: &[u8], now: UnixTime) -> P::Error {
    match ports.revoke_grants_of_code(code_hash, now).await {
        Ok(_) => {
            OAuthError::invalid_grant("The authorization code was already used. Tokens issued from it are revoked.")
                .into()
        }
        Err(e) => e,
    }
}

/// Finds the client and checks its secret, if one was sent (RFC 6749 §2.3.1).
pub async fn authenticate<P: Ports>(ports: &P, auth: &ClientAuth) -> Result<Client, P::Error> {
    let client = ports
        .client(&auth.client_id)
        .await?
        .ok_or_else(|| OAuthError::new(ErrorCode::InvalidClient, "The OAuth client was not found."))?;
    if client.deleted_at.is_some() {
        return Err(OAuthError::new(ErrorCode::InvalidClient, "The OAuth client was deleted.").into());
    }
    auth.check_secret(&client)?;
    // Counted once the client is known and its secret, if sent, is right: a wrong secret spends none of the
    // client's budget (the address's limit holds those back).
    ports.admit_client(&client.client_id)?;
    Ok(client)
}

/// An access token's claims: its MAC checked at `at`. A key id this instance does not know (a rotation made
/// elsewhere) reloads the key ring once.
pub async fn access_claims<P: Ports>(
    ports: &P,
    token: &str,
    at: UnixTime,
    now: UnixTime,
) -> Result<Result<AccessClaims, AccessTokenError>, P::Error> {
    let verify = || ports.with_mac_keys(|keys| access_token::verify(keys, token, at));
    let mut result = verify();
    if result == Err(AccessTokenError::UnknownKey) && ports.reload_keys(now).await? {
        result = verify();
    }
    Ok(result)
}

/// The grant a refresh token belongs to: found through the grant id the token carries (by hash for a token of
/// the earlier form), and only when the token's hash is the grant's, compared in constant time.
pub async fn grant_of_refresh<P: Ports>(ports: &P, token: &str) -> Result<Option<GrantState>, P::Error> {
    let hash = secret::hash(token);
    let found = grant_named(ports, token, &hash).await?;
    Ok(found.filter(|g| secret::ct_eq(&g.grant.refresh_hash, &hash)))
}

/// The grant a refresh token names (by its id, or for a token of the earlier form by `hash`, the token's), whether
/// or not the token is the grant's: a rotated grant's retired tokens name it too.
pub async fn grant_named<P: Ports>(ports: &P, token: &str, hash: &[u8]) -> Result<Option<GrantState>, P::Error> {
    match refresh_token::grant_id(token) {
        Some(id) => ports.grant(&id).await,
        None => ports.legacy_grant_by_refresh(hash).await,
    }
}

/// The claims of a JWT access token (RFC 9068 §2.2) but its issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtAccessClaims<'a> {
    /// `aud`: the one API the token is for.
    pub audience: &'a str,
    /// `sub`: the user.
    pub subject: &'a str,
    /// `client_id`.
    pub client_id: &'a str,
    /// `scope`, space-separated.
    pub scope: String,
    /// `iat`.
    pub issued_at: UnixTime,
    /// `exp`.
    pub expires_at: UnixTime,
    /// `jti`: unique per token.
    pub id: String,
    /// `auth_time`, when known (a code exchange's).
    pub auth_time: Option<UnixTime>,
    /// Whether to sign it RS256 (the API asked for it), else ES256.
    pub rs256: bool,
}

/// Mints an access token for a grant; a time-limited grant caps its lifetime. A token whose scopes are all of one
/// registered API that asked for JWTs is a JWT (RFC 9068) with that API as its audience; any other is latchkey's
/// opaque MAC'd token. Returns it with its lifetime.
async fn mint<P: Ports>(
    ports: &P,
    grant: &Grant,
    scopes: ScopeSet,
    auth_time: Option<UnixTime>,
    now: UnixTime,
) -> Result<(String, u64), P::Error> {
    let settings = ports.settings();
    let mut expires_at = now.plus(settings.access_token_lifetime);
    if let Some(end) = grant.expires_at {
        expires_at = expires_at.min(end);
    }
    if let Some(api) = settings.scopes.sole_api(scopes).filter(|api| api.jwt) {
        expires_at = expires_at.min(now.plus(settings.jwt_access_token_lifetime));
        let claims = JwtAccessClaims {
            audience: &api.uri,
            subject: &grant.user_id,
            client_id: &grant.client_id,
            scope: settings.scopes.format(scopes),
            issued_at: now,
            expires_at,
            id: secret::random_b64(16, ports.random()),
            auth_time,
            rs256: api.rs256,
        };
        return Ok((ports.jwt_access_token(&claims).await?, now.until(expires_at)));
    }
    let claims = AccessClaims { holder: Holder::Grant(grant.id), expires_at, scopes };
    Ok((sign(ports, &claims)?, now.until(expires_at)))
}

/// Mints an access token with the signing MAC key.
fn sign<P: Ports>(ports: &P, claims: &AccessClaims) -> Result<String, OAuthError> {
    let token = ports.with_mac_keys(|keys| keys.first().map(|key| access_token::mint(key, claims, ports.random())));
    token.ok_or_else(|| OAuthError::new(ErrorCode::ServerError, "No key to sign access tokens."))
}

#[cfg(test)]
mod tests;
