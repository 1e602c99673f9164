//! Single-use values (DPoP `jti`s, server nonces), each remembered until its expiry.
//!
//! Each value starts with its expiry, 8 bytes big-endian (as `latchkey_core::dpop::nonce_replay_key` makes them),
//! or with the byte 0xFF (`latchkey_core::dpop::untimed_key`); others are refused. The first sort by expiry, and
//! [`Maintenance::purge_expired`] removes the expired ones as one range of the primary key, with no second index
//! to keep up on every recording. The second are values whose replay may come with another expiry (a DPoP proof's
//! `jti` under another `iat`, an assertion's `jti` under another `exp`), so their key cannot hold it: the purge
//! walks their range of the key and reads their `expires_at` (they are those of the last proof window only).
//!
//! [`Maintenance::purge_expired`]: crate::Maintenance::purge_expired

use crate::db::{BoxFuture, Db, Durability, Engine, Outcome, Tx};
use crate::sql::{args, Sql};
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use latchkey_core::dpop::{Admission, Recorded};
use latchkey_core::time::UnixTime;

/// Single-use values.
#[async_trait]
pub trait Replay: Send + Sync {
    /// Records single-use values, each remembered until its expiry, all or none in one transaction. Returns
    /// the index of the first value already recorded and not yet expired (then nothing is recorded), or `None`
    /// when all were new. Each value must start with its expiry (see the module's doc).
    async fn record_once(&self, values: &[(Vec<u8>, UnixTime)], now: UnixTime) -> StoreResult<Option<usize>>;

    /// Records a DPoP proof's single-use values (its `jti`, its nonce; each must start with its expiry or 0xFF),
    /// each until its expiry, off the durable write path: in memory on SQLite, in an unlogged table on PostgreSQL
    /// (every instance sees it). All are recorded, or none when one was already. The answer names
    /// the first value already recorded, and from when the records are complete: a restart of the process
    /// (SQLite) or of the database, or a failover (PostgreSQL), loses them, and the store names the moment it
    /// noticed (`latchkey_core::flow::proof` refuses what may have been used before it).
    /// Nothing is recorded either when `admission` refuses the proof at the moment the records are complete from.
    async fn record_proof(
        &self,
        values: &[(Vec<u8>, UnixTime)],
        admission: &Admission,
        now: UnixTime,
    ) -> StoreResult<Recorded>;

    /// The moment proofs' records are complete from, as the last recording found it (`None` before one): a nonce
    /// issued now must say a later time to be accepted.
    fn proofs_complete_since(&self) -> Option<UnixTime>;
}

/// A row whose value expired may be taken over; a live one is a replay.
static RECORD: Sql = Sql::new(
    "INSERT INTO replay (key_hash, expires_at) VALUES ($1, $2) ON CONFLICT (key_hash) DO UPDATE \
     SET expires_at = excluded.expires_at WHERE replay.expires_at <= $3",
);

/// The smallest value that expires after `now`: every value below it has expired.
pub(crate) fn live_from(now: UnixTime) -> Vec<u8> {
    (now.0 + 1).to_be_bytes().to_vec()
}

/// Values recorded before they started with their expiry (SHA-256 hashes) sort from here on: no expiry before
/// 2106 has a non-zero byte among its first four. They are purged by their `expires_at` column, a short walk
/// that ends once the last of them has expired (minutes after the upgrade).
pub(crate) const EARLIER_FORM_FROM: [u8; 8] = [0, 0, 0, 1, 0, 0, 0, 0];

/// Refuses values that start neither with their expiry nor with 0xFF.
fn check(values: &[(Vec<u8>, UnixTime)]) -> StoreResult<()> {
    let keyed = |key: &[u8], expires_at: UnixTime| key.starts_with(&expires_at.0.to_be_bytes()) || key[0] == 0xFF;
    if values.iter().all(|(key, expires_at)| !key.is_empty() && keyed(key, *expires_at)) {
        Ok(())
    } else {
        Err(StoreError::Other("a single-use value must start with its expiry or 0xFF".into()))
    }
}

