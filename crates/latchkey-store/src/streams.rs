//! Shared Signals streams and the outbox of the security events (SETs) they deliver.
//!
//! A stream belongs to one client: its receiver is the app's backend. Every account event is written with the
//! SETs it causes, one row each in `set_deliveries`, in the unit of work of the change ([`fanout::record`]): only
//! to the streams of clients the account granted access to, and never to a disabled stream. The delivery worker
//! claims due rows ([`Streams::claim_deliveries`]), oldest first and one at a time per stream and subject, so
//! that a receiver gets a subject's events in order; poll receivers fetch and acknowledge them instead.

use crate::db::{BoxFuture, Db, Durability, Engine, Outcome, Tx};
use crate::rows::{self, StoreRow};
use crate::sql::{args, Sql};
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use latchkey_core::events::stream::Status;
use latchkey_core::events::{types, SubjectFormat};
use latchkey_core::time::UnixTime;

mod delivery;
pub(crate) mod fanout;

pub use delivery::{Delivery, DeliveryResult, DeliveryState};

/// A stream, as the store keeps it.
#[derive(Clone, PartialEq, Eq)]
pub struct StreamRecord {
    /// The transmitter-made id.
    pub stream_id: String,
    /// The client whose backend receives the events (the SETs' `aud`).
    pub client_id: String,
    /// The delivery method's URN (`latchkey_core::events::stream::PUSH` or `POLL`).
    pub method: String,
    /// The push receiver's URL.
    pub endpoint_url: Option<String>,
    /// The push `Authorization` header, encrypted by the server (never shown back).
    pub push_auth: Option<Vec<u8>>,
    /// The event types the receiver asked for (empty: every supported one).
    pub events_requested: Vec<String>,
    /// How SETs name the account.
    pub subject_format: SubjectFormat,
    /// Enabled, paused or disabled.
    pub status: Status,
    /// Why the status was last set, when a reason was given.
    pub reason: Option<String>,
    /// The receiver's description of the stream.
    pub description: Option<String>,
    /// When it was made.
    pub created_at: UnixTime,
    /// When it last changed.
    pub updated_at: UnixTime,
    /// When a verification event was last requested.
    pub verified_at: Option<UnixTime>,
}

impl StreamRecord {
    /// A new stream of `client_id`, enabled, by poll until a delivery is set, every event, subjects by `iss_sub`.
    pub fn new(stream_id: String, client_id: String, now: UnixTime) -> Self {
        Self {
            stream_id,
            client_id,
            method: latchkey_core::events::stream::POLL.into(),
            endpoint_url: None,
            push_auth: None,
            events_requested: Vec::new(),
            subject_format: SubjectFormat::IssSub,
            status: Status::Enabled,
            reason: None,
            description: None,
            created_at: now,
            updated_at: now,
            verified_at: None,
        }
    }
}

impl std::fmt::Debug for StreamRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamRecord")
            .field("stream_id", &self.stream_id)
            .field("client_id", &self.client_id)
            .field("method", &self.method)
            .field("endpoint_url", &self.endpoint_url)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

/// Why a verification request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyRefused {
    /// No such stream.
    NoStream,
    /// The last request was less than the minimum interval ago; retry after this many seconds.
    TooSoon(i64),
}

