//! Authorization codes and the grants issued from them: redemption under the refresh-token limits, lookup,
//! revocation with its audit record.
//!
//! The refresh-token limits (`docs/decisions.md`, "Refresh tokens": issuing one more invalidates the oldest of that
//! set) are one rule, written here once: [`redeem`] stores the grant, then [`enforce_limit`] invalidates all but the
//! newest live grants of each set. The triggers' count of unrevoked grants (`grant_counts`) is read first: at or under
//! a limit nothing can be over it, and the usual issuance costs an index lookup instead of a walk over the user's
//! grants. The count is an upper bound, not the exact number: every grant that becomes unrevoked raises it, but a
//! revocation or a deletion does not lower it (a revocation is then one write, not two). A count over a limit
//! enforces it, then sets the user's counts to their exact values ([`RECOUNT`]); issuance holds the user's lock, so
//! no grant of theirs is issued meanwhile. PostgreSQL runs the usual case as one function call instead
//! ([`Engine::redeem_fast`]), which stores nothing when a limit is reached and leaves that case to the unit below.

use crate::db::{BoxFuture, Db, Durability, Engine, Outcome, Tx};
use crate::records::{Channel, GrantLimits, GrantState, Redeemed, Redemption, User};
use crate::rows;
use crate::sql::{args, Args, Sql};
use crate::StoreResult;
use async_trait::async_trait;
use latchkey_core::access_token::GrantId;
use latchkey_core::time::UnixTime;
use latchkey_core::token::{AuthCode, Grant};

/// Codes and grants.
#[async_trait]
pub trait Grants: Send + Sync {
    /// Stores a new authorization code.
    async fn insert_code(&self, code: &AuthCode) -> StoreResult<()>;
    /// A code by its hash, used or not.
    async fn code(&self, code_hash: &[u8]) -> StoreResult<Option<AuthCode>>;
    /// A code by its hash, used or not, with its user (`None` when the user is deleted).
    async fn code_with_user(&self, code_hash: &[u8]) -> StoreResult<Option<(AuthCode, Option<User>)>>;
    /// Marks the code used and stores its grant, in one transaction, then enforces the refresh-token limits.
    /// When the code was used meanwhile, nothing is stored and the answer is [`Redeemed::AlreadyUsed`].
    async fn redeem_code(&self, grant: &Grant, limits: GrantLimits, now: UnixTime) -> StoreResult<Redeemed>;
    /// Revokes the grants made from a code (on its reuse), with an audit record each, as long as the code is
    /// kept (a day past its expiry, see [`Maintenance::purge_expired`](crate::Maintenance::purge_expired));
    /// returns how many.
    async fn revoke_grants_of_code(&self, code_hash: &[u8], now: UnixTime) -> StoreResult<u64>;
    /// The grant held by a refresh token of the earlier form (one with no grant id, see
    /// `latchkey_core::refresh_token`), found by the token's hash among the grants issued before that form
    /// changed; grants issued since are found by id ([`Grants::grant`]) and never by hash.
    async fn legacy_grant_by_refresh(&self, refresh_hash: &[u8]) -> StoreResult<Option<GrantState>>;
    /// A grant by id, with the state of its user and client.
    async fn grant(&self, id: &GrantId) -> StoreResult<Option<GrantState>>;
    /// A grant by id, with the state of its user and client, and its user's channel if they have one.
    async fn grant_with_channel(&self, id: &GrantId) -> StoreResult<Option<(GrantState, Option<Channel>)>>;
    /// Revokes a grant; false when it was not active. (No audit record: on the revocation endpoint's hot path
    /// one more insert cost 12% of its rate; the security-events outbox will record these.)
    async fn revoke_grant(&self, id: &GrantId, now: UnixTime) -> StoreResult<bool>;
    /// Revokes a live grant if its refresh token's hash is `refresh_hash` and its client `client_id` (each when
    /// given), in one statement; whether it did.
    async fn revoke_presented(
        &self,
        id: &GrantId,
        refresh_hash: Option<&[u8]>,
        client_id: Option<&str>,
        now: UnixTime,
    ) -> StoreResult<bool>;
}

