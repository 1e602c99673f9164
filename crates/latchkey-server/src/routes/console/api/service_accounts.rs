//! The API's service accounts of a project: made, listed, disabled and deleted by its members, with their
//! keys (made and handed out once as a key file, or uploaded as a public key; disabled; deleted).

use super::doc::{BadRequest, Conflict, NotFound, ProjectPath, Unauthorized};
use super::{created, ok, ApiResult, Body, Caller};
use crate::error::ConsoleApiError;
use crate::routes::AUTHORIZE_PATH;
use crate::state::AppState;
use axum::extract::{Path, State};
use latchkey_admin::service_account_keys::{self as keys, KeyList, KeyView};
use latchkey_admin::service_accounts::{self as ops, ServiceAccountList, ServiceAccountView};
use latchkey_admin::AdminError;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// The path of a service account's operations.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct AccountPath {
    /// The project id.
    project: String,
    /// The service account's identifier (e-mail form) or id.
    account: String,
}

/// The path of a key's operations.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct KeyPath {
    /// The project id.
    project: String,
    /// The service account's identifier (e-mail form) or id.
    account: String,
    /// The key id (the key file's `private_key_id`).
    key: String,
}

/// A new service account.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewAccount {
    /// Its name: 6 to 30 lower-case letters, digits and hyphens, starting with a letter; the identifier is
    /// `NAME@PROJECT.iam.HOST`.
    name: String,
    /// Its display name (default the name).
    display_name: Option<String>,
}

/// Whether a service account or a key is disabled.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Disabled {
    /// `true` disables (assertions and the tokens already issued are refused), `false` enables.
    disabled: bool,
}

/// A public key made elsewhere.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Upload {
    /// PEM `PUBLIC KEY`: RSA of 2048 bits or more (RS256), or P-256 (ES256).
    public_key: String,
}

/// The account named in the path, which must be of the path's project (else 404).
async fn of_project(state: &AppState, project: &str, account: &str) -> Result<String, ConsoleApiError> {
    match state.store.service_account(account.trim()).await? {
        Some(a) if a.project_id == project => Ok(a.id),
        _ => Err(AdminError::NotFound(format!("service account {account}")).into()),
    }
}

/// The key named in the path, which must be of the path's account (else 404).
async fn key_of(state: &AppState, p: &KeyPath) -> Result<(), ConsoleApiError> {
    let account = of_project(state, &p.project, &p.account).await?;
    match state.store.service_account_key(&p.key).await? {
        Some(k) if k.account_id == account => Ok(()),
        _ => Err(AdminError::NotFound(format!("key {}", p.key)).into()),
    }
}

/// List the project's service accounts.
#[utoipa::path(get, path = "/console/api/v1/projects/{project}/service-accounts", tag = "service-accounts",
    operation_id = "listServiceAccounts", params(ProjectPath),
    responses((status = 200, body = ServiceAccountList), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn accounts_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
) -> ApiResult {
    ok(ops::service_account_list(&*state.store, &caller.actor(), &project).await?)
}

