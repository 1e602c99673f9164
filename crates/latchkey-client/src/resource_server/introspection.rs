//! Token introspection (RFC 7662): the API asks latchkey whether a token is active and what it allows, and
//! keeps the active answers for a short while.

use super::introspection_cache::{cache_key, IntrospectionCache};
use super::scope_list;
use crate::client::oauth_error;
use crate::clock::{Clock, SystemClock};
use crate::http::{HttpClient, HttpRequest};
use crate::jose::claims::{audiences, numeric_date};
use crate::Error;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long an active answer is kept, by default (less when the token expires sooner).
pub const DEFAULT_MAX_CACHE: Duration = Duration::from_secs(60);

/// How many answers are kept, by default.
pub const DEFAULT_MAX_ENTRIES: usize = 10_000;

/// An introspection answer (RFC 7662 §2.2). For an inactive token only `active` is set: the server tells nothing
/// more about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Introspection {
    /// Whether the token is active: issued by latchkey, not expired, not revoked.
    pub active: bool,
    /// The scopes the token grants.
    pub scope: Vec<String>,
    /// The client the token was issued to.
    pub client_id: Option<String>,
    /// The user (or service account) the token acts for.
    pub sub: Option<String>,
    /// The resources (API URIs) the token is meant for (`aud`, one string or an array on the wire).
    pub aud: Vec<String>,
    /// The issuer.
    pub iss: Option<String>,
    /// When the token expires (Unix seconds).
    pub exp: Option<i64>,
    /// When the token was issued (Unix seconds).
    pub iat: Option<i64>,
    /// The token's type (`Bearer`, `DPoP`).
    pub token_type: Option<String>,
    /// The thumbprint of the key a DPoP-bound token is bound to (`cnf.jkt`, RFC 9449 §6.2): the API then also
    /// checks the DPoP proof that comes with it.
    pub cnf_jkt: Option<String>,
}

impl Introspection {
    /// Whether the token is active and grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.active && self.scope.iter().any(|s| s == scope)
    }

    /// Whether the token is active and meant for `resource` (this API's URI).
    pub fn audience_includes(&self, resource: &str) -> bool {
        self.active && self.aud.iter().any(|a| a == resource)
    }

    /// Reads an answer: a JSON object with a boolean `active`; the other members only when it is true.
    fn from_json(body: &[u8]) -> Result<Self, Error> {
        let answer: Map<String, Value> = serde_json::from_slice(body)
            .map_err(|e| Error::Protocol(format!("the introspection answer is not a JSON object: {e}")))?;
        let Some(active) = answer.get("active").and_then(Value::as_bool) else {
            return Err(Error::Protocol("the introspection answer has no boolean active".into()));
        };
        if !active {
            return Ok(Self::default());
        }
        let string = |name: &str| answer.get(name).and_then(Value::as_str).map(str::to_owned);
        Ok(Self {
            active,
            scope: scope_list(answer.get("scope").and_then(Value::as_str)),
            client_id: string("client_id"),
            sub: string("sub"),
            aud: audiences(answer.get("aud")).unwrap_or_default(),
            iss: string("iss"),
            exp: numeric_date(answer.get("exp")),
            iat: numeric_date(answer.get("iat")),
            token_type: string("token_type"),
            cnf_jkt: answer.get("cnf").and_then(|c| c.get("jkt")).and_then(Value::as_str).map(str::to_owned),
        })
    }
}

/// Asks latchkey's introspection endpoint about the tokens an API receives, as that API (its resource id and an
/// introspection secret, sent with HTTP Basic).
///
/// Active answers are cached in memory by the SHA-256 of the token (the token itself is never kept), for
/// [`DEFAULT_MAX_CACHE`] or until the token expires if sooner: a token revoked meanwhile is still seen active for
/// at most that long. Inactive answers are not cached. At most [`DEFAULT_MAX_ENTRIES`] answers are kept; when
/// full, the expired ones go first, then those that would expire soonest.
pub struct Introspector {
    endpoint: String,
    resource_id: String,
    secret: String,
    http: Arc<dyn HttpClient>,
    clock: Arc<dyn Clock>,
    max_cache: Duration,
    cache: Mutex<IntrospectionCache>,
}

