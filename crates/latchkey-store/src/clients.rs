//! Projects and their OAuth clients, with what belongs to a client: App Check counts and its debug secret,
//! owner verification and the built-in listing directory.
//!
//! Client rows are cached in process for a second ([`crate::client_cache`]); every change made here forgets
//! the rows it may touch before it returns.

use crate::db::{Db, Durability, Engine};
use crate::records::{AppCheckCount, Listing, Project, ProjectSetting, Publisher};
use crate::rows::{self, StoreRow};
use crate::sql::{args, Args, Sql};
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use latchkey_core::app_check::Category;
use latchkey_core::client::{Client, ClientSecret, LAST_USED_GRANULARITY};
use latchkey_core::time::UnixTime;

/// Projects and clients.
#[async_trait]
pub trait Clients: Send + Sync {
    /// Creates a project.
    async fn create_project(&self, project: &Project) -> StoreResult<()>;
    /// A project by id.
    async fn project(&self, id: &str) -> StoreResult<Option<Project>>;
    /// Every project (but latchkey's own, which holds the clients of client ID metadata documents).
    async fn projects(&self) -> StoreResult<Vec<Project>>;
    /// Switches the data API on or off; false when there is no such project.
    async fn set_api_enabled(&self, id: &str, enabled: bool) -> StoreResult<bool>;
    /// Switches one of a project's settings on or off; false when there is no such project.
    async fn set_project_setting(&self, id: &str, setting: ProjectSetting, on: bool) -> StoreResult<bool>;
    /// Deletes a project with its clients and their grants; false when there is no such project.
    async fn delete_project(&self, id: &str) -> StoreResult<bool>;

    /// Creates a client.
    async fn create_client(&self, client: &Client) -> StoreResult<()>;
    /// A client by `client_id`, deleted or not.
    async fn client(&self, client_id: &str) -> StoreResult<Option<Client>>;
    /// The clients of a project, or every client.
    async fn clients(&self, project_id: Option<&str>) -> StoreResult<Vec<Client>>;
    /// Marks a client deleted (restorable); false when there is no such live client.
    async fn delete_client(&self, client_id: &str, at: UnixTime) -> StoreResult<bool>;
    /// Saves an edited client's name, redirect URIs and type-specific fields (its type, secret and times
    /// stay); false when there is no such client.
    async fn update_client(&self, client: &Client) -> StoreResult<bool>;
    /// Replaces a client's secrets with `after`, only if they are still `before`; false when they changed
    /// meanwhile (or there is no such client).
    async fn set_client_secrets(
        &self,
        client_id: &str,
        before: &[ClientSecret],
        after: &[ClientSecret],
    ) -> StoreResult<bool>;
    /// Restores a client deleted at or after `deleted_since`; false when there is no such deleted client.
    async fn restore_client(&self, client_id: &str, deleted_since: UnixTime) -> StoreResult<bool>;
    /// Records that the client got tokens at `now`: writes `last_used_at` only when it is unset or at least
    /// [`LAST_USED_GRANULARITY`] old; true when it wrote.
    async fn touch_client(&self, client_id: &str, now: UnixTime) -> StoreResult<bool>;
    /// Marks deleted (at `now`, so restorable) every live client last used, or created when never used,
    /// before `active_before`, or before `registered_active_before` for one that registered itself; returns how
    /// many.
    async fn delete_unused_clients(
        &self,
        active_before: UnixTime,
        registered_active_before: UnixTime,
        now: UnixTime,
    ) -> StoreResult<u64>;
    /// Replaces a self-registered client's registration access token (its hash), only while it is still `before`;
    /// false when it changed meanwhile (or there is no such client).
    async fn set_registration_token(&self, client_id: &str, before: &[u8], after: &[u8]) -> StoreResult<bool>;
    /// The project that collects the apps that register themselves, when one does.
    async fn open_registration_project(&self) -> StoreResult<Option<Project>>;
    /// Removes for good the clients deleted before `deleted_before`, with their codes and grants; returns how
    /// many clients.
    async fn purge_deleted_clients(&self, deleted_before: UnixTime) -> StoreResult<u64>;
    /// Records a successful owner verification; false when there is no such client.
    async fn set_ownership_verified(&self, client_id: &str, at: UnixTime) -> StoreResult<bool>;

