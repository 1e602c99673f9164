//! The SQLite backend: one file in WAL mode. Writes are group-committed by one writer thread, and a durable
//! write is answered only once the WAL holding it is fdatasynced, so that a committed grant survives a crash
//! and a power cut; reads run on pooled connections (see [`engine`]).

mod engine;

use crate::client_cache::ClientCache;
use crate::records::*;
use crate::rows::{self, client_from_row, code_from_row, grant_state_from_row, user_from_row, SqliteRow};
use crate::{single_use, Store, StoreError, StoreResult};
use async_trait::async_trait;
use engine::{Durability, Engine, Outcome};
use latchkey_core::access_token::GrantId;
use latchkey_core::app_check::Category;
use latchkey_core::client::Client;
use latchkey_core::time::UnixTime;
use latchkey_core::token::{AuthCode, Grant};
use rusqlite::{params, Connection, Params};
use std::path::PathBuf;
use std::sync::Arc;

/// The SQLite store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    engine: Arc<Engine>,
    clients: Arc<ClientCache>,
}

/// The writer's page cache while seeding, in KiB.
const SEED_CACHE_KIB: u32 = 2 * 1024 * 1024;

/// The grant with the state of its user, client and project; a `WHERE` clause follows.
macro_rules! grant_state {
    () => {
        "SELECT g.id, g.client_id, g.user_id, g.scopes, g.refresh_hash, g.dpop_jkt, g.created_at, g.expires_at, \
         g.revoked_at, g.code_hash, u.disabled_at AS user_disabled_at, c.deleted_at AS client_deleted_at, \
         p.api_enabled FROM grants g JOIN users u ON u.id = g.user_id JOIN clients c ON c.client_id = g.client_id \
         JOIN projects p ON p.id = c.project_id"
    };
}

/// What [`Store::purge_expired`] deletes by time (`?1` is now); each is a range of an index.
const PURGE_BY_TIME: [&str; 3] = [
    "DELETE FROM sessions WHERE expires_at <= ?1",
    "DELETE FROM auth_codes WHERE expires_at <= ?1 - 86400",
    "DELETE FROM login_failures WHERE window_start <= ?1 - 86400",
];
/// The single-use values it deletes: they sort by expiry (see [`Store::record_once`]), those of the earlier form
/// after every expiry, purged by their `expires_at`.
const PURGE_SINGLE_USE: [&str; 2] =
    ["DELETE FROM replay WHERE key_hash < ?1", "DELETE FROM replay WHERE key_hash >= ?1 AND expires_at <= ?2"];

/// The file a `sqlite://PATH` (or `sqlite:PATH`) URL names; query parameters are ignored.
fn path_of(url: &str) -> StoreResult<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .ok_or_else(|| StoreError::Other(format!("bad SQLite URL {url:?}: use sqlite://PATH")))?;
    let path = rest.split('?').next().unwrap_or("");
    if path.is_empty() || path == ":memory:" {
        return Err(StoreError::Other("the SQLite store needs a file: use sqlite://PATH".into()));
    }
    Ok(PathBuf::from(path))
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `url` (`sqlite://path`), migrates it and starts its writer.
    pub async fn open(url: &str) -> StoreResult<Self> {
        let path = path_of(url)?;
        let engine = tokio::task::spawn_blocking(move || Engine::open(&path))
            .await
            .map_err(|e| StoreError::Other(format!("opening SQLite: {e}")))??;
        Ok(Self { engine, clients: Arc::default() })
    }

    /// One row, mapped, or `None`.
    fn one<T>(
        &self,
        sql: &str,
        params: impl Params,
        map: impl Fn(&SqliteRow<'_, '_>) -> StoreResult<T>,
    ) -> StoreResult<Option<T>> {
        self.engine
            .read(|c| {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(params)?;
                Ok(rows.next()?.map(|r| map(&SqliteRow::new(r))))
            })?
            .transpose()
    }

    /// Every row, mapped, read on the blocking pool (listings can be long).
    async fn all<T, P>(
        &self,
        sql: &'static str,
        params: P,
        map: fn(&SqliteRow<'_, '_>) -> StoreResult<T>,
    ) -> StoreResult<Vec<T>>
    where
        T: Send + 'static,
        P: Params + Send + 'static,
    {
        self.engine
            .read_blocking(move |c| {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(params)?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    out.push(map(&SqliteRow::new(r)));
                }
                Ok(out)
            })
            .await?
            .into_iter()
            .collect()
    }

    /// Runs one statement in the writer, durably; returns the rows it changed.
    async fn exec<P: Params + Send + 'static>(&self, sql: &'static str, params: P) -> StoreResult<usize> {
        self.engine.write_keep(move |c| c.prepare_cached(sql)?.execute(params)).await
    }

    /// Runs one statement in the writer, without waiting for the fsync (see [`Durability::Ephemeral`]).
    async fn exec_ephemeral<P: Params + Send + 'static>(&self, sql: &'static str, params: P) -> StoreResult<usize> {
        let run = move |c: &Connection| c.prepare_cached(sql)?.execute(params).map(Outcome::Keep);
        self.engine.write(Durability::Ephemeral, run).await
    }
}