pub(crate) static INSERT_CODE: Sql = Sql::new(
    "INSERT INTO auth_codes (code_hash, client_id, user_id, redirect_uri, scopes, challenge_method, challenge, \
     nonce, auth_time, expires_at, used_at, grant_lifetime) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, $11)",
);
static CODE: Sql = Sql::new("SELECT * FROM auth_codes WHERE code_hash = $1");
/// A code and its user, in one read (the code exchange's: one round trip where two would follow each other).
static CODE_WITH_USER: Sql = Sql::by_key(
    "SELECT a.*, u.id AS user_row_id, u.email AS user_email, u.name AS user_name, \
     u.password_hash AS user_password_hash, u.created_at AS user_created_at, u.disabled_at AS user_disabled_at \
     FROM auth_codes a LEFT JOIN users u ON u.id = a.user_id WHERE a.code_hash = $1",
);
/// Orders the user's issuances one after the other where writers run side by side.
static LOCK_USER: Sql = Sql::new("SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE");
/// Marks a code used, as the store holds it: not one expired early after the exchange found it good (an
/// organisation's policy change expires it to 0, `orgs/change.rs`), nor one whose scopes the store narrowed since
/// (a registered API's scope retired, `resources.rs`), nor one of an account disabled (read under the user's lock,
/// which disabling takes too, so a code stored after the account was disabled is refused as well). The exchange
/// may have read the code's record from the code itself (`latchkey_core::auth_code`), so these are the store's
/// word on them.
static USE_CODE: Sql = Sql::new(
    "UPDATE auth_codes SET used_at = $1, grant_id = $2 WHERE code_hash = $3 AND used_at IS NULL AND expires_at > $1 \
     AND scopes = $4 AND EXISTS (SELECT 1 FROM users u WHERE u.id = auth_codes.user_id AND u.disabled_at IS NULL)",
);
/// Inserts a grant as it is.
pub(crate) static INSERT_GRANT: Sql = Sql::new(
    "INSERT INTO grants (id, client_id, user_id, scopes, refresh_hash, dpop_jkt, created_at, expires_at, revoked_at, \
     code_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
);
static UNREVOKED_OF_CLIENT_USER: Sql = Sql::new(
    "SELECT CAST(COALESCE(SUM(unrevoked), 0) AS BIGINT) FROM grant_counts WHERE user_id = $1 AND client_id = $2",
);
static UNREVOKED_OF_USER: Sql =
    Sql::new("SELECT CAST(COALESCE(SUM(unrevoked), 0) AS BIGINT) FROM grant_counts WHERE user_id = $1");
