//! The store, the keys and App Check as the core's token flows see them: [`StorePorts`] implements
//! `latchkey_core::flow::Ports` for one request. Each method is one lookup or one write; the rules are the core's.

use super::id_token;
use crate::app_check::{debug_issuer, HEADER};
use crate::clock::OsRandom;
use crate::error::TokenError;
use crate::state::AppState;
use axum::http::{header, HeaderMap};
use latchkey_core::access_token::{GrantId, MacKey};
use latchkey_core::app_check::{self as core, AppCheckState, Category, Jwk, Jwks};
use latchkey_core::client::{Client, ClientType};
use latchkey_core::dpop::Window;
use latchkey_core::flow::{Ports, Settings};
use latchkey_core::secret::Random;
use latchkey_core::service_account::ServiceKeyState;
use latchkey_core::time::UnixTime;
use latchkey_core::token::{AuthCode, Grant, GrantState};
use latchkey_core::{ErrorCode, OAuthError};
use latchkey_store::{Redeemed, User};

/// One request's view of the server for the core's flows.
pub struct StorePorts<'a> {
    state: &'a AppState,
    headers: &'a HeaderMap,
    random: OsRandom,
}

impl<'a> StorePorts<'a> {
    /// The ports for a request with `headers` (App Check reads its header and the `User-Agent`).
    pub fn new(state: &'a AppState, headers: &'a HeaderMap) -> Self {
        Self { state, headers, random: OsRandom }
    }
}

impl Ports for StorePorts<'_> {
    type Error = TokenError;
    type User = User;

    fn settings(&self) -> Settings<'_> {
        let config = &self.state.config;
        Settings {
            dpop_window: Window { max_age: config.dpop_max_age, max_future: config.dpop_max_future },
            dpop_strict_code_jti: config.dpop_strict_code_jti,
            access_token_lifetime: config.access_token_lifetime,
            token_endpoint: &self.state.urls.token_endpoint,
            scopes: &self.state.scopes,
        }
    }

    fn admit_client(&self, client_id: &str) -> Result<(), TokenError> {
        self.state.rate_limits.admit_client(client_id).map_err(TokenError::too_many)
    }

    fn random(&self) -> &dyn Random {
        &self.random
    }

    fn with_mac_keys<R>(&self, f: impl FnOnce(&[MacKey]) -> R) -> R {
        f(&self.state.keys.get().mac)
    }

    async fn reload_keys(&self, now: UnixTime) -> Result<bool, TokenError> {
        Ok(self.state.keys.reload_on_demand(&*self.state.store, now).await?)
    }

    async fn client(&self, client_id: &str) -> Result<Option<Client>, TokenError> {
        Ok(self.state.store.client(client_id).await?)
    }

    async fn app_check(&self, client: &Client, now: UnixTime) -> Result<(), TokenError> {
        app_check(self.state, client, self.headers, now).await
    }

    async fn code(&self, code_hash: &[u8]) -> Result<Option<AuthCode>, TokenError> {
        Ok(self.state.store.code(code_hash).await?)
    }

    async fn revoke_grants_of_code(&self, code_hash: &[u8], now: UnixTime) -> Result<u64, TokenError> {
        let revoked = self.state.store.revoke_grants_of_code(code_hash, now).await?;
        tracing::warn!(revoked, "authorization code reused; its grant is revoked");
        Ok(revoked)
    }

    async fn user(&self, user_id: &str) -> Result<Option<(User, Option<UnixTime>)>, TokenError> {
        Ok(self.state.store.user(user_id).await?.map(|u| {
            let disabled_at = u.disabled_at;
            (u, disabled_at)
        }))
    }

    async fn redeem_code(&self, grant: &Grant, now: UnixTime) -> Result<bool, TokenError> {
        let redeemed = self.state.store.redeem_code(grant, self.state.grant_limits(), now).await?;
        if redeemed == Redeemed::Issued {
            let grant_id = grant.id.encode();
            tracing::info!(client_id = %grant.client_id, user_id = %grant.user_id, grant = %grant_id, "code exchanged");
        }
        Ok(redeemed == Redeemed::Issued)
    }

    fn id_token(&self, user: &User, code: &AuthCode, access_token: &str, now: UnixTime) -> Result<String, TokenError> {
        id_token::id_token(self.state, user, &code.client_id, code, access_token, now)
    }

    async fn grant(&self, id: &GrantId) -> Result<Option<GrantState>, TokenError> {
        Ok(self.state.store.grant(id).await?)
    }

    async fn legacy_grant_by_refresh(&self, refresh_hash: &[u8]) -> Result<Option<GrantState>, TokenError> {
        Ok(self.state.store.legacy_grant_by_refresh(refresh_hash).await?)
    }

    fn grant_used(&self, id: &GrantId, now: UnixTime) {
        self.state.last_used.note(id, now);
    }

    async fn revoke_grant(&self, id: &GrantId, now: UnixTime) -> Result<bool, TokenError> {
        let revoked = self.state.store.revoke_grant(id, now).await?;
        if revoked {
            tracing::info!(grant = %id.encode(), "grant revoked");
        }
        Ok(revoked)
    }

    async fn record_once(&self, values: &[(Vec<u8>, UnixTime)], now: UnixTime) -> Result<Option<usize>, TokenError> {
        let replayed = self.state.store.record_once(values, now).await?;
        crate::metrics::REPLAY_RECORDS.inc(if replayed.is_some() { "replayed" } else { "recorded" });
        Ok(replayed)
    }

    async fn service_key(&self, key_id: &str) -> Result<Option<ServiceKeyState>, TokenError> {
        Ok(self.state.store.service_key_state(key_id).await?)
    }

    async fn service_account_exists(&self, email: &str) -> Result<bool, TokenError> {
        Ok(self.state.store.service_account(email).await?.is_some_and(|a| a.email == email))
    }
}
/// Whether `token` is a valid App Check token for `client_id` from either provider.
async fn app_check_verify(state: &AppState, token: &str, client_id: &str, now: UnixTime) -> bool {
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
    if core::verify_token(token, &own, &debug_issuer(&state.urls), client_id, now).is_ok() {
        return true;
    }
    let Some(provider) = &state.app_check_provider else { return false };
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

/// Classifies and counts a token request of `client` when App Check is on for it, and refuses an unverified one
/// when it is enforced: 401 `invalid_client` (the App Check token is part of authenticating the app).
async fn app_check(state: &AppState, client: &Client, headers: &HeaderMap, now: UnixTime) -> Result<(), TokenError> {
    if client.client_type != ClientType::Mobile {
        return Ok(());
    }
    let in_force = client.app_check.effective(now);
    if in_force == AppCheckState::Disabled {
        return Ok(());
    }
    let token = match headers.get(HEADER).map(|v| v.to_str().map(str::trim)) {
        None => None,
        Some(Ok(t)) => Some(app_check_verify(state, t, &client.client_id, now).await),
        Some(Err(_)) => Some(false),
    };
    let user_agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok());
    let category = core::classify(token, user_agent);
    crate::metrics::APP_CHECK.inc(category.as_str());
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