    /// Sets (or, with `None`, removes) the hash of a client's App Check debug secret; false when there is no
    /// such client.
    async fn set_app_check_debug_secret(&self, client_id: &str, hash: Option<&[u8]>) -> StoreResult<bool>;
    /// The hash of a client's App Check debug secret.
    async fn app_check_debug_secret(&self, client_id: &str) -> StoreResult<Option<Vec<u8>>>;
    /// Counts one token request of a client in the hour starting at `hour`.
    async fn count_app_check(&self, client_id: &str, hour: UnixTime, category: Category) -> StoreResult<()>;
    /// A client's App Check counts from the hour `since` on, oldest first.
    async fn app_check_metrics(&self, client_id: &str, since: UnixTime) -> StoreResult<Vec<AppCheckCount>>;

    /// Registers (or replaces) a listing of the built-in listing directory.
    async fn put_listing(&self, listing: &Listing) -> StoreResult<()>;
    /// A listing by item ID.
    async fn listing(&self, item_id: &str) -> StoreResult<Option<Listing>>;
    /// Removes a listing; false when there is none.
    async fn delete_listing(&self, item_id: &str) -> StoreResult<bool>;
}

static CREATE_PROJECT: Sql = Sql::new(
    "INSERT INTO projects (id, name, api_enabled, created_at, time_based_access, org_id, audience, \
     rotate_refresh_tokens, open_registration) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
);
/// A project's columns, in the order its mapper reads them.
macro_rules! project_columns {
    () => {
        "id, name, api_enabled, created_at, time_based_access, org_id, audience, rotate_refresh_tokens, \
         open_registration"
    };
}
static PROJECT: Sql = Sql::new(concat!("SELECT ", project_columns!(), " FROM projects WHERE id = $1"));
/// Every project but latchkey's own, which holds the clients of metadata documents (`latchkey_core::registration`).
static PROJECTS: Sql = Sql::new(concat!(
    "SELECT ",
    project_columns!(),
    " FROM projects WHERE id <> 'client-metadata-documents' ORDER BY created_at, id"
));
static SET_API_ENABLED: Sql = Sql::new("UPDATE projects SET api_enabled = $1 WHERE id = $2");
/// One statement per [`ProjectSetting`], in its order.
static SET_SETTING: [Sql; 3] = [
    Sql::new("UPDATE projects SET time_based_access = $1 WHERE id = $2"),
    Sql::new("UPDATE projects SET rotate_refresh_tokens = $1 WHERE id = $2"),
    Sql::new("UPDATE projects SET open_registration = $1 WHERE id = $2"),
];
static OPEN_REGISTRATION: Sql =
    Sql::new(concat!("SELECT ", project_columns!(), " FROM projects WHERE open_registration = TRUE"));
static DELETE_PROJECT: Sql = Sql::new("DELETE FROM projects WHERE id = $1");

static CREATE_CLIENT: Sql = Sql::new(
    "INSERT INTO clients (client_id, project_id, name, client_type, redirect_uris, secret_hash, bundle_id, \
     store_id, team_id, app_check, uwp_store_id, package_sid, extension_item_id, created_at, deleted_at, \
     last_used_at, app_check_state, app_check_pending, app_check_pending_at, ownership_verified_at, secrets, \
     registration, registration_token_hash, client_uri, logo_uri) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, \
     $24, $25)",
);
/// A client's row, with its project's refresh-token rotation (`project_rotates`); a `WHERE` clause follows.
macro_rules! client_row {
    ($where:literal) => {
        concat!(
            "SELECT c.*, COALESCE((SELECT p.rotate_refresh_tokens FROM projects p WHERE p.id = c.project_id), FALSE) \
             AS project_rotates FROM clients c WHERE ",
            $where
        )
    };
}
static CLIENT: Sql = Sql::new(client_row!("c.client_id = $1"));
static CLIENTS: Sql =
    Sql::new(client_row!("CAST($1 AS TEXT) IS NULL OR c.project_id = $1 ORDER BY c.created_at, c.client_id"));
