//! DPoP proofs' single-use values on PostgreSQL ([`crate::Replay::record_proof`]): the unlogged `proof_replay`,
//! whose loss is noticed by its companion `proof_replay_floor` being empty (migration 0125). A recording is one
//! statement, without a transaction: both values and the moment the records are complete from, in one round trip,
//! on the connections shared with the reads (its commit waits for no WAL flush: [`super::shared`]).

use super::{PgEngine, Row};
use crate::sql::{Sql, Value};
use crate::{StoreError, StoreResult};
use latchkey_core::dpop::{Admission, Recorded};
use latchkey_core::time::UnixTime;

/// Records up to two values (a proof's `jti`, then its nonce; `NULL`s for no second one), none when one is
/// recorded and live, and none unless the floor is the one the proof was admitted under (`$6`). A value whose
/// record expired is taken over. Answers the index of the first value recorded and live, and the floor (`NULL`
/// when the records were lost). Two recordings of one value at the same moment:
/// the second waits for the first (`ON CONFLICT`) and finds it live; only then may its other value stay recorded.
static RECORD: Sql = Sql::new(
    "WITH v(i, k, e) AS (VALUES (0, $1::BYTEA, $2::BIGINT), (1, $3::BYTEA, $4::BIGINT)), \
     live AS (SELECT min(v.i) AS i FROM v JOIN proof_replay r ON r.key_hash = v.k AND r.expires_at > $5), \
     ins AS (INSERT INTO proof_replay (key_hash, expires_at) SELECT k, e FROM v \
       WHERE k IS NOT NULL AND (SELECT i FROM live) IS NULL \
         AND (SELECT complete_since FROM proof_replay_floor) = $6 \
       ON CONFLICT (key_hash) DO UPDATE SET expires_at = excluded.expires_at WHERE proof_replay.expires_at <= $5 \
       RETURNING key_hash) \
     SELECT COALESCE((SELECT i FROM live), \
       (SELECT min(i) FROM v WHERE k IS NOT NULL AND k NOT IN (SELECT key_hash FROM ins)))::BIGINT AS replayed, \
       (SELECT complete_since FROM proof_replay_floor) AS complete_since",
);

/// Sets the floor when it is missing, and reads it (another instance may have set it a moment before).
static FLOOR: Sql = Sql::new(
    "WITH set AS (INSERT INTO proof_replay_floor (complete_since) VALUES ($1) ON CONFLICT (one) DO NOTHING \
       RETURNING complete_since) \
     SELECT complete_since FROM set UNION ALL SELECT complete_since FROM proof_replay_floor LIMIT 1",
);

/// Deletes the expired values.
static PURGE: Sql = Sql::new("DELETE FROM proof_replay WHERE expires_at <= $1");

fn int(row: Option<&Row>, col: &str) -> StoreResult<Option<i64>> {
    row.map(|r| r.try_get::<_, Option<i64>>(col)).transpose().map(Option::flatten).map_err(super::errors::map_err)
}

impl PgEngine {
    /// See [`crate::Replay::record_proof`]. The floor is known from the last recording (each statement reads it),
    /// so a proof it refuses is answered without a round trip; the statement records only under that floor, and a
    /// floor found changed (a loss noticed, here or at another instance) is taken and the proof judged again.
    pub(super) async fn record_proof_values(
        &self,
        values: &[(Vec<u8>, UnixTime)],
        admission: &Admission,
        now: UnixTime,
    ) -> StoreResult<Recorded> {
        let [first, rest @ ..] = values else { return Err(StoreError::Other("no value to record".into())) };
        let second = rest.first();
        for _ in 0..4 {
            let expected = *self.floor.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(since) = expected.map(UnixTime) {
                if admission.check(since).is_err() {
                    return Ok(Recorded { replayed: None, complete_since: since });
                }
            }
            let args = [
                Value::from(&first.0[..]),
                Value::from(first.1),
                Value::from(second.map(|s| &s.0[..])),
                Value::from(second.map(|s| s.1)),
                Value::from(now),
                Value::from(expected),
            ];
            let rows = self.shared.rows(&RECORD, &args).await?;
            let found = match int(rows.first(), "complete_since")? {
                Some(found) if Some(found) == expected => {
                    let replayed = int(rows.first(), "replayed")?.and_then(|i| usize::try_from(i).ok());
                    return Ok(Recorded { replayed, complete_since: UnixTime(found) });
                }
                Some(found) => Some(found),
                // The records were lost (or this instance had not read the floor yet and another set it): they
                // are complete from now on; an instance that set it a moment before wins.
                None => {
                    tracing::warn!(
                        "DPoP replay records were lost (a database restart or failover): proofs and nonces from \
                         before now are refused"
                    );
                    int(self.rows(&FLOOR, &[Value::from(now)]).await?.first(), "complete_since")?
                }
            };
            *self.floor.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = found;
        }
        Err(StoreError::Unavailable("the DPoP records' floor kept changing".into()))
    }

    /// Deletes the expired values; how many.
    pub(super) async fn purge_proof_values(&self, now: UnixTime) -> StoreResult<u64> {
        let conn = self.connection().await?;
        let result = super::execute(&conn, &PURGE, &[Value::from(now)]).await;
        Self::settle(conn, result)
    }
}
