//! App Check on the token endpoint: the providers whose tokens are accepted, and the classification, counting
//! and (when enforced) rejection of token requests from mobile-platform clients with App Check on.
//!
//! Two providers: the built-in debug provider (`POST /v1/appcheck/debug` exchanges a registered debug secret
//! for a one-hour ES256 token signed with the server's id_token key, `iss` = issuer + `/appcheck`), and an
//! external one configured by `app_check_jwks_file` + `app_check_issuer` (keys behind [`JwksSource`]).

use crate::error::TokenError;
use crate::state::AppState;
use axum::http::{header, HeaderMap};
use latchkey_core::app_check::{self as core, AppCheckState, Category, Jwk, Jwks};
use latchkey_core::client::{Client, ClientType};
use latchkey_core::time::UnixTime;
use latchkey_core::{ErrorCode, OAuthError};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

/// The header carrying the App Check token on token-endpoint requests.
pub const HEADER: &str = "x-latchkey-appcheck";
/// How long a debug-provider token lives.
pub const DEBUG_TOKEN_LIFETIME: i64 = 3600;

/// Where the external provider's keys come from.
pub trait JwksSource: Send + Sync {
    /// The keys in force.
    fn jwks(&self) -> Jwks;
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

fn read_jwks(path: &std::path::Path) -> anyhow::Result<Jwks> {
    let text = std::fs::read_to_string(path)?;
    Ok(serde_json::from_str(&text)?)
}

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

/// The external provider: its issuer and keys.
#[derive(Clone)]
pub struct External {
    /// The `iss` of its tokens.
    pub issuer: String,
    /// Its keys.
    pub keys: Arc<dyn JwksSource>,
}

/// The debug provider's `iss`.
pub fn debug_issuer(state: &AppState) -> String {
    format!("{}/appcheck", state.urls.issuer)
}

/// Whether `token` is a valid App Check token for `client_id` from either provider.
pub fn verify(state: &AppState, token: &str, client_id: &str, now: UnixTime) -> bool {
    let keys = state.keys.get();
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
    if core::verify_token(token, &own, &debug_issuer(state), client_id, now).is_ok() {
        return true;
    }
    state
        .app_check_provider
        .as_ref()
        .is_some_and(|p| core::verify_token(token, &p.keys.jwks(), &p.issuer, client_id, now).is_ok())
}

/// Classifies and counts a token request of `client` when App Check is on for it, and refuses an unverified one
/// when it is enforced: 401 `invalid_client` (the App Check token is part of authenticating the app).
pub async fn check(state: &AppState, client: &Client, headers: &HeaderMap, now: UnixTime) -> Result<(), TokenError> {
    if client.client_type != ClientType::Mobile {
        return Ok(());
    }
    let in_force = client.app_check.effective(now);
    if in_force == AppCheckState::Disabled {
        return Ok(());
    }
    let token = headers.get(HEADER).map(|v| v.to_str().is_ok_and(|t| verify(state, t.trim(), &client.client_id, now)));
    let user_agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok());
    let category = core::classify(token, user_agent);
    let hour = UnixTime(now.0 - now.0.rem_euclid(3600));
    if let Err(e) = state.store.count_app_check(&client.client_id, hour, category).await {
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