static DELETE_CLIENT: Sql = Sql::new("UPDATE clients SET deleted_at = $1 WHERE client_id = $2 AND deleted_at IS NULL");
static UPDATE_CLIENT: Sql = Sql::new(
    "UPDATE clients SET name = $2, redirect_uris = $3, bundle_id = $4, store_id = $5, team_id = $6, \
     app_check = $7, uwp_store_id = $8, package_sid = $9, extension_item_id = $10, app_check_state = $11, \
     app_check_pending = $12, app_check_pending_at = $13, client_uri = $14, logo_uri = $15 WHERE client_id = $1",
);
/// The legacy `secret_hash` column follows: the first enabled secret's hash, or none, so that no deleted secret's
/// hash stays in the row (or its backups).
static SET_SECRETS: Sql =
    Sql::new("UPDATE clients SET secrets = $3, secret_hash = $4 WHERE client_id = $1 AND secrets = $2");
static RESTORE_CLIENT: Sql = Sql::new("UPDATE clients SET deleted_at = NULL WHERE client_id = $1 AND deleted_at >= $2");
static TOUCH_CLIENT: Sql = Sql::new(
    "UPDATE clients SET last_used_at = $2 WHERE client_id = $1 AND (last_used_at IS NULL OR last_used_at <= $3)",
);
/// Made in the console, unused since `$1`; or registered dynamically, unused since `$3`. A client a metadata
/// document describes is not deleted restorably (its document is what it is) but removed ([`PURGE_UNUSED_DOCUMENTED`]).
static DELETE_UNUSED_CLIENTS: Sql = Sql::new(
    "UPDATE clients SET deleted_at = $2 WHERE deleted_at IS NULL AND (registration IS NULL OR registration = 'dynamic') \
     AND (COALESCE(last_used_at, created_at) < $1 OR (registration IS NOT NULL AND COALESCE(last_used_at, created_at) < $3))",
);
/// The clients of metadata documents unused since `$1`, with their grants: their documents make them again when
/// they are next used. One deleted in the console (blocked) stays.
static PURGE_UNUSED_DOCUMENTED: Sql = Sql::new(
    "DELETE FROM clients WHERE registration = 'document' AND deleted_at IS NULL \
     AND COALESCE(last_used_at, created_at) < $1",
);
static SET_REGISTRATION_TOKEN: Sql =
    Sql::new("UPDATE clients SET registration_token_hash = $3 WHERE client_id = $1 AND registration_token_hash = $2");
static PURGE_DELETED_CLIENTS: Sql = Sql::new("DELETE FROM clients WHERE deleted_at < $1");
static SET_OWNERSHIP_VERIFIED: Sql = Sql::new("UPDATE clients SET ownership_verified_at = $2 WHERE client_id = $1");

static SET_DEBUG_SECRET: Sql = Sql::new("UPDATE clients SET app_check_debug_hash = $2 WHERE client_id = $1");
static DEBUG_SECRET: Sql = Sql::new("SELECT app_check_debug_hash FROM clients WHERE client_id = $1");
static COUNT_APP_CHECK: Sql = Sql::new(
    "INSERT INTO app_check_metrics (client_id, hour, category, count) VALUES ($1, $2, $3, 1) \
     ON CONFLICT (client_id, hour, category) DO UPDATE SET count = app_check_metrics.count + 1",
);
static APP_CHECK_METRICS: Sql = Sql::new(
    "SELECT hour, category, count FROM app_check_metrics WHERE client_id = $1 AND hour >= $2 ORDER BY hour, category",
);

static PUT_LISTING: Sql = Sql::new(
    "INSERT INTO listings (item_id, publisher_email, group_name, members, created_at) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (item_id) DO UPDATE SET publisher_email = excluded.publisher_email, \
     group_name = excluded.group_name, members = excluded.members",
);
static LISTING: Sql = Sql::new("SELECT * FROM listings WHERE item_id = $1");
static DELETE_LISTING: Sql = Sql::new("DELETE FROM listings WHERE item_id = $1");

/// A client's type-specific fields, in the order of the `clients` table.
fn details(c: &Client) -> Args<'_> {
    let d = &c.details;
    args![&d.bundle_id, &d.store_id, &d.team_id, d.app_check, &d.uwp_store_id, &d.package_sid, &d.extension_item_id]
}

/// A client's App Check state, and the change on its way with when it takes effect.
fn app_check(c: &Client) -> Args<'_> {
    let pending = c.app_check.pending;
    args![c.app_check.state.as_str(), pending.map(|(s, _)| s.as_str()), pending.map(|(_, at)| at)]
}

