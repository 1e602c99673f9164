//! The API's registered APIs of a project (resources, RFC 8707): registered (the introspection secret in the answer,
//! this once), listed, shown, changed, deleted, and the protected resource metadata (RFC 9728) each should serve.
//! Their secrets are [`super::resource_secrets`]. The rules are `latchkey_admin::resources`; after each change this
//! instance reads the registered APIs again at once.

use super::super::resources::{field_error, reloaded, resource_of, token_format, visibility, Reserved};
use super::doc::{BadRequest, Conflict, Forbidden, NotFound, ProjectPath, Unauthorized};
use super::{created, ok, ApiResult, Body, Caller};
use crate::error::ConsoleApiError;
use crate::state::AppState;
use axum::extract::{Path, State};
use latchkey_admin::resources::{
    self as ops, CreatedResource, NewResource, ResourceChange, ResourceList, ResourceView,
};
use latchkey_admin::AdminResult;
use latchkey_core::resource::{TokenFormat, Visibility};
use serde::Deserialize;
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};
use utoipa::{IntoParams, ToSchema};

/// The path of a registered API's operations.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct ResourcePath {
    /// The project id.
    pub(super) project: String,
    /// The API's id (`res_...`).
    pub(super) resource: String,
}

/// The API of the path, which must be of the path's project (else 404): its id.
pub(super) async fn of_project(state: &AppState, p: &ResourcePath) -> Result<String, ConsoleApiError> {
    Ok(resource_of(&*state.store, &p.project, &p.resource).await?.id)
}

/// `project` or `public`.
fn visibilities() -> Object {
    let names = [Visibility::Project, Visibility::Public].map(Visibility::as_str);
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(names)).build()
}

/// `opaque`, `jwt` or `jwt-rs256`.
fn token_formats() -> Object {
    let names = [TokenFormat::Opaque, TokenFormat::Jwt, TokenFormat::JwtRs256].map(TokenFormat::as_str);
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(names)).build()
}

/// A scope of an API.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ScopeBody {
    /// The scope: a scope token (RFC 6749 §3.3) without `|`, at most 200 characters, unique across the deployment
    /// and none of the well-known scopes.
    name: String,
    /// What it allows, shown on the consent page (at most 300 characters).
    #[serde(default)]
    description: String,
}

/// Scopes as the operations take them, `name|description`.
fn written(scopes: Vec<ScopeBody>) -> AdminResult<Vec<String>> {
    scopes
        .into_iter()
        .map(|s| match s.name.contains('|') {
            true => Err(field_error("scopes", format!("The scope name {:?} holds a |, which none may.", s.name))),
            false => Ok(format!("{}|{}", s.name, s.description)),
        })
        .collect()
}

/// A new API.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewResourceBody {
    /// Its resource identifier: an absolute https URI without a fragment, not another API's nor the data API's.
    #[schema(max_length = 512)]
    uri: String,
    /// Its name, shown on the consent page.
    #[schema(max_length = 100)]
    name: String,
    /// The scopes it defines.
    #[serde(default)]
    scopes: Vec<ScopeBody>,
    /// Who may ask for its scopes: this project's clients (`project`, when absent) or any client (`public`).
    #[serde(default)]
    #[schema(schema_with = visibilities)]
    visibility: Option<String>,
    /// The access-token format it wants (`opaque` when absent).
    #[serde(default)]
    #[schema(schema_with = token_formats)]
    token_format: Option<String>,
}

/// A change to an API: each member sent is changed.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ResourcePatch {
    /// A new name.
    #[schema(max_length = 100)]
    name: Option<String>,
    /// Who may now ask for its scopes.
    #[serde(default)]
    #[schema(schema_with = visibilities)]
    visibility: Option<String>,
    /// The access-token format it now wants.
    #[serde(default)]
    #[schema(schema_with = token_formats)]
    token_format: Option<String>,
    /// Scopes to add, or whose description to change.
    #[serde(default)]
    scopes: Vec<ScopeBody>,
    /// Scopes to take away, by name: they are retired.
    #[serde(default)]
    remove_scopes: Vec<String>,
}