/// Streams and their deliveries.
#[async_trait]
pub trait Streams: Send + Sync {
    /// Makes a stream; false when its client has one already.
    async fn create_stream(&self, stream: &StreamRecord) -> StoreResult<bool>;
    /// A stream by id.
    async fn stream(&self, stream_id: &str) -> StoreResult<Option<StreamRecord>>;
    /// Every stream, by client.
    async fn streams(&self) -> StoreResult<Vec<StreamRecord>>;
    /// The streams of the clients of the projects `user_id` is a member of, by client.
    async fn streams_of_member(&self, user_id: &str) -> StoreResult<Vec<StreamRecord>>;
    /// How many streams a project's clients have, and how many verification events they asked for since `since`.
    async fn stream_usage(&self, project_id: &str, since: UnixTime) -> StoreResult<(i64, i64)>;
    /// Replaces a stream's settings; when its status changes, a stream-updated event is queued for it (before
    /// the events it holds), and a disabled stream's pending events are dropped. False when there is no such
    /// stream.
    async fn update_stream(&self, stream: &StreamRecord, now: UnixTime) -> StoreResult<bool>;
    /// Replaces a stream's encrypted push authorization (the server re-encrypts it under a new system secret), as
    /// long as it still is `current`; false when it changed meanwhile.
    async fn replace_push_auth(&self, stream_id: &str, current: &[u8], sealed: &[u8]) -> StoreResult<bool>;
    /// Deletes a stream and its deliveries.
    async fn delete_stream(&self, stream_id: &str) -> StoreResult<bool>;
    /// Leaves an account out of a stream's events (`included` false) or takes it back in.
    async fn set_subject(&self, stream_id: &str, user_id: &str, included: bool) -> StoreResult<()>;
    /// Queues a verification event with the receiver's `state`, at most once per `min_interval` seconds.
    async fn request_verification(
        &self,
        stream_id: &str,
        state: Option<&str>,
        now: UnixTime,
        min_interval: i64,
    ) -> StoreResult<Result<(), VerifyRefused>>;
    /// Leases up to `limit` due push deliveries until `lease_until`, oldest first and only the oldest pending
    /// one of each stream and subject; another instance skips them until the lease ends.
    async fn claim_deliveries(&self, now: UnixTime, lease_until: UnixTime, limit: i64) -> StoreResult<Vec<Delivery>>;
    /// Gives claimed deliveries back unsent (their attempt not counted), each due again at its time: those the
    /// transmitter will not send now (a project over its share of the pushes in flight, a receiver whose circuit
    /// is open). Only those still under `lease` (the claim's `lease_until`): one whose lease ran out and that another
    /// instance claimed since stays with it.
    async fn release_deliveries(&self, released: &[(i64, UnixTime)], lease: UnixTime) -> StoreResult<()>;
    /// Records what became of a delivery claimed under `lease` (`sent`). A delivery or a refusal is recorded whoever
    /// holds the lease now (the receiver answered for good); a retry only while the lease is still the claim's, so
    /// that a push that outlived its lease does not give back the lease of another instance's push of the same SET.
    async fn finish_delivery(&self, id: i64, lease: UnixTime, sent: &DeliveryResult, now: UnixTime) -> StoreResult<()>;
    /// A poll (RFC 8936): acknowledges `ack`, records `errors` as final, and returns up to `max` pending events of
    /// the stream, with whether more are available.
    async fn poll_deliveries(
        &self,
        stream_id: &str,
        ack: &[i64],
        errors: &[(i64, String)],
        max: i64,
        now: UnixTime,
    ) -> StoreResult<(Vec<Delivery>, bool)>;
    /// The pending SETs of a poll stream, oldest first, up to `max`, with whether more are available (a read: a
    /// long poll's look while it waits).
    async fn pollable(&self, stream_id: &str, max: i64) -> StoreResult<(Vec<Delivery>, bool)>;
    /// Notices of streams that got a delivery, made anywhere, when the engine announces them (PostgreSQL); `None`
    /// where it does not (SQLite), and a reader looks again on a timer. Each call listens anew.
    async fn delivery_notices(&self) -> StoreResult<Option<crate::notices::Notices>>;
    /// A stream's latest deliveries, newest first.
    async fn deliveries(&self, stream_id: &str, limit: i64) -> StoreResult<Vec<Delivery>>;
    /// Whether any delivery is pending and due at `now` (a read: the worker's look before it leases).
    async fn pending_deliveries(&self, now: UnixTime) -> StoreResult<bool>;
    /// Dead-letters the pending deliveries made before `made_before`; returns how many.
    async fn dead_letter(&self, now: UnixTime, made_before: UnixTime) -> StoreResult<u64>;
    /// How many deliveries are in each state.
    async fn delivery_counts(&self) -> StoreResult<Vec<(DeliveryState, i64)>>;
}

