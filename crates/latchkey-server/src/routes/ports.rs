//! The store, the keys and App Check as the core's token flows see them: [`StorePorts`] implements
//! `latchkey_core::flow::Ports` for one request. Each method is one lookup or one write; the rules are the core's.

use super::id_token;
use crate::error::TokenError;
use crate::state::AppState;
use axum::http::HeaderMap;
use latchkey_admin::clock::OsRandom;
use latchkey_core::access_token::{GrantId, MacKey};
use latchkey_core::client::Client;
use latchkey_core::dpop::Window;
use latchkey_core::flow::{JwtAccessClaims, Ports, Settings};
use latchkey_core::secret::Random;
use latchkey_core::service_account::ServiceKeyState;
use latchkey_core::time::UnixTime;
use latchkey_core::token::{AuthCode, Grant, GrantState};
use latchkey_store::{Redeemed, User};

/// One request's view of the server for the core's flows.
pub struct StorePorts<'a> {
    state: &'a AppState,
    headers: &'a HeaderMap,
    random: OsRandom,
    scopes: std::sync::Arc<latchkey_core::scope::ScopeRegistry>,
    /// The user of the code read last, read with it: the code exchange asks for the code's user next, and gets
    /// it without a second read.
    code_user: std::sync::Mutex<Option<User>>,
}

impl<'a> StorePorts<'a> {
    /// The ports for a request with `headers` (App Check reads its header and the `User-Agent`).
    pub fn new(state: &'a AppState, headers: &'a HeaderMap) -> Self {
        Self { state, headers, random: OsRandom, scopes: state.scopes.get(), code_user: Default::default() }
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
            jwt_access_token_lifetime: config.jwt_access_token_lifetime,
            token_endpoint: &self.state.urls.token_endpoint,
            scopes: &self.scopes,
            refresh_rotation_grace: config.refresh_rotation_grace,
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
        let state = self.state;
        let at = crate::app_check::TokenEndpoint {
            store: &*state.store,
            keys: &state.keys,
            urls: &state.urls,
            provider: state.app_check_provider.as_ref(),
        };
        crate::app_check::check_token_request(at, client, self.headers, now).await
    }

    async fn code(&self, code_hash: &[u8]) -> Result<Option<AuthCode>, TokenError> {
        let Some((code, user)) = self.state.store.code_with_user(code_hash).await? else { return Ok(None) };
        *self.code_user.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = user;
        Ok(Some(code))
    }

    async fn revoke_grants_of_code(&self, code_hash: &[u8], now: UnixTime) -> Result<u64, TokenError> {
        let revoked = self.state.store.revoke_grants_of_code(code_hash, now).await?;
        tracing::warn!(revoked, "authorization code reused; its grant is revoked");
        Ok(revoked)
    }

    async fn user(&self, user_id: &str) -> Result<Option<(User, Option<UnixTime>)>, TokenError> {
        let read = self.code_user.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let user = match read {
            Some(user) if user.id == user_id => Some(user),
            _ => self.state.store.user(user_id).await?,
        };
        Ok(user.map(|u| {
            let disabled_at = u.disabled_at;
            (u, disabled_at)
        }))
    }

    async fn poll_device(
        &self,
        device_code_hash: &[u8],
        client_id: &str,
        now: UnixTime,
    ) -> Result<Option<latchkey_core::device::Poll>, TokenError> {
        Ok(self.state.store.poll_device_code(device_code_hash, client_id, now).await?)
    }

    async fn redeem_code(&self, grant: &Grant, now: UnixTime) -> Result<bool, TokenError> {
        let redeemed = self.state.store.redeem_code(grant, self.state.grant_limits(), now).await?;
        if redeemed == Redeemed::Issued {
            let grant_id = grant.id.encode();
            tracing::info!(client_id = %grant.client_id, user_id = %grant.user_id, grant = %grant_id, "code exchanged");
        }
        Ok(redeemed == Redeemed::Issued)
    }

    fn id_token(
        &self,
        user: Option<&User>,
        code: &AuthCode,
        access_token: &str,
        now: UnixTime,
    ) -> Result<String, TokenError> {
        id_token::id_token(self.state, user, code, access_token, now)
    }

    async fn jwt_access_token(&self, claims: &JwtAccessClaims<'_>) -> Result<String, TokenError> {
        id_token::jwt_access_token(self.state, claims).await
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

    async fn revoke_presented(
        &self,
        id: &GrantId,
        refresh_hash: Option<&[u8]>,
        client_id: Option<&str>,
        now: UnixTime,
    ) -> Result<bool, TokenError> {
        let revoked = self.state.store.revoke_presented(id, refresh_hash, client_id, now).await?;
        if revoked {
            tracing::info!(grant = %id.encode(), "grant revoked");
        }
        Ok(revoked)
    }

    async fn rotate_refresh(&self, id: &GrantId, old: &[u8], new: &[u8], now: UnixTime) -> Result<bool, TokenError> {
        Ok(self.state.store.rotate_refresh(id, old, new, now).await?)
    }

    async fn retired_refresh(&self, hash: &[u8]) -> Result<Option<UnixTime>, TokenError> {
        Ok(self.state.store.retired_refresh(hash).await?)
    }

    async fn revoke_reused(&self, id: &GrantId, now: UnixTime) -> Result<bool, TokenError> {
        let revoked = self.state.store.revoke_reused(id, now).await?;
        tracing::warn!(grant = %id.encode(), revoked, "a retired refresh token was used again; its grant is revoked");
        Ok(revoked)
    }

    async fn record_once(&self, values: &[(Vec<u8>, UnixTime)], now: UnixTime) -> Result<Option<usize>, TokenError> {
        let replayed = self.state.store.record_once(values, now).await?;
        crate::metrics::REPLAY_RECORDS.inc(if replayed.is_some() { "replayed" } else { "recorded" });
        Ok(replayed)
    }

    async fn record_proof(
        &self,
        values: &[(Vec<u8>, UnixTime)],
        admission: &latchkey_core::dpop::Admission,
        now: UnixTime,
    ) -> Result<latchkey_core::dpop::Recorded, TokenError> {
        let recorded = self.state.store.record_proof(values, admission, now).await?;
        crate::metrics::REPLAY_RECORDS.inc(if recorded.replayed.is_some() { "replayed" } else { "recorded" });
        Ok(recorded)
    }

    async fn service_key(&self, key_id: &str) -> Result<Option<ServiceKeyState>, TokenError> {
        Ok(self.state.store.service_key_state(key_id).await?)
    }

    async fn service_account_exists(&self, email: &str) -> Result<bool, TokenError> {
        Ok(self.state.store.service_account(email).await?.is_some_and(|a| a.email == email))
    }

    async fn resource(&self, id: &str) -> Result<Option<latchkey_core::resource::Resource>, TokenError> {
        Ok(self.state.store.resource(id).await?)
    }
}