fn to_json<T: serde::Serialize + ?Sized>(v: &T) -> StoreResult<String> {
    serde_json::to_string(v).map_err(|e| StoreError::Other(e.to_string()))
}

#[async_trait]
impl<E: Engine> Clients for Db<E> {
    async fn create_project(&self, p: &Project) -> StoreResult<()> {
        let placement = args![&p.org_id, p.audience.as_str(), p.rotate_refresh_tokens, p.open_registration];
        let mut row = args![&p.id, &p.name, p.api_enabled, p.created_at, p.time_based_access];
        row.extend(placement);
        self.exec(&CREATE_PROJECT, row).await?;
        Ok(())
    }

    async fn project(&self, id: &str) -> StoreResult<Option<Project>> {
        self.engine.one(&PROJECT, args![id], rows::project_from_row).await
    }

    async fn projects(&self) -> StoreResult<Vec<Project>> {
        self.engine.all(&PROJECTS, args![], rows::project_from_row).await
    }

    async fn set_api_enabled(&self, id: &str, enabled: bool) -> StoreResult<bool> {
        self.exec_one(&SET_API_ENABLED, args![enabled, id]).await
    }

    async fn set_project_setting(&self, id: &str, setting: ProjectSetting, on: bool) -> StoreResult<bool> {
        // The clients' cached rows carry their project's rotation.
        self.clients.after(None, self.exec_one(&SET_SETTING[setting as usize], args![on, id]).await)
    }

    async fn delete_project(&self, id: &str) -> StoreResult<bool> {
        self.clients.after(None, self.exec_one(&DELETE_PROJECT, args![id]).await)
    }

    async fn create_client(&self, c: &Client) -> StoreResult<()> {
        let mut args = args![&c.client_id, &c.project_id, &c.name, c.client_type.as_str()];
        // `secret_hash` is no longer read (the `secrets` list replaced it): the first secret's, for the column.
        let first = c.secrets.first().map_or(&[][..], |s| &s.hash[..]);
        args.extend(args![to_json(&c.redirect_uris)?, first]);
        args.extend(details(c));
        args.extend(args![c.created_at, c.deleted_at, c.last_used_at]);
        args.extend(app_check(c));
        let secrets = rows::secrets_json(&c.secrets)?;
        args.extend(args![c.ownership_verified_at, &secrets]);
        let r = c.registration.as_ref();
        args.extend(args![r.map(|r| r.kind.as_str()), r.and_then(|r| r.token_hash.as_deref())]);
        args.extend(args![r.and_then(|r| r.client_uri.as_deref()), r.and_then(|r| r.logo_uri.as_deref())]);
        self.clients.after(Some(&c.client_id), self.exec(&CREATE_CLIENT, args).await)?;
        Ok(())
    }

    async fn client(&self, client_id: &str) -> StoreResult<Option<Client>> {
        let load = || self.engine.one(&CLIENT, args![client_id], rows::client_from_row);
        self.clients.get_or_load(client_id, load).await
    }

    async fn clients(&self, project_id: Option<&str>) -> StoreResult<Vec<Client>> {
        self.engine.all(&CLIENTS, args![project_id], rows::client_from_row).await
    }

    async fn set_client_secrets(
        &self,
        client_id: &str,
        before: &[ClientSecret],
        after: &[ClientSecret],
    ) -> StoreResult<bool> {
        let legacy = after.iter().find(|s| s.enabled()).map_or(&[][..], |s| &s.hash[..]);
        let (before, after) = (rows::secrets_json(before)?, rows::secrets_json(after)?);
        let args = args![client_id, &before, &after, legacy];
        self.clients.after(Some(client_id), self.exec_one(&SET_SECRETS, args).await)
    }

    async fn delete_client(&self, client_id: &str, at: UnixTime) -> StoreResult<bool> {
        self.clients.after(Some(client_id), self.exec_one(&DELETE_CLIENT, args![at, client_id]).await)
    }

