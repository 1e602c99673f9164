//! The token endpoint's rules: request parsing, client authentication (RFC 6749 §2.3.1), the code exchange
//! checks (§4.1.3, RFC 7636 §4.6) and the refresh checks (§6).

use crate::access_token::GrantId;
use crate::client::Client;
use crate::pkce::{self, ChallengeMethod};
use crate::scope::{ScopeRegistry, ScopeSet};
use crate::secret::Secret;
use crate::time::UnixTime;
use crate::{ErrorCode, OAuthError};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// An authorization code as stored (its hash is the key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthCode {
    /// SHA-256 of the code.
    pub code_hash: Vec<u8>,
    /// The client the code was issued to.
    pub client_id: String,
    /// The user who consented.
    pub user_id: String,
    /// The redirect URI of the authorization request, exactly.
    pub redirect_uri: String,
    /// The scopes the user granted.
    pub scopes: ScopeSet,
    /// The PKCE challenge.
    pub challenge: Option<(ChallengeMethod, String)>,
    /// The OpenID Connect nonce, for the id_token.
    pub nonce: Option<String>,
    /// When the user signed in.
    pub auth_time: UnixTime,
    /// When the code stops being valid.
    pub expires_at: UnixTime,
    /// Whether the code was already exchanged.
    pub used: bool,
    /// When the user chose time-based access, how long the grant lasts, in seconds.
    pub grant_lifetime: Option<i64>,
}

/// A grant: what a user allowed a client, held by one refresh token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The grant's id; access tokens name it.
    pub id: GrantId,
    /// The client.
    pub client_id: String,
    /// The user.
    pub user_id: String,
    /// The granted scopes.
    pub scopes: ScopeSet,
    /// SHA-256 of the refresh token.
    pub refresh_hash: Vec<u8>,
    /// The JWK thumbprint the refresh token is bound to (DPoP).
    pub dpop_jkt: Option<String>,
    /// When the grant was made.
    pub created_at: UnixTime,
    /// When a time-limited grant ends.
    pub expires_at: Option<UnixTime>,
    /// When the grant was revoked (or invalidated by a limit).
    pub revoked_at: Option<UnixTime>,
    /// SHA-256 of the code it was made from.
    pub code_hash: Vec<u8>,
}

impl Grant {
    /// Whether the grant still holds at `now`.
    pub fn is_active(&self, now: UnixTime) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|e| now < e)
    }
}

/// A grant with what decides whether it may still be used, as the store reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantState {
    /// The grant.
    pub grant: Grant,
    /// When its user was disabled (a deleted user takes their grants along).
    pub user_disabled_at: Option<UnixTime>,
    /// When its client was deleted.
    pub client_deleted_at: Option<UnixTime>,
    /// Whether the client's project has the data API enabled.
    pub api_enabled: bool,
}

impl GrantState {
    /// Whether its refresh token rotates on every refresh (RFC 9700 §4.14.2): a token not bound by DPoP, of a
    /// client whose tokens rotate ([`Client::rotates_refresh_tokens`]).
    pub fn rotates(&self, client: &Client) -> bool {
        self.grant.dpop_jkt.is_none() && client.rotates_refresh_tokens()
    }
}

impl GrantState {
    /// Whether tokens of this grant work at `now`: the grant holds, its user is enabled and its client not
    /// deleted. The one place this is decided (refresh, revocation's owner check and the data API ask here).
    pub fn is_usable(&self, now: UnixTime) -> bool {
        self.grant.is_active(now) && self.user_disabled_at.is_none() && self.client_deleted_at.is_none()
    }
}

/// How the client authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// `client_id` alone.
    None,
    /// `client_secret` in the body.
    ClientSecretPost,
    /// HTTP Basic.
    ClientSecretBasic,
}

/// The client's identification on a token or revocation request.
#[derive(Debug)]
pub struct ClientAuth {
    /// The client id.
    pub client_id: String,
    /// The secret, when one was sent.
    pub secret: Option<Secret>,
    /// How it was sent.
    pub method: AuthMethod,
}

impl ClientAuth {
    /// Checks the secret, if one was sent, against the client's enabled secrets in constant time. A wrong (or
    /// disabled) secret is `invalid_client`; no secret is fine (`docs/decisions.md`, "Clients": issued to every
    /// client, never required).
    pub fn check_secret(&self, client: &Client) -> Result<(), OAuthError> {
        match &self.secret {
            Some(s) if !client.accepts_secret(s.expose()) => {
                Err(OAuthError::new(ErrorCode::InvalidClient, "The client secret is wrong."))
            }
            _ => Ok(()),
        }
    }
}

