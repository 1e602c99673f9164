//! A person's account, for every surface (the account page, `latchkey admin user`, the console's JSON API): the
//! apps with access to it, removing one's access, a new password, ending other sessions, and the operator's
//! disable, enable and delete. Each change goes through the store's `change_account`, which writes the change and
//! its domain event together.

use super::{find_user, AdminError, AdminResult};
use crate::password;
use latchkey_core::account::AccountChange;
use latchkey_core::scope::{ScopeRegistry, ScopeSet};
use latchkey_core::time::UnixTime;
use latchkey_store::{LiveGrant, Store, User};
use serde::Serialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// One permission granted to an app: the scope and what it allows, in words.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Permission {
    /// The scope identifier.
    pub scope: String,
    /// What it allows.
    pub description: String,
}

/// An app (client) with access to an account: its live grants taken together.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AppAccess {
    /// The client.
    pub client_id: String,
    /// The app's name.
    pub client_name: String,
    /// The client's project.
    pub project_id: String,
    /// The project's name.
    pub project_name: String,
    /// Whether it signed in with the device flow (a TV or Limited Input device, which signs in no other way).
    pub device: bool,
    /// Where an app that registered itself comes from: `registered itself`, or its metadata document's host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The permissions granted, across its grants.
    pub permissions: Vec<Permission>,
    /// When access was first given.
    pub granted_at: i64,
    /// The day (its first second, UTC) access was last used: a refresh, a data-API call, or the grant itself.
    pub last_used_at: i64,
    /// When access ends, for time-limited access only.
    pub expires_at: Option<i64>,
    /// How many live grants (refresh tokens) the app holds.
    pub grants: usize,
}

/// The apps with access to an account.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AppList {
    /// The account.
    pub user_id: String,
    /// Its e-mail address.
    pub email: String,
    /// The apps, by name.
    pub apps: Vec<AppAccess>,
}

/// An app's access removed.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AccessRemoved {
    /// The account.
    pub user_id: String,
    /// The client.
    pub client_id: String,
    /// How many grants were revoked.
    pub revoked: u64,
}

/// The first second (UTC) of the day of `t`.
pub fn day_of(t: UnixTime) -> UnixTime {
    UnixTime(t.0 - t.0.rem_euclid(86_400))
}

/// Groups an account's live grants by client.
pub fn group(grants: Vec<LiveGrant>, registry: &ScopeRegistry) -> Vec<AppAccess> {
    let mut by_client: BTreeMap<String, Vec<LiveGrant>> = BTreeMap::new();
    for g in grants {
        by_client.entry(g.client_id.clone()).or_default().push(g);
    }
    let mut apps: Vec<AppAccess> = by_client
        .into_values()
        .filter_map(|grants| {
            let first = grants.first()?.clone();
            let scopes = grants.iter().fold(ScopeSet::EMPTY, |s, g| ScopeSet(s.0 | g.scopes.0));
            let permissions = registry
                .iter(scopes)
                .map(|s| Permission { scope: s.id.clone(), description: s.summary.to_string() })
                .collect();
            let used = grants.iter().map(|g| g.last_used_at.unwrap_or(g.created_at).max(g.created_at));
            let unlimited = grants.iter().any(|g| g.expires_at.is_none());
            let origin = first.registration.map(|kind| latchkey_core::registration::origin(kind, &first.client_id));
            Some(AppAccess {
                client_id: first.client_id,
                client_name: first.client_name,
                project_id: first.project_id,
                project_name: first.project_name,
                device: first.device,
                origin,
                permissions,
                granted_at: grants.iter().map(|g| g.created_at.0).min().unwrap_or(first.created_at.0),
                last_used_at: day_of(used.max().unwrap_or(first.created_at)).0,
                expires_at: if unlimited {
                    None
                } else {
                    grants.iter().filter_map(|g| g.expires_at).max().map(|t| t.0)
                },
                grants: grants.len(),
            })
        })
        .collect();
    apps.sort_by_key(|a| a.client_name.to_lowercase());
    apps
}

