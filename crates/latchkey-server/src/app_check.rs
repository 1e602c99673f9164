//! App Check on the token endpoint: the providers whose tokens are accepted, and the classification, counting
//! and (when enforced) rejection of token requests from mobile-platform clients with App Check on.
//!
//! Two providers: the built-in debug provider (`POST /v1/appcheck/debug` exchanges a registered debug secret
//! for a one-hour ES256 token signed with the server's id_token key, `iss` = issuer + `/appcheck`), and an
//! external one configured by `app_check_issuer` with its keys from `app_check_jwks_file` or
//! `app_check_jwks_url` (behind [`JwksSource`]).

use crate::config::Urls;
use crate::error::TokenError;
use async_trait::async_trait;
use axum::http::{header, HeaderMap};
use latchkey_core::app_check::{self as core, AppCheckState, Category, Jwk, Jwks};
use latchkey_core::client::{Client, ClientType};
use latchkey_core::time::UnixTime;
use latchkey_core::{ErrorCode, OAuthError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime};

/// The header carrying the App Check token on token-endpoint requests.
pub const HEADER: &str = "x-latchkey-appcheck";
/// How long a debug-provider token lives.
pub const DEBUG_TOKEN_LIFETIME: i64 = 3600;
/// The shortest time between two fetches of a JWKS URL prompted by tokens naming unknown key ids, so that
/// forged tokens cannot make the server hammer the provider.
pub const JWKS_REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// How soon a failed scheduled fetch of a JWKS URL is tried again.
const JWKS_RETRY_AFTER_FAILURE: Duration = Duration::from_secs(60);
/// The largest JWKS document accepted.
const JWKS_MAX_BYTES: usize = 256 * 1024;

/// Where the external provider's keys come from.
#[async_trait]
pub trait JwksSource: Send + Sync {
    /// The keys in force, without waiting on the network.
    fn jwks(&self) -> Jwks;
    /// Fetches the keys again because a token named a key id they lack. The default does nothing (a file is
    /// re-read whenever it changes anyway).
    async fn refresh(&self) {}
}

/// Keys read from a JWKS file, re-read when the file changes.
#[derive(Debug)]
pub struct FileJwks {
    path: PathBuf,
    cache: RwLock<(Option<SystemTime>, Jwks)>,
}

impl FileJwks {
    /// Reads the file; a file that cannot be read or parsed is an error at start-up.
    pub fn open(path: PathBuf) -> anyhow::Result<Self> {
        let jwks = read_jwks(&path)?;
        let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        Ok(Self { path, cache: RwLock::new((modified, jwks)) })
    }
}

fn read_jwks(path: &Path) -> anyhow::Result<Jwks> {
    let text = std::fs::read_to_string(path)?;
    Ok(serde_json::from_str(&text)?)
}

#[async_trait]
impl JwksSource for FileJwks {
    fn jwks(&self) -> Jwks {
        let modified = std::fs::metadata(&self.path).and_then(|m| m.modified()).ok();
        if let Ok(cache) = self.cache.read() {
            if cache.0 == modified {
                return cache.1.clone();
            }
        }
        match read_jwks(&self.path) {
            Ok(jwks) => {
                if let Ok(mut cache) = self.cache.write() {
                    *cache = (modified, jwks.clone());
                }
                jwks
            }
            Err(e) => {
                tracing::warn!(error = %e, path = %self.path.display(), "re-reading the App Check JWKS; keeping the old keys");
                self.cache.read().map(|c| c.1.clone()).unwrap_or_default()
            }
        }
    }
}

/// Keys fetched from the provider's JWKS URL over HTTPS. The last keys fetched stay in force while the provider
/// cannot be reached; until the first fetch succeeds there are none, and external tokens count as invalid.
pub struct HttpJwks {
    url: String,
    http: reqwest::Client,
    keys: RwLock<Jwks>,
    /// When the last fetch of any kind and the last on-demand fetch started; held across a fetch so that only
    /// one runs at a time.
    fetches: tokio::sync::Mutex<FetchTimes>,
}

/// When [`HttpJwks`] last started fetching.
#[derive(Default)]
struct FetchTimes {
    any: Option<Instant>,
    on_demand: Option<Instant>,
}

impl HttpJwks {
    /// A source for `url`, trusting the system's roots and the PEM certificates in `ca_file`. Fetches nothing yet.
    pub fn new(url: &str, ca_file: Option<&Path>) -> anyhow::Result<Self> {
        Ok(Self {
            url: url.to_owned(),
            http: crate::outbound::client(ca_file, Duration::from_secs(10), "App Check JWKS")?,
            keys: RwLock::new(Jwks::default()),
            fetches: tokio::sync::Mutex::new(FetchTimes::default()),
        })
    }

