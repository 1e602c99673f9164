//! latchkey's HTTPS layer: TLS, routes, pages and the server's lifecycle (its configuration is `latchkey_config`).
//!
//! [`start`] opens the store, loads the keys, binds the listener and serves until [`Running::shutdown`] (or
//! the process's signal handler) stops it. Integration tests start the same server on an ephemeral port.
//!
//! The data directory is the server's alone (0700), and so are the SQLite database files and the system secret
//! file (0600): see [`latchkey_admin::data_dir`] and [`latchkey_admin::secrets`].

pub mod app_check;
pub mod client_documents;
pub mod dpop;
pub mod error;
pub mod extract;
pub mod last_used;
pub mod listener;
pub mod long_polls;
pub mod metrics;
mod outbound;
pub mod passkeys;
/// The configuration (`latchkey_config`), named here as the server's modules name it.
pub(crate) use latchkey_config as config;
use latchkey_config::open_store;
pub(crate) use latchkey_config::paths;

/// The hand-written parsers of untrusted input, one entry point each: what the fuzz targets (`fuzz/`) drive.
pub mod parsers {
    pub use crate::extract::{form_body, pairs};
    pub use crate::routes::api::channels::{parse_query as channels_query, ChannelsQuery, Filter};
    pub use crate::session::cookie_tokens;
    pub use latchkey_admin::service_account_keys::public_key_of_pem;
}
pub mod rate_limit;
pub mod request_id;
pub mod routes;
pub mod scope_book;
pub mod session;
pub mod signin_throttle;
pub mod state;
pub mod tls;
pub mod transmitter;
pub mod two_step;
pub mod views;

use anyhow::Context;
use config::{Config, Urls};
use latchkey_admin::keys::{self, KeyRing};
use latchkey_admin::{data_dir, password};
use latchkey_core::time::Clock;
use state::AppState;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How often an instance re-reads the keys (so a rotation reaches it).
const KEY_RELOAD_EVERY: Duration = Duration::from_secs(60);
/// How often expired sessions, codes and throttle windows are removed.
const PURGE_EVERY: Duration = Duration::from_secs(600);

/// A server that is serving.
pub struct Running {
    /// The bound address.
    pub addr: SocketAddr,
    /// The public URLs.
    pub urls: Urls,
    /// The certificate clients should trust, when the server generated it.
    pub generated_cert: Option<PathBuf>,
    /// The certificate file in use.
    pub cert_path: PathBuf,
    /// The shared state (tests use its store).
    pub state: AppState,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Running {
    /// Stops accepting, drains open connections, and waits for the end.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.task).await;
    }

    /// Waits until the server stops.
    pub async fn wait(mut self) {
        let _ = (&mut self.task).await;
    }

    /// A sender that stops the server.
    pub fn take_shutdown(&mut self) -> Option<oneshot::Sender<()>> {
        self.shutdown.take()
    }
}

/// Starts the server described by `config`.
pub async fn start(config: Config, clock: Arc<dyn Clock>) -> anyhow::Result<Running> {
    config.validate()?;
    data_dir::ensure_private_dir(&config.data_dir)
        .with_context(|| format!("creating the data directory {}", config.data_dir.display()))?;
    let store = open_store(&config).await?;
    let secrets = config.secret_source().context("system secrets")?;
    if let (Some(file), None) = (secrets.default_file(), config.sqlite_path()) {
        tracing::info!(
            path = %file.path().display(),
            "the keys are encrypted under the secret in this file: instances sharing the database need the same \
             secret (secrets_system or secrets_system_file)"
        );
    }
    let keys = KeyRing::load(&*store, secrets, clock.now()).await.context("loading keys")?;
    let (cert_path, key_path, generated_cert) = match (&config.tls_cert, &config.tls_key) {
        (Some(c), Some(k)) => (c.clone(), k.clone(), None),
        _ => {
            let files = tls::ensure_local_certificate(&config.data_dir.join("tls"))?;
            let generated = files.generated.then(|| files.cert.clone());
            (files.cert, files.key, generated)
        }
    };
    let tls_config = tls::server_config(&cert_path, &key_path)?;
    let listener =
        tokio::net::TcpListener::bind(config.listen).await.with_context(|| format!("binding {}", config.listen))?;
    let addr = listener.local_addr()?;
    let urls = Urls::new(&config, addr);
    let (app_check_provider, jwks_refresh) = app_check_provider(&config)?;
    let scopes = Arc::new(scope_book::ScopeBook::load(&*store, &config.scope_base, &urls.data_api_resource()).await?);
    let documents = Arc::new(client_documents::Documents::new(&config.client_metadata)?);
    let state = AppState::new(state::Services {
        app_check_provider,
        store,
        scopes,
        rate_limits: Arc::new(rate_limit::RateLimits::new(&config.rate_limits)),
        config: Arc::new(config),
        urls: Arc::new(urls.clone()),
        keys,
        clock,
        passwords: password::Gate::per_core(),
        last_used: Arc::default(),
        long_polls: long_polls::LongPolls::default(),
        documents,
    });
    if let Some(why) = passkeys::unavailable(&state.urls.issuer) {
        tracing::info!(reason = %why, "passkeys are unavailable");
    }
    if state.config.client_metadata.allow_insecure_loopback {
        tracing::warn!(
            "client_metadata.allow_insecure_loopback is on: client ID metadata documents may be fetched from \
             http://127.0.0.1. For tests only"
        );
    }
    if state.config.events.allow_insecure_loopback_push {
        tracing::warn!(
            "events.allow_insecure_loopback_push is on: security events may be pushed to this machine's loopback \
             addresses, over http:// too. For tests and local development only"
        );
    }
    // The admin CLI and other tools on this store name the server that runs, whatever their own configuration.
    state
        .store
        .record_served_urls(&state.urls.to_served(state.clock.now()))
        .await
        .context("recording the served URLs")?;
    match state.store.delivery_notices().await {
        Ok(Some(notices)) => state.long_polls.listen(notices),
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "listening for new security events: long polls look on a timer"),
    }
    metrics::register_all();
    let app = routes::router(state.clone());
    let (tx, rx) = oneshot::channel::<()>();
    let maintenance = tokio::spawn(maintain(state.clone()));
    let transmitter = transmitter::Transmitter::new(
        state.store.clone(),
        state.keys.clone(),
        state.urls.issuer.clone(),
        state.config.events.clone(),
        state.clock.clone(),
    )
    .context("the security event transmitter")?;
    let transmitter = tokio::spawn(transmitter.run());
    let stopping = state.clone();
    let connection_limits = state.config.connections;
    let task = tokio::spawn(async move {
        listener::serve(listener, tls_config, app, connection_limits, async {
            let _ = rx.await;
        })
        .await;
        maintenance.abort();
        transmitter.abort();
        // The last batch of last-use days, once no request can note another.
        stopping.last_used.flush(&*stopping.store, stopping.clock.now()).await;
        if let Some(refresh) = jwks_refresh {
            refresh.abort();
        }
    });
    Ok(Running { addr, urls, generated_cert, cert_path, state, shutdown: Some(tx), task })
}

