//! The receiver of one app's SETs from one issuer: verifies each, deduplicates by `jti`, and hands over the
//! typed event.

use super::claims::{self, Received};
use super::dedupe::SeenJtis;
use super::error::SetError;
use super::ssf_configuration::SsfConfiguration;
use crate::clock::{Clock, SystemClock};
use crate::http::HttpClient;
use crate::jose::jws;
use crate::jose::key_cache::KeyCache;
use crate::Error;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use crate::jose::key_cache::DEFAULT_MIN_REFETCH;

/// How many `jti`s the receiver remembers, by default.
pub const DEFAULT_DEDUPE_CAPACITY: usize = 10_000;

/// Receives the Security Event Tokens an issuer sends one app (RFC 8417), pushed (RFC 8935) or polled
/// (RFC 8936).
///
/// A SET is accepted when its header says `typ: secevent+jwt` and `alg: RS256` (or `ES256`), its `kid` names a
/// key of the issuer's JWKS and the signature verifies, its `iss` is the issuer, its `aud` the app's client
/// id, and it has a `jti`, an `iat`, a `sub_id` and exactly one event. The keys are cached; a `kid` not in
/// the cache makes the receiver fetch them again, at most once per interval.
///
/// `jti`s are deduplicated in memory (the last [`DEFAULT_DEDUPE_CAPACITY`]), so one process handles a retried
/// delivery once. A receiver running as several instances should deduplicate by [`SecurityEvent::jti`] in its
/// own shared store as well.
///
/// [`SecurityEvent::jti`]: super::SecurityEvent::jti
pub struct SetReceiver {
    issuer: String,
    client_id: String,
    keys: KeyCache,
    seen: Mutex<SeenJtis>,
    pub(crate) http: Arc<dyn HttpClient>,
}

impl std::fmt::Debug for SetReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetReceiver")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("jwks_uri", &self.keys.jwks_uri())
            .finish()
    }
}

impl SetReceiver {
    /// A receiver whose keys are at the `jwks_uri` of the issuer's `/.well-known/ssf-configuration`.
    pub async fn discover(issuer: &str, client_id: &str, http: Arc<dyn HttpClient>) -> Result<Self, Error> {
        let configuration = SsfConfiguration::fetch(http.as_ref(), issuer).await?;
        Ok(Self::new(issuer, client_id, &configuration.jwks_uri, http))
    }

    /// A receiver of the SETs `issuer` sends the app `client_id`, signed with the keys at `jwks_uri`. The keys
    /// are fetched when the first SET arrives (or by [`SetReceiver::refresh_keys`]).
    pub fn new(issuer: &str, client_id: &str, jwks_uri: &str, http: Arc<dyn HttpClient>) -> Self {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        Self {
            issuer: issuer.trim_end_matches('/').to_owned(),
            client_id: client_id.to_owned(),
            keys: KeyCache::new(jwks_uri.to_owned(), http.clone(), clock, DEFAULT_MIN_REFETCH),
            seen: Mutex::new(SeenJtis::new(DEFAULT_DEDUPE_CAPACITY)),
            http,
        }
    }

    /// The same receiver fetching the keys again for an unknown `kid` at most once per `interval` (60 s by
    /// default).
    pub fn with_min_refetch_interval(self, interval: Duration) -> Self {
        Self { keys: self.keys.with_min_refetch(interval), ..self }
    }

    /// The same receiver remembering the last `capacity` `jti`s (10 000 by default).
    pub fn with_dedupe_capacity(self, capacity: usize) -> Self {
        Self { seen: Mutex::new(SeenJtis::new(capacity)), ..self }
    }

    /// The same receiver reading the time from `clock` (for the refetch interval).
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Self { keys: self.keys.with_clock(clock), ..self }
    }

    /// The issuer whose SETs are accepted.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The client id SETs must be addressed to.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// Where the issuer's keys are fetched from.
    pub fn jwks_uri(&self) -> &str {
        self.keys.jwks_uri()
    }

    /// Fetches the issuer's keys now (at start-up, to fail early); on failure the keys held are kept.
    pub async fn refresh_keys(&self) -> Result<(), Error> {
        self.keys.refresh().await
    }

    /// Verifies one SET (the body of a push, `application/secevent+jwt`, or one SET of a poll) and returns its
    /// event, or [`Received::Duplicate`] when its `jti` was received already.
    ///
    /// A push endpoint answers `202 Accepted` with an empty body to `Ok` (a duplicate too), and
    /// [`SetError::status`] with [`SetError::response_body`] as JSON to an error (RFC 8935 §2.2-2.3). The `jti`
    /// counts as received from here: if the app then fails to act on the event and answers with an error so
    /// that the SET is sent again, it calls [`SetReceiver::forget`] first.
    pub async fn receive(&self, set: impl AsRef<[u8]>) -> Result<Received, SetError> {
        let jws = jws::parse(set.as_ref(), "secevent+jwt")?;
        let key = self.keys.key(&jws.kid, jws.alg).await?;
        key.verify(jws.alg, jws.signing_input, &jws.signature)?;
        let event = claims::validate(&jws.payload, &self.issuer, &self.client_id)?;
        if self.seen().insert(&event.jti) {
            Ok(Received::Event(event))
        } else {
            Ok(Received::Duplicate { jti: event.jti })
        }
    }

    /// Forgets that the SET `jti` was received, so that its next delivery is handed over again.
    pub fn forget(&self, jti: &str) {
        self.seen().remove(jti);
    }

    /// The `jti`s received; a panic elsewhere while they were held leaves them usable.
    fn seen(&self) -> std::sync::MutexGuard<'_, SeenJtis> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
