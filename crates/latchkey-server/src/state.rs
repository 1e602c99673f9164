//! The state every handler shares.

use crate::config::{Config, Urls};
use latchkey_admin::keys::KeyRing;
use latchkey_core::time::Clock;
use latchkey_store::{GrantLimits, Store};
use std::sync::Arc;

/// Shared, read-only state (the key ring reloads itself in place): a handle on one [`Services`], so that the
/// copies the router makes for every request (one per layer and handler) cost one reference count, not one per
/// field. Fields are reached through it (`state.store`).
#[derive(Clone)]
pub struct AppState(Arc<Services>);

impl AppState {
    /// The handle on `services`.
    pub fn new(services: Services) -> Self {
        Self(Arc::new(services))
    }
}

impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.0
    }
}

/// What every handler shares, behind [`AppState`].
pub struct Services {
    /// The store; handlers never know which backend it is.
    pub store: Arc<dyn Store>,
    /// The configuration in force.
    pub config: Arc<Config>,
    /// The public URLs.
    pub urls: Arc<Urls>,
    /// The server's keys.
    pub keys: KeyRing,
    /// The scopes this deployment knows (the registered APIs' reloaded in place).
    pub scopes: Arc<crate::scope_book::ScopeBook>,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// The external App Check provider, when one is configured.
    pub app_check_provider: Option<crate::app_check::External>,
    /// Admits password hashes, one per core at a time.
    pub passwords: latchkey_admin::password::Gate,
    /// The token and revocation endpoints' rate limits.
    pub rate_limits: Arc<crate::rate_limit::RateLimits>,
    /// The grants used lately, written in batches off the request path.
    pub last_used: Arc<crate::last_used::LastUsed>,
    /// The streams with a long poll waiting on this instance.
    pub long_polls: crate::long_polls::LongPolls,
    /// The client ID metadata documents' fetcher.
    pub documents: Arc<crate::client_documents::Documents>,
}

impl Services {
    /// The refresh-token limits in force.
    pub fn grant_limits(&self) -> GrantLimits {
        GrantLimits {
            per_client_user: self.config.refresh_tokens_per_client_user,
            per_user: self.config.refresh_tokens_per_user,
        }
    }
}
