//! The outbox of SETs: claiming due push deliveries under a lease, recording their outcome, polls, and the
//! dead letters.

use crate::db::{rows, BoxFuture, Db, Engine, Outcome, Tx};
use crate::rows::StoreRow;
use crate::sql::{args, Sql};
use crate::{StoreError, StoreResult};
use latchkey_core::events::SubjectFormat;
use latchkey_core::time::UnixTime;

/// What became of a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryState {
    /// Waiting to be sent or polled.
    Pending,
    /// The receiver accepted it (push `202`, or acknowledged by a poll).
    Delivered,
    /// The receiver refused it for good (an RFC 8935 / 8936 error); the error is kept.
    Failed,
    /// Not delivered within the operator's age limit.
    Dead,
    /// Its stream was disabled before it was delivered.
    Dropped,
}

impl DeliveryState {
    /// Every state.
    pub const ALL: [Self; 5] = [Self::Pending, Self::Delivered, Self::Failed, Self::Dead, Self::Dropped];

    /// The state's name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
            Self::Dead => "dead",
            Self::Dropped => "dropped",
        }
    }

    fn parse(s: &str) -> StoreResult<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s).ok_or_else(|| StoreError::Other(format!("delivery {s}")))
    }
}

/// One SET to deliver: everything its claims are made of but the issuer and audience.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// Its place in the outbox.
    pub id: i64,
    /// The stream.
    pub stream_id: String,
    /// The change it reports (shared by the SETs that change caused).
    pub txn: String,
    /// How the subject is named.
    pub subject_format: SubjectFormat,
    /// The subject: the account's `sub` or email, or the stream's id.
    pub subject: String,
    /// The event type.
    pub event_type: String,
    /// The event's claims, JSON.
    pub payload: String,
    /// When it was made (the SET's `iat`).
    pub created_at: UnixTime,
    /// Its state.
    pub state: DeliveryState,
    /// How many sends were tried.
    pub attempts: i64,
    /// The last error, when a send failed.
    pub last_error: Option<String>,
    /// When it was delivered, refused, dead-lettered or dropped.
    pub done_at: Option<UnixTime>,
}

impl Delivery {
    /// The SET's `jti`: the stream's id and the delivery's, the same on every retry.
    pub fn jti(&self) -> String {
        format!("{}.{}", self.stream_id, self.id)
    }

    /// The delivery id a `jti` of `stream_id` names.
    pub fn id_of(stream_id: &str, jti: &str) -> Option<i64> {
        let (stream, id) = jti.rsplit_once('.')?;
        (stream == stream_id).then(|| id.parse().ok()).flatten()
    }
}

/// What a send came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryResult {
    /// Accepted.
    Delivered,
    /// Refused for good, with the receiver's error.
    Refused(String),
    /// Failed for now (5xx, timeout, connection); try again at `retry_at`.
    Retry {
        /// What went wrong.
        error: String,
        /// When to try again.
        retry_at: UnixTime,
    },
}

/// The conditions of a push delivery due at `$1` (not leased, of a stream that delivers it now, the oldest
/// pending one of its stream and subject), `$2` being the `opaque` format: the stream's own events
/// (stream-updated, verification) flow while it is paused.
macro_rules! due {
    ($select:literal, $tail:literal) => {
        concat!(
            $select,
            " FROM set_deliveries d JOIN ssf_streams s ON s.stream_id = d.stream_id \
             JOIN clients c ON c.client_id = s.client_id \
             WHERE d.state = 'pending' AND d.next_at <= $1 AND d.lease_until <= $1 \
             AND s.method = 'urn:ietf:rfc:8935' AND (s.status = 'enabled' OR d.subject_format = $2) \
             AND NOT EXISTS (SELECT 1 FROM set_deliveries e WHERE e.stream_id = d.stream_id \
             AND e.subject = d.subject AND e.state = 'pending' AND e.id < d.id) ",
            $tail
        )
    };
}

