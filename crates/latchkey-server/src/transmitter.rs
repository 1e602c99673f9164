//! The push side of the security event transmitter (RFC 8935): a task per instance that leases due SETs from the
//! store's outbox, signs each when it sends it, POSTs it to the stream's receiver, and records what became of it.
//!
//! - Several instances share the outbox: a lease (`Streams::claim_deliveries`) keeps an event to one of them;
//!   one that dies mid-send leaves its lease to run out, and another sends the event again (at least once:
//!   receivers dedupe on `jti`, the same on every retry).
//! - A subject's events go in order: the store leases only the oldest pending one of each stream and subject.
//! - `202` (any 2xx) delivers; a `400` with an RFC 8935 error is final and recorded; anything else (5xx, 401,
//!   timeouts, connection errors) is retried with exponential backoff and full jitter, until the event is older
//!   than `events.max_age_secs` and is dead-lettered.
//! - The task never holds a request of the token endpoint: it has its own connections (`outbound`), its own
//!   timeouts, and store calls of its own.

use crate::config::EventsConfig;
use latchkey_admin::clock::OsRandom;
use latchkey_admin::keys::KeyRing;
use latchkey_core::events::{retry_delay, SetClaims};
use latchkey_core::secret::Random;
use latchkey_core::time::UnixTime;
use latchkey_store::{Delivery, DeliveryResult, KeyKind, Store, StreamRecord};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How many pushes an instance has in flight at most (each stream and subject has at most one).
const IN_FLIGHT: usize = 64;
/// How many of them one project's streams may hold: a project with many slow receivers leaves the rest to others.
const PER_PROJECT: usize = IN_FLIGHT / 4;
/// A receiver whose pushes failed this many times in a row (timeouts, refused connections, 5xx) is left alone for a
/// while (its circuit opens): a minute, doubling with each further failure, up to an hour.
const FAILURES_TO_OPEN: u32 = 3;
const OPEN_FIRST_SECS: i64 = 60;
const OPEN_MOST_SECS: i64 = 3600;
/// A lease lasts twice the push timeout and this much more, so that a send in flight is never leased again
/// meanwhile, and an instance killed mid-send holds its events only that long.
const LEASE_MARGIN_SECS: i64 = 5;
/// How often pending events are looked at for the age limit.
const DEAD_LETTER_EVERY_SECS: i64 = 60;
/// The media type of a pushed SET (RFC 8935 §2).
pub const SET_MEDIA_TYPE: &str = "application/secevent+jwt";

/// The transmitter of one instance.
#[derive(Clone)]
pub struct Transmitter {
    store: Arc<dyn Store>,
    keys: KeyRing,
    issuer: String,
    http: reqwest::Client,
    config: EventsConfig,
    clock: Arc<dyn latchkey_core::time::Clock>,
    /// Free places for pushes in flight.
    slots: Arc<tokio::sync::Semaphore>,
    /// Pushes in flight per project, and each stream's circuit.
    fairness: Arc<std::sync::Mutex<Fairness>>,
}

/// What keeps one tenant's receivers from holding everyone's pushes: pushes in flight per project, and the run of
/// failures of each stream's receiver.
#[derive(Default)]
struct Fairness {
    in_flight: HashMap<String, usize>,
    failures: HashMap<String, (u32, UnixTime)>,
}

impl Fairness {
    /// Forgets the circuits that closed long ago (their streams may be gone): the map holds only receivers failing
    /// lately.
    fn prune(&mut self, now: UnixTime) {
        self.failures.retain(|_, (_, until)| until.0 + OPEN_MOST_SECS > now.0);
    }

    /// When the stream's circuit closes again, if it is open at `now`.
    fn open_until(&self, stream_id: &str, now: UnixTime) -> Option<UnixTime> {
        self.failures.get(stream_id).map(|(_, until)| *until).filter(|until| *until > now)
    }

    /// Notes a push's result for its stream's circuit.
    fn note(&mut self, stream_id: &str, failed: bool, now: UnixTime) {
        if !failed {
            self.failures.remove(stream_id);
            return;
        }
        let (n, until) = self.failures.entry(stream_id.to_owned()).or_insert((0, now));
        *n += 1;
        if *n >= FAILURES_TO_OPEN {
            let doublings = (*n - FAILURES_TO_OPEN).min(6);
            *until = now.plus((OPEN_FIRST_SECS << doublings).min(OPEN_MOST_SECS));
        }
    }
}

