//! Service accounts of a project, for the operator's CLI and the console: made, listed, disabled,
//! deleted by the project's members (content owners are [`super::content_owners`]').

use super::{Actor, AdminError, AdminResult, Right};
use latchkey_core::secret::random_bytes;
use latchkey_core::service_account;
use latchkey_core::time::UnixTime;
use latchkey_store::{ServiceAccount, Store};
use serde::Serialize;

/// A service account.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ServiceAccountView {
    /// Its identifier (the assertions' `iss`).
    pub email: String,
    /// Its id (the key file's `client_id`).
    pub unique_id: String,
    /// Its project.
    pub project_id: String,
    /// Its display name.
    pub display_name: String,
    /// Whether it is disabled.
    pub disabled: bool,
}

impl From<&ServiceAccount> for ServiceAccountView {
    fn from(a: &ServiceAccount) -> Self {
        Self {
            email: a.email.clone(),
            unique_id: a.id.clone(),
            project_id: a.project_id.clone(),
            display_name: a.display_name.clone(),
            disabled: a.disabled_at.is_some(),
        }
    }
}

/// The service accounts of a project.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ServiceAccountList {
    /// The project.
    pub project_id: String,
    /// Its service accounts, by identifier.
    pub service_accounts: Vec<ServiceAccountView>,
}

/// A service account by identifier or id.
pub(super) async fn find_account(store: &dyn Store, account: &str) -> AdminResult<ServiceAccount> {
    let found = store.service_account(account.trim()).await?;
    found.ok_or_else(|| AdminError::NotFound(format!("service account {account}")))
}

/// The host of service accounts' identifiers: that of the deployment's `scope_base`.
pub fn identifier_host(scope_base: &str) -> AdminResult<String> {
    let host = scope_base.parse::<http::Uri>().ok().and_then(|u| u.host().map(str::to_owned));
    host.ok_or_else(|| AdminError::Invalid(format!("scope_base {scope_base} has no host")))
}

/// Makes a service account `name` in a project; `host` is the host of the deployment's scope base.
pub async fn service_account_create(
    store: &dyn Store,
    actor: &Actor,
    project_id: &str,
    name: &str,
    display_name: Option<&str>,
    host: &str,
    now: UnixTime,
) -> AdminResult<ServiceAccountView> {
    let access = actor.project(store, project_id, Right::Edit).await?;
    service_account::check_name(name).map_err(|e| AdminError::Invalid(e.into()))?;
    let display_name = display_name.map(str::trim).filter(|d| !d.is_empty()).unwrap_or(name);
    if display_name.chars().count() > 100 {
        return Err(AdminError::Invalid("a service account's display name has at most 100 characters".into()));
    }
    let account = ServiceAccount {
        id: digits(21),
        email: service_account::email(name, &access.project.id, host),
        project_id: access.project.id,
        display_name: display_name.to_owned(),
        created_at: now,
        disabled_at: None,
    };
    if !store.create_service_account(&account).await? {
        return Err(AdminError::Conflict(format!("service account {} exists already", account.email)));
    }
    Ok(ServiceAccountView::from(&account))
}

/// The service accounts of a project.
pub async fn service_account_list(
    store: &dyn Store,
    actor: &Actor,
    project_id: &str,
) -> AdminResult<ServiceAccountList> {
    let access = actor.project(store, project_id, Right::View).await?;
    let accounts = store.service_accounts(&access.project.id).await?;
    Ok(ServiceAccountList {
        project_id: access.project.id,
        service_accounts: accounts.iter().map(ServiceAccountView::from).collect(),
    })
}

/// The account, if the actor holds `right` on its project (one the actor is not a member of: not found).
pub(super) async fn reachable(
    store: &dyn Store,
    actor: &Actor,
    account: &str,
    right: Right,
) -> AdminResult<ServiceAccount> {
    let a = find_account(store, account).await?;
    match actor.project(store, &a.project_id, right).await {
        Ok(_) => Ok(a),
        Err(AdminError::NotFound(_)) => Err(AdminError::NotFound(format!("service account {account}"))),
        Err(e) => Err(e),
    }
}

/// A service account, for the members of its project.
pub async fn service_account_show(store: &dyn Store, actor: &Actor, account: &str) -> AdminResult<ServiceAccountView> {
    Ok(ServiceAccountView::from(&reachable(store, actor, account, Right::View).await?))
}

/// Disables (no new tokens) or enables a service account.
pub async fn service_account_set_disabled(
    store: &dyn Store,
    actor: &Actor,
    account: &str,
    disabled: bool,
    now: UnixTime,
) -> AdminResult<ServiceAccountView> {
    let mut a = reachable(store, actor, account, Right::Edit).await?;
    a.disabled_at = disabled.then_some(now);
    store.set_service_account_disabled(&a.id, a.disabled_at).await?;
    Ok(ServiceAccountView::from(&a))
}

/// Deletes a service account with its keys and grants.
pub async fn service_account_delete(store: &dyn Store, actor: &Actor, account: &str) -> AdminResult<serde_json::Value> {
    let a = reachable(store, actor, account, Right::Edit).await?;
    store.delete_service_account(&a.id).await?;
    Ok(serde_json::json!({ "email": a.email, "deleted": true }))
}

/// `n` random decimal digits, the first not zero (ids that look like the best-known provider's).
pub(super) fn digits(n: usize) -> String {
    let bytes = random_bytes(n, &crate::clock::OsRandom);
    bytes.iter().enumerate().map(|(i, b)| char::from(b'0' + if i == 0 { 1 + b % 9 } else { b % 10 })).collect()
}