/// What is asked of the token endpoint.
#[derive(Debug)]
pub enum TokenGrant {
    /// `grant_type=authorization_code`.
    AuthorizationCode {
        /// The code.
        code: Secret,
        /// The PKCE verifier.
        code_verifier: Option<Secret>,
        /// The redirect URI of the authorization request.
        redirect_uri: String,
    },
    /// `grant_type=urn:ietf:params:oauth:grant-type:device_code` (RFC 8628).
    DeviceCode {
        /// The device code.
        device_code: Secret,
    },
    /// `grant_type=refresh_token`.
    RefreshToken {
        /// The refresh token.
        refresh_token: Secret,
        /// Scopes to narrow the new access token to.
        scope: Option<String>,
    },
}

/// A parsed token request.
#[derive(Debug)]
pub struct TokenRequest {
    /// The client.
    pub client: ClientAuth,
    /// The grant.
    pub grant: TokenGrant,
}

/// The most parameters a `/token` or `/revoke` form may carry. A token request has at most seven; a form with more
/// is refused before anything else is read of it.
pub const MAX_FORM_PAIRS: usize = 64;

/// Form pairs with repeated parameters refused (RFC 6749 §3.2: parameters must not be included more than once),
/// and no more than [`MAX_FORM_PAIRS`] of them.
pub struct Form<'a> {
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Form<'a> {
    /// Wraps decoded pairs; more than [`MAX_FORM_PAIRS`] or a repeated name is `invalid_request`.
    pub fn new(pairs: Vec<(&'a str, &'a str)>) -> Result<Self, OAuthError> {
        if pairs.len() > MAX_FORM_PAIRS {
            return Err(OAuthError::invalid_request(format!("The form has more than {MAX_FORM_PAIRS} parameters.")));
        }
        if let Some(k) = first_repeated(&pairs) {
            return Err(OAuthError::invalid_request(format!("Parameter sent more than once: {}", cap(k))));
        }
        Ok(Self { pairs })
    }

    /// A parameter's value; an empty value counts as absent (RFC 6749 §3.1).
    pub fn get(&self, name: &str) -> Option<&'a str> {
        self.pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v).filter(|v| !v.is_empty())
    }

    /// Every value of a parameter that may be repeated (RFC 8707's `resource`), empty ones included (for the
    /// caller to refuse: an empty resource is no URI).
    pub fn all(&self, name: &str) -> Vec<&'a str> {
        self.pairs.iter().filter(|(k, _)| *k == name).map(|(_, v)| *v).collect()
    }

    /// A required parameter.
    pub fn require(&self, name: &str) -> Result<&'a str, OAuthError> {
        self.get(name).ok_or_else(|| OAuthError::invalid_request(format!("Missing required parameter: {name}")))
    }
}

/// Reads the client's identification from the body and the `Authorization` header.
pub fn client_auth(form: &Form<'_>, authorization: Option<&str>) -> Result<ClientAuth, OAuthError> {
    let body_id = form.get("client_id");
    let body_secret = form.get("client_secret");
    if let Some(header) = authorization {
        let (id, secret) = parse_basic(header)?;
        if body_secret.is_some() {
            return Err(OAuthError::invalid_request("Use one client authentication method, not two."));
        }
        if body_id.is_some_and(|b| b != id) {
            return Err(OAuthError::invalid_request("client_id differs from the one in the Authorization header."));
        }
        return Ok(ClientAuth {
            client_id: id,
            secret: Some(Secret::new(secret)),
            method: AuthMethod::ClientSecretBasic,
        });
    }
    let client_id = form.require("client_id")?.to_owned();
    Ok(match body_secret {
        Some(s) => {
            ClientAuth { client_id, secret: Some(Secret::new(s.to_owned())), method: AuthMethod::ClientSecretPost }
        }
        None => ClientAuth { client_id, secret: None, method: AuthMethod::None },
    })
}

/// Parses `Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 §2.3.1).
fn parse_basic(header: &str) -> Result<(String, String), OAuthError> {
    let bad = || OAuthError::new(ErrorCode::InvalidClient, "Malformed Basic client authentication.");
    let (scheme, value) = header.trim().split_once(' ').ok_or_else(bad)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(bad());
    }
    let decoded = STANDARD.decode(value.trim()).map_err(|_| bad())?;
    let text = String::from_utf8(decoded).map_err(|_| bad())?;
    let (id, secret) = text.split_once(':').ok_or_else(bad)?;
    let decode = |s: &str| -> Result<String, OAuthError> {
        let plus = s.replace('+', " ");
        percent_decode(&plus).ok_or_else(bad)
    };
    let id = decode(id)?;
    if id.is_empty() {
        return Err(bad());
    }
    Ok((id, decode(secret)?))
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Parses a token request.
pub fn parse(form: &Form<'_>, authorization: Option<&str>) -> Result<TokenRequest, OAuthError> {
    let grant = match form.require("grant_type")? {
        "authorization_code" => TokenGrant::AuthorizationCode {
            code: Secret::new(form.require("code")?.to_owned()),
            code_verifier: form.get("code_verifier").map(|v| Secret::new(v.to_owned())),
            redirect_uri: form.require("redirect_uri")?.to_owned(),
        },
        crate::device::GRANT_TYPE => {
            TokenGrant::DeviceCode { device_code: Secret::new(form.require("device_code")?.to_owned()) }
        }
        "refresh_token" => TokenGrant::RefreshToken {
            refresh_token: Secret::new(form.require("refresh_token")?.to_owned()),
            scope: form.get("scope").map(str::to_owned),
        },
        _ => return Err(OAuthError::new(
            ErrorCode::UnsupportedGrantType,
            "Supported grant types: authorization_code, refresh_token, urn:ietf:params:oauth:grant-type:jwt-bearer, \
             urn:ietf:params:oauth:grant-type:device_code.",
        )),
    };
    Ok(TokenRequest { client: client_auth(form, authorization)?, grant })
}