    async fn update_client(&self, c: &Client) -> StoreResult<bool> {
        let mut args = args![&c.client_id, &c.name, to_json(&c.redirect_uris)?];
        args.extend(details(c));
        args.extend(app_check(c));
        let r = c.registration.as_ref();
        args.extend(args![r.and_then(|r| r.client_uri.as_deref()), r.and_then(|r| r.logo_uri.as_deref())]);
        self.clients.after(Some(&c.client_id), self.exec_one(&UPDATE_CLIENT, args).await)
    }

    async fn restore_client(&self, client_id: &str, deleted_since: UnixTime) -> StoreResult<bool> {
        self.clients.after(Some(client_id), self.exec_one(&RESTORE_CLIENT, args![client_id, deleted_since]).await)
    }

    async fn touch_client(&self, client_id: &str, now: UnixTime) -> StoreResult<bool> {
        let args = args![client_id, now, now.0 - LAST_USED_GRANULARITY];
        let n = self.engine.exec(Durability::Ephemeral, &TOUCH_CLIENT, args).await;
        Ok(self.clients.after(Some(client_id), n)? == 1)
    }

    async fn delete_unused_clients(
        &self,
        active_before: UnixTime,
        registered_active_before: UnixTime,
        now: UnixTime,
    ) -> StoreResult<u64> {
        let args = args![active_before, now, registered_active_before];
        let deleted = self.clients.after(None, self.exec(&DELETE_UNUSED_CLIENTS, args).await)?;
        let purged = self.exec(&PURGE_UNUSED_DOCUMENTED, args![registered_active_before]).await;
        Ok(deleted + self.clients.after(None, purged)?)
    }

    async fn set_registration_token(&self, client_id: &str, before: &[u8], after: &[u8]) -> StoreResult<bool> {
        let changed = self.exec_one(&SET_REGISTRATION_TOKEN, args![client_id, before, after]).await;
        self.clients.after(Some(client_id), changed)
    }

    async fn open_registration_project(&self) -> StoreResult<Option<Project>> {
        self.engine.one(&OPEN_REGISTRATION, args![], rows::project_from_row).await
    }

    async fn purge_deleted_clients(&self, deleted_before: UnixTime) -> StoreResult<u64> {
        self.clients.after(None, self.exec(&PURGE_DELETED_CLIENTS, args![deleted_before]).await)
    }

    async fn set_ownership_verified(&self, client_id: &str, at: UnixTime) -> StoreResult<bool> {
        self.clients.after(Some(client_id), self.exec_one(&SET_OWNERSHIP_VERIFIED, args![client_id, at]).await)
    }

    async fn set_app_check_debug_secret(&self, client_id: &str, hash: Option<&[u8]>) -> StoreResult<bool> {
        self.exec_one(&SET_DEBUG_SECRET, args![client_id, hash]).await
    }

    async fn app_check_debug_secret(&self, client_id: &str) -> StoreResult<Option<Vec<u8>>> {
        let hash = |r: &dyn StoreRow| r.opt_bytes("app_check_debug_hash");
        Ok(self.engine.one(&DEBUG_SECRET, args![client_id], hash).await?.flatten())
    }

    async fn count_app_check(&self, client_id: &str, hour: UnixTime, category: Category) -> StoreResult<()> {
        self.exec_ephemeral(&COUNT_APP_CHECK, args![client_id, hour, category.as_str()]).await?;
        Ok(())
    }

    async fn app_check_metrics(&self, client_id: &str, since: UnixTime) -> StoreResult<Vec<AppCheckCount>> {
        self.engine.all(&APP_CHECK_METRICS, args![client_id, since], rows::app_check_count_from_row).await
    }

    async fn put_listing(&self, l: &Listing) -> StoreResult<()> {
        let (email, group, members) = match &l.publisher {
            Publisher::Individual(e) => (Some(e.as_str()), None, "[]".to_owned()),
            Publisher::Group { name, members } => (None, Some(name.as_str()), to_json(members)?),
        };
        self.exec(&PUT_LISTING, args![&l.item_id, email, group, members, l.created_at]).await?;
        Ok(())
    }

    async fn listing(&self, item_id: &str) -> StoreResult<Option<Listing>> {
        self.engine.one(&LISTING, args![item_id], rows::listing_from_row).await
    }

    async fn delete_listing(&self, item_id: &str) -> StoreResult<bool> {
        self.exec_one(&DELETE_LISTING, args![item_id]).await
    }
}
