//! The server's signing and MAC keys, as the store keeps them (their material is opaque here).

use crate::db::{Db, Durability, Engine};
use crate::records::{KeyKind, StoredKey};
use crate::rows;
use crate::sql::{args, Sql};
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use latchkey_core::time::UnixTime;

/// Signing and MAC keys.
#[async_trait]
pub trait Keys: Send + Sync {
    /// The keys of a kind, newest first, retired ones included.
    async fn keys(&self, kind: KeyKind) -> StoreResult<Vec<StoredKey>>;
    /// Adds a key; returns its id.
    async fn add_key(&self, kind: KeyKind, secret: &[u8], now: UnixTime) -> StoreResult<u32>;
    /// Retires a key: it no longer signs, and verifies only until it is dropped.
    async fn retire_key(&self, id: u32, now: UnixTime) -> StoreResult<bool>;
    /// Replaces a key's stored secret (the server re-encrypts keys under a new system secret), as long as it still
    /// is `current`; false when there is no such key or its secret changed meanwhile.
    async fn replace_key_secret(&self, id: u32, current: &[u8], secret: &[u8]) -> StoreResult<bool>;
}

static KEYS: Sql = Sql::new("SELECT id, secret, created_at, retired_at FROM keys WHERE kind = $1 ORDER BY id DESC");
static ADD_KEY: Sql = Sql::new("INSERT INTO keys (kind, secret, created_at) VALUES ($1, $2, $3) RETURNING id");
static REPLACE_KEY_SECRET: Sql = Sql::new("UPDATE keys SET secret = $1 WHERE id = $2 AND secret = $3");
static RETIRE_KEY: Sql = Sql::new("UPDATE keys SET retired_at = $1 WHERE id = $2 AND retired_at IS NULL");

#[async_trait]
impl<E: Engine> Keys for Db<E> {
    async fn keys(&self, kind: KeyKind) -> StoreResult<Vec<StoredKey>> {
        self.engine.all(&KEYS, args![kind.as_str()], rows::key_from_row).await
    }

    async fn add_key(&self, kind: KeyKind, secret: &[u8], now: UnixTime) -> StoreResult<u32> {
        let id = self.engine.scalar(Durability::Durable, &ADD_KEY, args![kind.as_str(), secret, now]).await?;
        id.and_then(|id| u32::try_from(id).ok()).ok_or_else(|| StoreError::Other("key id out of range".into()))
    }

    async fn retire_key(&self, id: u32, now: UnixTime) -> StoreResult<bool> {
        self.exec_one(&RETIRE_KEY, args![now, i64::from(id)]).await
    }

    async fn replace_key_secret(&self, id: u32, current: &[u8], secret: &[u8]) -> StoreResult<bool> {
        self.exec_one(&REPLACE_KEY_SECRET, args![secret, i64::from(id), current]).await
    }
}