    async fn fetch(&self) -> anyhow::Result<Jwks> {
        let mut response = self.http.get(&self.url).header(header::ACCEPT, "application/json").send().await?;
        anyhow::ensure!(response.status() == reqwest::StatusCode::OK, "the provider answered {}", response.status());
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            body.extend_from_slice(&chunk);
            anyhow::ensure!(body.len() <= JWKS_MAX_BYTES, "the JWKS is larger than {JWKS_MAX_BYTES} bytes");
        }
        Ok(serde_json::from_slice(&body)?)
    }

    /// Fetches the keys and installs them; false when the fetch failed, which keeps the keys in force.
    async fn fetch_and_install(&self) -> bool {
        match self.fetch().await {
            Ok(jwks) => {
                tracing::debug!(url = %self.url, keys = jwks.keys.len(), "fetched the App Check JWKS");
                if let Ok(mut keys) = self.keys.write() {
                    *keys = jwks;
                }
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, url = %self.url, "fetching the App Check JWKS; keeping the keys in force");
                false
            }
        }
    }

    /// The scheduled fetch.
    async fn fetch_now(&self) -> bool {
        let mut times = self.fetches.lock().await;
        times.any = Some(Instant::now());
        self.fetch_and_install().await
    }

    /// The fetch a token naming an unknown key asks for: skipped when another fetch started while this one
    /// waited for it, or when an on-demand fetch started less than [`JWKS_REFETCH_INTERVAL`] ago, so that
    /// forged key ids cannot make the server hammer the provider.
    async fn fetch_on_demand(&self) {
        let asked = Instant::now();
        let mut times = self.fetches.lock().await;
        let fetched_meanwhile = times.any.is_some_and(|t| t >= asked);
        let recent = times.on_demand.is_some_and(|t| t.elapsed() < JWKS_REFETCH_INTERVAL);
        if fetched_meanwhile || recent {
            return;
        }
        let now = Instant::now();
        (times.any, times.on_demand) = (Some(now), Some(now));
        self.fetch_and_install().await;
    }

    /// Keeps the keys fresh: fetches now, then every `interval`, or a minute after a failed fetch. Runs until
    /// the task is dropped.
    pub async fn keep_fresh(self: Arc<Self>, interval: Duration) {
        loop {
            let wait = if self.fetch_now().await { interval } else { JWKS_RETRY_AFTER_FAILURE.min(interval) };
            tokio::time::sleep(wait).await;
        }
    }
}

#[async_trait]
impl JwksSource for HttpJwks {
    fn jwks(&self) -> Jwks {
        self.keys.read().map(|k| k.clone()).unwrap_or_default()
    }

    async fn refresh(&self) {
        self.fetch_on_demand().await;
    }
}

/// The external provider: its issuer and keys.
#[derive(Clone)]
pub struct External {
    /// The `iss` of its tokens.
    pub issuer: String,
    /// Its keys.
    pub keys: Arc<dyn JwksSource>,
}

/// The debug provider's `iss`.
pub fn debug_issuer(urls: &Urls) -> String {
    format!("{}/appcheck", urls.issuer)
}

/// What the token endpoint's App Check step reads: the store (the counts), the server's keys (the debug
/// provider's tokens are signed with its id_token key), its URLs and the external provider, if any.
#[derive(Clone, Copy)]
pub struct TokenEndpoint<'a> {
    /// The store.
    pub store: &'a dyn latchkey_store::Store,
    /// The server's keys.
    pub keys: &'a latchkey_admin::keys::KeyRing,
    /// The server's URLs.
    pub urls: &'a Urls,
    /// The external provider, when one is configured.
    pub provider: Option<&'a External>,
}

/// Whether `token` is a valid App Check token for `client_id` from either provider.
async fn app_check_verify(at: &TokenEndpoint<'_>, token: &str, client_id: &str, now: UnixTime) -> bool {
    let keys = at.keys.get();
    let own = Jwks {
        keys: keys
            .id_token
            .iter()
            .map(|k| {
                let j = k.public_jwk();
                Jwk {
                    kty: j.kty.clone(),
                    kid: Some(k.kid().to_owned()),
                    crv: Some(j.crv.clone()),
                    x: Some(j.x.clone()),
                    y: Some(j.y.clone()),
                    n: None,
                    e: None,
                }
            })
            .collect(),
    };
    if core::verify_token(token, &own, &debug_issuer(at.urls), client_id, now).is_ok() {
        return true;
    }
    let Some(provider) = at.provider else { return false };
    let keys = provider.keys.jwks();
    if core::verify_token(token, &keys, &provider.issuer, client_id, now).is_ok() {
        return true;
    }
    // The provider may have rotated its keys since they were fetched.
    let Some(kid) = core::key_id(token).filter(|kid| !keys.has_key(kid)) else { return false };
    provider.keys.refresh().await;
    let keys = provider.keys.jwks();
    keys.has_key(&kid) && core::verify_token(token, &keys, &provider.issuer, client_id, now).is_ok()
}

/// The token endpoint's App Check step: classifies and counts a token request of `client` when App Check is on for it, and refuses an unverified one
/// when it is enforced: 401 `invalid_client` (the App Check token is part of authenticating the app).
pub async fn check_token_request(
    at: TokenEndpoint<'_>,
    client: &Client,
    headers: &HeaderMap,
    now: UnixTime,
) -> Result<(), TokenError> {
    if client.client_type != ClientType::Mobile {
        return Ok(());
    }
    let in_force = client.app_check.effective(now);
    if in_force == AppCheckState::Disabled {
        return Ok(());
    }
    let token = match headers.get(HEADER).map(|v| v.to_str().map(str::trim)) {
        None => None,
        Some(Ok(t)) => Some(app_check_verify(&at, t, &client.client_id, now).await),
        Some(Err(_)) => Some(false),
    };
    let user_agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok());
    let category = core::classify(token, user_agent);
    crate::metrics::APP_CHECK.inc(category.as_str());
    let hour = UnixTime(now.0 - now.0.rem_euclid(3600));
    if let Err(e) = at.store.count_app_check(&client.client_id, hour, category).await {
        tracing::warn!(error = %e, client_id = %client.client_id, "counting an App Check request");
    }
    if in_force == AppCheckState::Enforced && category != Category::Verified {
        tracing::info!(client_id = %client.client_id, category = category.as_str(), "App Check refused a request");
        return Err(OAuthError::new(
            ErrorCode::InvalidClient,
            "App Check is enforced for this client: send a valid App Check token in the X-Latchkey-AppCheck header.",
        )
        .into());
    }
    Ok(())
}
