//! Upkeep: removing what has expired, and the health check.

use crate::db::{Db, Engine};
use crate::replay::{live_from, EARLIER_FORM_FROM};
use crate::sql::{args, Sql};
use crate::StoreResult;
use async_trait::async_trait;
use latchkey_core::time::UnixTime;

/// Upkeep.
#[async_trait]
pub trait Maintenance: Send + Sync {
    /// Removes what has expired (sessions, codes, throttling windows, single-use values) before `now`; returns
    /// rows removed.
    async fn purge_expired(&self, now: UnixTime) -> StoreResult<u64>;
    /// Whether the database answers.
    async fn ping(&self) -> StoreResult<()>;
}

/// What [`Maintenance::purge_expired`] deletes by time (`$1` is now); each is a range of an index. Security events
/// finished (delivered, refused, dead-lettered, dropped) stay 30 days, for `latchkey admin stream deliveries`.
pub(crate) static PURGE_BY_TIME: [Sql; 9] = [
    Sql::new("DELETE FROM sessions WHERE expires_at <= $1"),
    Sql::new("DELETE FROM webauthn_ceremonies WHERE expires_at <= $1"),
    // A device polling late learns its code expired (`expired_token`) for a day, as a code's reuse is seen.
    Sql::new("DELETE FROM device_codes WHERE expires_at <= $1 - 86400"),
    Sql::new("DELETE FROM auth_codes WHERE expires_at <= $1 - 86400"),
    // Throttling windows last a day at most, and the next one reads how the last ended for a window's length after
    // it; the marks of an address known to an account (`login-known:`) last 30 days.
    Sql::new(
        "DELETE FROM login_failures WHERE window_start <= $1 - 172800 \
         AND (key < 'login-known:' OR key >= 'login-known;')",
    ),
    Sql::new("DELETE FROM login_failures WHERE key >= 'login-known:' AND key < 'login-known;' AND window_start <= $1 - 2592000"),
    Sql::new("DELETE FROM set_deliveries WHERE state <> 'pending' AND done_at <= $1 - 2592000"),
    // Retired refresh tokens are known as such for 30 days (`rotation::RETIRED_KEPT`).
    Sql::new("DELETE FROM retired_refresh_tokens WHERE retired_at <= $1 - 2592000"),
    // A metadata document a day past its caching: fetched again when next needed.
    Sql::new("DELETE FROM client_documents WHERE expires_at <= $1 - 86400"),
];
/// The single-use values it deletes: most sort by expiry; those of the earlier form after every expiry, purged
/// by their `expires_at`; those kept without their expiry in front (from the byte 0xFF) likewise, a walk of the
/// values of the last proof window (no index of their own to keep up on every recording).
pub(crate) static PURGE_SINGLE_USE: [Sql; 3] = [
    Sql::new("DELETE FROM replay WHERE key_hash < $1"),
    Sql::new("DELETE FROM replay WHERE key_hash >= $1 AND key_hash < {untimed_from} AND expires_at <= $2"),
    Sql::new("DELETE FROM replay WHERE key_hash >= {untimed_from} AND expires_at <= $1"),
];

#[async_trait]
impl<E: Engine> Maintenance for Db<E> {
    async fn purge_expired(&self, now: UnixTime) -> StoreResult<u64> {
        // Statement by statement: each delete stands on its own, and none holds its locks while the others run.
        let mut n = 0;
        for sql in &PURGE_BY_TIME {
            n += self.exec_ephemeral(sql, args![now]).await?;
        }
        let [live, earlier, untimed] = &PURGE_SINGLE_USE;
        n += self.exec_ephemeral(live, args![live_from(now)]).await?;
        n += self.exec_ephemeral(earlier, args![&EARLIER_FORM_FROM[..], now]).await?;
        n += self.exec_ephemeral(untimed, args![now]).await?;
        n += self.engine.purge_proofs(now).await?;
        Ok(n)
    }

    async fn ping(&self) -> StoreResult<()> {
        self.engine.ping().await
    }
}
