//! latchkey's storage: one [`Store`] trait, and the backends behind it.
//!
//! Handlers hold an `Arc<dyn Store>` and never branch on the backend. Every method is one unit of work: where
//! a rule needs several statements to hold together (redeeming a code, enforcing refresh-token limits), the
//! backend runs them in one transaction, so that a response is only sent once the grant is durable.
//!
//! Backends: [`sqlite`] (one file, the default) and [`postgres`] (many instances on one database).

mod client_cache;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod console_rows;
pub mod postgres;
mod records;
mod rows;
pub mod sqlite;
#[cfg(any(test, feature = "conformance"))]
pub mod test_database;

pub use records::{
    ApiKey, AppCheckCount, Channel, GrantLimits, GrantState, KeyKind, Listing, Member, MemberChange, NewUser, Project,
    ProjectMember, ProjectRole, Publisher, Redeemed, Session, StoredKey, User,
};

use async_trait::async_trait;
use latchkey_core::access_token::GrantId;
use latchkey_core::app_check::Category;
use latchkey_core::client::Client;
use latchkey_core::time::UnixTime;
use latchkey_core::token::{AuthCode, Grant};
use std::sync::Arc;
use std::time::Duration;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A unique value (e-mail address, id) is taken.
    #[error("already exists: {0}")]
    Conflict(String),
    /// The database cannot be reached or is overloaded; the caller may retry later.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// Anything else.
    #[error("storage error: {0}")]
    Other(String),
}

/// The result of a store call.
pub type StoreResult<T> = Result<T, StoreError>;

/// How single-use values are laid out (see [`Store::record_once`]).
mod single_use {
    use super::{StoreError, StoreResult};
    use latchkey_core::time::UnixTime;

    /// The smallest value that expires after `now`: every value below it has expired.
    pub(crate) fn live_from(now: UnixTime) -> Vec<u8> {
        (now.0 + 1).to_be_bytes().to_vec()
    }

    /// Values recorded before they started with their expiry (SHA-256 hashes) sort from here on: no expiry
    /// before 2106 has a non-zero byte among its first four. They are purged by their `expires_at` column, a
    /// short walk that ends once the last of them has expired (minutes after the upgrade).
    pub(crate) const EARLIER_FORM_FROM: [u8; 8] = [0, 0, 0, 1, 0, 0, 0, 0];

    /// Refuses values that do not start with their expiry.
    pub(crate) fn check(values: &[(Vec<u8>, UnixTime)]) -> StoreResult<()> {
        if values.iter().all(|(key, expires_at)| key.starts_with(&expires_at.0.to_be_bytes())) {
            Ok(())
        } else {
            Err(StoreError::Other("a single-use value must start with its expiry".into()))
        }
    }
}

/// Connection-pool settings of the PostgreSQL backend (SQLite keeps its own, suited to one local file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSettings {
    /// Connections per instance. Default 16.
    pub max_connections: u32,
    /// How long a request waits for a connection before the store reports itself unavailable. Default 3 s.
    pub acquire_timeout: Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self { max_connections: 16, acquire_timeout: Duration::from_secs(3) }
    }
}

/// The backend a database URL names: `sqlite` or `postgres`.
pub fn backend_of(database_url: &str) -> Option<&'static str> {
    match database_url.split(':').next() {
        Some("sqlite") => Some("sqlite"),
        Some("postgres" | "postgresql") => Some("postgres"),
        _ => None,
    }
}

/// Opens the store named by a database URL (`sqlite://path` or `postgres://...`) with the default pool
/// settings, running its migrations.
pub async fn open(database_url: &str) -> StoreResult<Arc<dyn Store>> {
    open_with(database_url, PoolSettings::default()).await
}

/// Opens the store named by a database URL, running its migrations; `pool` applies to PostgreSQL.
pub async fn open_with(database_url: &str, pool: PoolSettings) -> StoreResult<Arc<dyn Store>> {
    match backend_of(database_url) {
        Some("sqlite") => Ok(Arc::new(sqlite::SqliteStore::open(database_url).await?)),
        Some(_) => Ok(Arc::new(postgres::PgStore::open(database_url, pool).await?)),
        None => Err(StoreError::Other(format!(
            "unsupported database URL scheme in {:?}: use sqlite://PATH or postgres://USER@HOST:PORT/DATABASE",
            database_url.split(':').next().unwrap_or("")
        ))),
    }
}