/// The values to record, and the time.
type Recording = (Vec<(Vec<u8>, UnixTime)>, UnixTime);

fn record<'t>(tx: &'t mut dyn Tx, (values, now): &'t Recording) -> BoxFuture<'t, StoreResult<Outcome<Option<usize>>>> {
    Box::pin(async move {
        for (i, (key, expires_at)) in values.iter().enumerate() {
            if tx.exec(&RECORD, args![key, *expires_at, *now]).await? == 0 {
                return Ok(Outcome::Discard(Some(i)));
            }
        }
        Ok(Outcome::Keep(None))
    })
}

#[async_trait]
impl<E: Engine> Replay for Db<E> {
    async fn record_once(&self, values: &[(Vec<u8>, UnixTime)], now: UnixTime) -> StoreResult<Option<usize>> {
        check(values)?;
        self.engine.unit(Durability::Ephemeral, record, (values.to_vec(), now)).await
    }

    async fn record_proof(
        &self,
        values: &[(Vec<u8>, UnixTime)],
        admission: &Admission,
        now: UnixTime,
    ) -> StoreResult<Recorded> {
        check(values)?;
        self.engine.record_proof(values, admission, now).await
    }

    fn proofs_complete_since(&self) -> Option<UnixTime> {
        self.engine.inner.proofs_complete_since()
    }
}

/// A DPoP proof's values held in the process's memory (SQLite's: one process serves a SQLite database), each
/// until its expiry. An earlier process's are gone, so they are complete from the first recording of the process
/// on, unless the earlier process's lease (`proof_lease`, see [`InMemory::lease`]) had expired by then: a proof or
/// nonce used before is refused by its time (`latchkey_core::flow::proof`).
#[derive(Debug, Default)]
pub(crate) struct InMemory {
    inner: std::sync::Mutex<Memory>,
}

#[derive(Debug, Default)]
struct Memory {
    values: std::collections::HashMap<Vec<u8>, i64>,
    complete_since: Option<UnixTime>,
    lease: i64,
    next_purge: i64,
}

/// How often the expired values are dropped, in seconds.
const PURGE_EVERY: i64 = 10;
/// How far a lease reaches past the longest-lived value that needed it, in seconds.
pub(crate) const LEASE_AHEAD: i64 = 60;

impl InMemory {
    /// The records of the database file at `path`: shared by every store of the process open on it (a process
    /// may run several servers on one database; one process serves a SQLite database).
    pub(crate) fn of(path: &std::path::Path) -> std::sync::Arc<Self> {
        type Open = std::collections::HashMap<std::path::PathBuf, std::sync::Weak<InMemory>>;
        static OPEN: std::sync::LazyLock<std::sync::Mutex<Open>> = std::sync::LazyLock::new(Default::default);
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mut open = OPEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        open.retain(|_, records| records.strong_count() > 0);
        if let Some(records) = open.get(&key).and_then(std::sync::Weak::upgrade) {
            return records;
        }
        let records = std::sync::Arc::<Self>::default();
        open.insert(key, std::sync::Arc::downgrade(&records));
        records
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, Memory> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The moment the records are complete from, once the process recorded.
    pub(crate) fn complete_since(&self) -> Option<UnixTime> {
        self.memory().complete_since
    }

    /// Whether the process recorded nothing yet (the earlier process's lease is still to be read).
    pub(crate) fn starting(&self) -> bool {
        self.memory().complete_since.is_none()
    }

    /// Starts the records at `now`, given the lease an earlier process left (if any): complete from the start
    /// when it expired before now, else from now.
    pub(crate) fn start(&self, earlier_lease: Option<i64>, now: UnixTime) {
        let mut memory = self.memory();
        if memory.complete_since.is_none() {
            let lost = earlier_lease.is_some_and(|until| until >= now.0);
            memory.complete_since = Some(if lost { now } else { UnixTime(0) });
            memory.lease = earlier_lease.unwrap_or(0);
        }
    }

    /// Until when the stored lease covers values; a value that lives longer needs it extended first.
    pub(crate) fn lease(&self) -> i64 {
        self.memory().lease
    }

    /// Notes the lease stored.
    pub(crate) fn extend(&self, until: i64) {
        let mut memory = self.memory();
        memory.lease = memory.lease.max(until);
    }

    /// Records each value not recorded and unexpired; see [`Replay::record_proof`].
    pub(crate) fn record(&self, values: &[(Vec<u8>, UnixTime)], admission: &Admission, now: UnixTime) -> Recorded {
        let mut memory = self.memory();
        let since = *memory.complete_since.get_or_insert(now);
        if admission.check(since).is_err() {
            return Recorded { replayed: None, complete_since: since };
        }
        if now.0 >= memory.next_purge {
            memory.values.retain(|_, expires_at| *expires_at > now.0);
            memory.next_purge = now.0 + PURGE_EVERY;
        }
        let replayed = values.iter().position(|(key, _)| memory.values.get(key).is_some_and(|live| *live > now.0));
        if replayed.is_none() {
            for (key, expires_at) in values {
                memory.values.insert(key.clone(), expires_at.0);
            }
        }
        Recorded { replayed, complete_since: since }
    }
}

#[cfg(test)]
mod tests {
    use super::InMemory;
    use latchkey_core::dpop::{Admission, Unadmitted};
    use latchkey_core::time::UnixTime;

