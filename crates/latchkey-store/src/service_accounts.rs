//! Content owners and the service accounts that act for them: the channels an owner manages, the
//! service accounts of a project with their public keys (never a private key; at most [`MAX_KEYS`] each), and the
//! owners each account may act for.

use crate::db::{BoxFuture, Db, Durability, Engine, Outcome, Tx};
use crate::records::Channel;
use crate::rows::{self, StoreRow};
use crate::sql::{args, Sql};
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use latchkey_core::service_account::{PublicKey, ServiceKeyState};
use latchkey_core::time::UnixTime;

/// The most keys a service account holds (disabled ones included).
pub const MAX_KEYS: i64 = 10;

/// An entity that owns and manages several channels (a record label, a film studio).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentOwner {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// When it was made.
    pub created_at: UnixTime,
}

/// A service account of a project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccount {
    /// Its id (the key file's `client_id`).
    pub id: String,
    /// Its identifier, `NAME@PROJECT.iam.HOST` (the assertions' `iss`).
    pub email: String,
    /// Its project.
    pub project_id: String,
    /// Its display name.
    pub display_name: String,
    /// When it was made.
    pub created_at: UnixTime,
    /// When it was disabled, if it is.
    pub disabled_at: Option<UnixTime>,
}

/// A key of a service account: its public half only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccountKey {
    /// The key id (the assertions' `kid`, the key file's `private_key_id`).
    pub id: String,
    /// The account.
    pub account_id: String,
    /// The public key.
    pub public_key: PublicKey,
    /// When it was made.
    pub created_at: UnixTime,
    /// When it was disabled, if it is.
    pub disabled_at: Option<UnixTime>,
}

/// Content owners, service accounts and their keys.
#[async_trait]
pub trait ServiceAccounts: Send + Sync {
    /// Makes a content owner.
    async fn create_content_owner(&self, owner: &ContentOwner) -> StoreResult<()>;
    /// A content owner by id.
    async fn content_owner(&self, id: &str) -> StoreResult<Option<ContentOwner>>;
    /// Links a channel to an owner; false when either does not exist (or it is linked already).
    async fn link_channel(&self, owner_id: &str, channel_id: &str, now: UnixTime) -> StoreResult<bool>;
    /// Unlinks a channel; false when it was not linked.
    async fn unlink_channel(&self, owner_id: &str, channel_id: &str) -> StoreResult<bool>;
    /// The channels an owner manages, by id.
    async fn owner_channels(&self, owner_id: &str) -> StoreResult<Vec<Channel>>;
    /// Makes a service account; false when its identifier is taken.
    async fn create_service_account(&self, account: &ServiceAccount) -> StoreResult<bool>;
    /// A service account by identifier (e-mail form) or id.
    async fn service_account(&self, email_or_id: &str) -> StoreResult<Option<ServiceAccount>>;
    /// The service accounts of a project, by identifier.
    async fn service_accounts(&self, project_id: &str) -> StoreResult<Vec<ServiceAccount>>;
    /// Disables (`Some(now)`) or enables (`None`) a service account; false when there is none.
    async fn set_service_account_disabled(&self, id: &str, at: Option<UnixTime>) -> StoreResult<bool>;
    /// Deletes a service account with its keys and owner grants.
    async fn delete_service_account(&self, id: &str) -> StoreResult<bool>;
    /// Adds a key, unless the account holds [`MAX_KEYS`] already (false then).
    async fn add_service_account_key(&self, key: &ServiceAccountKey) -> StoreResult<bool>;
    /// The keys of an account, oldest first.
    async fn service_account_keys(&self, account_id: &str) -> StoreResult<Vec<ServiceAccountKey>>;
    /// A key by id.
    async fn service_account_key(&self, id: &str) -> StoreResult<Option<ServiceAccountKey>>;
    /// Disables (`Some(now)`) or enables (`None`) a key; false when there is none.
    async fn set_key_disabled(&self, id: &str, at: Option<UnixTime>) -> StoreResult<bool>;
    /// Deletes a key.
    async fn delete_service_account_key(&self, id: &str) -> StoreResult<bool>;
    /// Lets an account act for a content owner; false when either does not exist (or it may already).
    async fn grant_content_owner(&self, owner_id: &str, account_id: &str, now: UnixTime) -> StoreResult<bool>;
    /// Lets an account revoke and grant the owner's role; false when either does not exist (or it may already).
    async fn add_content_owner_admin(&self, owner_id: &str, user_id: &str, now: UnixTime) -> StoreResult<bool>;
    /// The e-mail addresses of an owner's administrators.
    async fn content_owner_admins(&self, owner_id: &str) -> StoreResult<Vec<String>>;
    /// Whether a user administers an owner.
    async fn is_content_owner_admin(&self, owner_id: &str, user_id: &str) -> StoreResult<bool>;
    /// Takes an owner's role from an account; false when it did not hold it.
    async fn revoke_content_owner(&self, owner_id: &str, account_id: &str) -> StoreResult<bool>;
    /// The service accounts that may act for an owner, by identifier.
    async fn content_owner_accounts(&self, owner_id: &str) -> StoreResult<Vec<ServiceAccount>>;
    /// A key with its account and whether its project has the data API (the grant's and the data API's check).
    async fn service_key_state(&self, key_id: &str) -> StoreResult<Option<ServiceKeyState>>;
    /// Whether an account may act for a content owner.
    async fn may_act_for(&self, account_id: &str, owner_id: &str) -> StoreResult<bool>;
}