static INSERT: Sql = Sql::new(
    "INSERT INTO ssf_streams (stream_id, client_id, method, endpoint_url, push_auth, events_requested, \
     subject_format, status, reason, description, created_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11) ON CONFLICT DO NOTHING",
);
static BY_ID: Sql = Sql::new(
    "SELECT stream_id, client_id, method, endpoint_url, push_auth, events_requested, subject_format, status, \
     reason, description, created_at, updated_at, verified_at FROM ssf_streams WHERE stream_id = $1",
);
static ALL: Sql = Sql::new(
    "SELECT stream_id, client_id, method, endpoint_url, push_auth, events_requested, subject_format, status, \
     reason, description, created_at, updated_at, verified_at FROM ssf_streams ORDER BY client_id",
);
static OF_MEMBER: Sql = Sql::new(
    "SELECT s.stream_id, s.client_id, s.method, s.endpoint_url, s.push_auth, s.events_requested, s.subject_format, \
     s.status, s.reason, s.description, s.created_at, s.updated_at, s.verified_at FROM ssf_streams s \
     JOIN clients c ON c.client_id = s.client_id JOIN project_members m ON m.project_id = c.project_id \
     WHERE m.user_id = $1 ORDER BY s.client_id",
);
/// `$3` the verification event's type.
static USAGE: Sql = Sql::scanning(
    "SELECT (SELECT COUNT(*) FROM ssf_streams s JOIN clients c ON c.client_id = s.client_id \
     WHERE c.project_id = $1) AS streams, \
     (SELECT COUNT(*) FROM set_deliveries d JOIN ssf_streams s ON s.stream_id = d.stream_id \
     JOIN clients c ON c.client_id = s.client_id WHERE c.project_id = $1 AND d.event_type = $3 \
     AND d.created_at >= $2) AS verifications",
);
static STATUS_OF: Sql = Sql::new("SELECT status FROM ssf_streams WHERE stream_id = $1");
/// The same values as [`INSERT`], `$11` the time of the change (a stream's client never changes).
static UPDATE: Sql = Sql::new(
    "UPDATE ssf_streams SET method = $3, endpoint_url = $4, push_auth = $5, events_requested = $6, \
     subject_format = $7, status = $8, reason = $9, description = $10, updated_at = $11 \
     WHERE stream_id = $1 AND client_id = $2",
);
static DROP_PENDING: Sql =
    Sql::new("UPDATE set_deliveries SET state = 'dropped', done_at = $2 WHERE stream_id = $1 AND state = 'pending'");
static DELETE: Sql = Sql::new("DELETE FROM ssf_streams WHERE stream_id = $1");
static REPLACE_PUSH_AUTH: Sql =
    Sql::new("UPDATE ssf_streams SET push_auth = $3 WHERE stream_id = $1 AND push_auth = $2");
static EXCLUDE: Sql = Sql::new("INSERT INTO ssf_excluded (stream_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING");
static INCLUDE: Sql = Sql::new("DELETE FROM ssf_excluded WHERE stream_id = $1 AND user_id = $2");
static VERIFIED_AT: Sql =
    Sql::new("SELECT CAST(COALESCE(verified_at, -1) AS BIGINT) FROM ssf_streams WHERE stream_id = $1");
static SET_VERIFIED: Sql = Sql::new("UPDATE ssf_streams SET verified_at = $2 WHERE stream_id = $1");

fn stream_from_row(r: &dyn StoreRow) -> StoreResult<StreamRecord> {
    let bad = |what: &str, v: &str| StoreError::Other(format!("stream {what} {v}"));
    let format = r.text("subject_format")?;
    let status = r.text("status")?;
    Ok(StreamRecord {
        stream_id: r.text("stream_id")?,
        client_id: r.text("client_id")?,
        method: r.text("method")?,
        endpoint_url: r.opt_text("endpoint_url")?,
        push_auth: r.opt_bytes("push_auth")?,
        events_requested: serde_json::from_str(&r.text("events_requested")?)
            .map_err(|e| StoreError::Other(format!("stream events_requested: {e}")))?,
        subject_format: SubjectFormat::parse(&format).ok_or_else(|| bad("subject format", &format))?,
        status: Status::parse(&status).ok_or_else(|| bad("status", &status))?,
        reason: r.opt_text("reason")?,
        description: r.opt_text("description")?,
        created_at: rows::time(r, "created_at")?,
        updated_at: rows::time(r, "updated_at")?,
        verified_at: rows::opt_time(r, "verified_at")?,
    })
}