/// Everything latchkey keeps.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Creates a project.
    async fn create_project(&self, project: &Project) -> StoreResult<()>;
    /// A project by id.
    async fn project(&self, id: &str) -> StoreResult<Option<Project>>;
    /// Every project.
    async fn projects(&self) -> StoreResult<Vec<Project>>;
    /// Switches the data API on or off; false when there is no such project.
    async fn set_api_enabled(&self, id: &str, enabled: bool) -> StoreResult<bool>;
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
    /// Restores a client deleted at or after `deleted_since`; false when there is no such deleted client.
    async fn restore_client(&self, client_id: &str, deleted_since: UnixTime) -> StoreResult<bool>;
    /// Records that the client got tokens at `now`: writes `last_used_at` only when it is unset or at least
    /// [`LAST_USED_GRANULARITY`](latchkey_core::client::LAST_USED_GRANULARITY) old; true when it wrote.
    async fn touch_client(&self, client_id: &str, now: UnixTime) -> StoreResult<bool>;
    /// Marks deleted (at `now`, so restorable) every live client last used, or created when never used,
    /// before `active_before`; returns how many.
    async fn delete_unused_clients(&self, active_before: UnixTime, now: UnixTime) -> StoreResult<u64>;
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

    /// Adds a member to a project; false when the user is a member already.
    async fn add_project_member(&self, member: &ProjectMember) -> StoreResult<bool>;
    /// Changes a member's role; refused when it would leave the project without an owner.
    async fn set_project_member_role(
        &self,
        project_id: &str,
        user_id: &str,
        role: ProjectRole,
    ) -> StoreResult<MemberChange>;
    /// Removes a member; refused when it would leave the project without an owner.
    async fn remove_project_member(&self, project_id: &str, user_id: &str) -> StoreResult<MemberChange>;
    /// The members of a project, in the order they joined.
    async fn project_members(&self, project_id: &str) -> StoreResult<Vec<Member>>;
    /// The user's role in a project, if they are a member.
    async fn project_role(&self, project_id: &str, user_id: &str) -> StoreResult<Option<ProjectRole>>;
    /// The projects a user is a member of, with their role, oldest first.
    async fn projects_of(&self, user_id: &str) -> StoreResult<Vec<(Project, ProjectRole)>>;

    /// Stores a new console API key.
    async fn create_api_key(&self, key: &ApiKey) -> StoreResult<()>;
    /// An API key by id.
    async fn api_key(&self, id: &str) -> StoreResult<Option<ApiKey>>;
    /// A user's API keys, oldest first.
    async fn api_keys_of(&self, user_id: &str) -> StoreResult<Vec<ApiKey>>;
    /// Deletes (revokes) a user's API key; false when the user has no such key.
    async fn delete_api_key(&self, id: &str, user_id: &str) -> StoreResult<bool>;
    /// Records that a key was used at `now`, at most once per
    /// [`LAST_USED_GRANULARITY`](latchkey_core::client::LAST_USED_GRANULARITY); true when it wrote.
    async fn touch_api_key(&self, id: &str, now: UnixTime) -> StoreResult<bool>;

    /// Creates a user with the channel every account has.
    async fn create_user(&self, user: &NewUser, channel: &Channel) -> StoreResult<()>;
    /// A user by id.
    async fn user(&self, id: &str) -> StoreResult<Option<User>>;
    /// A user by e-mail address (case-insensitive).
    async fn user_by_email(&self, email: &str) -> StoreResult<Option<User>>;
    /// Every user.
    async fn users(&self) -> StoreResult<Vec<User>>;
    /// Deletes a user, their channel, sessions and grants; false when there is no such user.
    async fn delete_user(&self, id: &str) -> StoreResult<bool>;
    /// Disables (`Some(at)`) or re-enables (`None`) a user; false when there is no such user.
    async fn set_user_disabled(&self, id: &str, at: Option<UnixTime>) -> StoreResult<bool>;
    /// The user's channel.
    async fn channel_of(&self, user_id: &str) -> StoreResult<Option<Channel>>;

    /// Stores a browser session.
    async fn create_session(&self, session: &Session) -> StoreResult<()>;
    /// A live session by the hash of its token.
    async fn session(&self, token_hash: &[u8], now: UnixTime) -> StoreResult<Option<Session>>;
    /// Ends a session.
    async fn delete_session(&self, token_hash: &[u8]) -> StoreResult<()>;

    /// Counts a failed sign-in under `key` within a window of `window` seconds; returns the count so far.
    async fn record_login_failure(&self, key: &str, now: UnixTime, window: i64) -> StoreResult<u32>;
    /// Failed sign-ins under `key` in the current window.
    async fn login_failures(&self, key: &str, now: UnixTime, window: i64) -> StoreResult<u32>;
    /// Forgets the failures under `key` (after a successful sign-in).
    async fn clear_login_failures(&self, key: &str) -> StoreResult<()>;

    /// Stores a new authorization code.
    async fn insert_code(&self, code: &AuthCode) -> StoreResult<()>;
    /// A code by its hash, used or not.
    async fn code(&self, code_hash: &[u8]) -> StoreResult<Option<AuthCode>>;
    /// Marks the code used and stores its grant, in one transaction, then enforces the refresh-token limits.
    /// When the code was used meanwhile, nothing is stored and the answer is [`Redeemed::AlreadyUsed`].
    async fn redeem_code(&self, grant: &Grant, limits: GrantLimits, now: UnixTime) -> StoreResult<Redeemed>;
    /// Revokes the grants made from a code (on its reuse), as long as the code is kept (a day past its expiry,
    /// see [`Store::purge_expired`]); returns how many.
    async fn revoke_grants_of_code(&self, code_hash: &[u8], now: UnixTime) -> StoreResult<u64>;
    /// The grant held by a refresh token of the earlier form (one with no grant id, see
    /// `latchkey_core::refresh_token`), found by the token's hash among the grants issued before that form
    /// changed; grants issued since are found by id ([`Store::grant`]) and never by hash.
    async fn legacy_grant_by_refresh(&self, refresh_hash: &[u8]) -> StoreResult<Option<GrantState>>;
    /// A grant by id, with the state of its user and client.
    async fn grant(&self, id: &GrantId) -> StoreResult<Option<GrantState>>;
    /// Revokes a grant; false when it was not active.
    async fn revoke_grant(&self, id: &GrantId, now: UnixTime) -> StoreResult<bool>;

    /// The keys of a kind, newest first, retired ones included.
    async fn keys(&self, kind: KeyKind) -> StoreResult<Vec<StoredKey>>;
    /// Adds a key; returns its id.
    async fn add_key(&self, kind: KeyKind, secret: &[u8], now: UnixTime) -> StoreResult<u32>;
    /// Retires a key: it no longer signs, and verifies only until it is dropped.
    async fn retire_key(&self, id: u32, now: UnixTime) -> StoreResult<bool>;
    /// Replaces a key's stored secret (the server re-encrypts keys under a new system secret), as long as it still
    /// is `current`; false when there is no such key or its secret changed meanwhile.
    async fn replace_key_secret(&self, id: u32, current: &[u8], secret: &[u8]) -> StoreResult<bool>;

    /// Records single-use values (DPoP `jti`s, server nonces), each remembered until its expiry, all or none
    /// in one transaction. Returns the index of the first value already recorded and not yet expired (then
    /// nothing is recorded), or `None` when all were new.
    ///
    /// Each value must start with its expiry, 8 bytes big-endian (as `latchkey_core::dpop::replay_key` makes
    /// them; others are refused): the values then sort by expiry, and [`Store::purge_expired`] removes the
    /// expired ones as one range of the primary key, with no second index to keep up on every recording.
    async fn record_once(&self, values: &[(Vec<u8>, UnixTime)], now: UnixTime) -> StoreResult<Option<usize>>;

    /// Bulk loading for load tests (`latchkey admin seed-grants`): stores users with their channels, then grants,
    /// as they are and all or none, without codes and without the refresh-token limits.
    async fn seed(&self, users: &[(NewUser, Channel)], grants: &[Grant]) -> StoreResult<()>;

    /// Removes what has expired (sessions, codes, throttling windows, single-use values) before `now`; returns
    /// rows removed.
    async fn purge_expired(&self, now: UnixTime) -> StoreResult<u64>;
    /// Whether the database answers.
    async fn ping(&self) -> StoreResult<()>;
}