static INSERT_OWNER: Sql = Sql::new("INSERT INTO content_owners (id, name, created_at) VALUES ($1, $2, $3)");
static OWNER: Sql = Sql::new("SELECT id, name, created_at FROM content_owners WHERE id = $1");
static LINK: Sql = Sql::new(
    "INSERT INTO content_owner_channels (owner_id, channel_id, linked_at) SELECT o.id, c.id, $3 \
     FROM content_owners o JOIN channels c ON c.id = $2 WHERE o.id = $1 ON CONFLICT DO NOTHING",
);
static UNLINK: Sql = Sql::new("DELETE FROM content_owner_channels WHERE owner_id = $1 AND channel_id = $2");
static OWNER_CHANNELS: Sql = Sql::new(
    "SELECT c.id, c.user_id, c.title, c.description, c.created_at FROM content_owner_channels l \
     JOIN channels c ON c.id = l.channel_id WHERE l.owner_id = $1 ORDER BY c.id",
);
static INSERT_ACCOUNT: Sql = Sql::new(
    "INSERT INTO service_accounts (id, email, project_id, display_name, created_at) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT DO NOTHING",
);
static ACCOUNT: Sql = Sql::new(
    "SELECT id, email, project_id, display_name, created_at, disabled_at FROM service_accounts \
     WHERE email = $1 OR id = $1",
);
static ACCOUNTS: Sql = Sql::new(
    "SELECT id, email, project_id, display_name, created_at, disabled_at FROM service_accounts \
     WHERE project_id = $1 ORDER BY email",
);
static DISABLE_ACCOUNT: Sql = Sql::new("UPDATE service_accounts SET disabled_at = $2 WHERE id = $1");
static DELETE_ACCOUNT: Sql = Sql::new("DELETE FROM service_accounts WHERE id = $1");
static COUNT_KEYS: Sql = Sql::new("SELECT CAST(COUNT(*) AS BIGINT) FROM service_account_keys WHERE account_id = $1");
/// Holds the account's row while its keys are counted and one is added (PostgreSQL; SQLite has one writer).
static LOCK_ACCOUNT: Sql = Sql::new("SELECT id FROM service_accounts WHERE id = $1 FOR UPDATE");
static INSERT_KEY: Sql = Sql::new(
    "INSERT INTO service_account_keys (id, account_id, alg, public_key, created_at) VALUES ($1, $2, $3, $4, $5)",
);
static KEYS: Sql = Sql::new(
    "SELECT id, account_id, alg, public_key, created_at, disabled_at FROM service_account_keys \
     WHERE account_id = $1 ORDER BY created_at, id",
);
static KEY: Sql =
    Sql::new("SELECT id, account_id, alg, public_key, created_at, disabled_at FROM service_account_keys WHERE id = $1");
