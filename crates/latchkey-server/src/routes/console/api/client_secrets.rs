//! The API's client secret rotation: add a second secret (shown once), then disable and delete the old
//! one. The rules are `latchkey_admin::client_secrets`.

use super::doc::{BadRequest, ClientPath, Conflict, NotFound, SecretPath, Unauthorized};
use super::{created, ok, ApiResult, Caller};
use crate::state::AppState;
use axum::extract::{Path, State};
use latchkey_admin::client_secrets::NewClientSecret;
use latchkey_admin::results::ClientView;
use latchkey_admin::{self as admin, ClientRef};
use latchkey_core::client::SecretChange;

/// Add a secret to a client: it works at once, beside the other. The secret is in this answer only.
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/clients/{client}/secrets", tag = "clients",
    operation_id = "addClientSecret", params(ClientPath),
    responses((status = 201, body = NewClientSecret), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn secrets_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(ClientPath { project, client }): Path<ClientPath>,
) -> ApiResult {
    let at = ClientRef::within(&project, &client);
    created(admin::client_secret_add(&*state.store, &caller.actor(), at, state.clock.now()).await?)
}

/// Disable a secret: from now on it authenticates nothing. The client's only enabled secret cannot be disabled.
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/clients/{client}/secrets/{secret}/disable",
    tag = "clients", operation_id = "disableClientSecret", params(SecretPath),
    responses((status = 200, body = ClientView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn secret_disable_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(SecretPath { project, client, secret }): Path<SecretPath>,
) -> ApiResult {
    ok(change(&state, &caller, &project, &client, SecretChange::Disable(secret, state.clock.now())).await?)
}

/// Enable a disabled secret again.
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/clients/{client}/secrets/{secret}/enable",
    tag = "clients", operation_id = "enableClientSecret", params(SecretPath),
    responses((status = 200, body = ClientView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn secret_enable_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(SecretPath { project, client, secret }): Path<SecretPath>,
) -> ApiResult {
    ok(change(&state, &caller, &project, &client, SecretChange::Enable(secret)).await?)
}

/// Delete a disabled secret for good.
#[utoipa::path(delete, path = "/console/api/v1/projects/{project}/clients/{client}/secrets/{secret}",
    tag = "clients", operation_id = "deleteClientSecret", params(SecretPath),
    responses((status = 200, body = ClientView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn secret_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(SecretPath { project, client, secret }): Path<SecretPath>,
) -> ApiResult {
    ok(change(&state, &caller, &project, &client, SecretChange::Delete(secret)).await?)
}

/// Applies a change to one of the client's secrets as the caller.
async fn change(
    state: &AppState,
    caller: &Caller,
    project: &str,
    client: &str,
    change: SecretChange,
) -> admin::AdminResult<ClientView> {
    admin::client_secret_change(&*state.store, &caller.actor(), ClientRef::within(project, client), change).await
}