impl Transmitter {
    /// A transmitter for the instance (its push client trusts `events.push_ca_file` beside the system's roots).
    pub fn new(
        store: Arc<dyn Store>,
        keys: KeyRing,
        issuer: String,
        config: EventsConfig,
        clock: Arc<dyn latchkey_core::time::Clock>,
    ) -> anyhow::Result<Self> {
        let timeout = Duration::from_secs(config.push_timeout_secs);
        let http =
            crate::outbound::push_client(config.push_ca_file.as_deref(), timeout, config.allow_insecure_loopback_push)?;
        let slots = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
        Ok(Self { store, keys, issuer, http, config, clock, slots, fairness: Arc::default() })
    }

    /// Runs until aborted: a pass every `events.worker_interval_ms` while events are pending (a read), the age
    /// limit once a minute.
    pub async fn run(self) {
        let mut tick = tokio::time::interval(Duration::from_millis(self.config.worker_interval_ms));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut aged_at: Option<UnixTime> = None;
        loop {
            tick.tick().await;
            let now = self.clock.now();
            if aged_at.is_none_or(|at| now.0.saturating_sub(at.0) >= DEAD_LETTER_EVERY_SECS) {
                aged_at = Some(now);
                self.dead_letter(now).await;
            }
            match self.store.pending_deliveries(now).await {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "looking for due security events");
                    continue;
                }
            }
            if let Err(e) = self.pass().await {
                tracing::warn!(error = %e, "leasing security events");
            }
        }
    }

    async fn dead_letter(&self, now: UnixTime) {
        match self.store.dead_letter(now, UnixTime(now.0 - self.config.max_age_secs)).await {
            Ok(n) if n > 0 => {
                crate::metrics::DELIVERIES.inc_by("dead_lettered", n);
                tracing::warn!(events = n, "security events dead-lettered: not delivered in time")
            }
            Err(e) => tracing::warn!(error = %e, "dead-lettering security events"),
            _ => {}
        }
    }

    /// One pass: leases as many due events as there are free places (the store hands them out in turns, project
    /// by project) and starts their pushes, which go on without it (a slow receiver holds only its own places,
    /// never the next pass). An event of a project holding its share of the places already, or of a receiver
    /// whose circuit is open, is given back unsent. Returns how many it leased.
    pub async fn pass(&self) -> latchkey_store::StoreResult<usize> {
        let free = self.slots.available_permits();
        if free == 0 {
            return Ok(0);
        }
        let now = self.clock.now();
        let timeout = i64::try_from(self.config.push_timeout_secs).unwrap_or(600);
        let lease = now.plus(2 * timeout + LEASE_MARGIN_SECS);
        let due = self.store.claim_deliveries(now, lease, i64::try_from(free).unwrap_or(1)).await?;
        let mut streams: HashMap<String, Option<Arc<StreamRecord>>> = HashMap::new();
        let mut projects: HashMap<String, Option<String>> = HashMap::new();
        let mut released = Vec::new();
        lock(&self.fairness).prune(now);
        for d in &due {
            if !streams.contains_key(&d.stream_id) {
                match self.store.stream(&d.stream_id).await {
                    Ok(s) => {
                        streams.insert(d.stream_id.clone(), s.map(Arc::new));
                    }
                    // The lease runs out and the event is sent then: a store error loses nothing.
                    Err(e) => {
                        tracing::warn!(error = %e, "reading a stream for its security events");
                        continue;
                    }
                }
            }
            let Some(stream) = streams.get(&d.stream_id).cloned() else { continue };
            let project = match &stream {
                Some(s) => self.project_of(&mut projects, &s.client_id).await,
                None => None,
            };
            let admitted = {
                let mut f = lock(&self.fairness);
                if let Some(until) = f.open_until(&d.stream_id, now) {
                    released.push((d.id, until));
                    None
                } else {
                    let key = project.unwrap_or_default();
                    let n = f.in_flight.entry(key.clone()).or_insert(0);
                    if *n >= PER_PROJECT {
                        released.push((d.id, now));
                        None
                    } else {
                        *n += 1;
                        Some(key)
                    }
                }
            };
            let Some(project) = admitted else { continue };
            // The project's count comes down when the push ends, however it ends (a panic included).
            let pushing = Pushing(Arc::clone(&self.fairness), project);
            let Ok(slot) = self.slots.clone().try_acquire_owned() else {
                released.push((d.id, now));
                continue;
            };
            let (this, d) = (self.clone(), d.clone());
            tokio::spawn(async move {
                let result = match stream {
                    Some(s) => this.send(&s, &d).await,
                    None => DeliveryResult::Refused("the stream is gone".into()),
                };
                let failed = matches!(result, DeliveryResult::Retry { .. });
                lock(&this.fairness).note(&d.stream_id, failed, this.clock.now());
                this.record(&d, lease, &result).await;
                drop((pushing, slot));
            });
        }
        if !released.is_empty() {
            // Not given back, they are sent once their lease runs out: nothing is lost.
            if let Err(e) = self.store.release_deliveries(&released, lease).await {
                tracing::warn!(error = %e, "giving back security events not sent now");
            }
        }
        Ok(due.len())
    }

    /// The project of a stream's client (read once per pass and client; `None` once the client is gone).
    async fn project_of(&self, known: &mut HashMap<String, Option<String>>, client_id: &str) -> Option<String> {
        if let Some(p) = known.get(client_id) {
            return p.clone();
        }
        let project = match self.store.client(client_id).await {
            Ok(c) => c.map(|c| c.project_id),
            Err(e) => {
                tracing::warn!(error = %e, "reading a stream's client for its project");
                None
            }
        };
        known.insert(client_id.to_owned(), project.clone());
        project
    }

    async fn record(&self, d: &Delivery, lease: UnixTime, result: &DeliveryResult) {
        crate::metrics::DELIVERIES.inc(match result {
            DeliveryResult::Delivered => "delivered",
            DeliveryResult::Refused(_) => "refused",
            DeliveryResult::Retry { .. } => "retry",
        });
        match result {
            DeliveryResult::Delivered => tracing::debug!(jti = %d.jti(), "security event delivered"),
            DeliveryResult::Refused(e) => tracing::warn!(jti = %d.jti(), error = %e, "security event refused"),
            DeliveryResult::Retry { error, .. } => tracing::info!(jti = %d.jti(), %error, "security event retried"),
        }
        if let Err(e) = self.store.finish_delivery(d.id, lease, result, self.clock.now()).await {
            // The lease runs out and the event is sent again: at least once.
            tracing::warn!(error = %e, jti = %d.jti(), "recording a security event's delivery");
        }
    }

    async fn send(&self, stream: &StreamRecord, d: &Delivery) -> DeliveryResult {
        let retry = |error: String| {
            let mut jitter = [0u8; 4];
            OsRandom.fill(&mut jitter);
            let delay =
                retry_delay(u32::try_from(d.attempts.max(1) - 1).unwrap_or(u32::MAX), u32::from_le_bytes(jitter));
            DeliveryResult::Retry { error, retry_at: self.clock.now().plus(delay) }
        };
        if self.keys.get().event_signer().is_none() {
            // Another instance made the first event key: load it.
            let _ = self.keys.reload(&*self.store, self.clock.now()).await;
        }
        let set = match sign_set(&self.keys, &self.issuer, stream, d) {
            Ok(set) => set,
            Err(e) => return retry(e),
        };
        let Some(url) = stream.endpoint_url.as_deref() else {
            return DeliveryResult::Refused("the stream has no push URL".into());
        };
        // The settings may have changed since the stream was set (loopback no longer allowed).
        if let Err(e) = latchkey_core::events::stream::check_push_url(url, self.config.allow_insecure_loopback_push) {
            return retry(e.0);
        }
        let mut request = self
            .http
            .post(url)
            .header(http::header::CONTENT_TYPE, SET_MEDIA_TYPE)
            .header(http::header::ACCEPT, "application/json")
            .body(set);
        if let Some(sealed) = &stream.push_auth {
            match self.keys.secrets().and_then(|s| s.open(KeyKind::PushAuthorization, sealed)) {
                Ok(opened) => {
                    let value = String::from_utf8_lossy(opened.material.expose()).into_owned();
                    request = request.header(http::header::AUTHORIZATION, value);
                }
                Err(e) => return retry(format!("the push authorization cannot be decrypted: {e}")),
            }
        }
        match request.send().await {
            Ok(r) if r.status().is_success() => DeliveryResult::Delivered,
            Ok(r) if r.status() == reqwest::StatusCode::BAD_REQUEST => match rfc8935_error(r).await {
                // The receiver's verdict (RFC 8935 §2.3): final.
                Some(refusal) => DeliveryResult::Refused(refusal),
                // A 400 without one (a proxy's, a load balancer's) says nothing about the SET: tried again.
                None => retry("the receiver answered 400 without an RFC 8935 error".into()),
            },
            Ok(r) => retry(format!("the receiver answered {}", r.status())),
            Err(e) => retry(format!("push failed: {}", error_chain(&e.without_url()))),
        }
    }
}