static DISABLE_KEY: Sql = Sql::new("UPDATE service_account_keys SET disabled_at = $2 WHERE id = $1");
static DELETE_KEY: Sql = Sql::new("DELETE FROM service_account_keys WHERE id = $1");
static GRANT: Sql = Sql::new(
    "INSERT INTO content_owner_grants (owner_id, account_id, granted_at) SELECT o.id, a.id, $3 \
     FROM content_owners o JOIN service_accounts a ON a.id = $2 WHERE o.id = $1 ON CONFLICT DO NOTHING",
);
/// A key with its account and project: what the JWT bearer grant and the data API check.
static KEY_STATE: Sql = Sql::new(
    "SELECT k.id, k.alg, k.public_key, k.disabled_at AS key_disabled_at, a.id AS account_id, a.email, \
     a.disabled_at AS account_disabled_at, p.api_enabled FROM service_account_keys k \
     JOIN service_accounts a ON a.id = k.account_id JOIN projects p ON p.id = a.project_id WHERE k.id = $1",
);
static ADD_ADMIN: Sql = Sql::new(
    "INSERT INTO content_owner_admins (owner_id, user_id, added_at) SELECT o.id, u.id, $3 \
     FROM content_owners o JOIN users u ON u.id = $2 WHERE o.id = $1 ON CONFLICT DO NOTHING",
);
static ADMINS: Sql = Sql::new(
    "SELECT u.email FROM content_owner_admins a JOIN users u ON u.id = a.user_id WHERE a.owner_id = $1 ORDER BY u.email",
);
static IS_ADMIN: Sql =
    Sql::new("SELECT CAST(1 AS BIGINT) AS one FROM content_owner_admins WHERE owner_id = $1 AND user_id = $2");
static REVOKE: Sql = Sql::new("DELETE FROM content_owner_grants WHERE owner_id = $1 AND account_id = $2");
static OWNER_ACCOUNTS: Sql = Sql::new(
    "SELECT a.id, a.email, a.project_id, a.display_name, a.created_at, a.disabled_at FROM content_owner_grants g \
     JOIN service_accounts a ON a.id = g.account_id WHERE g.owner_id = $1 ORDER BY a.email",
);
static MAY_ACT: Sql =
    Sql::new("SELECT CAST(1 AS BIGINT) AS one FROM content_owner_grants WHERE owner_id = $2 AND account_id = $1");

fn owner_from_row(r: &dyn StoreRow) -> StoreResult<ContentOwner> {
    Ok(ContentOwner { id: r.text("id")?, name: r.text("name")?, created_at: rows::time(r, "created_at")? })
}

fn account_from_row(r: &dyn StoreRow) -> StoreResult<ServiceAccount> {
    Ok(ServiceAccount {
        id: r.text("id")?,
        email: r.text("email")?,
        project_id: r.text("project_id")?,
        display_name: r.text("display_name")?,
        created_at: rows::time(r, "created_at")?,
        disabled_at: rows::opt_time(r, "disabled_at")?,
    })
}

fn public_key(r: &dyn StoreRow) -> StoreResult<PublicKey> {
    let (alg, json) = (r.text("alg")?, r.text("public_key")?);
    PublicKey::from_stored(&alg, &json).ok_or_else(|| StoreError::Other(format!("service account key of alg {alg}")))
}

fn key_from_row(r: &dyn StoreRow) -> StoreResult<ServiceAccountKey> {
    Ok(ServiceAccountKey {
        id: r.text("id")?,
        account_id: r.text("account_id")?,
        public_key: public_key(r)?,
        created_at: rows::time(r, "created_at")?,
        disabled_at: rows::opt_time(r, "disabled_at")?,
    })
}

fn key_state_from_row(r: &dyn StoreRow) -> StoreResult<ServiceKeyState> {
    Ok(ServiceKeyState {
        key_id: r.text("id")?,
        public_key: public_key(r)?,
        key_disabled_at: rows::opt_time(r, "key_disabled_at")?,
        account_id: r.text("account_id")?,
        email: r.text("email")?,
        account_disabled_at: rows::opt_time(r, "account_disabled_at")?,
        api_enabled: r.flag("api_enabled")?,
    })
}

/// Adds a key unless the account holds [`MAX_KEYS`]: one unit of work.
fn add_key<'t>(tx: &'t mut dyn Tx, k: &'t ServiceAccountKey) -> BoxFuture<'t, StoreResult<Outcome<bool>>> {
    Box::pin(async move {
        tx.lock(&LOCK_ACCOUNT, args![&k.account_id]).await?;
        if tx.scalar(&COUNT_KEYS, args![&k.account_id]).await?.unwrap_or(0) >= MAX_KEYS {
            return Ok(Outcome::Discard(false));
        }
        let (alg, json) = k.public_key.to_stored();
        tx.exec(&INSERT_KEY, args![&k.id, &k.account_id, alg, json, k.created_at]).await?;
        Ok(Outcome::Keep(true))
    })
}

#[async_trait]
impl<E: Engine> ServiceAccounts for Db<E> {
    async fn create_content_owner(&self, o: &ContentOwner) -> StoreResult<()> {
        self.exec(&INSERT_OWNER, args![&o.id, &o.name, o.created_at]).await.map(drop)
    }