/// One push delivery due now, if any: the worker's read before it leases.
pub(super) static ANY_DUE: Sql = Sql::scanning(due!("SELECT CAST(1 AS BIGINT) AS one", "LIMIT 1"));
/// Due push deliveries, only the oldest pending one per stream and subject, taken in turns: each project's first
/// before any project's second (within a project, each stream's first before any stream's second), then oldest
/// first; leased here. So one project's many streams cannot fill the places in flight ahead of another project's
/// one event. (The outer conditions are evaluated on the row as it is when it is updated: on PostgreSQL the inner
/// select's snapshot may predate another instance's lease, or its delivery, retry or dead letter, which gave the lease
/// back. So they repeat all of the row's own conditions, not only the lease.) On PostgreSQL the chosen rows are
/// locked first, skipping any another claim is locking, so that two claims never wait on each other: they did, and
/// deadlocked under load, each holding a row the other wanted, taken in the orders their plans chose.
static CLAIM: Sql = Sql::new(concat!(
    "UPDATE set_deliveries SET lease_until = $3, attempts = attempts + 1 WHERE id IN (\
     SELECT id FROM set_deliveries WHERE id IN (\
     SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY project_id ORDER BY stream_turn, id) AS turn \
     FROM (",
    due!("SELECT d.id, c.project_id, ROW_NUMBER() OVER (PARTITION BY d.stream_id ORDER BY d.id) AS stream_turn", ""),
    ") streams_due) projects_due ORDER BY turn, id LIMIT $4) {pg: FOR UPDATE SKIP LOCKED}) \
     AND state = 'pending' AND next_at <= $1 AND lease_until <= $1 \
     RETURNING id, stream_id, txn, subject_format, subject, event_type, payload, created_at, state, attempts, \
     last_error, done_at"
));
/// Gives a claimed delivery back unsent, due again at `$2` (its attempt not counted), if still under the lease `$3`.
static RELEASE: Sql = Sql::new(
    "UPDATE set_deliveries SET lease_until = 0, next_at = $2, attempts = attempts - 1 \
     WHERE id = $1 AND state = 'pending' AND lease_until = $3",
);
static DELIVERED: Sql = Sql::new(
    "UPDATE set_deliveries SET state = 'delivered', done_at = $2, lease_until = 0, last_error = NULL \
     WHERE id = $1 AND state = 'pending'",
);
static FAILED: Sql = Sql::new(
    "UPDATE set_deliveries SET state = 'failed', done_at = $2, lease_until = 0, last_error = $3 \
     WHERE id = $1 AND state = 'pending'",
);
/// Due again at `$2`, if still under the lease `$4`.
static RETRY: Sql = Sql::new(
    "UPDATE set_deliveries SET next_at = $2, lease_until = 0, last_error = $3 \
     WHERE id = $1 AND state = 'pending' AND lease_until = $4",
);
static ACK: Sql = Sql::new(
    "UPDATE set_deliveries SET state = 'delivered', done_at = $3, attempts = attempts + 1 \
     WHERE stream_id = $1 AND id = $2 AND state = 'pending'",
);
static POLL_ERROR: Sql = Sql::new(
    "UPDATE set_deliveries SET state = 'failed', done_at = $3, last_error = $4 \
     WHERE stream_id = $1 AND id = $2 AND state = 'pending'",
);
/// The pending SETs of a poll stream, oldest first (`$2` as in [`due!`]).
pub(super) static POLL: Sql = Sql::new(
    "SELECT d.id, d.stream_id, d.txn, d.subject_format, d.subject, d.event_type, d.payload, d.created_at, d.state, \
     d.attempts, d.last_error, d.done_at FROM set_deliveries d JOIN ssf_streams s ON s.stream_id = d.stream_id \
     WHERE d.stream_id = $1 AND d.state = 'pending' AND s.method = 'urn:ietf:rfc:8936' \
     AND (s.status = 'enabled' OR d.subject_format = $2) ORDER BY d.id LIMIT $3",
);
pub(super) static LATEST: Sql = Sql::new(
    "SELECT id, stream_id, txn, subject_format, subject, event_type, payload, created_at, state, attempts, \
     last_error, done_at FROM set_deliveries WHERE stream_id = $1 ORDER BY id DESC LIMIT $2",
);
pub(super) static DEAD_LETTER: Sql = Sql::new(
    "UPDATE set_deliveries SET state = 'dead', done_at = $1 WHERE state = 'pending' AND created_at < $2 \
     AND lease_until <= $1",
);
pub(super) static COUNTS: Sql =
    Sql::new("SELECT state, CAST(COUNT(*) AS BIGINT) AS n FROM set_deliveries GROUP BY state ORDER BY state");

