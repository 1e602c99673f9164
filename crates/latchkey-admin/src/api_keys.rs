//! The developers' keys for the console's JSON API: `lk_<id>_<secret>`, shown once, kept only as a SHA-256
//! hash, looked up by id and compared in constant time.

use super::results::{ApiKeyCreated, ApiKeyList, ApiKeyRevoked, ApiKeyView};
use super::{find_user, random_id, AdminError, AdminResult};
use crate::clock::OsRandom;
use latchkey_core::client::FieldError;
use latchkey_core::secret::{self, Secret};
use latchkey_core::time::UnixTime;
use latchkey_store::{ApiKey, Store, StoreResult, User};

/// The prefix of every console API key.
pub const PREFIX: &str = "lk_";

/// Creates an API key acting for the developer `user` (id or e-mail address); the key is shown this once.
pub async fn api_key_create(store: &dyn Store, user: &str, name: &str, now: UnixTime) -> AdminResult<ApiKeyCreated> {
    let user = find_user(store, user).await?;
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        let message = "Give the key a name of 1 to 100 characters, to recognise it by.".to_owned();
        return Err(AdminError::Fields(vec![FieldError { field: "name", message }]));
    }
    if store.api_keys_of(&user.id).await?.len() >= super::quotas::API_KEYS_PER_DEVELOPER {
        return Err(super::quotas::reached("API keys", super::quotas::API_KEYS_PER_DEVELOPER));
    }
    let id = random_id(16);
    let key = Secret::new(format!("{PREFIX}{id}_{}", secret::random_b64(32, &OsRandom)));
    let stored = ApiKey {
        id: id.clone(),
        user_id: user.id.clone(),
        name: name.into(),
        secret_hash: key.hash(),
        created_at: now,
        last_used_at: None,
    };
    store.create_api_key(&stored).await?;
    Ok(ApiKeyCreated { key: ApiKeyView::from(&stored), api_key: key.into_inner(), user_id: user.id })
}

/// The developer's keys (never the keys themselves).
pub async fn api_key_list(store: &dyn Store, user: &str) -> AdminResult<ApiKeyList> {
    let user = find_user(store, user).await?;
    let api_keys = store.api_keys_of(&user.id).await?.iter().map(ApiKeyView::from).collect();
    Ok(ApiKeyList { user_id: user.id, api_keys })
}

/// Revokes one of the developer's keys.
pub async fn api_key_revoke(store: &dyn Store, user: &str, id: &str) -> AdminResult<ApiKeyRevoked> {
    let user = find_user(store, user).await?;
    if !store.delete_api_key(id, &user.id).await? {
        return Err(AdminError::NotFound(format!("API key {id}")));
    }
    Ok(ApiKeyRevoked { id: id.into(), revoked: true })
}

/// The id part of a presented key (`lk_<id>_<secret>`), when it has the form of one.
fn key_id(presented: &str) -> Option<&str> {
    let (id, _) = presented.strip_prefix(PREFIX)?.split_once('_')?;
    (!id.is_empty() && id.len() <= 64).then_some(id)
}

/// The developer a presented key acts for: `None` for a malformed, unknown or wrong key, or a disabled account.
pub async fn authenticate(store: &dyn Store, presented: &str, now: UnixTime) -> StoreResult<Option<User>> {
    let Some(id) = key_id(presented) else { return Ok(None) };
    let Some(key) = store.api_key(id).await? else { return Ok(None) };
    if !secret::matches_hash(presented, &key.secret_hash) {
        return Ok(None);
    }
    let Some(user) = store.user(&key.user_id).await?.filter(|u| u.disabled_at.is_none()) else { return Ok(None) };
    store.touch_api_key(&key.id, now).await?;
    Ok(Some(user))
}