/// The values of [`INSERT`] and [`UPDATE`], `at` the time of the write.
fn row(s: &StreamRecord, at: UnixTime) -> crate::sql::Args<'_> {
    let requested = serde_json::Value::from(s.events_requested.clone()).to_string();
    args![
        &s.stream_id,
        &s.client_id,
        &s.method,
        &s.endpoint_url,
        s.push_auth.as_deref(),
        requested,
        s.subject_format.as_str(),
        s.status.as_str(),
        &s.reason,
        &s.description,
        at
    ]
}

/// Replaces a stream's settings and queues what a status change causes: one unit of work.
fn update<'t>(tx: &'t mut dyn Tx, (s, now): &'t (StreamRecord, UnixTime)) -> BoxFuture<'t, StoreResult<Outcome<bool>>> {
    Box::pin(async move {
        let mut old = None;
        tx.each(&STATUS_OF, args![&s.stream_id], &mut |r| {
            old = Some(r.text("status")?);
            Ok(())
        })
        .await?;
        let Some(old) = old else { return Ok(Outcome::Discard(false)) };
        tx.exec(&UPDATE, row(s, *now)).await?;
        if old != s.status.as_str() {
            if s.status == Status::Disabled {
                tx.exec(&DROP_PENDING, args![&s.stream_id, *now]).await?;
            }
            let mut payload = serde_json::json!({ "status": s.status.as_str() });
            if let Some(reason) = &s.reason {
                payload["reason"] = reason.as_str().into();
            }
            fanout::stream_event(tx, &s.stream_id, types::STREAM_UPDATED, &payload, *now).await?;
        }
        Ok(Outcome::Keep(true))
    })
}

type Verification = (String, Option<String>, UnixTime, i64);

/// Queues a verification event unless one was asked for too recently: one unit of work.
fn verify<'t>(
    tx: &'t mut dyn Tx,
    (stream, state, now, min_interval): &'t Verification,
) -> BoxFuture<'t, StoreResult<Outcome<Result<(), VerifyRefused>>>> {
    Box::pin(async move {
        let Some(last) = tx.scalar(&VERIFIED_AT, args![stream]).await? else {
            return Ok(Outcome::Discard(Err(VerifyRefused::NoStream)));
        };
        if last >= 0 && now.0 < last + min_interval {
            return Ok(Outcome::Discard(Err(VerifyRefused::TooSoon(last + min_interval - now.0))));
        }
        tx.exec(&SET_VERIFIED, args![stream, *now]).await?;
        let payload = match state {
            Some(s) => serde_json::json!({ "state": s }),
            None => serde_json::json!({}),
        };
        fanout::stream_event(tx, stream, types::VERIFICATION, &payload, *now).await?;
        Ok(Outcome::Keep(Ok(())))
    })
}

#[async_trait]
impl<E: Engine> Streams for Db<E> {
    async fn create_stream(&self, s: &StreamRecord) -> StoreResult<bool> {
        self.exec_one(&INSERT, row(s, s.created_at)).await
    }

    async fn stream(&self, stream_id: &str) -> StoreResult<Option<StreamRecord>> {
        self.engine.one(&BY_ID, args![stream_id], stream_from_row).await
    }

    async fn streams(&self) -> StoreResult<Vec<StreamRecord>> {
        self.engine.all(&ALL, args![], stream_from_row).await
    }

    async fn streams_of_member(&self, user_id: &str) -> StoreResult<Vec<StreamRecord>> {
        self.engine.all(&OF_MEMBER, args![user_id], stream_from_row).await
    }