/// Make a service account in the project.
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/service-accounts", tag = "service-accounts",
    operation_id = "createServiceAccount", params(ProjectPath), request_body = NewAccount,
    responses((status = 201, body = ServiceAccountView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn accounts_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
    Body(b): Body<NewAccount>,
) -> ApiResult {
    let host = ops::identifier_host(&state.config.scope_base)?;
    let (store, now) = (&*state.store, state.clock.now());
    created(
        ops::service_account_create(store, &caller.actor(), &project, &b.name, b.display_name.as_deref(), &host, now)
            .await?,
    )
}

/// Show a service account.
#[utoipa::path(get, path = "/console/api/v1/projects/{project}/service-accounts/{account}",
    tag = "service-accounts", operation_id = "getServiceAccount", params(AccountPath),
    responses((status = 200, body = ServiceAccountView), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn account_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<AccountPath>,
) -> ApiResult {
    of_project(&state, &p.project, &p.account).await?;
    ok(ops::service_account_show(&*state.store, &caller.actor(), &p.account).await?)
}

/// Disable or enable a service account.
///
/// Disabled, it gets no new token, and the tokens it holds are refused at their next use; enabled again, those
/// not yet expired work again.
#[utoipa::path(patch, path = "/console/api/v1/projects/{project}/service-accounts/{account}",
    tag = "service-accounts", operation_id = "updateServiceAccount", params(AccountPath), request_body = Disabled,
    responses((status = 200, body = ServiceAccountView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn account_patch(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<AccountPath>,
    Body(b): Body<Disabled>,
) -> ApiResult {
    of_project(&state, &p.project, &p.account).await?;
    let (store, now) = (&*state.store, state.clock.now());
    ok(ops::service_account_set_disabled(store, &caller.actor(), &p.account, b.disabled, now).await?)
}

/// Delete a service account with its keys and the owners' grants; its tokens stop at once.
#[utoipa::path(delete, path = "/console/api/v1/projects/{project}/service-accounts/{account}",
    tag = "service-accounts", operation_id = "deleteServiceAccount", params(AccountPath),
    responses((status = 200, body = Object, description = "`{\"email\", \"deleted\": true}`"),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn account_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<AccountPath>,
) -> ApiResult {
    of_project(&state, &p.project, &p.account).await?;
    ok(ops::service_account_delete(&*state.store, &caller.actor(), &p.account).await?)
}

/// List a service account's keys (never a private key: latchkey has none).
#[utoipa::path(get, path = "/console/api/v1/projects/{project}/service-accounts/{account}/keys",
    tag = "service-accounts", operation_id = "listServiceAccountKeys", params(AccountPath),
    responses((status = 200, body = KeyList), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn keys_get(State(state): State<AppState>, caller: Caller, Path(p): Path<AccountPath>) -> ApiResult {
    of_project(&state, &p.project, &p.account).await?;
    ok(keys::key_list(&*state.store, &caller.actor(), &p.account).await?)
}

/// Make a key; the response is the key file, this once.
///
/// A 2048-bit RSA key: latchkey keeps its public half and answers with the key file (`type`, `project_id`,
/// `private_key_id`, `private_key`, `client_email`, `client_id`, `auth_uri`, `token_uri`), the only copy of the
/// private key. Save it as is: the provider's client libraries load it unmodified. At most 10 keys per account.
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/service-accounts/{account}/keys",
    tag = "service-accounts", operation_id = "createServiceAccountKey", params(AccountPath),
    responses((status = 201, body = Object, description = "The key file (its private key shown this once)."),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn keys_post(State(state): State<AppState>, caller: Caller, Path(p): Path<AccountPath>) -> ApiResult {
    of_project(&state, &p.project, &p.account).await?;
    let urls = &state.urls;
    let auth_uri = format!("{}{AUTHORIZE_PATH}", urls.auth);
    let (store, now) = (&*state.store, state.clock.now());
    created(keys::key_create(store, &caller.actor(), &p.account, (&auth_uri, &urls.token_endpoint), now).await?)
}

/// Add a public key made elsewhere (RSA of 2048 bits or more, or P-256).
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/service-accounts/{account}/keys/upload",
    tag = "service-accounts", operation_id = "uploadServiceAccountKey", params(AccountPath), request_body = Upload,
    responses((status = 201, body = KeyView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn keys_upload_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<AccountPath>,
    Body(b): Body<Upload>,
) -> ApiResult {
    of_project(&state, &p.project, &p.account).await?;
    let (store, now) = (&*state.store, state.clock.now());
    created(keys::key_upload(store, &caller.actor(), &p.account, &b.public_key, now).await?)
}

/// Disable or enable a key: disabled, assertions it signs get no token and the tokens it got are refused.
#[utoipa::path(patch, path = "/console/api/v1/projects/{project}/service-accounts/{account}/keys/{key}",
    tag = "service-accounts", operation_id = "updateServiceAccountKey", params(KeyPath), request_body = Disabled,
    responses((status = 200, body = KeyView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn key_patch(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<KeyPath>,
    Body(b): Body<Disabled>,
) -> ApiResult {
    key_of(&state, &p).await?;
    ok(keys::key_set_disabled(&*state.store, &caller.actor(), &p.key, b.disabled, state.clock.now()).await?)
}

/// Delete a key: its tokens stop at once.
#[utoipa::path(delete, path = "/console/api/v1/projects/{project}/service-accounts/{account}/keys/{key}",
    tag = "service-accounts", operation_id = "deleteServiceAccountKey", params(KeyPath),
    responses((status = 200, body = Object, description = "`{\"key_id\", \"deleted\": true}`"),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn key_delete(State(state): State<AppState>, caller: Caller, Path(p): Path<KeyPath>) -> ApiResult {
    key_of(&state, &p).await?;
    ok(keys::key_delete(&*state.store, &caller.actor(), &p.key).await?)
}
