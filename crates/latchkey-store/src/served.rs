//! The public URLs the server serves, recorded by `latchkey serve` at start, so that every other tool on the same
//! store (the admin CLI writing key files, creating streams, printing clients) names the server that runs, not
//! the one its own configuration would describe.

use crate::db::{Db, Engine};
use crate::rows::StoreRow;
use crate::sql::{args, Sql};
use crate::StoreResult;
use async_trait::async_trait;
use latchkey_core::time::UnixTime;

/// The public URLs of a running server: the bases its endpoints are served under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedUrls {
    /// The issuer (also the base of the pages, the console and the events' endpoints).
    pub issuer: String,
    /// Base of the authorization endpoint.
    pub auth: String,
    /// Base of the token and revocation endpoints.
    pub token: String,
    /// Base of the data API.
    pub api: String,
    /// When the server that serves them started.
    pub recorded_at: UnixTime,
}

/// The served URLs, one record for the store: the last server to start wins (instances side by side serve the
/// same public URLs).
#[async_trait]
pub trait Served: Send + Sync {
    /// Records the URLs a server serves, replacing the last record.
    async fn record_served_urls(&self, urls: &ServedUrls) -> StoreResult<()>;
    /// The URLs the last server to start recorded, if any started on this store.
    async fn served_urls(&self) -> StoreResult<Option<ServedUrls>>;
}

static RECORD: Sql = Sql::new(
    "INSERT INTO served_urls (id, issuer, auth, token, api, recorded_at) VALUES (1, $1, $2, $3, $4, $5) \
     ON CONFLICT (id) DO UPDATE SET issuer = excluded.issuer, auth = excluded.auth, token = excluded.token, \
     api = excluded.api, recorded_at = excluded.recorded_at",
);
static READ: Sql = Sql::new("SELECT issuer, auth, token, api, recorded_at FROM served_urls WHERE id = 1");

fn from_row(r: &dyn StoreRow) -> StoreResult<ServedUrls> {
    Ok(ServedUrls {
        issuer: r.text("issuer")?,
        auth: r.text("auth")?,
        token: r.text("token")?,
        api: r.text("api")?,
        recorded_at: UnixTime(r.int("recorded_at")?),
    })
}

#[async_trait]
impl<E: Engine> Served for Db<E> {
    async fn record_served_urls(&self, u: &ServedUrls) -> StoreResult<()> {
        self.exec(&RECORD, args![&u.issuer, &u.auth, &u.token, &u.api, u.recorded_at]).await.map(|_| ())
    }

    async fn served_urls(&self) -> StoreResult<Option<ServedUrls>> {
        self.engine.one(&READ, args![], from_row).await
    }
}