/// The code-exchange checks, in order, once the code is found and known unused (RFC 6749 §4.1.3, RFC 7636 §4.6).
pub fn check_code(
    code: &AuthCode,
    client_id: &str,
    redirect_uri: &str,
    verifier: Option<&Secret>,
    now: UnixTime,
) -> Result<(), OAuthError> {
    code_is_the_clients(code, client_id)?;
    code_unexpired(code, now)?;
    same_redirect_uri(code, redirect_uri)?;
    pkce_verified(code, verifier)
}

/// The code was issued to the client exchanging it.
fn code_is_the_clients(code: &AuthCode, client_id: &str) -> Result<(), OAuthError> {
    if code.client_id != client_id {
        return Err(OAuthError::invalid_grant("The code was issued to another client."));
    }
    Ok(())
}

/// The code is within its lifetime.
pub(crate) fn code_unexpired(code: &AuthCode, now: UnixTime) -> Result<(), OAuthError> {
    if now >= code.expires_at {
        return Err(OAuthError::invalid_grant("The code has expired."));
    }
    Ok(())
}

/// The redirect URI is the authorization request's, exactly; a device code's authorization code is no code of the
/// authorization-code grant.
fn same_redirect_uri(code: &AuthCode, redirect_uri: &str) -> Result<(), OAuthError> {
    if code.redirect_uri == crate::device::REDIRECT_URI {
        return Err(OAuthError::invalid_grant("The authorization code is invalid or has expired."));
    }
    if code.redirect_uri != redirect_uri {
        return Err(OAuthError::invalid_grant("redirect_uri differs from the one of the authorization request."));
    }
    Ok(())
}

/// The PKCE verifier matches the challenge; a verifier without a challenge, or the reverse, is refused.
fn pkce_verified(code: &AuthCode, verifier: Option<&Secret>) -> Result<(), OAuthError> {
    match (&code.challenge, verifier) {
        (Some((method, challenge)), Some(v)) => pkce::verify(*method, challenge, v.expose()),
        (Some(_), None) => Err(OAuthError::invalid_grant("Missing code verifier.")),
        (None, Some(_)) => Err(OAuthError::invalid_grant(
            "A code_verifier was sent but the authorization request carried no code_challenge.",
        )),
        (None, None) => Ok(()),
    }
}

/// The scopes of the new access token on refresh: the intersection of `scope` with the grant's, ignoring
/// scopes never granted (`docs/decisions.md`, "Refresh tokens"). Nothing in common is `invalid_scope`.
pub fn narrow(registry: &ScopeRegistry, granted: ScopeSet, scope: Option<&str>) -> Result<ScopeSet, OAuthError> {
    let Some(scope) = scope else {
        return Ok(granted);
    };
    let asked = registry.parse_known(scope).intersection(granted);
    if asked.is_empty() {
        return Err(OAuthError::new(ErrorCode::InvalidScope, "None of the requested scopes was granted."));
    }
    Ok(asked)
}

/// The parameters a form may repeat: RFC 8707's `resource`.
const REPEATABLE: &str = "resource";

/// The first name that an earlier pair already had ([`REPEATABLE`] aside). A few pairs (every real request) are
/// compared with each other, which costs less than hashing them; more go through a set, so the check stays linear
/// in the pairs.
fn first_repeated<'a>(pairs: &[(&'a str, &str)]) -> Option<&'a str> {
    const COMPARED: usize = 12;
    if pairs.len() <= COMPARED {
        return pairs
            .iter()
            .enumerate()
            .find(|(i, (k, _))| *k != REPEATABLE && pairs[..*i].iter().any(|(p, _)| p == k))
            .map(|(_, (k, _))| *k);
    }
    let mut seen = std::collections::HashSet::with_capacity(pairs.len());
    pairs.iter().find(|(k, _)| *k != REPEATABLE && !seen.insert(*k)).map(|(k, _)| *k)
}

fn cap(s: &str) -> String {
    s.chars().take(64).collect()
}

#[cfg(test)]
mod tests;
