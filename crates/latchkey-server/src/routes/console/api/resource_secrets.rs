//! The API's rotation of a registered API's introspection secrets, as a client's are rotated: add a second secret
//! (shown once), then disable and delete the old one. The rules are `latchkey_admin::resources`.

use super::super::resources::reloaded;
use super::doc::{BadRequest, Conflict, NotFound, Unauthorized};
use super::resources::{of_project, ResourcePath};
use super::{created, ok, ApiResult, Caller};
use crate::state::AppState;
use axum::extract::{Path, State};
use latchkey_admin::resources::{self as ops, NewResourceSecret, ResourceView};
use latchkey_core::client::SecretChange;
use serde::Deserialize;
use utoipa::IntoParams;

/// The path of an introspection secret's operations.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct ResourceSecretPath {
    /// The project id.
    project: String,
    /// The API's id (`res_...`).
    resource: String,
    /// The secret's id (`cs_...`), as the API lists it.
    secret: String,
}

/// Add an introspection secret to an API: it works at once, beside the other. The secret is in this answer only.
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/resources/{resource}/secrets", tag = "resources",
    operation_id = "addResourceSecret", params(ResourcePath),
    responses((status = 201, body = NewResourceSecret), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound), (status = 409, response = Conflict)))]
pub(super) async fn secrets_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<ResourcePath>,
) -> ApiResult {
    let id = of_project(&state, &p).await?;
    created(
        reloaded(&state, ops::resource_secret_add(&*state.store, &caller.actor(), &id, state.clock.now()).await)
            .await?,
    )
}

/// Disable an introspection secret: from now on it authenticates nothing. The only enabled one cannot be disabled.
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/resources/{resource}/secrets/{secret}/disable",
    tag = "resources", operation_id = "disableResourceSecret", params(ResourceSecretPath),
    responses((status = 200, body = ResourceView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn secret_disable_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<ResourceSecretPath>,
) -> ApiResult {
    let now = state.clock.now();
    change(&state, &caller, p.into_parts(|secret| SecretChange::Disable(secret, now))).await
}

/// Enable a disabled introspection secret again.
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/resources/{resource}/secrets/{secret}/enable",
    tag = "resources", operation_id = "enableResourceSecret", params(ResourceSecretPath),
    responses((status = 200, body = ResourceView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn secret_enable_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<ResourceSecretPath>,
) -> ApiResult {
    change(&state, &caller, p.into_parts(SecretChange::Enable)).await
}

/// Delete a disabled introspection secret for good.
#[utoipa::path(delete, path = "/console/api/v1/projects/{project}/resources/{resource}/secrets/{secret}",
    tag = "resources", operation_id = "deleteResourceSecret", params(ResourceSecretPath),
    responses((status = 200, body = ResourceView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn secret_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<ResourceSecretPath>,
) -> ApiResult {
    change(&state, &caller, p.into_parts(SecretChange::Delete)).await
}

impl ResourceSecretPath {
    /// The API's path, and the change `of` makes of the secret's id.
    fn into_parts(self, of: impl FnOnce(String) -> SecretChange) -> (ResourcePath, SecretChange) {
        (ResourcePath { project: self.project, resource: self.resource }, of(self.secret))
    }
}

/// Applies a change to one of the API's secrets as the caller.
async fn change(state: &AppState, caller: &Caller, (p, change): (ResourcePath, SecretChange)) -> ApiResult {
    let id = of_project(state, &p).await?;
    ok(reloaded(state, ops::change_resource_secrets(&*state.store, &caller.actor(), &id, change).await).await?)
}
