//! The PostgreSQL backend: many stateless instances on one database (also the wire protocol of the distributed
//! PostgreSQL-compatible engines, see `docs/scaling.md`).
//!
//! Concurrency under READ COMMITTED, statement by statement:
//! - a code is redeemed once: `UPDATE ... WHERE used_at IS NULL` blocks on a concurrent redeemer's row lock and
//!   re-checks the row after it commits, so the second sees the code used;
//! - the refresh-token limits hold: the user's row is locked (`FOR NO KEY UPDATE`) before the grant is inserted
//!   and the limits enforced, so issuances for one user run one after the other and each sees the last;
//! - a single-use value is recorded once: `INSERT ... ON CONFLICT` waits for a concurrent inserter of the same key.
//!
//! Connection failures (refused, reset, pool timeout, server shutting down) become [`StoreError::Unavailable`]; a
//! transaction that lost a serialization or deadlock race is run again a few times first.

use crate::client_cache::ClientCache;
use crate::records::*;
use crate::rows::{self, client_from_row, code_from_row, grant_state_from_row, user_from_row};
use crate::{single_use, PoolSettings, Store, StoreError, StoreResult};
use async_trait::async_trait;
use latchkey_core::access_token::GrantId;
use latchkey_core::app_check::Category;
use latchkey_core::client::Client;
use latchkey_core::time::UnixTime;
use latchkey_core::token::{AuthCode, Grant};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::Row;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// The PostgreSQL store.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    clients: Arc<ClientCache>,
}

/// A pooled connection idle for longer is pinged before it is handed out (a broken one is replaced).
const PING_IF_IDLE_FOR: Duration = Duration::from_millis(50);

/// How often a transaction that lost a serialization or deadlock race is tried again.
const TX_RETRIES: u32 = 3;

const GRANT_STATE: &str = "SELECT g.id, g.client_id, g.user_id, g.scopes, g.refresh_hash, g.dpop_jkt, g.created_at, \
     g.expires_at, g.revoked_at, g.code_hash, u.disabled_at AS user_disabled_at, c.deleted_at AS client_deleted_at, \
     p.api_enabled FROM grants g JOIN users u ON u.id = g.user_id JOIN clients c ON c.client_id = g.client_id \
     JOIN projects p ON p.id = c.project_id";