/// A push of a project in flight; the project's count comes down when it is dropped.
struct Pushing(Arc<std::sync::Mutex<Fairness>>, String);

impl Drop for Pushing {
    fn drop(&mut self) {
        let mut f = lock(&self.0);
        if let Some(n) = f.in_flight.get_mut(&self.1) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                f.in_flight.remove(&self.1);
            }
        }
    }
}

/// The fairness state, even if a thread panicked while holding it (counts and times, never half-changed).
fn lock(f: &std::sync::Mutex<Fairness>) -> std::sync::MutexGuard<'_, Fairness> {
    f.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The RFC 8935 error of a `400`: `{"err": ..., "description": ...}` (the body read up to 8 KiB).
async fn rfc8935_error(mut r: reqwest::Response) -> Option<String> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = r.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() > 8192 {
            return None;
        }
    }
    let json: serde_json::Value = serde_json::from_slice(&body).ok()?;
    let err = json.get("err")?.as_str()?;
    let description = json.get("description").and_then(serde_json::Value::as_str).unwrap_or("");
    Some(format!("400 {err}: {description}"))
}

/// A delivery's SET, signed with the newest event key (the poll endpoint's and the pushes').
pub fn sign_set(keys: &KeyRing, issuer: &str, stream: &StreamRecord, d: &Delivery) -> Result<String, String> {
    let payload: serde_json::Value = serde_json::from_str(&d.payload).map_err(|e| format!("payload: {e}"))?;
    let mut events = serde_json::Map::new();
    events.insert(d.event_type.clone(), payload);
    let claims = SetClaims {
        iss: issuer.to_owned(),
        aud: stream.client_id.clone(),
        jti: d.jti(),
        iat: d.created_at.0,
        txn: d.txn.clone(),
        sub_id: d.subject_format.sub_id(issuer, &d.subject),
        events,
    };
    let set = keys.get();
    let signer = set.event_signer().ok_or("no event key yet")?;
    signer.sign("secevent+jwt", &claims, &OsRandom).map_err(|e| e.to_string())
}

/// An error with its causes, for the delivery record (reqwest's own message names only the outermost).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Fairness, UnixTime};

    #[test]
    fn a_receiver_that_keeps_failing_is_left_alone_longer_each_time_and_a_success_closes_its_circuit() {
        let mut f = Fairness::default();
        let t = UnixTime(1_000);
        f.note("s", true, t);
        f.note("s", true, t);
        assert_eq!(f.open_until("s", t), None, "two failures: still tried");
        f.note("s", true, t);
        assert_eq!(f.open_until("s", t), Some(t.plus(60)), "the third opens it for a minute");
        f.note("s", true, t.plus(60));
        assert_eq!(f.open_until("s", t.plus(60)), Some(t.plus(180)), "then two minutes");
        for _ in 0..10 {
            f.note("s", true, t);
        }
        assert_eq!(f.open_until("s", t), Some(t.plus(3600)), "an hour at most");
        assert_eq!(f.open_until("other", t), None, "each stream alone");
        f.note("s", false, t);
        assert_eq!(f.open_until("s", t), None, "a delivery closes it");
    }
}
