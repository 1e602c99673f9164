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
    current: RwLock<Arc<ScopeRegistry>>,
}

impl ScopeBook {
    /// Reads the registered APIs and builds the scopes.
    pub async fn load(store: &dyn Store, scope_base: &str) -> StoreResult<Self> {
        let registry = resource::registry(scope_base, &store.all_resources().await?);
        Ok(Self { scope_base: scope_base.to_owned(), current: RwLock::new(Arc::new(registry)) })
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
        let registry = Arc::new(resource::registry(&self.scope_base, &store.all_resources().await?));
        match self.current.write() {
            Ok(mut g) => *g = registry,
            Err(poisoned) => *poisoned.into_inner() = registry,
        }
        Ok(())
    }
}
