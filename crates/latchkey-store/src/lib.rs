//! latchkey's storage: one handle ([`Store`]) over one trait per aggregate, and the engines behind it.
//!
//! Handlers hold an `Arc<dyn Store>` and never branch on the backend. Each aggregate has its trait, implemented
//! once for both engines over statements written once ([`sql`]): [`Clients`] (projects and clients), [`Grants`]
//! (codes and grants), [`Users`] (accounts, sessions, sign-in throttling), [`Accounts`] (apps with access, account
//! changes with their events, last use), [`Orgs`] (organisations and their policies), [`Console`] (members, API keys),
//! [`Keys`], [`Replay`] (single-use values), [`Audit`], [`Maintenance`], [`Streams`] (Shared Signals streams and
//! the outbox of the security events they deliver) and [`ServiceAccounts`] (content owners, service accounts and
//! their public keys). A change that needs several
//! statements to hold together (redeeming a code under the refresh-token limits, revoking a reused code's
//! grants with their audit records) is a unit of work ([`db`]) that commits or fails as one, so that a response is only sent once
//! what it promises is durable.
//!
//! Engines: [`sqlite`] (one file, the default) and [`postgres`] (many instances on one database). Call
//! `use latchkey_store::prelude::*` to have every aggregate's methods on a `dyn Store`.

mod accounts;
mod audit;
mod client_cache;
mod clients;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod console;
mod console_rows;
mod db;
mod device_codes;
mod documents;
mod grants;
mod keys;
mod maintenance;
mod migrations;
pub mod notices;
mod orgs;
mod passkeys;
pub mod postgres;
mod records;
mod replay;
mod resources;
mod rotation;
mod rows;
#[cfg(any(test, feature = "seed"))]
pub mod seed;
mod served;
mod service_accounts;
mod sql;
pub mod sqlite;
mod streams;
#[cfg(any(test, feature = "conformance"))]
pub mod test_database;
mod two_step;
mod users;

pub use accounts::{Accounts, LiveGrant};
pub use audit::{Audit, AuditRecord};
pub use clients::Clients;
pub use console::Console;
pub use db::Db;
pub use device_codes::DeviceCodes;
pub use documents::{CachedDocument, ClientDocuments};
pub use grants::Grants;
pub use keys::Keys;
pub use maintenance::Maintenance;
pub use orgs::Orgs;
pub use passkeys::{Ceremony, Passkeys};
pub use records::{
    ApiKey, AppCheckCount, Channel, GrantLimits, GrantState, KeyKind, Listing, Member, MemberChange, NewUser, Org,
    OrgApp, OrgMember, Project, ProjectMember, ProjectRole, ProjectSetting, Publisher, Redeemed, Session, StoredKey,
    User,
};
pub use replay::Replay;
pub use resources::{ResourceUpdate, Resources};
pub use rotation::{Rotations, RETIRED_KEPT};
pub use served::{Served, ServedUrls};
pub use service_accounts::{ContentOwner, ServiceAccount, ServiceAccountKey, ServiceAccounts, MAX_KEYS};
pub use streams::{Delivery, DeliveryResult, DeliveryState, StreamRecord, Streams, VerifyRefused};
pub use two_step::{RecoveryCodes, Totp, TwoStep};
pub use users::{LoginCount, LoginWindows, Users, LONGEST_LOGIN_WINDOW};

use std::sync::Arc;
use std::time::Duration;

/// Every aggregate's trait, for `use latchkey_store::prelude::*`.
pub mod prelude {
    pub use crate::{
        Accounts, Audit, ClientDocuments, Clients, Console, DeviceCodes, Grants, Keys, Maintenance, Orgs, Passkeys,
        Replay, Resources, Rotations, Served, ServiceAccounts, Store, Streams, TwoStep, Users,
    };
}

/// [`Store`] over the aggregates, and its implementation for whatever implements them all: the list once.
macro_rules! store_of {
    ($($aggregate:ident),+) => {
        /// Everything latchkey keeps: the one handle over every aggregate.
        pub trait Store: $($aggregate +)+ 'static {}

        impl<T: $($aggregate +)+ 'static> Store for T {}
    };
}

store_of!(
    Clients,
    Grants,
    Users,
    Accounts,
    Orgs,
    Console,
    Keys,
    Replay,
    Audit,
    Maintenance,
    Streams,
    ServiceAccounts,
    Served,
    Passkeys,
    TwoStep,
    DeviceCodes,
    Resources,
    Rotations,
    ClientDocuments
);

/// A storage failure.
#[derive(Debug, Clone, thiserror::Error)]
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

/// Connection-pool settings of the PostgreSQL backend (SQLite keeps its own, suited to one local file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSettings {
    /// Connections per instance. Default 16.
    pub max_connections: u32,
    /// How long a request waits for a connection before the store reports itself unavailable. Default 3 s.
    pub acquire_timeout: Duration,
    /// Connections per instance that one-row reads and DPoP's replay records share, pipelined (besides the pool's).
    /// Default 2.
    pub shared_connections: u32,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self { max_connections: 16, acquire_timeout: Duration::from_secs(3), shared_connections: 2 }
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
    Ok(match Opened::open(database_url, pool).await? {
        Opened::Sqlite(s) => Arc::new(s),
        Opened::Postgres(s) => Arc::new(s),
    })
}

/// A store of either engine.
pub(crate) enum Opened {
    /// SQLite.
    Sqlite(sqlite::SqliteStore),
    /// PostgreSQL.
    Postgres(postgres::PgStore),
}

impl Opened {
    /// Opens the store named by a database URL, running its migrations.
    pub(crate) async fn open(database_url: &str, pool: PoolSettings) -> StoreResult<Self> {
        match backend_of(database_url) {
            Some("sqlite") => Ok(Self::Sqlite(sqlite::SqliteStore::open(database_url).await?)),
            Some(_) => Ok(Self::Postgres(postgres::PgStore::open(database_url, pool).await?)),
            None => Err(StoreError::Other(format!(
                "unsupported database URL scheme in {:?}: use sqlite://PATH or postgres://USER@HOST:PORT/DATABASE",
                database_url.split(':').next().unwrap_or("")
            ))),
        }
    }
}