fn opt_time(t: Option<UnixTime>) -> Option<i64> {
    t.map(|t| t.0)
}

fn to_json<T: serde::Serialize + ?Sized>(v: &T) -> StoreResult<String> {
    serde_json::to_string(v).map_err(|e| StoreError::Other(e.to_string()))
}

/// Refresh-token limits: keep the newest `limit` live grants of each set, invalidate the rest. The triggers'
/// count of unrevoked grants (`grant_counts`) is read first: at or under the limit nothing can be over it, and
/// the usual issuance costs two index lookups instead of a walk over the user's grants.
fn enforce_limits(c: &Connection, g: &Grant, limits: GrantLimits, now: UnixTime) -> rusqlite::Result<()> {
    let client_user: i64 = c
        .prepare_cached("SELECT COALESCE(SUM(unrevoked), 0) FROM grant_counts WHERE user_id = ?1 AND client_id = ?2")?
        .query_row(params![g.user_id, g.client_id], |r| r.get(0))?;
    if client_user > i64::from(limits.per_client_user) {
        c.prepare_cached(
            "UPDATE grants SET revoked_at = ?1 WHERE id IN (SELECT id FROM grants WHERE client_id = ?2 AND \
             user_id = ?3 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?1) \
             ORDER BY rowid DESC LIMIT -1 OFFSET ?4)",
        )?
        .execute(params![now.0, g.client_id, g.user_id, i64::from(limits.per_client_user)])?;
    }
    let user: i64 = c
        .prepare_cached("SELECT COALESCE(SUM(unrevoked), 0) FROM grant_counts WHERE user_id = ?1")?
        .query_row(params![g.user_id], |r| r.get(0))?;
    if user > i64::from(limits.per_user) {
        c.prepare_cached(
            "UPDATE grants SET revoked_at = ?1 WHERE id IN (SELECT id FROM grants WHERE user_id = ?2 AND \
             revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?1) ORDER BY rowid DESC LIMIT -1 OFFSET ?3)",
        )?
        .execute(params![now.0, g.user_id, i64::from(limits.per_user)])?;
    }
    Ok(())
}

/// Inserts a grant as it is.
fn insert_grant(c: &Connection, g: &Grant) -> rusqlite::Result<usize> {
    c.prepare_cached(
        "INSERT INTO grants (id, client_id, user_id, scopes, refresh_hash, dpop_jkt, created_at, expires_at, \
         revoked_at, code_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        g.id.encode(),
        g.client_id,
        g.user_id,
        i64::from(g.scopes.0),
        g.refresh_hash,
        g.dpop_jkt,
        g.created_at.0,
        opt_time(g.expires_at),
        opt_time(g.revoked_at),
        g.code_hash
    ])
}

/// Inserts a user and their channel.
fn insert_user(c: &Connection, u: &NewUser, ch: &Channel) -> rusqlite::Result<()> {
    c.prepare_cached("INSERT INTO users (id, email, name, password_hash, created_at) VALUES (?1, ?2, ?3, ?4, ?5)")?
        .execute(params![u.id, u.email, u.name, u.password_hash, u.created_at.0])?;
    c.prepare_cached("INSERT INTO channels (id, user_id, title, description, created_at) VALUES (?1, ?2, ?3, ?4, ?5)")?
        .execute(params![ch.id, ch.user_id, ch.title, ch.description, ch.created_at.0])?;
    Ok(())
}