/// The apps with access to a user's account.
pub async fn apps_of(store: &dyn Store, user: &User, registry: &ScopeRegistry, now: UnixTime) -> AdminResult<AppList> {
    let apps = group(store.live_grants(&user.id, now).await?, registry);
    Ok(AppList { user_id: user.id.clone(), email: user.email.clone(), apps })
}

/// The apps with access to the account named by id or e-mail address (`latchkey admin user grants`).
pub async fn user_grants(
    store: &dyn Store,
    id_or_email: &str,
    registry: &ScopeRegistry,
    now: UnixTime,
) -> AdminResult<AppList> {
    apps_of(store, &find_user(store, id_or_email).await?, registry, now).await
}

/// Removes an app's access to an account: every grant of that client for that user is revoked (its refresh tokens
/// fail with `invalid_grant`, its access tokens with 401, at once); a client without access is `NotFound` and
/// changes nothing. Consent is asked on every authorization, so the next one asks again.
pub async fn remove_app_access(
    store: &dyn Store,
    user: &User,
    client_id: &str,
    now: UnixTime,
) -> AdminResult<AccessRemoved> {
    let change = AccountChange::AppAccessRemoved { client_id: client_id.to_owned() };
    match store.change_account(&user.id, &change, now).await? {
        Some(n) if n > 0 => Ok(AccessRemoved { user_id: user.id.clone(), client_id: client_id.into(), revoked: n }),
        Some(_) => Err(AdminError::NotFound(format!("app {client_id} has no access to {}", user.email))),
        None => Err(AdminError::NotFound(format!("user {}", user.id))),
    }
}

/// `latchkey admin user revoke-app`: [`remove_app_access`] for the account named by id or e-mail address.
pub async fn user_revoke_app(
    store: &dyn Store,
    id_or_email: &str,
    client_id: &str,
    now: UnixTime,
) -> AdminResult<AccessRemoved> {
    remove_app_access(store, &find_user(store, id_or_email).await?, client_id, now).await
}

/// A password changed, or other sessions ended.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SessionsEnded {
    /// The account.
    pub user_id: String,
    /// How many other sessions ended.
    pub sessions_ended: u64,
}

/// Changes a user's password: the current one must be right (checked by the caller through the password gate,
/// passed as `current_ok`); the new one follows the same rule as at creation; every session but `keep` ends.
pub async fn change_password(
    store: &dyn Store,
    user: &User,
    current_ok: bool,
    new_password: &str,
    keep: Option<Vec<u8>>,
    now: UnixTime,
) -> AdminResult<()> {
    if !current_ok {
        return Err(AdminError::Invalid("the current password is wrong".into()));
    }
    let password_hash = new_password_hash(new_password)?;
    match store.change_account(&user.id, &AccountChange::PasswordChanged { password_hash, keep }, now).await? {
        Some(_) => Ok(()),
        None => Err(AdminError::NotFound(format!("user {}", user.id))),
    }
}

/// The argon2id hash of a new password, once it follows the rule (at least 8 characters).
pub fn new_password_hash(password: &str) -> AdminResult<String> {
    if password.chars().count() < 8 {
        return Err(AdminError::Invalid("a password is at least 8 characters".into()));
    }
    password::hash(password).map_err(|e| AdminError::Invalid(e.to_string()))
}

/// Ends every session of the account but `keep` ("Sign out of all other sessions").
pub async fn end_other_sessions(
    store: &dyn Store,
    user: &User,
    keep: Option<Vec<u8>>,
    now: UnixTime,
) -> AdminResult<SessionsEnded> {
    match store.change_account(&user.id, &AccountChange::OtherSessionsEnded { keep }, now).await? {
        Some(n) => Ok(SessionsEnded { user_id: user.id.clone(), sessions_ended: n }),
        None => Err(AdminError::NotFound(format!("user {}", user.id))),
    }
}
