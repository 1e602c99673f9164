//! The issuer's keys, cached: fetched from the `jwks_uri` when first needed, and again when a token names a key
//! that is not known yet (a rotation), but at most once per interval, so that tokens with made-up `kid`s cannot
//! make the verifier hammer the issuer (nor tokens arriving while the issuer's keys cannot be fetched at all).
//! A failed fetch keeps the keys held.

use super::jws::Alg;
use super::keys::{KeySet, PublicKey};
use super::JoseError;
use crate::clock::Clock;
use crate::http::{HttpClient, HttpRequest};
use crate::Error;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often an unknown `kid` may make the keys be fetched again, by default.
pub const DEFAULT_MIN_REFETCH: Duration = Duration::from_secs(60);

/// The keys, and when a token last made them be fetched.
#[derive(Default)]
struct Cached {
    keys: KeySet,
    /// When a token last made the cache try to fetch keys while it held none.
    last_cold_fetch: Option<i64>,
    /// When a token with an unknown `kid` last made the cache fetch the keys again.
    last_refetch: Option<i64>,
}

/// The cache of one issuer's keys.
pub(crate) struct KeyCache {
    jwks_uri: String,
    http: Arc<dyn HttpClient>,
    clock: Arc<dyn Clock>,
    min_refetch: Duration,
    cached: Mutex<Cached>,
    /// Held while fetching, so that concurrent tokens with a new `kid` wait for one fetch.
    fetching: tokio::sync::Mutex<()>,
}

impl KeyCache {
    /// An empty cache of the keys at `jwks_uri`.
    pub(crate) fn new(
        jwks_uri: String,
        http: Arc<dyn HttpClient>,
        clock: Arc<dyn Clock>,
        min_refetch: Duration,
    ) -> Self {
        Self {
            jwks_uri,
            http,
            clock,
            min_refetch,
            cached: Mutex::new(Cached::default()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// The same cache reading the time from `clock`.
    pub(crate) fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Self { clock, ..self }
    }

    /// The same cache refetching for an unknown `kid` at most once per `min_refetch`.
    pub(crate) fn with_min_refetch(self, min_refetch: Duration) -> Self {
        Self { min_refetch, ..self }
    }

    /// The URL the keys are fetched from.
    pub(crate) fn jwks_uri(&self) -> &str {
        &self.jwks_uri
    }

    /// The key named `kid` for `alg`, fetching the keys when `kid` is unknown, unless a token made the cache
    /// fetch them within the interval.
    pub(crate) async fn key(&self, kid: &str, alg: Alg) -> Result<PublicKey, JoseError> {
        if let Some(found) = self.lookup(kid, alg) {
            return found;
        }
        let _one_fetch = self.fetching.lock().await;
        if let Some(found) = self.lookup(kid, alg) {
            return found;
        }
        let unknown = || JoseError::Key(format!("no key of the issuer is named {kid}"));
        let now = self.clock.now();
        let interval = i64::try_from(self.min_refetch.as_secs()).unwrap_or(i64::MAX);
        let cold = {
            let mut cached = self.lock();
            let cold = cached.keys.is_empty();
            let last = if cold { &mut cached.last_cold_fetch } else { &mut cached.last_refetch };
            if last.is_some_and(|t| now.saturating_sub(t) < interval) {
                return Err(if cold {
                    JoseError::KeysUnavailable("the issuer's keys could not be fetched a moment ago".into())
                } else {
                    unknown()
                });
            }
            *last = Some(now);
            cold
        };
        if let Err(e) = self.fetch().await {
            let what = if cold { "no key is held" } else { "the token names an unknown key" };
            return Err(JoseError::KeysUnavailable(format!("{what} and the issuer's keys could not be fetched: {e}")));
        }
        self.lookup(kid, alg).unwrap_or_else(|| Err(unknown()))
    }

    /// Fetches the keys now, whatever the interval (for an app that wants them before the first token).
    pub(crate) async fn refresh(&self) -> Result<(), Error> {
        let _one_fetch = self.fetching.lock().await;
        self.fetch().await
    }

    /// Fetches the keys and replaces the cached ones; on failure the cached ones stay.
    async fn fetch(&self) -> Result<(), Error> {
        let request = HttpRequest {
            method: "GET",
            url: self.jwks_uri.clone(),
            headers: vec![("accept".into(), "application/jwk-set+json, application/json".into())],
            body: Vec::new(),
        };
        let response = self.http.send(request).await?;
        if response.status != 200 {
            return Err(Error::Protocol(format!("the JWKS at {} answered HTTP {}", self.jwks_uri, response.status)));
        }
        let keys = KeySet::from_json(&response.body)
            .map_err(|e| Error::Protocol(format!("the JWKS at {}: {e}", self.jwks_uri)))?;
        if keys.is_empty() {
            return Err(Error::Protocol(format!("the JWKS at {} holds no signing key", self.jwks_uri)));
        }
        self.lock().keys = keys;
        Ok(())
    }

    /// The cached key, if `kid` is known.
    fn lookup(&self, kid: &str, alg: Alg) -> Option<Result<PublicKey, JoseError>> {
        self.lock().keys.get(kid, alg).map(|r| r.cloned())
    }

    /// The cache's state; a panic elsewhere while it was held leaves it usable.
    fn lock(&self) -> std::sync::MutexGuard<'_, Cached> {
        self.cached.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