/// Marks the code used and stores the grant, then enforces the limits: one job of the writer.
fn redeem(c: &Connection, g: &Grant, limits: GrantLimits, now: UnixTime) -> rusqlite::Result<Outcome<Redeemed>> {
    let used = c
        .prepare_cached("UPDATE auth_codes SET used_at = ?1, grant_id = ?3 WHERE code_hash = ?2 AND used_at IS NULL")?
        .execute(params![now.0, g.code_hash, g.id.encode()])?;
    if used == 0 {
        return Ok(Outcome::Discard(Redeemed::AlreadyUsed));
    }
    insert_grant(c, g)?;
    enforce_limits(c, g, limits, now)?;
    Ok(Outcome::Keep(Redeemed::Issued))
}

#[async_trait]
impl Store for SqliteStore {
    async fn create_project(&self, p: &Project) -> StoreResult<()> {
        let params = (p.id.clone(), p.name.clone(), p.api_enabled, p.created_at.0);
        self.exec("INSERT INTO projects (id, name, api_enabled, created_at) VALUES (?1, ?2, ?3, ?4)", params).await?;
        Ok(())
    }

    async fn project(&self, id: &str) -> StoreResult<Option<Project>> {
        self.one("SELECT id, name, api_enabled, created_at FROM projects WHERE id = ?1", [id], |r| {
            rows::project_from_row(r)
        })
    }

    async fn projects(&self) -> StoreResult<Vec<Project>> {
        self.all("SELECT id, name, api_enabled, created_at FROM projects ORDER BY created_at, id", (), |r| {
            rows::project_from_row(r)
        })
        .await
    }

    async fn set_api_enabled(&self, id: &str, enabled: bool) -> StoreResult<bool> {
        let n = self.exec("UPDATE projects SET api_enabled = ?1 WHERE id = ?2", (enabled, id.to_owned())).await?;
        Ok(n == 1)
    }

    async fn delete_project(&self, id: &str) -> StoreResult<bool> {
        Ok(self.clients.after(None, self.exec("DELETE FROM projects WHERE id = ?1", (id.to_owned(),)).await)? == 1)
    }

    async fn create_client(&self, c: &Client) -> StoreResult<()> {
        let uris = to_json(&c.redirect_uris)?;
        let c = c.clone();
        self.engine
            .write_keep(move |conn| {
                conn.prepare_cached(
                    "INSERT INTO clients (client_id, project_id, name, client_type, redirect_uris, secret_hash, \
                     bundle_id, store_id, team_id, app_check, uwp_store_id, package_sid, extension_item_id, \
                     created_at, deleted_at, last_used_at, app_check_state, app_check_pending, app_check_pending_at, \
                     ownership_verified_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
                )?
                .execute(params![
                    c.client_id,
                    c.project_id,
                    c.name,
                    c.client_type.as_str(),
                    uris,
                    c.secret_hash,
                    c.details.bundle_id,
                    c.details.store_id,
                    c.details.team_id,
                    c.details.app_check,
                    c.details.uwp_store_id,
                    c.details.package_sid,
                    c.details.extension_item_id,
                    c.created_at.0,
                    opt_time(c.deleted_at),
                    opt_time(c.last_used_at),
                    c.app_check.state.as_str(),
                    c.app_check.pending.map(|(s, _)| s.as_str()),
                    c.app_check.pending.map(|(_, at)| at.0),
                    opt_time(c.ownership_verified_at),
                ])
            })
            .await?;
        Ok(())
    }

    async fn client(&self, client_id: &str) -> StoreResult<Option<Client>> {
        let sql = "SELECT * FROM clients WHERE client_id = ?1";
        self.clients.get_or_load(client_id, || async { self.one(sql, [client_id], |r| client_from_row(r)) }).await
    }

    async fn clients(&self, project_id: Option<&str>) -> StoreResult<Vec<Client>> {
        self.all(
            "SELECT * FROM clients WHERE ?1 IS NULL OR project_id = ?1 ORDER BY created_at, client_id",
            (project_id.map(str::to_owned),),
            |r| client_from_row(r),
        )
        .await
    }