/// Background upkeep: key reloads, the batches of last-use days, purging of expired rows, deleting unused clients
/// and purging deleted ones.
async fn maintain(state: AppState) {
    let mut reload = tokio::time::interval(KEY_RELOAD_EVERY);
    let mut scopes = tokio::time::interval(scope_book::RELOAD_EVERY);
    let mut purge = tokio::time::interval(PURGE_EVERY);
    // Not at start-up: the first pass comes one period in, like the ones after it.
    let mut lifecycle = tokio::time::interval_at(tokio::time::Instant::now() + PURGE_EVERY, PURGE_EVERY);
    let every = std::time::Duration::from_secs(state.config.last_used_flush_secs);
    let mut last_used = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tokio::select! {
            _ = last_used.tick() => state.last_used.flush(&*state.store, state.clock.now()).await,
            _ = reload.tick() => {
                if let Err(e) = state.keys.reload(&*state.store, state.clock.now()).await {
                    tracing::warn!(error = %e, "reloading keys");
                }
            }
            _ = scopes.tick() => {
                if let Err(e) = state.scopes.reload(&*state.store).await {
                    tracing::warn!(error = %e, "reloading the registered APIs' scopes");
                }
            }
            _ = purge.tick() => {
                match state.store.purge_expired(state.clock.now()).await {
                    Ok(n) if n > 0 => tracing::debug!(rows = n, "purged expired rows"),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "purging expired rows"),
                }
            }
            _ = lifecycle.tick() => {
                match latchkey_admin::client_purge(&*state.store, state.config.client_lifecycle(), state.clock.now()).await {
                    Ok(c) => tracing::debug!(c.deleted_unused, c.purged, "client lifecycle"),
                    Err(e) => tracing::warn!(error = %e, "deleting unused clients and purging deleted ones"),
                }
                rotate_keys_when_due(&state).await;
            }
        }
    }
}

/// The scheduled key rotation (`key_rotation_days`), checked with the client lifecycle every 10 minutes; this
/// instance signs with the new keys at once, the others at their next reload.
async fn rotate_keys_when_due(state: &AppState) {
    let days = state.config.key_rotation_days;
    if days == 0 {
        return;
    }
    let now = state.clock.now();
    let rotated = match state.keys.secrets() {
        Ok(secrets) => keys::rotate_due(&*state.store, &secrets, days * 86_400, now).await,
        Err(e) => Err(e.into()),
    };
    match rotated {
        Ok(made) if made.is_empty() => {}
        Ok(made) => {
            for (kind, id) in &made {
                tracing::info!(kind = kind.as_str(), id, "signing key rotated on schedule");
            }
            if let Err(e) = state.keys.reload(&*state.store, now).await {
                tracing::warn!(error = %e, "reloading keys after a rotation");
            }
        }
        Err(e) => tracing::warn!(error = %e, "the scheduled key rotation"),
    }
}

/// The external App Check provider the configuration names, if any. A JWKS URL is fetched by the task returned
/// beside it, from now on (a provider that is down at start-up does not keep the server from starting).
fn app_check_provider(config: &Config) -> anyhow::Result<(Option<app_check::External>, Option<JoinHandle<()>>)> {
    let Some(issuer) = config.app_check_issuer.clone() else { return Ok((None, None)) };
    let mut refresh = None;
    let keys: Arc<dyn app_check::JwksSource> = match (&config.app_check_jwks_file, &config.app_check_jwks_url) {
        (Some(file), _) => Arc::new(
            app_check::FileJwks::open(file.clone())
                .with_context(|| format!("reading app_check_jwks_file {}", file.display()))?,
        ),
        (None, Some(url)) => {
            let source = Arc::new(
                app_check::HttpJwks::new(url, config.app_check_jwks_ca_file.as_deref())
                    .context("setting up app_check_jwks_url")?,
            );
            let interval = std::time::Duration::from_secs(config.app_check_jwks_refresh_secs);
            refresh = Some(tokio::spawn(Arc::clone(&source).keep_fresh(interval)));
            source
        }
        (None, None) => return Ok((None, None)),
    };
    Ok((Some(app_check::External { issuer, keys }), refresh))
}
