//! Bulk loading for load tests (`latchkey-bench seed-grants`), off the production traits: built only with the
//! `seed` feature.

use crate::db::{BoxFuture, Db, Durability, Engine, Outcome, Tx};
use crate::grants::insert_grant;
use crate::records::{Channel, NewUser};
use crate::users::insert_user;
use crate::StoreResult;
use async_trait::async_trait;
use latchkey_core::token::Grant;

/// Bulk loading.
#[async_trait]
pub trait Seed: Send + Sync {
    /// Stores users with their channels, then grants, as they are and all or none, without codes and without
    /// the refresh-token limits.
    async fn seed(&self, users: &[(NewUser, Channel)], grants: &[Grant]) -> StoreResult<()>;
}

type Batch = (Vec<(NewUser, Channel)>, Vec<Grant>);

fn load<'t>(tx: &'t mut dyn Tx, (users, grants): &'t Batch) -> BoxFuture<'t, StoreResult<Outcome<()>>> {
    Box::pin(async move {
        for (u, ch) in users {
            insert_user(tx, u, ch).await?;
        }
        for g in grants {
            insert_grant(tx, g).await?;
        }
        Ok(Outcome::Keep(()))
    })
}

#[async_trait]
impl<E: Engine> Seed for Db<E> {
    async fn seed(&self, users: &[(NewUser, Channel)], grants: &[Grant]) -> StoreResult<()> {
        self.engine.unit(Durability::Durable, load, (users.to_vec(), grants.to_vec())).await
    }
}

/// A store that can also be bulk-loaded.
pub trait SeedStore: crate::Store + Seed {}

impl<T: crate::Store + Seed> SeedStore for T {}

/// Opens the store named by a database URL for bulk loading, running its migrations.
pub async fn open_with(database_url: &str, pool: crate::PoolSettings) -> StoreResult<std::sync::Arc<dyn SeedStore>> {
    Ok(match crate::Opened::open(database_url, pool).await? {
        crate::Opened::Sqlite(s) => std::sync::Arc::new(s),
        crate::Opened::Postgres(s) => std::sync::Arc::new(s),
    })
}