    async fn delete_client(&self, client_id: &str, at: UnixTime) -> StoreResult<bool> {
        let sql = "UPDATE clients SET deleted_at = ?1 WHERE client_id = ?2 AND deleted_at IS NULL";
        Ok(self.clients.after(Some(client_id), self.exec(sql, (at.0, client_id.to_owned())).await)? == 1)
    }

    async fn update_client(&self, client: &Client) -> StoreResult<bool> {
        let uris = to_json(&client.redirect_uris)?;
        let c = client.clone();
        let n = self
            .engine
            .write_keep(move |conn| {
                conn.prepare_cached(
                    "UPDATE clients SET name = ?2, redirect_uris = ?3, bundle_id = ?4, store_id = ?5, team_id = ?6, \
                     app_check = ?7, uwp_store_id = ?8, package_sid = ?9, extension_item_id = ?10, \
                     app_check_state = ?11, app_check_pending = ?12, app_check_pending_at = ?13 WHERE client_id = ?1",
                )?
                .execute(params![
                    c.client_id,
                    c.name,
                    uris,
                    c.details.bundle_id,
                    c.details.store_id,
                    c.details.team_id,
                    c.details.app_check,
                    c.details.uwp_store_id,
                    c.details.package_sid,
                    c.details.extension_item_id,
                    c.app_check.state.as_str(),
                    c.app_check.pending.map(|(s, _)| s.as_str()),
                    c.app_check.pending.map(|(_, at)| at.0),
                ])
            })
            .await;
        Ok(self.clients.after(Some(&client.client_id), n)? == 1)
    }

    async fn restore_client(&self, client_id: &str, deleted_since: UnixTime) -> StoreResult<bool> {
        let sql = "UPDATE clients SET deleted_at = NULL WHERE client_id = ?1 AND deleted_at >= ?2";
        Ok(self.clients.after(Some(client_id), self.exec(sql, (client_id.to_owned(), deleted_since.0)).await)? == 1)
    }

    async fn touch_client(&self, client_id: &str, now: UnixTime) -> StoreResult<bool> {
        let sql = "UPDATE clients SET last_used_at = ?2 WHERE client_id = ?1 AND \
                   (last_used_at IS NULL OR last_used_at <= ?3)";
        let stale_before = now.0 - latchkey_core::client::LAST_USED_GRANULARITY;
        let n = self.exec_ephemeral(sql, (client_id.to_owned(), now.0, stale_before)).await;
        Ok(self.clients.after(Some(client_id), n)? == 1)
    }

    async fn delete_unused_clients(&self, active_before: UnixTime, now: UnixTime) -> StoreResult<u64> {
        let sql = "UPDATE clients SET deleted_at = ?2 WHERE deleted_at IS NULL AND \
                   COALESCE(last_used_at, created_at) < ?1";
        Ok(self.clients.after(None, self.exec(sql, (active_before.0, now.0)).await)? as u64)
    }

    async fn purge_deleted_clients(&self, deleted_before: UnixTime) -> StoreResult<u64> {
        let n = self.exec("DELETE FROM clients WHERE deleted_at < ?1", (deleted_before.0,)).await;
        Ok(self.clients.after(None, n)? as u64)
    }

    async fn set_ownership_verified(&self, client_id: &str, at: UnixTime) -> StoreResult<bool> {
        let sql = "UPDATE clients SET ownership_verified_at = ?2 WHERE client_id = ?1";
        Ok(self.clients.after(Some(client_id), self.exec(sql, (client_id.to_owned(), at.0)).await)? == 1)
    }

    async fn set_app_check_debug_secret(&self, client_id: &str, hash: Option<&[u8]>) -> StoreResult<bool> {
        let sql = "UPDATE clients SET app_check_debug_hash = ?2 WHERE client_id = ?1";
        Ok(self.exec(sql, (client_id.to_owned(), hash.map(<[u8]>::to_vec))).await? == 1)
    }

    async fn app_check_debug_secret(&self, client_id: &str) -> StoreResult<Option<Vec<u8>>> {
        let sql = "SELECT app_check_debug_hash FROM clients WHERE client_id = ?1";
        Ok(self.one(sql, [client_id], |r| Ok(r.get::<_, Option<Vec<u8>>>(0).ok().flatten()))?.flatten())
    }

