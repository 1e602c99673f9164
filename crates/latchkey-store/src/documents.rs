//! The cache of client ID metadata documents, shared by every instance: a document is fetched once per caching
//! period (`latchkey_core::registration::document_ttl`), whichever instance needs it first.

use crate::db::{Db, Engine};
use crate::sql::{args, Sql};
use crate::StoreResult;
use async_trait::async_trait;
use latchkey_core::time::UnixTime;

/// A document as cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedDocument {
    /// The document's URL (the client's `client_id`).
    pub url: String,
    /// The document as fetched.
    pub document: String,
    /// When it was fetched.
    pub fetched_at: UnixTime,
    /// Until when it may be used without fetching it again.
    pub expires_at: UnixTime,
}

/// Client ID metadata documents.
#[async_trait]
pub trait ClientDocuments: Send + Sync {
    /// The cached document of `url`, expired or not.
    async fn client_document(&self, url: &str) -> StoreResult<Option<CachedDocument>>;
    /// Keeps a fetched document, replacing the one cached.
    async fn put_client_document(&self, document: &CachedDocument) -> StoreResult<()>;
}

static DOCUMENT: Sql = Sql::new("SELECT url, document, fetched_at, expires_at FROM client_documents WHERE url = $1");
static PUT: Sql = Sql::new(
    "INSERT INTO client_documents (url, document, fetched_at, expires_at) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (url) DO UPDATE SET document = excluded.document, fetched_at = excluded.fetched_at, \
     expires_at = excluded.expires_at",
);

#[async_trait]
impl<E: Engine> ClientDocuments for Db<E> {
    async fn client_document(&self, url: &str) -> StoreResult<Option<CachedDocument>> {
        self.engine
            .one(&DOCUMENT, args![url], |r| {
                Ok(CachedDocument {
                    url: r.text("url")?,
                    document: r.text("document")?,
                    fetched_at: UnixTime(r.int("fetched_at")?),
                    expires_at: UnixTime(r.int("expires_at")?),
                })
            })
            .await
    }

    async fn put_client_document(&self, d: &CachedDocument) -> StoreResult<()> {
        self.exec(&PUT, args![&d.url, &d.document, d.fetched_at, d.expires_at]).await?;
        Ok(())
    }
}
