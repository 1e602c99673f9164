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
use latchkey_core::time::UnixTime;

/// Single-use values.
#[async_trait]
pub trait Replay: Send + Sync {
    /// Records single-use values, each remembered until its expiry, all or none in one transaction. Returns
    /// the index of the first value already recorded and not yet expired (then nothing is recorded), or `None`
    /// when all were new. Each value must start with its expiry (see the module's doc).
    async fn record_once(&self, values: &[(Vec<u8>, UnixTime)], now: UnixTime) -> StoreResult<Option<usize>>;
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
}