impl std::fmt::Debug for Introspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspector")
            .field("endpoint", &self.endpoint)
            .field("resource_id", &self.resource_id)
            .field("max_cache", &self.max_cache)
            .finish_non_exhaustive()
    }
}

impl Introspector {
    /// An introspector asking `introspection_endpoint` (latchkey's is `{issuer}/introspect`) as the API
    /// `resource_id` with `secret`.
    pub fn new(
        introspection_endpoint: impl Into<String>,
        resource_id: impl Into<String>,
        secret: impl Into<String>,
        http: Arc<dyn HttpClient>,
    ) -> Self {
        Self {
            endpoint: introspection_endpoint.into(),
            resource_id: resource_id.into(),
            secret: secret.into(),
            http,
            clock: Arc::new(SystemClock),
            max_cache: DEFAULT_MAX_CACHE,
            cache: Mutex::new(IntrospectionCache::new(DEFAULT_MAX_ENTRIES)),
        }
    }

    /// The same introspector keeping an active answer at most `max_cache` (60 s by default; zero keeps none).
    pub fn with_max_cache(self, max_cache: Duration) -> Self {
        Self { max_cache, ..self }
    }

    /// The same introspector keeping at most `max_entries` answers (10 000 by default; zero keeps none).
    pub fn with_max_entries(self, max_entries: usize) -> Self {
        Self { cache: Mutex::new(IntrospectionCache::new(max_entries)), ..self }
    }

    /// The same introspector reading the time from `clock` (for the cache's lifetimes).
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Self { clock, ..self }
    }

    /// The introspection endpoint.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The API's resource id the introspector authenticates as.
    pub fn resource_id(&self) -> &str {
        &self.resource_id
    }

    /// What latchkey says about `token`: from the cache when an active answer for it is held and neither its
    /// cache lifetime nor the token's `exp` has passed, else asked. A non-200 answer is an error
    /// ([`Error::OAuth`] with `invalid_client` when the API's credentials are refused).
    pub async fn introspect(&self, token: &str) -> Result<Introspection, Error> {
        let key = cache_key(token);
        if let Some(cached) = self.lock().get(&key, self.clock.now()) {
            return Ok(cached);
        }
        let response = self.http.send(self.request(token)).await?;
        if response.status != 200 {
            return Err(oauth_error(&response, false));
        }
        let answer = Introspection::from_json(&response.body)?;
        if answer.active {
            let now = self.clock.now();
            let max = i64::try_from(self.max_cache.as_secs()).unwrap_or(i64::MAX);
            let until = now.saturating_add(max).min(answer.exp.unwrap_or(i64::MAX));
            self.lock().insert(key, answer.clone(), until, now);
        }
        Ok(answer)
    }

    /// The request: the token as a form, the API's credentials with HTTP Basic, each form-encoded first
    /// (RFC 6749 §2.3.1).
    fn request(&self, token: &str) -> HttpRequest {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let credentials = format!("{}:{}", encode(&self.resource_id), encode(&self.secret));
        HttpRequest {
            method: "POST",
            url: self.endpoint.clone(),
            headers: vec![
                ("authorization".into(), format!("Basic {}", STANDARD.encode(credentials))),
                ("content-type".into(), "application/x-www-form-urlencoded".into()),
                ("accept".into(), "application/json".into()),
            ],
            body: body.into_bytes(),
        }
    }

    /// The keys of the answers cached, to check that no token is kept.
    #[cfg(test)]
    pub(crate) fn cached_keys(&self) -> Vec<[u8; 32]> {
        self.lock().keys()
    }

    /// The cache; a panic elsewhere while it was held leaves it usable.
    fn lock(&self) -> std::sync::MutexGuard<'_, IntrospectionCache> {
        self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
