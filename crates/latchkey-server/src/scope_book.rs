//! The deployment's scopes as this instance knows them: the well-known ones and those of the registered APIs,
//! read from the store at start, again every few seconds (an API registered through another instance or the
//! admin CLI), and at once after a change made here. Each request takes one snapshot ([`ScopeBook::get`]).

use latchkey_core::resource;
use latchkey_core::scope::ScopeRegistry;
use latchkey_store::{Store, StoreResult};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How often every instance reads the registered APIs again.
pub const RELOAD_EVERY: Duration = Duration::from_secs(5);

/// The scopes in force, swapped whole on reload.
pub struct ScopeBook {
    scope_base: String,
    data_api_uri: String,
    current: RwLock<Arc<ScopeRegistry>>,
}

impl ScopeBook {
    /// Reads the registered APIs and builds the scopes (the data API's resource identifier being `data_api_uri`).
    pub async fn load(store: &dyn Store, scope_base: &str, data_api_uri: &str) -> StoreResult<Self> {
        let registry = read(store, scope_base, data_api_uri).await?;
        Ok(Self {
            scope_base: scope_base.to_owned(),
            data_api_uri: data_api_uri.to_owned(),
            current: RwLock::new(Arc::new(registry)),
        })
    }

    /// The scopes in force now.
    pub fn get(&self) -> Arc<ScopeRegistry> {
        match self.current.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Reads the registered APIs again.
    pub async fn reload(&self, store: &dyn Store) -> StoreResult<()> {
        let registry = Arc::new(read(store, &self.scope_base, &self.data_api_uri).await?);
        match self.current.write() {
            Ok(mut g) => *g = registry,
            Err(poisoned) => *poisoned.into_inner() = registry,
        }
        Ok(())
    }
}

/// The well-known scopes under `scope_base`, the data API's identifier and the registered APIs' scopes.
async fn read(store: &dyn Store, scope_base: &str, data_api_uri: &str) -> StoreResult<ScopeRegistry> {
    let registry = resource::registry(scope_base, &store.all_resources().await?);
    Ok(registry.with_data_api_uri(data_api_uri))
}