/// List the project's registered APIs.
#[utoipa::path(get, path = "/console/api/v1/projects/{project}/resources", tag = "resources",
    operation_id = "listResources", params(ProjectPath),
    responses((status = 200, body = ResourceList), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn resources_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
) -> ApiResult {
    ok(ops::resource_list(&*state.store, &caller.actor(), &project).await?)
}

/// Register an API; the response carries its introspection secret (`secret`), this once.
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/resources", tag = "resources",
    operation_id = "createResource", params(ProjectPath), request_body = NewResourceBody,
    responses((status = 201, body = CreatedResource), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn resources_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
    Body(b): Body<NewResourceBody>,
) -> ApiResult {
    let new = NewResource {
        project_id: project,
        uri: b.uri,
        name: b.name,
        scopes: written(b.scopes)?,
        visibility: b.visibility.as_deref().map(visibility).transpose()?.unwrap_or_default(),
        token_format: b.token_format.as_deref().map(token_format).transpose()?.unwrap_or_default(),
    };
    let reserved = Reserved::of(&state);
    let made = ops::resource_create(&*state.store, &caller.actor(), new, &reserved.builtin(), state.clock.now()).await;
    created(reloaded(&state, made).await?)
}

/// Show a registered API (its secrets by id and hint only).
#[utoipa::path(get, path = "/console/api/v1/projects/{project}/resources/{resource}", tag = "resources",
    operation_id = "getResource", params(ResourcePath),
    responses((status = 200, body = ResourceView), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn resource_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<ResourcePath>,
) -> ApiResult {
    let id = of_project(&state, &p).await?;
    ok(ops::resource_show(&*state.store, &caller.actor(), &id).await?)
}

/// Change a registered API: its name, visibility and token format, scopes added (or described anew) and taken away.
#[utoipa::path(patch, path = "/console/api/v1/projects/{project}/resources/{resource}", tag = "resources",
    operation_id = "updateResource", params(ResourcePath), request_body = ResourcePatch,
    responses((status = 200, body = ResourceView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn resource_patch(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<ResourcePath>,
    Body(b): Body<ResourcePatch>,
) -> ApiResult {
    let id = of_project(&state, &p).await?;
    let change = ResourceChange {
        name: b.name,
        visibility: b.visibility.as_deref().map(visibility).transpose()?,
        token_format: b.token_format.as_deref().map(token_format).transpose()?,
        scopes: written(b.scopes)?,
        remove_scopes: b.remove_scopes,
    };
    let reserved = Reserved::of(&state);
    let (store, now) = (&*state.store, state.clock.now());
    ok(reloaded(&state, ops::resource_update(store, &caller.actor(), &id, change, &reserved.builtin(), now).await)
        .await?)
}

/// Delete a registered API (owners): its scopes are retired and its introspection secrets stop working.
#[utoipa::path(delete, path = "/console/api/v1/projects/{project}/resources/{resource}", tag = "resources",
    operation_id = "deleteResource", params(ResourcePath),
    responses((status = 200, body = ResourceView), (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden), (status = 404, response = NotFound)))]
pub(super) async fn resource_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<ResourcePath>,
) -> ApiResult {
    let id = of_project(&state, &p).await?;
    ok(reloaded(&state, ops::resource_delete(&*state.store, &caller.actor(), &id, state.clock.now()).await).await?)
}

/// The protected resource metadata (RFC 9728) the API should serve at `/.well-known/oauth-protected-resource`
/// followed by its identifier's path, on its identifier's host; it names this server as its authorization server.
#[utoipa::path(get, path = "/console/api/v1/projects/{project}/resources/{resource}/metadata", tag = "resources",
    operation_id = "getResourceMetadata", params(ResourcePath),
    responses((status = 200, description = "The RFC 9728 document: resource, authorization_servers, \
            scopes_supported, bearer_methods_supported, resource_name", body = Object,
            content_type = "application/json"),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn resource_metadata_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<ResourcePath>,
) -> ApiResult {
    let id = of_project(&state, &p).await?;
    ok(ops::resource_metadata(&*state.store, &caller.actor(), &id, &state.urls.issuer).await?)
}
