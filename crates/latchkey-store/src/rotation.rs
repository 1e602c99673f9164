//! Refresh-token rotation (RFC 9700 §4.14.2): a grant whose refresh token rotates gets a new token on every
//! refresh, and the old one's hash is kept as retired, so that a retired token presented again is told apart from
//! a token never issued and revokes the grant (the token was copied: one of its holders is not the app).
//!
//! The check and the retirement are one statement's condition: the grant's token changes only while it is still
//! the one presented (`WHERE refresh_hash = old`). On SQLite the single writer runs the units one by one; on
//! PostgreSQL a second `UPDATE` of the row waits for the first to commit and then finds the hash changed. So of
//! any number of refreshes with one token, on any number of instances, exactly one rotates it.
//!
//! Retired hashes are kept 30 days (`maintenance`): a token retired longer ago is as unknown as one never issued,
//! refused without revoking anything. It gives its holder nothing either way.

use crate::db::{rows, BoxFuture, Db, Durability, Engine, Outcome, Tx};
use crate::sql::{args, Sql};
use crate::streams::fanout;
use crate::StoreResult;
use async_trait::async_trait;
use latchkey_core::access_token::GrantId;
use latchkey_core::account::EventKind;
use latchkey_core::time::UnixTime;

/// How long a retired refresh token's hash is kept, in seconds (30 days).
pub const RETIRED_KEPT: i64 = 30 * 86_400;

/// Rotated refresh tokens.
#[async_trait]
pub trait Rotations: Send + Sync {
    /// Replaces the refresh token of a live grant, whose hash is `old`, by the one whose hash is `new`, and keeps
    /// `old` as retired at `now`, in one atomic step: false, with nothing written, when `old` is no longer the
    /// grant's token (another refresh rotated it first) or the grant was revoked.
    async fn rotate_refresh(&self, id: &GrantId, old: &[u8], new: &[u8], now: UnixTime) -> StoreResult<bool>;
    /// When a rotation retired the refresh token whose hash this is (within the last [`RETIRED_KEPT`] seconds).
    async fn retired_refresh(&self, hash: &[u8]) -> StoreResult<Option<UnixTime>>;
    /// Revokes a grant because one of its retired refresh tokens was presented again, with its audit record
    /// (`refresh_token_reused`) and the token-revoked events of its app, in one unit; false when it was revoked
    /// already (nothing is written then).
    async fn revoke_reused(&self, id: &GrantId, now: UnixTime) -> StoreResult<bool>;
}

static ROTATE: Sql =
    Sql::new("UPDATE grants SET refresh_hash = $3 WHERE id = $1 AND refresh_hash = $2 AND revoked_at IS NULL");
static RETIRE: Sql = Sql::new("INSERT INTO retired_refresh_tokens (hash, grant_id, retired_at) VALUES ($1, $2, $3)");
static RETIRED: Sql = Sql::new("SELECT retired_at FROM retired_refresh_tokens WHERE hash = $1");
static REVOKE: Sql =
    Sql::new("UPDATE grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING user_id, client_id");
static AUDIT: Sql = Sql::new(
    "INSERT INTO audit_log (at, action, user_id, client_id, grant_id) \
     VALUES ($1, 'refresh_token_reused', $2, $3, $4)",
);

/// A rotation: the grant, the old and the new token's hashes, and when.
type Rotation = (GrantId, Vec<u8>, Vec<u8>, UnixTime);

fn rotate<'t>(tx: &'t mut dyn Tx, (id, old, new, now): &'t Rotation) -> BoxFuture<'t, StoreResult<Outcome<bool>>> {
    Box::pin(async move {
        if tx.exec(&ROTATE, args![id, old, new]).await? == 0 {
            return Ok(Outcome::Discard(false));
        }
        tx.exec(&RETIRE, args![old, id, *now]).await?;
        Ok(Outcome::Keep(true))
    })
}

fn revoke<'t>(tx: &'t mut dyn Tx, (id, now): &'t (GrantId, UnixTime)) -> BoxFuture<'t, StoreResult<Outcome<bool>>> {
    Box::pin(async move {
        let revoked = rows(tx, &REVOKE, args![*now, id], |r| Ok((r.text("user_id")?, r.text("client_id")?))).await?;
        let Some((user, client)) = revoked.into_iter().next() else {
            return Ok(Outcome::Discard(false));
        };
        tx.exec(&AUDIT, args![*now, &user, &client, id]).await?;
        fanout::record(tx, *now, EventKind::TokensRevoked, &user, Some(&client)).await?;
        Ok(Outcome::Keep(true))
    })
}

#[async_trait]
impl<E: Engine> Rotations for Db<E> {
    async fn rotate_refresh(&self, id: &GrantId, old: &[u8], new: &[u8], now: UnixTime) -> StoreResult<bool> {
        self.engine.unit(Durability::Durable, rotate, (*id, old.to_vec(), new.to_vec(), now)).await
    }

    async fn retired_refresh(&self, hash: &[u8]) -> StoreResult<Option<UnixTime>> {
        self.engine.one(&RETIRED, args![hash], |r| Ok(UnixTime(r.int("retired_at")?))).await
    }

    async fn revoke_reused(&self, id: &GrantId, now: UnixTime) -> StoreResult<bool> {
        self.engine.unit(Durability::Durable, revoke, (*id, now)).await
    }
}