/// Sets a user's counts of unrevoked grants to their exact values (after a limit's enforcement, under the user's
/// lock).
static RECOUNT: Sql = Sql::new(
    "UPDATE grant_counts SET unrevoked = (SELECT count(*) FROM grants g WHERE g.user_id = grant_counts.user_id \
     AND g.client_id = grant_counts.client_id AND g.revoked_at IS NULL) WHERE user_id = $1",
);
/// Invalidates the live grants of a (client, user) older than its newest `$4`.
static OVER_CLIENT_USER_LIMIT: Sql = Sql::new(
    "UPDATE grants SET revoked_at = $1 WHERE client_id = $2 AND user_id = $3 AND revoked_at IS NULL \
     AND (expires_at IS NULL OR expires_at > $1) AND {issue_order} <= (SELECT {issue_order} FROM grants \
     WHERE client_id = $2 AND user_id = $3 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1) \
     ORDER BY {issue_order} DESC LIMIT 1 OFFSET $4)",
);
/// Invalidates the live grants of a user older than their newest `$3`.
static OVER_USER_LIMIT: Sql = Sql::new(
    "UPDATE grants SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL \
     AND (expires_at IS NULL OR expires_at > $1) AND {issue_order} <= (SELECT {issue_order} FROM grants \
     WHERE user_id = $2 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1) \
     ORDER BY {issue_order} DESC LIMIT 1 OFFSET $3)",
);
/// The grant with the state of its user, client and project; more columns, more joins, then a `WHERE` clause.
macro_rules! grant_state {
    ($where:literal) => {
        grant_state!("", "", $where)
    };
    ($columns:literal, $joins:literal, $where:literal) => {
        concat!(
            "SELECT g.id, g.client_id, g.user_id, g.scopes, g.refresh_hash, g.dpop_jkt, g.created_at, g.expires_at, \
             g.revoked_at, g.code_hash, u.disabled_at AS user_disabled_at, c.deleted_at AS client_deleted_at, \
             p.api_enabled",
            $columns,
            " FROM grants g JOIN users u ON u.id = g.user_id JOIN clients c ON c.client_id = g.client_id \
             JOIN projects p ON p.id = c.project_id",
            $joins,
            " WHERE ",
            $where
        )
    };
}
static LEGACY_GRANT: Sql = Sql::new(grant_state!("g.refresh_hash = $1 AND g.legacy_refresh = TRUE"));
static GRANT: Sql = Sql::by_key(grant_state!("g.id = $1"));
/// The grant and its user's channel, in one read (the data API's: one round trip where two would follow each
/// other).
static GRANT_WITH_CHANNEL: Sql = Sql::by_key(grant_state!(
    ", ch.id AS channel_id, ch.title AS channel_title, ch.description AS channel_description, \
     ch.created_at AS channel_created_at",
    " LEFT JOIN channels ch ON ch.user_id = g.user_id",
    "g.id = $1"
));
static REVOKE_GRANT: Sql = Sql::new("UPDATE grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL");
static REVOKE_PRESENTED: Sql = Sql::new(
    "UPDATE grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL \
     AND ($3 IS NULL OR refresh_hash = $3) AND ($4 IS NULL OR client_id = $4)",
);
/// The code row names the grant it was redeemed for (the grants table has no index on `code_hash`).
static REVOKE_GRANTS_OF_CODE: Sql = Sql::new(
    "UPDATE grants SET revoked_at = $1 WHERE id IN (SELECT grant_id FROM auth_codes WHERE code_hash = $2) \
     AND revoked_at IS NULL",
);
/// The audit records of the grants revoked at `$1` by a code's reuse.
static AUDIT_GRANTS_OF_CODE: Sql = Sql::new(
    "INSERT INTO audit_log (at, action, user_id, client_id, grant_id) SELECT $1, 'code_reused', user_id, \
     client_id, id FROM grants WHERE id IN (SELECT grant_id FROM auth_codes WHERE code_hash = $2) AND revoked_at = $1",
);
/// A code's columns, in the order of [`INSERT_CODE`].
pub(crate) fn code_args(c: &AuthCode) -> Args<'_> {
    args![
        &c.code_hash,
        &c.client_id,
        &c.user_id,
        &c.redirect_uri,
        c.scopes.to_stored(),
        c.challenge.as_ref().map(|(m, _)| m.as_str()),
        c.challenge.as_ref().map(|(_, v)| v.as_str()),
        &c.nonce,
        c.auth_time,
        c.expires_at,
        c.grant_lifetime,
    ]
}

/// A grant's columns, in the order of [`INSERT_GRANT`].
pub(crate) fn grant_args(g: &Grant) -> Args<'_> {
    let mut args = args![&g.id, &g.client_id, &g.user_id, g.scopes.to_stored(), &g.refresh_hash, &g.dpop_jkt];
    args.extend(args![g.created_at, g.expires_at, g.revoked_at, &g.code_hash]);
    args
}

/// Inserts a grant as it is.
pub(crate) async fn insert_grant(tx: &mut dyn Tx, g: &Grant) -> StoreResult<u64> {
    tx.exec(&INSERT_GRANT, grant_args(g)).await
}

/// Keeps the newest `limit` live grants of a set, invalidating the rest, when its count of unrevoked grants
/// (`count`, with its arguments: an upper bound) is over the limit; true when it was.
async fn enforce_limit(
    tx: &mut dyn Tx,
    count: (&'static Sql, Args<'_>),
    over: (&'static Sql, Args<'_>),
    limit: u32,
) -> StoreResult<bool> {
    let over_limit = tx.scalar(count.0, count.1).await?.unwrap_or(0) > i64::from(limit);
    if over_limit {
        tx.exec(over.0, over.1).await?;
    }
    Ok(over_limit)
}