    const NOW: UnixTime = UnixTime(1_000);

    fn admission(iat: UnixTime, nonce_issued_at: Option<UnixTime>) -> Admission {
        Admission { iat, nonce_issued_at, max_future: 5 }
    }

    #[test]
    fn an_earlier_process_whose_lease_expired_lost_nothing_and_one_whose_lease_runs_did() {
        let quiet = InMemory::default();
        quiet.start(Some(NOW.0 - 1), NOW);
        assert_eq!(quiet.complete_since(), Some(UnixTime(0)), "its values had all expired");
        let busy = InMemory::default();
        busy.start(Some(NOW.0 + 30), NOW);
        assert_eq!(busy.complete_since(), Some(NOW), "values it recorded may still be live");
        assert_eq!(busy.lease(), NOW.0 + 30, "the lease left behind still covers values");
        busy.start(None, NOW.plus(60));
        assert_eq!(busy.complete_since(), Some(NOW), "started once");
    }

    #[test]
    fn values_are_recorded_all_or_none_and_not_at_all_for_a_proof_the_floor_refuses() {
        let records = InMemory::default();
        records.start(Some(NOW.0 + 30), NOW);
        let (jti, nonce) = (vec![0xFF, 1], vec![0xFF, 2]);
        let values = [(jti.clone(), NOW.plus(66)), (nonce.clone(), NOW.plus(300))];
        // An iat within the future allowance of the floor and no nonce after it: refused, nothing recorded.
        let early = admission(NOW, None);
        assert_eq!(early.check(NOW), Err(Unadmitted::NonceNeeded));
        assert_eq!(records.record(&values, &early, NOW).replayed, None);
        let anchored = admission(NOW, Some(NOW.plus(1)));
        assert_eq!(records.record(&values, &anchored, NOW.plus(1)).replayed, None, "the refusal used up nothing");
        let other_jti = [(vec![0xFF, 3], NOW.plus(66)), (nonce, NOW.plus(300))];
        assert_eq!(records.record(&other_jti, &anchored, NOW.plus(1)).replayed, Some(1), "the nonce is used");
        let again = [(vec![0xFF, 3], NOW.plus(66))];
        assert_eq!(records.record(&again, &anchored, NOW.plus(1)).replayed, None, "a refused set recorded nothing");
        assert_eq!(records.record(&[(jti, NOW.plus(66))], &anchored, NOW.plus(1)).replayed, Some(0));
    }
}