    async fn count_app_check(&self, client_id: &str, hour: UnixTime, category: Category) -> StoreResult<()> {
        let sql = "INSERT INTO app_check_metrics (client_id, hour, category, count) VALUES (?1, ?2, ?3, 1) \
                   ON CONFLICT (client_id, hour, category) DO UPDATE SET count = app_check_metrics.count + 1";
        self.exec_ephemeral(sql, (client_id.to_owned(), hour.0, category.as_str())).await?;
        Ok(())
    }

    async fn app_check_metrics(&self, client_id: &str, since: UnixTime) -> StoreResult<Vec<AppCheckCount>> {
        self.all(
            "SELECT hour, category, count FROM app_check_metrics WHERE client_id = ?1 AND hour >= ?2 \
             ORDER BY hour, category",
            (client_id.to_owned(), since.0),
            |r| rows::app_check_count_from_row(r),
        )
        .await
    }

    async fn put_listing(&self, l: &Listing) -> StoreResult<()> {
        let (email, group, members) = match &l.publisher {
            Publisher::Individual(e) => (Some(e.clone()), None, "[]".to_owned()),
            Publisher::Group { name, members } => (None, Some(name.clone()), to_json(members)?),
        };
        let sql = "INSERT INTO listings (item_id, publisher_email, group_name, members, created_at) \
                   VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (item_id) DO UPDATE SET \
                   publisher_email = excluded.publisher_email, group_name = excluded.group_name, \
                   members = excluded.members";
        self.exec(sql, (l.item_id.clone(), email, group, members, l.created_at.0)).await?;
        Ok(())
    }

    async fn listing(&self, item_id: &str) -> StoreResult<Option<Listing>> {
        self.one("SELECT * FROM listings WHERE item_id = ?1", [item_id], |r| rows::listing_from_row(r))
    }

    async fn delete_listing(&self, item_id: &str) -> StoreResult<bool> {
        Ok(self.exec("DELETE FROM listings WHERE item_id = ?1", (item_id.to_owned(),)).await? == 1)
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
        let (u, ch) = (u.clone(), ch.clone());
        self.engine.write_keep(move |c| insert_user(c, &u, &ch)).await
    }

    async fn user(&self, id: &str) -> StoreResult<Option<User>> {
        self.one("SELECT * FROM users WHERE id = ?1", [id], |r| user_from_row(r))
    }

    async fn user_by_email(&self, email: &str) -> StoreResult<Option<User>> {
        self.one("SELECT * FROM users WHERE email = ?1", [email], |r| user_from_row(r))
    }

    async fn users(&self) -> StoreResult<Vec<User>> {
        self.all("SELECT * FROM users ORDER BY created_at, id", (), |r| user_from_row(r)).await
    }

    async fn delete_user(&self, id: &str) -> StoreResult<bool> {
        Ok(self.exec("DELETE FROM users WHERE id = ?1", (id.to_owned(),)).await? == 1)
    }

    async fn set_user_disabled(&self, id: &str, at: Option<UnixTime>) -> StoreResult<bool> {
        Ok(self.exec("UPDATE users SET disabled_at = ?1 WHERE id = ?2", (opt_time(at), id.to_owned())).await? == 1)
    }

    async fn channel_of(&self, user_id: &str) -> StoreResult<Option<Channel>> {
        self.one(
            "SELECT id, user_id, title, description, created_at FROM channels WHERE user_id = ?1",
            [user_id],
            |r| rows::channel_from_row(r),
        )
    }

    async fn create_session(&self, s: &Session) -> StoreResult<()> {
        let sql = "INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)";
        self.exec(sql, (s.token_hash.clone(), s.user_id.clone(), s.created_at.0, s.expires_at.0)).await?;
        Ok(())
    }

    async fn session(&self, token_hash: &[u8], now: UnixTime) -> StoreResult<Option<Session>> {
        self.one(
            "SELECT s.token_hash, s.user_id, s.created_at, s.expires_at FROM sessions s \
             JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?1 AND s.expires_at > ?2 AND u.disabled_at IS NULL",
            params![token_hash, now.0],
            |r| rows::session_from_row(r),
        )
    }