/// Runs a transactional method again while it fails with a serialization failure or a deadlock.
macro_rules! retrying {
    ($call:expr) => {{
        let mut attempt = 0u32;
        loop {
            match $call.await {
                Err(e) if is_retryable(&e) && attempt < TX_RETRIES => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(5u64 << attempt)).await;
                }
                other => break other.map_err(map_err),
            }
        }
    }};
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db`) with `pool` settings and migrates it
    /// (migrations take an advisory lock, so instances starting together run them once).
    pub async fn open(url: &str, pool: PoolSettings) -> StoreResult<Self> {
        let store = Self::connect(url, pool).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Connects without migrating.
    pub async fn connect(url: &str, pool: PoolSettings) -> StoreResult<Self> {
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::Other(format!("bad PostgreSQL URL: {e}")))?
            .application_name("latchkey");
        let pool = PgPoolOptions::new()
            .max_connections(pool.max_connections.max(1))
            .min_connections(0)
            .acquire_timeout(pool.acquire_timeout)
            // A connection that sat idle (for example through an outage) is checked with a ping before use; a
            // busy one is not, so that a query costs one round trip under load instead of two.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for < PING_IF_IDLE_FOR {
                        return Ok(true);
                    }
                    Ok(sqlx::Connection::ping(conn).await.is_ok())
                })
            })
            .idle_timeout(Duration::from_secs(300))
            .connect_with(options)
            .await
            .map_err(map_err)?;
        Ok(Self { pool, clients: Arc::default() })
    }

    /// Runs the migrations not yet applied.
    pub async fn migrate(&self) -> StoreResult<()> {
        sqlx::migrate!("migrations/postgres")
            .run(&self.pool)
            .await
            .map_err(|e| StoreError::Other(format!("migration failed: {e}")))
    }

    /// Redeems the code and issues the grant in one call of `latchkey_redeem_code` (migration 0102), which runs
    /// the statements of the redemption in one transaction and one round trip.
    async fn redeem_once(&self, g: &Grant, limits: GrantLimits, now: UnixTime) -> sqlx::Result<Redeemed> {
        let issued: bool =
            sqlx::query_scalar("SELECT latchkey_redeem_code($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)")
                .bind(&g.code_hash)
                .bind(now.0)
                .bind(&g.id.0[..])
                .bind(&g.client_id)
                .bind(&g.user_id)
                .bind(i64::from(g.scopes.0))
                .bind(&g.refresh_hash)
                .bind(&g.dpop_jkt)
                .bind(g.created_at.0)
                .bind(opt_time(g.expires_at))
                .bind(i64::from(limits.per_client_user))
                .bind(i64::from(limits.per_user))
                .fetch_one(&self.pool)
                .await?;
        Ok(if issued { Redeemed::Issued } else { Redeemed::AlreadyUsed })
    }

    async fn record_once_tx(&self, values: &[(Vec<u8>, UnixTime)], now: UnixTime) -> sqlx::Result<Option<usize>> {
        let mut tx = self.pool.begin().await?;
        for (i, (key, expires_at)) in values.iter().enumerate() {
            // A row whose value expired may be taken over; a live one is a replay.
            let r = sqlx::query(
                "INSERT INTO replay (key_hash, expires_at) VALUES ($1, $2) ON CONFLICT (key_hash) DO UPDATE \
                 SET expires_at = EXCLUDED.expires_at WHERE replay.expires_at <= $3",
            )
            .bind(key)
            .bind(expires_at.0)
            .bind(now.0)
            .execute(&mut *tx)
            .await?;
            if r.rows_affected() == 0 {
                tx.rollback().await?;
                return Ok(Some(i));
            }
        }
        tx.commit().await?;
        Ok(None)
    }

    /// Bulk loading: each table in one statement over arrays (`UNNEST`), all in one transaction.
    async fn seed_tx(&self, users: &[(NewUser, Channel)], grants: &[Grant]) -> sqlx::Result<()> {
        let mut tx = self.pool.begin().await?;
        let col = |f: fn(&(NewUser, Channel)) -> String| users.iter().map(f).collect::<Vec<String>>();
        sqlx::query(
            "INSERT INTO users (id, email, name, password_hash, created_at) \
             SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])",
        )
        .bind(col(|(u, _)| u.id.clone()))
        .bind(col(|(u, _)| u.email.clone()))
        .bind(users.iter().map(|(u, _)| u.name.clone()).collect::<Vec<Option<String>>>())
        .bind(col(|(u, _)| u.password_hash.clone()))
        .bind(users.iter().map(|(u, _)| u.created_at.0).collect::<Vec<i64>>())
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO channels (id, user_id, title, description, created_at) \
             SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])",
        )
        .bind(col(|(_, c)| c.id.clone()))
        .bind(col(|(_, c)| c.user_id.clone()))
        .bind(col(|(_, c)| c.title.clone()))
        .bind(col(|(_, c)| c.description.clone()))
        .bind(users.iter().map(|(_, c)| c.created_at.0).collect::<Vec<i64>>())
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO grants (id, client_id, user_id, scopes, refresh_hash, dpop_jkt, created_at, expires_at, \
             revoked_at, code_hash) SELECT * FROM UNNEST($1::bytea[], $2::text[], $3::text[], $4::bigint[], \
             $5::bytea[], $6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bytea[])",
        )
        .bind(grants.iter().map(|g| g.id.0.to_vec()).collect::<Vec<Vec<u8>>>())
        .bind(grants.iter().map(|g| g.client_id.clone()).collect::<Vec<String>>())
        .bind(grants.iter().map(|g| g.user_id.clone()).collect::<Vec<String>>())
        .bind(grants.iter().map(|g| i64::from(g.scopes.0)).collect::<Vec<i64>>())
        .bind(grants.iter().map(|g| g.refresh_hash.clone()).collect::<Vec<Vec<u8>>>())
        .bind(grants.iter().map(|g| g.dpop_jkt.clone()).collect::<Vec<Option<String>>>())
        .bind(grants.iter().map(|g| g.created_at.0).collect::<Vec<i64>>())
        .bind(grants.iter().map(|g| opt_time(g.expires_at)).collect::<Vec<Option<i64>>>())
        .bind(grants.iter().map(|g| opt_time(g.revoked_at)).collect::<Vec<Option<i64>>>())
        .bind(grants.iter().map(|g| g.code_hash.clone()).collect::<Vec<Vec<u8>>>())
        .execute(&mut *tx)
        .await?;
        tx.commit().await
    }

    async fn create_user_tx(&self, u: &NewUser, ch: &Channel) -> sqlx::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("INSERT INTO users (id, email, name, password_hash, created_at) VALUES ($1, $2, $3, $4, $5)")
            .bind(&u.id)
            .bind(&u.email)
            .bind(&u.name)
            .bind(&u.password_hash)
            .bind(u.created_at.0)
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO channels (id, user_id, title, description, created_at) VALUES ($1, $2, $3, $4, $5)")
            .bind(&ch.id)
            .bind(&ch.user_id)
            .bind(&ch.title)
            .bind(&ch.description)
            .bind(ch.created_at.0)
            .execute(&mut *tx)
            .await?;
        tx.commit().await
    }
}

/// SQLSTATEs that mean "try again": the server is going away or cannot take the connection, or the network broke.
fn is_unavailable_code(code: &str) -> bool {
    code.starts_with("08") // connection exception
        || matches!(
            code,
            "57P01" // admin_shutdown
            | "57P02" // crash_shutdown
            | "57P03" // cannot_connect_now
            | "53300" // too_many_connections
            | "25006" // read_only_sql_transaction: a failover in progress
            | "40001" // serialization_failure, after retries
            | "40P01" // deadlock_detected, after retries
        )
}

/// Whether a transaction may simply be run again.
fn is_retryable(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if matches!(d.code().as_deref(), Some("40001" | "40P01")))
}

/// Maps a driver error into the store's terms.
pub(crate) fn map_err(e: sqlx::Error) -> StoreError {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => StoreError::Conflict(d.message().to_owned()),
        sqlx::Error::Database(d) if d.code().as_deref().is_some_and(is_unavailable_code) => {
            StoreError::Unavailable(e.to_string())
        }
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => StoreError::Unavailable(e.to_string()),
        _ => StoreError::Other(e.to_string()),
    }
}

fn opt_time(t: Option<UnixTime>) -> Option<i64> {
    t.map(|t| t.0)
}

#[async_trait]
impl Store for PgStore {
    async fn create_project(&self, p: &Project) -> StoreResult<()> {
        sqlx::query("INSERT INTO projects (id, name, api_enabled, created_at) VALUES ($1, $2, $3, $4)")
            .bind(&p.id)
            .bind(&p.name)
            .bind(p.api_enabled)
            .bind(p.created_at.0)
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(())
    }

    async fn project(&self, id: &str) -> StoreResult<Option<Project>> {
        let row = sqlx::query("SELECT id, name, api_enabled, created_at FROM projects WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_err)?;
        row.map(|r| rows::project_from_row(&r)).transpose()
    }

    async fn projects(&self) -> StoreResult<Vec<Project>> {
        let rows = sqlx::query("SELECT id, name, api_enabled, created_at FROM projects ORDER BY created_at, id")
            .fetch_all(&self.pool)
            .await
            .map_err(map_err)?;
        rows.iter().map(rows::project_from_row).collect()
    }

    async fn set_api_enabled(&self, id: &str, enabled: bool) -> StoreResult<bool> {
        let r = sqlx::query("UPDATE projects SET api_enabled = $1 WHERE id = $2")
            .bind(enabled)
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn delete_project(&self, id: &str) -> StoreResult<bool> {
        let r = sqlx::query("DELETE FROM projects WHERE id = $1").bind(id).execute(&self.pool).await;
        let r = self.clients.after(None, r).map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn create_client(&self, c: &Client) -> StoreResult<()> {
        let uris = serde_json::to_string(&c.redirect_uris).map_err(|e| StoreError::Other(e.to_string()))?;
        sqlx::query(
            "INSERT INTO clients (client_id, project_id, name, client_type, redirect_uris, secret_hash, bundle_id, \
             store_id, team_id, app_check, uwp_store_id, package_sid, extension_item_id, created_at, deleted_at, \
             last_used_at, app_check_state, app_check_pending, app_check_pending_at, ownership_verified_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)",
        )
        .bind(&c.client_id)
        .bind(&c.project_id)
        .bind(&c.name)
        .bind(c.client_type.as_str())
        .bind(uris)
        .bind(&c.secret_hash)
        .bind(&c.details.bundle_id)
        .bind(&c.details.store_id)
        .bind(&c.details.team_id)
        .bind(c.details.app_check)
        .bind(&c.details.uwp_store_id)
        .bind(&c.details.package_sid)
        .bind(&c.details.extension_item_id)
        .bind(c.created_at.0)
        .bind(opt_time(c.deleted_at))
        .bind(opt_time(c.last_used_at))
        .bind(c.app_check.state.as_str())
        .bind(c.app_check.pending.map(|(s, _)| s.as_str()))
        .bind(c.app_check.pending.map(|(_, at)| at.0))
        .bind(opt_time(c.ownership_verified_at))
        .execute(&self.pool)
        .await
        .map_err(map_err)?;
        Ok(())
    }

    async fn client(&self, client_id: &str) -> StoreResult<Option<Client>> {
        let load = || async {
            let row = sqlx::query("SELECT * FROM clients WHERE client_id = $1")
                .bind(client_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(map_err)?;
            row.map(|r| client_from_row(&r)).transpose()
        };
        self.clients.get_or_load(client_id, load).await
    }

    async fn clients(&self, project_id: Option<&str>) -> StoreResult<Vec<Client>> {
        let rows = sqlx::query(
            "SELECT * FROM clients WHERE $1::text IS NULL OR project_id = $1 ORDER BY created_at, client_id",
        )
        .bind(project_id)
        .fetch_all(&self.pool)
        .await
        .map_err(map_err)?;
        rows.iter().map(client_from_row).collect()
    }

    async fn delete_client(&self, client_id: &str, at: UnixTime) -> StoreResult<bool> {
        let r = sqlx::query("UPDATE clients SET deleted_at = $1 WHERE client_id = $2 AND deleted_at IS NULL")
            .bind(at.0)
            .bind(client_id)
            .execute(&self.pool)
            .await;
        let r = self.clients.after(Some(client_id), r).map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn update_client(&self, c: &Client) -> StoreResult<bool> {
        let uris = serde_json::to_string(&c.redirect_uris).map_err(|e| StoreError::Other(e.to_string()))?;
        let r = sqlx::query(
            "UPDATE clients SET name = $2, redirect_uris = $3, bundle_id = $4, store_id = $5, team_id = $6, \
             app_check = $7, uwp_store_id = $8, package_sid = $9, extension_item_id = $10, app_check_state = $11, \
             app_check_pending = $12, app_check_pending_at = $13 WHERE client_id = $1",
        )
        .bind(&c.client_id)
        .bind(&c.name)
        .bind(uris)
        .bind(&c.details.bundle_id)
        .bind(&c.details.store_id)
        .bind(&c.details.team_id)
        .bind(c.details.app_check)
        .bind(&c.details.uwp_store_id)
        .bind(&c.details.package_sid)
        .bind(&c.details.extension_item_id)
        .bind(c.app_check.state.as_str())
        .bind(c.app_check.pending.map(|(s, _)| s.as_str()))
        .bind(c.app_check.pending.map(|(_, at)| at.0))
        .execute(&self.pool)
        .await;
        let r = self.clients.after(Some(&c.client_id), r).map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn restore_client(&self, client_id: &str, deleted_since: UnixTime) -> StoreResult<bool> {
        let r = sqlx::query("UPDATE clients SET deleted_at = NULL WHERE client_id = $1 AND deleted_at >= $2")
            .bind(client_id)
            .bind(deleted_since.0)
            .execute(&self.pool)
            .await;
        let r = self.clients.after(Some(client_id), r).map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn touch_client(&self, client_id: &str, now: UnixTime) -> StoreResult<bool> {
        let r = sqlx::query(
            "UPDATE clients SET last_used_at = $2 WHERE client_id = $1 AND (last_used_at IS NULL OR last_used_at <= $3)",
        )
        .bind(client_id)
        .bind(now.0)
        .bind(now.0 - latchkey_core::client::LAST_USED_GRANULARITY)
        .execute(&self.pool)
        .await;
        let r = self.clients.after(Some(client_id), r).map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn delete_unused_clients(&self, active_before: UnixTime, now: UnixTime) -> StoreResult<u64> {
        let r = sqlx::query(
            "UPDATE clients SET deleted_at = $2 WHERE deleted_at IS NULL AND COALESCE(last_used_at, created_at) < $1",
        )
        .bind(active_before.0)
        .bind(now.0)
        .execute(&self.pool)
        .await;
        let r = self.clients.after(None, r).map_err(map_err)?;
        Ok(r.rows_affected())
    }

    async fn purge_deleted_clients(&self, deleted_before: UnixTime) -> StoreResult<u64> {
        let r =
            sqlx::query("DELETE FROM clients WHERE deleted_at < $1").bind(deleted_before.0).execute(&self.pool).await;
        let r = self.clients.after(None, r).map_err(map_err)?;
        Ok(r.rows_affected())
    }

    async fn set_ownership_verified(&self, client_id: &str, at: UnixTime) -> StoreResult<bool> {
        let r = sqlx::query("UPDATE clients SET ownership_verified_at = $2 WHERE client_id = $1")
            .bind(client_id)
            .bind(at.0)
            .execute(&self.pool)
            .await;
        let r = self.clients.after(Some(client_id), r).map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn set_app_check_debug_secret(&self, client_id: &str, hash: Option<&[u8]>) -> StoreResult<bool> {
        let r = sqlx::query("UPDATE clients SET app_check_debug_hash = $2 WHERE client_id = $1")
            .bind(client_id)
            .bind(hash)
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn app_check_debug_secret(&self, client_id: &str) -> StoreResult<Option<Vec<u8>>> {
        let row = sqlx::query("SELECT app_check_debug_hash FROM clients WHERE client_id = $1")
            .bind(client_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(row.and_then(|r| r.try_get::<Option<Vec<u8>>, _>(0).ok().flatten()))
    }

    async fn count_app_check(&self, client_id: &str, hour: UnixTime, category: Category) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO app_check_metrics (client_id, hour, category, count) VALUES ($1, $2, $3, 1) \
             ON CONFLICT (client_id, hour, category) DO UPDATE SET count = app_check_metrics.count + 1",
        )
        .bind(client_id)
        .bind(hour.0)
        .bind(category.as_str())
        .execute(&self.pool)
        .await
        .map_err(map_err)?;
        Ok(())
    }

    async fn app_check_metrics(&self, client_id: &str, since: UnixTime) -> StoreResult<Vec<AppCheckCount>> {
        let rows = sqlx::query(
            "SELECT hour, category, count FROM app_check_metrics WHERE client_id = $1 AND hour >= $2 \
             ORDER BY hour, category",
        )
        .bind(client_id)
        .bind(since.0)
        .fetch_all(&self.pool)
        .await
        .map_err(map_err)?;
        rows.iter().map(rows::app_check_count_from_row).collect()
    }

    async fn put_listing(&self, l: &Listing) -> StoreResult<()> {
        let (email, group, members) = match &l.publisher {
            Publisher::Individual(e) => (Some(e.as_str()), None, "[]".to_owned()),
            Publisher::Group { name, members } => (
                None,
                Some(name.as_str()),
                serde_json::to_string(members).map_err(|e| StoreError::Other(e.to_string()))?,
            ),
        };
        sqlx::query(
            "INSERT INTO listings (item_id, publisher_email, group_name, members, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (item_id) DO UPDATE SET publisher_email = excluded.publisher_email, \
             group_name = excluded.group_name, members = excluded.members",
        )
        .bind(&l.item_id)
        .bind(email)
        .bind(group)
        .bind(members)
        .bind(l.created_at.0)
        .execute(&self.pool)
        .await
        .map_err(map_err)?;
        Ok(())
    }

    async fn listing(&self, item_id: &str) -> StoreResult<Option<Listing>> {
        let row = sqlx::query("SELECT * FROM listings WHERE item_id = $1")
            .bind(item_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_err)?;
        row.map(|r| rows::listing_from_row(&r)).transpose()
    }

    async fn delete_listing(&self, item_id: &str) -> StoreResult<bool> {
        let r = sqlx::query("DELETE FROM listings WHERE item_id = $1")
            .bind(item_id)
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn add_project_member(&self, member: &ProjectMember) -> StoreResult<bool> {
        self.console_add_member(member).await
    }

    async fn set_project_member_role(
        &self,
        project_id: &str,
        user_id: &str,
        role: ProjectRole,
    ) -> StoreResult<MemberChange> {
        self.console_set_role(project_id, user_id, role).await
    }

    async fn remove_project_member(&self, project_id: &str, user_id: &str) -> StoreResult<MemberChange> {
        self.console_remove_member(project_id, user_id).await
    }

    async fn project_members(&self, project_id: &str) -> StoreResult<Vec<Member>> {
        self.console_members(project_id).await
    }

    async fn project_role(&self, project_id: &str, user_id: &str) -> StoreResult<Option<ProjectRole>> {
        self.console_role(project_id, user_id).await
    }

    async fn projects_of(&self, user_id: &str) -> StoreResult<Vec<(Project, ProjectRole)>> {
        self.console_projects_of(user_id).await
    }

    async fn create_api_key(&self, key: &ApiKey) -> StoreResult<()> {
        self.console_create_key(key).await
    }

    async fn api_key(&self, id: &str) -> StoreResult<Option<ApiKey>> {
        self.console_key(id).await
    }

    async fn api_keys_of(&self, user_id: &str) -> StoreResult<Vec<ApiKey>> {
        self.console_keys_of(user_id).await
    }

    async fn delete_api_key(&self, id: &str, user_id: &str) -> StoreResult<bool> {
        self.console_delete_key(id, user_id).await
    }

    async fn touch_api_key(&self, id: &str, now: UnixTime) -> StoreResult<bool> {
        self.console_touch_key(id, now).await
    }

    async fn create_user(&self, u: &NewUser, ch: &Channel) -> StoreResult<()> {
        retrying!(self.create_user_tx(u, ch))
    }

    async fn user(&self, id: &str) -> StoreResult<Option<User>> {
        let row = sqlx::query("SELECT * FROM users WHERE id = $1").bind(id).fetch_optional(&self.pool).await;
        row.map_err(map_err)?.map(|r| user_from_row(&r)).transpose()
    }

    async fn user_by_email(&self, email: &str) -> StoreResult<Option<User>> {
        let row =
            sqlx::query("SELECT * FROM users WHERE lower(email) = lower($1)").bind(email).fetch_optional(&self.pool);
        row.await.map_err(map_err)?.map(|r| user_from_row(&r)).transpose()
    }

    async fn users(&self) -> StoreResult<Vec<User>> {
        let rows = sqlx::query("SELECT * FROM users ORDER BY created_at, id").fetch_all(&self.pool).await;
        rows.map_err(map_err)?.iter().map(user_from_row).collect()
    }

    async fn delete_user(&self, id: &str) -> StoreResult<bool> {
        let r = sqlx::query("DELETE FROM users WHERE id = $1").bind(id).execute(&self.pool).await.map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn set_user_disabled(&self, id: &str, at: Option<UnixTime>) -> StoreResult<bool> {
        let r = sqlx::query("UPDATE users SET disabled_at = $1 WHERE id = $2")
            .bind(opt_time(at))
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn channel_of(&self, user_id: &str) -> StoreResult<Option<Channel>> {
        let row = sqlx::query("SELECT id, user_id, title, description, created_at FROM channels WHERE user_id = $1")
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_err)?;
        row.map(|r| rows::channel_from_row(&r)).transpose()
    }

    async fn create_session(&self, s: &Session) -> StoreResult<()> {
        sqlx::query("INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)")
            .bind(&s.token_hash)
            .bind(&s.user_id)
            .bind(s.created_at.0)
            .bind(s.expires_at.0)
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(())
    }

    async fn session(&self, token_hash: &[u8], now: UnixTime) -> StoreResult<Option<Session>> {
        let row = sqlx::query(
            "SELECT s.token_hash, s.user_id, s.created_at, s.expires_at FROM sessions s JOIN users u \
             ON u.id = s.user_id WHERE s.token_hash = $1 AND s.expires_at > $2 AND u.disabled_at IS NULL",
        )
        .bind(token_hash)
        .bind(now.0)
        .fetch_optional(&self.pool)
        .await
        .map_err(map_err)?;
        row.map(|r| rows::session_from_row(&r)).transpose()
    }

    async fn delete_session(&self, token_hash: &[u8]) -> StoreResult<()> {
        sqlx::query("DELETE FROM sessions WHERE token_hash = $1")
            .bind(token_hash)
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(())
    }

    async fn record_login_failure(&self, key: &str, now: UnixTime, window: i64) -> StoreResult<u32> {
        let row = sqlx::query(
            "INSERT INTO login_failures AS f (key, count, window_start) VALUES ($1, 1, $2) \
             ON CONFLICT (key) DO UPDATE SET \
               count = CASE WHEN f.window_start <= $2 - $3 THEN 1 ELSE f.count + 1 END, \
               window_start = CASE WHEN f.window_start <= $2 - $3 THEN $2 ELSE f.window_start END \
             RETURNING count",
        )
        .bind(key)
        .bind(now.0)
        .bind(window)
        .fetch_one(&self.pool)
        .await
        .map_err(map_err)?;
        Ok(u32::try_from(row.try_get::<i64, _>(0).map_err(map_err)?).unwrap_or(u32::MAX))
    }

    async fn login_failures(&self, key: &str, now: UnixTime, window: i64) -> StoreResult<u32> {
        let row = sqlx::query("SELECT count FROM login_failures WHERE key = $1 AND window_start > $2")
            .bind(key)
            .bind(now.0 - window)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(match row {
            Some(r) => u32::try_from(r.try_get::<i64, _>(0).map_err(map_err)?).unwrap_or(u32::MAX),
            None => 0,
        })
    }

    async fn clear_login_failures(&self, key: &str) -> StoreResult<()> {
        sqlx::query("DELETE FROM login_failures WHERE key = $1")
            .bind(key)
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(())
    }

    async fn insert_code(&self, c: &AuthCode) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO auth_codes (code_hash, client_id, user_id, redirect_uri, scopes, challenge_method, \
             challenge, nonce, auth_time, expires_at, used_at, grant_lifetime) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, $11)",
        )
        .bind(&c.code_hash)
        .bind(&c.client_id)
        .bind(&c.user_id)
        .bind(&c.redirect_uri)
        .bind(i64::from(c.scopes.0))
        .bind(c.challenge.as_ref().map(|(m, _)| m.as_str()))
        .bind(c.challenge.as_ref().map(|(_, v)| v.as_str()))
        .bind(&c.nonce)
        .bind(c.auth_time.0)
        .bind(c.expires_at.0)
        .bind(c.grant_lifetime)
        .execute(&self.pool)
        .await
        .map_err(map_err)?;
        Ok(())
    }

    async fn code(&self, code_hash: &[u8]) -> StoreResult<Option<AuthCode>> {
        let row = sqlx::query("SELECT * FROM auth_codes WHERE code_hash = $1")
            .bind(code_hash)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_err)?;
        row.map(|r| code_from_row(&r)).transpose()
    }

    async fn redeem_code(&self, g: &Grant, limits: GrantLimits, now: UnixTime) -> StoreResult<Redeemed> {
        retrying!(self.redeem_once(g, limits, now))
    }

    async fn revoke_grants_of_code(&self, code_hash: &[u8], now: UnixTime) -> StoreResult<u64> {
        let r = sqlx::query("UPDATE grants SET revoked_at = $1 WHERE code_hash = $2 AND revoked_at IS NULL")
            .bind(now.0)
            .bind(code_hash)
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(r.rows_affected())
    }

    async fn legacy_grant_by_refresh(&self, refresh_hash: &[u8]) -> StoreResult<Option<GrantState>> {
        let row = sqlx::query(&format!("{GRANT_STATE} WHERE g.refresh_hash = $1 AND g.legacy_refresh"))
            .bind(refresh_hash)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_err)?;
        row.map(|r| grant_state_from_row(&r)).transpose()
    }

    async fn grant(&self, id: &GrantId) -> StoreResult<Option<GrantState>> {
        let row = sqlx::query(&format!("{GRANT_STATE} WHERE g.id = $1"))
            .bind(&id.0[..])
            .fetch_optional(&self.pool)
            .await
            .map_err(map_err)?;
        row.map(|r| grant_state_from_row(&r)).transpose()
    }

    async fn revoke_grant(&self, id: &GrantId, now: UnixTime) -> StoreResult<bool> {
        let r = sqlx::query("UPDATE grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(now.0)
            .bind(&id.0[..])
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn keys(&self, kind: KeyKind) -> StoreResult<Vec<StoredKey>> {
        let rows = sqlx::query("SELECT id, secret, created_at, retired_at FROM keys WHERE kind = $1 ORDER BY id DESC")
            .bind(kind.as_str())
            .fetch_all(&self.pool)
            .await
            .map_err(map_err)?;
        rows.iter().map(rows::key_from_row).collect()
    }

    async fn add_key(&self, kind: KeyKind, secret: &[u8], now: UnixTime) -> StoreResult<u32> {
        let row = sqlx::query("INSERT INTO keys (kind, secret, created_at) VALUES ($1, $2, $3) RETURNING id")
            .bind(kind.as_str())
            .bind(secret)
            .bind(now.0)
            .fetch_one(&self.pool)
            .await
            .map_err(map_err)?;
        let id: i64 = row.try_get(0).map_err(map_err)?;
        u32::try_from(id).map_err(|_| StoreError::Other("key id out of range".into()))
    }

    async fn retire_key(&self, id: u32, now: UnixTime) -> StoreResult<bool> {
        let r = sqlx::query("UPDATE keys SET retired_at = $1 WHERE id = $2 AND retired_at IS NULL")
            .bind(now.0)
            .bind(i64::from(id))
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn replace_key_secret(&self, id: u32, current: &[u8], secret: &[u8]) -> StoreResult<bool> {
        let r = sqlx::query("UPDATE keys SET secret = $1 WHERE id = $2 AND secret = $3")
            .bind(secret)
            .bind(i64::from(id))
            .bind(current)
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn record_once(&self, values: &[(Vec<u8>, UnixTime)], now: UnixTime) -> StoreResult<Option<usize>> {
        single_use::check(values)?;
        retrying!(self.record_once_tx(values, now))
    }

    async fn seed(&self, users: &[(NewUser, Channel)], grants: &[Grant]) -> StoreResult<()> {
        self.seed_tx(users, grants).await.map_err(map_err)
    }

    async fn purge_expired(&self, now: UnixTime) -> StoreResult<u64> {
        let mut n = 0;
        for sql in [
            "DELETE FROM sessions WHERE expires_at <= $1",
            "DELETE FROM auth_codes WHERE expires_at <= $1 - 86400",
            "DELETE FROM login_failures WHERE window_start <= $1 - 86400",
        ] {
            n += sqlx::query(sql).bind(now.0).execute(&self.pool).await.map_err(map_err)?.rows_affected();
        }
        // Single-use values sort by expiry (see `Store::record_once`), those of the earlier form after.
        let live = sqlx::query("DELETE FROM replay WHERE key_hash < $1").bind(single_use::live_from(now));
        n += live.execute(&self.pool).await.map_err(map_err)?.rows_affected();
        let earlier = sqlx::query("DELETE FROM replay WHERE key_hash >= $1 AND expires_at <= $2")
            .bind(&single_use::EARLIER_FORM_FROM[..])
            .bind(now.0);
        n += earlier.execute(&self.pool).await.map_err(map_err)?.rows_affected();
        Ok(n)
    }

    async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await.map_err(map_err)?;
        Ok(())
    }
}

mod console;

#[cfg(test)]
mod tests;
