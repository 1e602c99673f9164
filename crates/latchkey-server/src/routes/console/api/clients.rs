//! The API's OAuth clients: create, list, show, edit, delete, restore, and verify a browser extension's owner.

use super::doc::{BadRequest, ClientPath, Conflict, NotFound, ProjectPath, Unauthorized};
use super::{created, ok, ApiResult, Body, Caller};
use crate::state::AppState;
use axum::extract::{Path, State};
use latchkey_admin::results::{ClientChanged, ClientList, ClientView, OwnershipVerified};
use latchkey_admin::{self as admin, AdminError, ClientEdit, ClientRef, NewClient, StoreDirectory};
use latchkey_core::client::{ClientDetails, ClientType, FieldError};
use serde::Deserialize;
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

/// List the clients, deleted ones included.
#[utoipa::path(get, path = "/console/api/v1/projects/{project}/clients", tag = "clients", operation_id = "listClients",
    params(ProjectPath),
    responses((status = 200, body = ClientList), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn clients_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
) -> ApiResult {
    ok(admin::client_list(&*state.store, &caller.actor(), Some(&project)).await?)
}

/// The type-specific fields of a request, whichever the client's type: `admin::client_create` and
/// `admin::client_update` refuse those the client's type does not have.
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct TypeFields {
    /// Mobile: the app's bundle identifier (required; no `*` with App Check).
    bundle_id: Option<String>,
    /// Mobile: the app-store ID (digits).
    store_id: Option<String>,
    /// Mobile: the team ID (required with App Check).
    team_id: Option<String>,
    /// Universal desktop: the store ID (exactly 12 characters).
    uwp_store_id: Option<String>,
    /// Universal desktop: the package security identifier (lower case).
    package_sid: Option<String>,
    /// Browser extension: the extension's item ID (required).
    extension_item_id: Option<String>,
}

/// The schema of [`TypeFields`] as a part of a body: without its own `additionalProperties: false`, which would
/// refuse the body's other members.
fn type_fields() -> RefOr<Schema> {
    let mut schema = TypeFields::schema();
    if let RefOr::T(Schema::Object(object)) = &mut schema {
        object.additional_properties = None;
    }
    schema
}

/// A new client. Only the fields of the client's type may be sent. mobile: bundle_id (required), store_id
/// (digits), team_id (required with app_check), app_check (no * in bundle_id). universal-desktop: uwp_store_id
/// (exactly 12 characters), package_sid (lower case); redirect URIs <platform_scheme>://<package_sid_lowercase>
/// with a scheme of at most 39 characters. desktop: loopback redirects need no registration. browser-extension:
/// extension_item_id (required); https redirects only (the browser identity API needs none). No type takes the
/// out-of-band URN; only desktop apps take loopback URIs.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewClientBody {
    /// The client's type.
    #[serde(rename = "type")]
    #[schema(schema_with = latchkey_admin::schema::client_types)]
    client_type: String,
    /// Its name.
    #[schema(max_length = 100)]
    name: String,
    /// Its redirect URIs.
    #[serde(default)]
    redirect_uris: Vec<String>,
    /// Mobile: switch App Check on.
    #[serde(default)]
    app_check: bool,
    #[serde(flatten)]
    #[schema(schema_with = type_fields)]
    fields: TypeFields,
}