/// Marks the code used and stores the grant, then enforces the limits: one unit of work.
fn redeem<'t>(tx: &'t mut dyn Tx, r: &'t Redemption) -> BoxFuture<'t, StoreResult<Outcome<Redeemed>>> {
    Box::pin(async move {
        let (g, limits, now) = (&r.grant, r.limits, r.now);
        tx.lock(&LOCK_USER, args![&g.user_id]).await?;
        if tx.exec(&USE_CODE, args![now, &g.id, &g.code_hash, g.scopes.to_stored()]).await? == 0 {
            return Ok(Outcome::Discard(Redeemed::AlreadyUsed));
        }
        insert_grant(tx, g).await?;
        let per_client_user = i64::from(limits.per_client_user);
        let client_user_over = enforce_limit(
            tx,
            (&UNREVOKED_OF_CLIENT_USER, args![&g.user_id, &g.client_id]),
            (&OVER_CLIENT_USER_LIMIT, args![now, &g.client_id, &g.user_id, per_client_user]),
            limits.per_client_user,
        )
        .await?;
        let user_over = enforce_limit(
            tx,
            (&UNREVOKED_OF_USER, args![&g.user_id]),
            (&OVER_USER_LIMIT, args![now, &g.user_id, i64::from(limits.per_user)]),
            limits.per_user,
        )
        .await?;
        if client_user_over || user_over {
            tx.exec(&RECOUNT, args![&g.user_id]).await?;
        }
        Ok(Outcome::Keep(Redeemed::Issued))
    })
}

/// Revokes the grants of a reused code, each with its audit record.
fn revoke_of_code<'t>(
    tx: &'t mut dyn Tx,
    (code, now): &'t (Vec<u8>, UnixTime),
) -> BoxFuture<'t, StoreResult<Outcome<u64>>> {
    Box::pin(async move {
        let n = tx.exec(&REVOKE_GRANTS_OF_CODE, args![*now, code]).await?;
        if n > 0 {
            tx.exec(&AUDIT_GRANTS_OF_CODE, args![*now, code]).await?;
        }
        Ok(Outcome::Keep(n))
    })
}

#[async_trait]
impl<E: Engine> Grants for Db<E> {
    async fn insert_code(&self, c: &AuthCode) -> StoreResult<()> {
        self.exec(&INSERT_CODE, code_args(c)).await?;
        Ok(())
    }

    async fn code(&self, code_hash: &[u8]) -> StoreResult<Option<AuthCode>> {
        self.engine.one(&CODE, args![code_hash], rows::code_from_row).await
    }

    async fn code_with_user(&self, code_hash: &[u8]) -> StoreResult<Option<(AuthCode, Option<User>)>> {
        self.engine.one(&CODE_WITH_USER, args![code_hash], rows::code_and_user_from_row).await
    }

    async fn redeem_code(&self, grant: &Grant, limits: GrantLimits, now: UnixTime) -> StoreResult<Redeemed> {
        let redemption = Redemption { grant: grant.clone(), limits, now };
        if let Some(done) = self.engine.redeem_fast(&redemption).await? {
            return Ok(done);
        }
        self.engine.unit(Durability::Durable, redeem, redemption).await
    }

    async fn revoke_grants_of_code(&self, code_hash: &[u8], now: UnixTime) -> StoreResult<u64> {
        self.engine.unit(Durability::Durable, revoke_of_code, (code_hash.to_vec(), now)).await
    }

    async fn legacy_grant_by_refresh(&self, refresh_hash: &[u8]) -> StoreResult<Option<GrantState>> {
        self.engine.one(&LEGACY_GRANT, args![refresh_hash], rows::grant_state_from_row).await
    }

    async fn grant(&self, id: &GrantId) -> StoreResult<Option<GrantState>> {
        self.engine.one(&GRANT, args![id], rows::grant_state_from_row).await
    }

    async fn grant_with_channel(&self, id: &GrantId) -> StoreResult<Option<(GrantState, Option<Channel>)>> {
        self.engine.one(&GRANT_WITH_CHANNEL, args![id], rows::grant_and_channel_from_row).await
    }

    async fn revoke_grant(&self, id: &GrantId, now: UnixTime) -> StoreResult<bool> {
        self.exec_one(&REVOKE_GRANT, args![now, id]).await
    }

    async fn revoke_presented(
        &self,
        id: &GrantId,
        refresh_hash: Option<&[u8]>,
        client_id: Option<&str>,
        now: UnixTime,
    ) -> StoreResult<bool> {
        self.exec_one(&REVOKE_PRESENTED, args![now, id, refresh_hash, client_id]).await
    }
}