    async fn content_owner(&self, id: &str) -> StoreResult<Option<ContentOwner>> {
        self.engine.one(&OWNER, args![id], owner_from_row).await
    }

    async fn link_channel(&self, owner_id: &str, channel_id: &str, now: UnixTime) -> StoreResult<bool> {
        self.exec_one(&LINK, args![owner_id, channel_id, now]).await
    }

    async fn unlink_channel(&self, owner_id: &str, channel_id: &str) -> StoreResult<bool> {
        self.exec_one(&UNLINK, args![owner_id, channel_id]).await
    }

    async fn owner_channels(&self, owner_id: &str) -> StoreResult<Vec<Channel>> {
        self.engine.all(&OWNER_CHANNELS, args![owner_id], rows::channel_from_row).await
    }

    async fn create_service_account(&self, a: &ServiceAccount) -> StoreResult<bool> {
        self.exec_one(&INSERT_ACCOUNT, args![&a.id, &a.email, &a.project_id, &a.display_name, a.created_at]).await
    }

    async fn service_account(&self, email_or_id: &str) -> StoreResult<Option<ServiceAccount>> {
        self.engine.one(&ACCOUNT, args![email_or_id], account_from_row).await
    }

    async fn service_accounts(&self, project_id: &str) -> StoreResult<Vec<ServiceAccount>> {
        self.engine.all(&ACCOUNTS, args![project_id], account_from_row).await
    }

    async fn set_service_account_disabled(&self, id: &str, at: Option<UnixTime>) -> StoreResult<bool> {
        self.exec_one(&DISABLE_ACCOUNT, args![id, at]).await
    }

    async fn delete_service_account(&self, id: &str) -> StoreResult<bool> {
        self.exec_one(&DELETE_ACCOUNT, args![id]).await
    }

    async fn add_service_account_key(&self, key: &ServiceAccountKey) -> StoreResult<bool> {
        self.engine.unit(Durability::Durable, add_key, key.clone()).await
    }

    async fn service_account_keys(&self, account_id: &str) -> StoreResult<Vec<ServiceAccountKey>> {
        self.engine.all(&KEYS, args![account_id], key_from_row).await
    }

    async fn service_account_key(&self, id: &str) -> StoreResult<Option<ServiceAccountKey>> {
        self.engine.one(&KEY, args![id], key_from_row).await
    }

    async fn set_key_disabled(&self, id: &str, at: Option<UnixTime>) -> StoreResult<bool> {
        self.exec_one(&DISABLE_KEY, args![id, at]).await
    }

    async fn delete_service_account_key(&self, id: &str) -> StoreResult<bool> {
        self.exec_one(&DELETE_KEY, args![id]).await
    }

    async fn grant_content_owner(&self, owner_id: &str, account_id: &str, now: UnixTime) -> StoreResult<bool> {
        self.exec_one(&GRANT, args![owner_id, account_id, now]).await
    }

    async fn add_content_owner_admin(&self, owner_id: &str, user_id: &str, now: UnixTime) -> StoreResult<bool> {
        self.exec_one(&ADD_ADMIN, args![owner_id, user_id, now]).await
    }

    async fn content_owner_admins(&self, owner_id: &str) -> StoreResult<Vec<String>> {
        self.engine.all(&ADMINS, args![owner_id], |r| r.text("email")).await
    }

    async fn is_content_owner_admin(&self, owner_id: &str, user_id: &str) -> StoreResult<bool> {
        Ok(self.engine.one(&IS_ADMIN, args![owner_id, user_id], |r| r.int("one")).await?.is_some())
    }

    async fn revoke_content_owner(&self, owner_id: &str, account_id: &str) -> StoreResult<bool> {
        self.exec_one(&REVOKE, args![owner_id, account_id]).await
    }

    async fn content_owner_accounts(&self, owner_id: &str) -> StoreResult<Vec<ServiceAccount>> {
        self.engine.all(&OWNER_ACCOUNTS, args![owner_id], account_from_row).await
    }

    async fn service_key_state(&self, key_id: &str) -> StoreResult<Option<ServiceKeyState>> {
        self.engine.one(&KEY_STATE, args![key_id], key_state_from_row).await
    }

    async fn may_act_for(&self, account_id: &str, owner_id: &str) -> StoreResult<bool> {
        Ok(self.engine.one(&MAY_ACT, args![account_id, owner_id], |r| r.int("one")).await?.is_some())
    }
}