pub(super) fn from_row(r: &dyn StoreRow) -> StoreResult<Delivery> {
    let format = r.text("subject_format")?;
    Ok(Delivery {
        id: r.int("id")?,
        stream_id: r.text("stream_id")?,
        txn: r.text("txn")?,
        subject_format: SubjectFormat::parse(&format)
            .ok_or_else(|| StoreError::Other(format!("subject format {format}")))?,
        subject: r.text("subject")?,
        event_type: r.text("event_type")?,
        payload: r.text("payload")?,
        created_at: crate::rows::time(r, "created_at")?,
        state: DeliveryState::parse(&r.text("state")?)?,
        attempts: r.int("attempts")?,
        last_error: r.opt_text("last_error")?,
        done_at: crate::rows::opt_time(r, "done_at")?,
    })
}

pub(super) fn count_from_row(r: &dyn StoreRow) -> StoreResult<(DeliveryState, i64)> {
    Ok((DeliveryState::parse(&r.text("state")?)?, r.int("n")?))
}

/// Leases the due deliveries: one unit of work.
pub(super) fn claim<'t>(
    tx: &'t mut dyn Tx,
    (now, until, limit): &'t (UnixTime, UnixTime, i64),
) -> BoxFuture<'t, StoreResult<Outcome<Vec<Delivery>>>> {
    Box::pin(async move {
        let opaque = SubjectFormat::Opaque.as_str();
        let mut claimed = rows(tx, &CLAIM, args![*now, opaque, *until, *limit], from_row).await?;
        claimed.sort_by_key(|d| d.id);
        Ok(Outcome::Keep(claimed))
    })
}

/// Gives claimed deliveries back unsent, each due again at its time, those still under the lease.
pub(super) fn release<'t>(
    tx: &'t mut dyn Tx,
    (released, lease): &'t (Vec<(i64, UnixTime)>, UnixTime),
) -> BoxFuture<'t, StoreResult<Outcome<()>>> {
    Box::pin(async move {
        for (id, due) in released {
            tx.exec(&RELEASE, args![*id, *due, *lease]).await?;
        }
        Ok(Outcome::Keep(()))
    })
}

/// Records a send's outcome (a retry only under the claim's lease: [`crate::Streams::finish_delivery`]).
pub(super) async fn finish<E: Engine>(
    db: &Db<E>,
    id: i64,
    lease: UnixTime,
    result: &DeliveryResult,
    now: UnixTime,
) -> StoreResult<()> {
    match result {
        DeliveryResult::Delivered => db.exec(&DELIVERED, args![id, now]).await?,
        DeliveryResult::Refused(error) => db.exec(&FAILED, args![id, now, error]).await?,
        DeliveryResult::Retry { error, retry_at } => db.exec(&RETRY, args![id, *retry_at, error, lease]).await?,
    };
    Ok(())
}

type Poll = (String, Vec<i64>, Vec<(i64, String)>, i64, UnixTime);
/// A poll's answer: the SETs, and whether more wait.
type Polled = (Vec<Delivery>, bool);

/// The first `max` of `max + 1` SETs read, and whether there were more.
pub(super) fn at_most(mut sets: Vec<Delivery>, max: i64) -> Polled {
    let more = sets.len() as i64 > max;
    sets.truncate(usize::try_from(max).unwrap_or(0));
    (sets, more)
}

/// Acknowledges, records errors, and reads the next events: one unit of work.
pub(super) fn poll<'t>(
    tx: &'t mut dyn Tx,
    (stream, ack, errors, max, now): &'t Poll,
) -> BoxFuture<'t, StoreResult<Outcome<Polled>>> {
    Box::pin(async move {
        for id in ack {
            tx.exec(&ACK, args![stream, *id, *now]).await?;
        }
        for (id, error) in errors {
            tx.exec(&POLL_ERROR, args![stream, *id, *now, error]).await?;
        }
        let sets = rows(tx, &POLL, args![stream, SubjectFormat::Opaque.as_str(), *max + 1], from_row).await?;
        Ok(Outcome::Keep(at_most(sets, *max)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jti_names_its_delivery_only_within_its_stream() {
        assert_eq!(Delivery::id_of("s-1_a", "s-1_a.42"), Some(42));
        assert_eq!(Delivery::id_of("s-1_a", "other.42"), None);
        assert_eq!(Delivery::id_of("s-1_a", "s-1_a.x"), None);
        assert_eq!(Delivery::id_of("s-1_a", "42"), None);
    }
}