    async fn stream_usage(&self, project_id: &str, since: UnixTime) -> StoreResult<(i64, i64)> {
        let kind = latchkey_core::events::types::VERIFICATION;
        let usage = |r: &dyn crate::rows::StoreRow| Ok((r.int("streams")?, r.int("verifications")?));
        Ok(self.engine.one(&USAGE, args![project_id, since, kind], usage).await?.unwrap_or((0, 0)))
    }

    async fn update_stream(&self, stream: &StreamRecord, now: UnixTime) -> StoreResult<bool> {
        self.engine.unit(Durability::Durable, update, (stream.clone(), now)).await
    }

    async fn replace_push_auth(&self, stream_id: &str, current: &[u8], sealed: &[u8]) -> StoreResult<bool> {
        self.exec_one(&REPLACE_PUSH_AUTH, args![stream_id, current, sealed]).await
    }

    async fn delete_stream(&self, stream_id: &str) -> StoreResult<bool> {
        self.exec_one(&DELETE, args![stream_id]).await
    }

    async fn set_subject(&self, stream_id: &str, user_id: &str, included: bool) -> StoreResult<()> {
        self.exec(if included { &INCLUDE } else { &EXCLUDE }, args![stream_id, user_id]).await.map(|_| ())
    }

    async fn request_verification(
        &self,
        stream_id: &str,
        state: Option<&str>,
        now: UnixTime,
        min_interval: i64,
    ) -> StoreResult<Result<(), VerifyRefused>> {
        let data = (stream_id.to_owned(), state.map(str::to_owned), now, min_interval);
        self.engine.unit(Durability::Durable, verify, data).await
    }

    async fn claim_deliveries(&self, now: UnixTime, lease_until: UnixTime, limit: i64) -> StoreResult<Vec<Delivery>> {
        self.engine.unit(Durability::Durable, delivery::claim, (now, lease_until, limit)).await
    }

    async fn release_deliveries(&self, released: &[(i64, UnixTime)], lease: UnixTime) -> StoreResult<()> {
        self.engine.unit(Durability::Durable, delivery::release, (released.to_vec(), lease)).await
    }

    async fn finish_delivery(&self, id: i64, lease: UnixTime, sent: &DeliveryResult, now: UnixTime) -> StoreResult<()> {
        delivery::finish(self, id, lease, sent, now).await
    }

    async fn poll_deliveries(
        &self,
        stream_id: &str,
        ack: &[i64],
        errors: &[(i64, String)],
        max: i64,
        now: UnixTime,
    ) -> StoreResult<(Vec<Delivery>, bool)> {
        let data = (stream_id.to_owned(), ack.to_vec(), errors.to_vec(), max, now);
        self.engine.unit(Durability::Durable, delivery::poll, data).await
    }

    async fn pollable(&self, stream_id: &str, max: i64) -> StoreResult<(Vec<Delivery>, bool)> {
        let opaque = SubjectFormat::Opaque.as_str();
        let sets = self.engine.all(&delivery::POLL, args![stream_id, opaque, max + 1], delivery::from_row).await?;
        Ok(delivery::at_most(sets, max))
    }

    async fn delivery_notices(&self) -> StoreResult<Option<crate::notices::Notices>> {
        self.engine.delivery_notices().await
    }

    async fn deliveries(&self, stream_id: &str, limit: i64) -> StoreResult<Vec<Delivery>> {
        self.engine.all(&delivery::LATEST, args![stream_id, limit], delivery::from_row).await
    }

    async fn pending_deliveries(&self, now: UnixTime) -> StoreResult<bool> {
        let opaque = SubjectFormat::Opaque.as_str();
        let due = self.engine.one(&delivery::ANY_DUE, args![now, opaque], |r| r.int("one")).await?;
        Ok(due.is_some())
    }

    async fn dead_letter(&self, now: UnixTime, made_before: UnixTime) -> StoreResult<u64> {
        self.exec(&delivery::DEAD_LETTER, args![now, made_before]).await
    }

    async fn delivery_counts(&self) -> StoreResult<Vec<(DeliveryState, i64)>> {
        self.engine.all(&delivery::COUNTS, args![], delivery::count_from_row).await
    }
}