/// Create a client; the response carries its secret (`client_secret`), this once.
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/clients", tag = "clients",
    operation_id = "createClient", params(ProjectPath), request_body = NewClientBody,
    responses((status = 201, body = ClientView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn clients_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
    Body(b): Body<NewClientBody>,
) -> ApiResult {
    let Some(t) = ClientType::parse(&b.client_type) else {
        let message = "The type is one of desktop, mobile, universal-desktop, browser-extension.".into();
        return Err(AdminError::Fields(vec![FieldError { field: "type", message }]).into());
    };
    let f = b.fields;
    let new = NewClient {
        project_id: project,
        client_type: t,
        name: b.name,
        redirect_uris: b.redirect_uris,
        details: ClientDetails {
            bundle_id: f.bundle_id,
            store_id: f.store_id,
            team_id: f.team_id,
            app_check: b.app_check,
            uwp_store_id: f.uwp_store_id,
            package_sid: f.package_sid,
            extension_item_id: f.extension_item_id,
        },
    };
    created(admin::client_create(&*state.store, &caller.actor(), new, state.clock.now()).await?)
}

/// Show a client.
#[utoipa::path(get, path = "/console/api/v1/projects/{project}/clients/{client}", tag = "clients",
    operation_id = "getClient", params(ClientPath),
    responses((status = 200, body = ClientView), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn client_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(ClientPath { project, client }): Path<ClientPath>,
) -> ApiResult {
    ok(admin::client_show(&*state.store, &caller.actor(), ClientRef::within(&project, &client)).await?)
}

/// A client's edit. Each field sent replaces the stored one (an empty string clears an optional field); the
/// type's rules are checked again and the bundle ID is frozen once App Check is used.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ClientPatch {
    /// The new name.
    name: Option<String>,
    /// The new redirect URIs.
    redirect_uris: Option<Vec<String>>,
    #[serde(flatten)]
    #[schema(schema_with = type_fields)]
    fields: TypeFields,
}

/// Edit a client.
#[utoipa::path(patch, path = "/console/api/v1/projects/{project}/clients/{client}", tag = "clients",
    operation_id = "updateClient", params(ClientPath), request_body = ClientPatch,
    responses((status = 200, body = ClientView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn client_patch(
    State(state): State<AppState>,
    caller: Caller,
    Path(ClientPath { project, client }): Path<ClientPath>,
    Body(p): Body<ClientPatch>,
) -> ApiResult {
    let f = p.fields;
    let edit = ClientEdit {
        name: p.name,
        redirect_uris: p.redirect_uris,
        bundle_id: f.bundle_id,
        store_id: f.store_id,
        team_id: f.team_id,
        uwp_store_id: f.uwp_store_id,
        package_sid: f.package_sid,
        extension_item_id: f.extension_item_id,
    };
    ok(admin::client_update(&*state.store, &caller.actor(), ClientRef::within(&project, &client), edit).await?)
}

/// Delete a client (restorable within the restore window, 30 days by default).
#[utoipa::path(delete, path = "/console/api/v1/projects/{project}/clients/{client}", tag = "clients",
    operation_id = "deleteClient", params(ClientPath),
    responses((status = 200, body = ClientChanged), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound), (status = 409, response = Conflict)))]
pub(super) async fn client_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(ClientPath { project, client }): Path<ClientPath>,
) -> ApiResult {
    ok(admin::client_delete(&*state.store, &caller.actor(), ClientRef::within(&project, &client), state.clock.now())
        .await?)
}

/// Restore a deleted client within the restore window.
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/clients/{client}/restore", tag = "clients",
    operation_id = "restoreClient", params(ClientPath),
    responses((status = 200, body = ClientChanged), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound), (status = 409, response = Conflict)))]
pub(super) async fn client_restore_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(ClientPath { project, client }): Path<ClientPath>,
) -> ApiResult {
    let lifecycle = state.config.client_lifecycle();
    ok(admin::client_restore(
        &*state.store,
        &caller.actor(),
        ClientRef::within(&project, &client),
        lifecycle,
        state.clock.now(),
    )
    .await?)
}

/// Verify ownership of a browser-extension client for the caller.
///
/// Succeeds when a listing with the client's item ID is registered in the extension store developer dashboard
/// and the caller is its publisher or a member of its group publisher; otherwise 400 with the reason.
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/clients/{client}/verify-ownership", tag = "clients",
    operation_id = "verifyOwnership", params(ClientPath),
    responses((status = 200, body = OwnershipVerified), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn verify_ownership_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(ClientPath { project, client }): Path<ClientPath>,
) -> ApiResult {
    let store = &*state.store;
    ok(admin::verify_ownership(
        store,
        &caller.actor(),
        &StoreDirectory(store),
        ClientRef::within(&project, &client),
        &caller.0.email,
        state.clock.now(),
    )
    .await?)
}
