//! JWT access tokens (RFC 9068), verified by the API itself: the header and signature as every signed token the
//! SDK reads ([`crate::jose`]), then the claims RFC 9068 §2.2 requires.

use super::scope_list;
use crate::clock::{Clock, SystemClock};
use crate::http::HttpClient;
use crate::jose::claims::{audiences, numeric_date};
use crate::jose::key_cache::{KeyCache, DEFAULT_MIN_REFETCH};
use crate::jose::{jws, JoseError};
use crate::Error;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// How far the API's clock and the issuer's may disagree: a token is accepted up to this long after its `exp`,
/// and its `iat` (and `nbf`) may be up to this far in the future.
pub const CLOCK_LEEWAY: Duration = Duration::from_secs(60);

/// The `typ` of a JWT access token's header (RFC 9068 §2.1), with or without `application/`.
const TYP: &str = "at+jwt";

/// The claims of a verified JWT access token (RFC 9068 §2.2).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AccessTokenClaims {
    /// The issuer.
    pub iss: String,
    /// The user (or service account) the token acts for.
    pub sub: String,
    /// The resources the token is meant for; this API's URI is among them.
    pub aud: Vec<String>,
    /// The client the token was issued to.
    pub client_id: String,
    /// The scopes the token grants.
    pub scope: Vec<String>,
    /// When the token expires (Unix seconds).
    pub exp: i64,
    /// When the token was issued (Unix seconds).
    pub iat: i64,
    /// The token's unique id.
    pub jti: String,
    /// When the user last authenticated (Unix seconds), when known.
    pub auth_time: Option<i64>,
}

impl AccessTokenClaims {
    /// Whether the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scope.iter().any(|s| s == scope)
    }
}

/// Verifies the JWT access tokens an issuer makes for one API (RFC 9068).
///
/// A token is accepted when its header says `typ: at+jwt` (or `application/at+jwt`, in any case) and
/// `alg: ES256` or `RS256` (never `none` nor HMAC), its `kid` names a key of the issuer's JWKS and the signature
/// verifies, its `iss` is the issuer, its `aud` (one string or an array) names this API, it has not expired and
/// was not issued in the future (both with [`CLOCK_LEEWAY`]), and it has a `sub`, a `client_id` and a `jti`.
/// The keys are cached; a `kid` not in the cache makes the verifier fetch them again, at most once per interval
/// (60 s by default).
pub struct AccessTokenVerifier {
    issuer: String,
    audience: String,
    keys: KeyCache,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for AccessTokenVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessTokenVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("jwks_uri", &self.keys.jwks_uri())
            .finish()
    }
}

impl AccessTokenVerifier {
    /// A verifier of the tokens `issuer` makes for the API `audience` (its resource URI), signed with the keys at
    /// `jwks_uri` (latchkey's are at `{issuer}/oauth2/v3/certs`). The keys are fetched when the first token
    /// arrives (or by [`AccessTokenVerifier::refresh_keys`]).
    pub fn new(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        jwks_uri: impl Into<String>,
        http: Arc<dyn HttpClient>,
    ) -> Self {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        Self {
            issuer: issuer.into().trim_end_matches('/').to_owned(),
            audience: audience.into(),
            keys: KeyCache::new(jwks_uri.into(), http, clock.clone(), DEFAULT_MIN_REFETCH),
            clock,
        }
    }

    /// The same verifier fetching the keys again for an unknown `kid` at most once per `interval` (60 s by
    /// default).
    pub fn with_min_refetch_interval(self, interval: Duration) -> Self {
        Self { keys: self.keys.with_min_refetch(interval), ..self }
    }

    /// The same verifier reading the time from `clock` (for the expiry and the refetch interval).
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Self { keys: self.keys.with_clock(clock.clone()), clock, ..self }
    }

    /// The issuer whose tokens are accepted.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The API's resource URI tokens must be meant for.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// Where the issuer's keys are fetched from.
    pub fn jwks_uri(&self) -> &str {
        self.keys.jwks_uri()
    }

    /// Fetches the issuer's keys now (at start-up, to fail early); on failure the keys held are kept.
    pub async fn refresh_keys(&self) -> Result<(), Error> {
        self.keys.refresh().await
    }

    /// Verifies `token` (the credentials of `Authorization: Bearer`) and returns its claims.
    ///
    /// [`Error::InvalidToken`] means the token is not valid for this API (answer `401` with
    /// `error="invalid_token"`); [`Error::Transport`] that the token names a key the verifier does not hold and
    /// the issuer's keys could not be fetched (answer `503`: the token may be valid).
    pub async fn verify(&self, token: &str) -> Result<AccessTokenClaims, Error> {
        let jws = jws::parse(token.as_bytes(), TYP).map_err(refused)?;
        let key = self.keys.key(&jws.kid, jws.alg).await.map_err(refused)?;
        key.verify(jws.alg, jws.signing_input, &jws.signature).map_err(refused)?;
        self.validate(&jws.payload)
    }

    /// Reads and checks the claims of a token whose signature verified.
    fn validate(&self, payload: &[u8]) -> Result<AccessTokenClaims, Error> {
        let invalid = |why: String| Error::InvalidToken(why);
        let claims: Map<String, Value> =
            serde_json::from_slice(payload).map_err(|e| invalid(format!("the claims are not a JSON object: {e}")))?;
        let string = |name: &str| match claims.get(name) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            _ => Err(invalid(format!("the token has no {name}"))),
        };
        let date = |name: &str| numeric_date(claims.get(name));
        let iss = string("iss")?;
        if iss != self.issuer {
            return Err(invalid(format!("the token is issued by {iss}, not {}", self.issuer)));
        }
        let aud = audiences(claims.get("aud")).ok_or_else(|| invalid("the token has no aud".into()))?;
        if !aud.contains(&self.audience) {
            return Err(invalid(format!("the token is not meant for {}", self.audience)));
        }
        let exp = date("exp").ok_or_else(|| invalid("the token has no numeric exp".into()))?;
        let iat = date("iat").ok_or_else(|| invalid("the token has no numeric iat".into()))?;
        let now = self.clock.now();
        let leeway = i64::try_from(CLOCK_LEEWAY.as_secs()).unwrap_or(i64::MAX);
        if exp.saturating_add(leeway) <= now {
            return Err(invalid(format!("the token expired at {exp}")));
        }
        if iat > now.saturating_add(leeway) || date("nbf").is_some_and(|nbf| nbf > now.saturating_add(leeway)) {
            return Err(invalid("the token is not valid yet".into()));
        }
        Ok(AccessTokenClaims {
            iss,
            sub: string("sub")?,
            aud,
            client_id: string("client_id")?,
            scope: scope_list(claims.get("scope").and_then(Value::as_str)),
            exp,
            iat,
            jti: string("jti")?,
            auth_time: date("auth_time"),
        })
    }
}

/// The error for a token the JOSE checks refused: invalid, unless the keys could not be fetched.
fn refused(e: JoseError) -> Error {
    match e {
        JoseError::Malformed(d) | JoseError::Key(d) => Error::InvalidToken(d),
        JoseError::KeysUnavailable(d) => Error::Transport(d),
    }
}