    async fn delete_session(&self, token_hash: &[u8]) -> StoreResult<()> {
        self.exec("DELETE FROM sessions WHERE token_hash = ?1", (token_hash.to_vec(),)).await?;
        Ok(())
    }

    async fn record_login_failure(&self, key: &str, now: UnixTime, window: i64) -> StoreResult<u32> {
        let key = key.to_owned();
        let count: i64 = self
            .engine
            .write(Durability::Ephemeral, move |c| {
                c.prepare_cached(
                    "INSERT INTO login_failures (key, count, window_start) VALUES (?1, 1, ?2) \
                     ON CONFLICT(key) DO UPDATE SET \
                       count = CASE WHEN window_start <= ?2 - ?3 THEN 1 ELSE count + 1 END, \
                       window_start = CASE WHEN window_start <= ?2 - ?3 THEN ?2 ELSE window_start END \
                     RETURNING count",
                )?
                .query_row(params![key, now.0, window], |r| r.get(0))
                .map(Outcome::Keep)
            })
            .await?;
        Ok(u32::try_from(count).unwrap_or(u32::MAX))
    }

    async fn login_failures(&self, key: &str, now: UnixTime, window: i64) -> StoreResult<u32> {
        let sql = "SELECT count FROM login_failures WHERE key = ?1 AND window_start > ?2";
        let count = self.one(sql, params![key, now.0 - window], |r| {
            r.get::<_, i64>(0).map_err(|e| StoreError::Other(e.to_string()))
        })?;
        Ok(count.map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)))
    }

    async fn clear_login_failures(&self, key: &str) -> StoreResult<()> {
        self.exec_ephemeral("DELETE FROM login_failures WHERE key = ?1", (key.to_owned(),)).await?;
        Ok(())
    }

    async fn insert_code(&self, c: &AuthCode) -> StoreResult<()> {
        let c = c.clone();
        self.engine
            .write_keep(move |conn| {
                conn.prepare_cached(
                    "INSERT INTO auth_codes (code_hash, client_id, user_id, redirect_uri, scopes, challenge_method, \
                     challenge, nonce, auth_time, expires_at, used_at, grant_lifetime) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, NULL, ?11)",
                )?
                .execute(params![
                    c.code_hash,
                    c.client_id,
                    c.user_id,
                    c.redirect_uri,
                    i64::from(c.scopes.0),
                    c.challenge.as_ref().map(|(m, _)| m.as_str()),
                    c.challenge.as_ref().map(|(_, v)| v.as_str()),
                    c.nonce,
                    c.auth_time.0,
                    c.expires_at.0,
                    c.grant_lifetime,
                ])
            })
            .await?;
        Ok(())
    }

    async fn code(&self, code_hash: &[u8]) -> StoreResult<Option<AuthCode>> {
        self.one("SELECT * FROM auth_codes WHERE code_hash = ?1", [code_hash], |r| code_from_row(r))
    }

    async fn redeem_code(&self, g: &Grant, limits: GrantLimits, now: UnixTime) -> StoreResult<Redeemed> {
        let g = g.clone();
        self.engine.write(Durability::Durable, move |c| redeem(c, &g, limits, now)).await
    }

    async fn revoke_grants_of_code(&self, code_hash: &[u8], now: UnixTime) -> StoreResult<u64> {
        // The code row names the grant it was redeemed for (the grants table has no index on code_hash).
        let sql =
            "UPDATE grants SET revoked_at = ?1 WHERE id IN (SELECT grant_id FROM auth_codes WHERE code_hash = ?2) \
                   AND revoked_at IS NULL";
        Ok(self.exec(sql, (now.0, code_hash.to_vec())).await? as u64)
    }

    async fn legacy_grant_by_refresh(&self, refresh_hash: &[u8]) -> StoreResult<Option<GrantState>> {
        let sql = concat!(grant_state!(), " WHERE g.refresh_hash = ?1 AND g.legacy_refresh IS NOT NULL");
        self.one(sql, [refresh_hash], |r| grant_state_from_row(r))
    }

    async fn grant(&self, id: &GrantId) -> StoreResult<Option<GrantState>> {
        self.one(concat!(grant_state!(), " WHERE g.id = ?1"), [id.encode()], |r| grant_state_from_row(r))
    }

    async fn revoke_grant(&self, id: &GrantId, now: UnixTime) -> StoreResult<bool> {
        let sql = "UPDATE grants SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL";
        Ok(self.exec(sql, (now.0, id.encode())).await? == 1)
    }

    async fn keys(&self, kind: KeyKind) -> StoreResult<Vec<StoredKey>> {
        self.all(
            "SELECT id, secret, created_at, retired_at FROM keys WHERE kind = ?1 ORDER BY id DESC",
            (kind.as_str(),),
            |r| rows::key_from_row(r),
        )
        .await
    }

    async fn add_key(&self, kind: KeyKind, secret: &[u8], now: UnixTime) -> StoreResult<u32> {
        let secret = secret.to_vec();
        let id: i64 = self
            .engine
            .write_keep(move |c| {
                c.prepare_cached("INSERT INTO keys (kind, secret, created_at) VALUES (?1, ?2, ?3) RETURNING id")?
                    .query_row(params![kind.as_str(), secret, now.0], |r| r.get(0))
            })
            .await?;
        u32::try_from(id).map_err(|_| StoreError::Other("key id out of range".into()))
    }

    async fn retire_key(&self, id: u32, now: UnixTime) -> StoreResult<bool> {
        let sql = "UPDATE keys SET retired_at = ?1 WHERE id = ?2 AND retired_at IS NULL";
        Ok(self.exec(sql, (now.0, i64::from(id))).await? == 1)
    }

    async fn replace_key_secret(&self, id: u32, current: &[u8], secret: &[u8]) -> StoreResult<bool> {
        let sql = "UPDATE keys SET secret = ?1 WHERE id = ?2 AND secret = ?3";
        Ok(self.exec(sql, (secret.to_vec(), i64::from(id), current.to_vec())).await? == 1)
    }

    async fn record_once(&self, values: &[(Vec<u8>, UnixTime)], now: UnixTime) -> StoreResult<Option<usize>> {
        single_use::check(values)?;
        let values = values.to_vec();
        self.engine
            .write(Durability::Ephemeral, move |c| {
                // A row whose value expired may be taken over; a live one is a replay.
                let mut stmt = c.prepare_cached(
                    "INSERT INTO replay (key_hash, expires_at) VALUES (?1, ?2) ON CONFLICT(key_hash) DO UPDATE \
                     SET expires_at = excluded.expires_at WHERE replay.expires_at <= ?3",
                )?;
                for (i, (key, expires_at)) in values.iter().enumerate() {
                    if stmt.execute(params![key, expires_at.0, now.0])? == 0 {
                        return Ok(Outcome::Discard(Some(i)));
                    }
                }
                Ok(Outcome::Keep(None))
            })
            .await
    }

    async fn seed(&self, users: &[(NewUser, Channel)], grants: &[Grant]) -> StoreResult<()> {
        let (users, grants) = (users.to_vec(), grants.to_vec());
        self.engine
            .write_keep(move |c| {
                // Bulk loading touches a random page of each index per grant: a page cache that holds the
                // indexes of a large seed saves rereading and rewriting them batch after batch. Only the process
                // that seeds (the admin command) keeps it.
                c.execute_batch(&format!("PRAGMA cache_size = -{SEED_CACHE_KIB};"))?;
                for (u, ch) in &users {
                    insert_user(c, u, ch)?;
                }
                for g in &grants {
                    insert_grant(c, g)?;
                }
                Ok(())
            })
            .await
    }

    async fn purge_expired(&self, now: UnixTime) -> StoreResult<u64> {
        self.engine
            .write(Durability::Ephemeral, move |c| {
                let mut n = 0;
                for sql in PURGE_BY_TIME {
                    n += c.prepare_cached(sql)?.execute([now.0])? as u64;
                }
                let [live, earlier] = PURGE_SINGLE_USE;
                n += c.prepare_cached(live)?.execute([single_use::live_from(now)])? as u64;
                n += c.prepare_cached(earlier)?.execute(params![&single_use::EARLIER_FORM_FROM[..], now.0])? as u64;
                Ok(Outcome::Keep(n))
            })
            .await
    }

    async fn ping(&self) -> StoreResult<()> {
        self.engine.read(|c| c.query_row("SELECT 1", [], |_| Ok(())))
    }
}

mod console;

#[cfg(test)]
mod tests;
