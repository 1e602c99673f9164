//! The console's JSON admin API, `/console/api/v1/...`: the console's operations for scripts, authenticated by a
//! developer's API key (`Authorization: Bearer lk_...`), with the same membership checks as the pages. A key
//! lists and revokes its developer's keys but cannot create one: a leaked key must not be able to mint others
//! that outlive its revocation, so keys are created on the console's page (signed in) and with the CLI. Errors
//! are `{"error", "error_description", "field"}` (`crate::error::ConsoleApiError`). The routes are the table
//! [`API_ROUTES`]: the router is built from it, and `docs/openapi.json` (served at [`OPENAPI_PATH`]) describes
//! exactly these operations.

use crate::admin::{self, api_keys, members, Actor, AdminError, ClientEdit, ClientRef, NewClient, StoreDirectory};
use crate::error::ConsoleApiError;
use crate::extract;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;
use latchkey_core::app_check::AppCheckAction;
use latchkey_core::client::{ClientDetails, ClientType, FieldError};
use latchkey_store::User;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Where the OpenAPI description is served.
pub const OPENAPI_PATH: &str = "/console/api/openapi.json";

/// The OpenAPI 3.1 description of the API (`docs/openapi.json`).
pub const OPENAPI: &str = include_str!("../../../../../docs/openapi.json");

const PROJECTS: &str = "/console/api/v1/projects";
const PROJECT: &str = "/console/api/v1/projects/{project}";
const PROJECT_API: &str = "/console/api/v1/projects/{project}/api";
const MEMBERS: &str = "/console/api/v1/projects/{project}/members";
const MEMBER: &str = "/console/api/v1/projects/{project}/members/{user}";
const CLIENTS: &str = "/console/api/v1/projects/{project}/clients";
const CLIENT: &str = "/console/api/v1/projects/{project}/clients/{client}";
const RESTORE: &str = "/console/api/v1/projects/{project}/clients/{client}/restore";
const APP_CHECK: &str = "/console/api/v1/projects/{project}/clients/{client}/app-check";
const METRICS: &str = "/console/api/v1/projects/{project}/clients/{client}/app-check/metrics";
const DEBUG_SECRET: &str = "/console/api/v1/projects/{project}/clients/{client}/app-check/debug-secret";
const VERIFY: &str = "/console/api/v1/projects/{project}/clients/{client}/verify-ownership";
const API_KEYS: &str = "/console/api/v1/api-keys";
const API_KEY: &str = "/console/api/v1/api-keys/{id}";

/// Every operation of the API, `(method, path)`: the router is built from this table.
pub const API_ROUTES: &[(&str, &str)] = &[
    ("GET", OPENAPI_PATH),
    ("GET", PROJECTS),
    ("POST", PROJECTS),
    ("GET", PROJECT),
    ("DELETE", PROJECT),
    ("PUT", PROJECT_API),
    ("GET", MEMBERS),
    ("POST", MEMBERS),
    ("PATCH", MEMBER),
    ("DELETE", MEMBER),
    ("GET", CLIENTS),
    ("POST", CLIENTS),
    ("GET", CLIENT),
    ("PATCH", CLIENT),
    ("DELETE", CLIENT),
    ("POST", RESTORE),
    ("GET", APP_CHECK),
    ("POST", APP_CHECK),
    ("GET", METRICS),
    ("POST", DEBUG_SECRET),
    ("POST", VERIFY),
    // Listing and revoking only: a key cannot mint keys (they are created on the console's page and the CLI).
    ("GET", API_KEYS),
    ("DELETE", API_KEY),
];

/// The handler of one operation of [`API_ROUTES`].
fn operation(method: &str, path: &str) -> MethodRouter<AppState> {
    match (method, path) {
        ("GET", OPENAPI_PATH) => on(MethodFilter::GET, openapi_get),
        ("GET", PROJECTS) => on(MethodFilter::GET, projects_get),
        ("POST", PROJECTS) => on(MethodFilter::POST, projects_post),
        ("GET", PROJECT) => on(MethodFilter::GET, project_get),
        ("DELETE", PROJECT) => on(MethodFilter::DELETE, project_delete),
        ("PUT", PROJECT_API) => on(MethodFilter::PUT, project_api_put),
        ("GET", MEMBERS) => on(MethodFilter::GET, members_get),
        ("POST", MEMBERS) => on(MethodFilter::POST, members_post),
        ("PATCH", MEMBER) => on(MethodFilter::PATCH, member_patch),
        ("DELETE", MEMBER) => on(MethodFilter::DELETE, member_delete),
        ("GET", CLIENTS) => on(MethodFilter::GET, clients_get),
        ("POST", CLIENTS) => on(MethodFilter::POST, clients_post),
        ("GET", CLIENT) => on(MethodFilter::GET, client_get),
        ("PATCH", CLIENT) => on(MethodFilter::PATCH, client_patch),
        ("DELETE", CLIENT) => on(MethodFilter::DELETE, client_delete),
        ("POST", RESTORE) => on(MethodFilter::POST, client_restore_post),
        ("GET", APP_CHECK) => on(MethodFilter::GET, app_check_get),
        ("POST", APP_CHECK) => on(MethodFilter::POST, app_check_post),
        ("GET", METRICS) => on(MethodFilter::GET, metrics_get),
        ("POST", DEBUG_SECRET) => on(MethodFilter::POST, debug_secret_post),
        ("POST", VERIFY) => on(MethodFilter::POST, verify_ownership_post),
        ("GET", API_KEYS) => on(MethodFilter::GET, api_keys_get),
        ("DELETE", API_KEY) => on(MethodFilter::DELETE, api_key_delete),
        // Unreachable while the table and this match agree; a unit test checks that they do.
        _ => on(MethodFilter::GET, || async { StatusCode::NOT_IMPLEMENTED }),
    }
}

/// The API's routes, from [`API_ROUTES`].
pub fn router() -> Router<AppState> {
    let mut paths: Vec<(&str, MethodRouter<AppState>)> = Vec::new();
    for (method, path) in API_ROUTES {
        let op = operation(method, path);
        match paths.iter_mut().find(|(p, _)| p == path) {
            Some((_, existing)) => *existing = std::mem::take(existing).merge(op),
            None => paths.push((path, op)),
        }
    }
    paths.into_iter().fold(Router::new(), |r, (path, methods)| r.route(path, methods.fallback(method_not_allowed)))
}

async fn method_not_allowed() -> Response {
    let mut e = ConsoleApiError::bad_request("This method is not allowed on this path.").into_response();
    *e.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    e
}

async fn openapi_get() -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600")),
        ],
        OPENAPI,
    )
        .into_response()
}

/// The developer an API key acts for.
pub struct Caller(User);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ConsoleApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ConsoleApiError> {
        let value = extract::single_header(&parts.headers, &header::AUTHORIZATION)
            .map_err(|_| ConsoleApiError::unauthenticated())?
            .ok_or_else(ConsoleApiError::unauthenticated)?;
        let key = match value.split_once(' ') {
            Some((scheme, key)) if scheme.eq_ignore_ascii_case("bearer") => key.trim(),
            _ => return Err(ConsoleApiError::unauthenticated()),
        };
        match api_keys::authenticate(&*state.store, key, state.clock.now()).await? {
            Some(user) => Ok(Self(user)),
            None => Err(ConsoleApiError::unauthenticated()),
        }
    }
}

type ApiResult = Result<Response, ConsoleApiError>;

fn ok<T: Serialize>(v: T) -> ApiResult {
    Ok(json(StatusCode::OK, &v))
}

fn created<T: Serialize>(v: T) -> ApiResult {
    Ok(json(StatusCode::CREATED, &v))
}

fn json<T: Serialize>(status: StatusCode, v: &T) -> Response {
    let mut r = (status, crate::error::no_store_json(v)).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// A JSON request body.
fn body<T: DeserializeOwned>(headers: &HeaderMap, bytes: &[u8]) -> Result<T, ConsoleApiError> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !is_json {
        return Err(ConsoleApiError::bad_request("Content-Type must be application/json."));
    }
    serde_json::from_slice(bytes).map_err(|e| ConsoleApiError::bad_request(format!("The JSON body is not valid: {e}")))
}

impl Caller {
    /// The caller as an actor of administrative operations: their project roles decide ([`Actor`]).
    fn actor(&self) -> Actor {
        Actor::Developer(self.0.clone())
    }
}

async fn projects_get(State(state): State<AppState>, caller: Caller) -> ApiResult {
    ok(admin::project_list(&*state.store, &caller.actor()).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewProject {
    name: String,
}

async fn projects_post(State(state): State<AppState>, caller: Caller, headers: HeaderMap, bytes: Bytes) -> ApiResult {
    let p: NewProject = body(&headers, &bytes)?;
    created(admin::project_create(&*state.store, &caller.actor(), &p.name, None, state.clock.now()).await?)
}

async fn project_get(State(state): State<AppState>, caller: Caller, Path(project): Path<String>) -> ApiResult {
    ok(admin::project_show(&*state.store, &caller.actor(), &project).await?)
}

/// Owners only; the clients go with the project, for good (`admin::project_delete`).
async fn project_delete(State(state): State<AppState>, caller: Caller, Path(project): Path<String>) -> ApiResult {
    ok(admin::project_delete(&*state.store, &caller.actor(), &project).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApiSwitch {
    enabled: bool,
}

async fn project_api_put(
    State(state): State<AppState>,
    caller: Caller,
    Path(project): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult {
    let s: ApiSwitch = body(&headers, &bytes)?;
    ok(admin::project_set_api(&*state.store, &caller.actor(), &project, s.enabled).await?)
}

async fn members_get(State(state): State<AppState>, caller: Caller, Path(project): Path<String>) -> ApiResult {
    ok(members::member_list(&*state.store, &caller.actor(), &project).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewMember {
    email: String,
    #[serde(default)]
    role: Option<String>,
}

async fn members_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(project): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult {
    let m: NewMember = body(&headers, &bytes)?;
    let role = members::parse_role(m.role.as_deref().unwrap_or("editor"))?;
    created(members::member_add(&*state.store, &caller.actor(), &project, &m.email, role, state.clock.now()).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleChange {
    role: String,
}

async fn member_patch(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, user)): Path<(String, String)>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult {
    let r: RoleChange = body(&headers, &bytes)?;
    let role = members::parse_role(&r.role)?;
    ok(members::member_set_role(&*state.store, &caller.actor(), &project, &user, role).await?)
}

async fn member_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, user)): Path<(String, String)>,
) -> ApiResult {
    ok(members::member_remove(&*state.store, &caller.actor(), &project, &user).await?)
}

async fn clients_get(State(state): State<AppState>, caller: Caller, Path(project): Path<String>) -> ApiResult {
    ok(admin::client_list(&*state.store, &caller.actor(), Some(&project)).await?)
}

/// The type-specific fields of a request, whichever the client's type: `admin::client_create` and
/// `admin::client_update` refuse those the client's type does not have.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TypeFields {
    bundle_id: Option<String>,
    store_id: Option<String>,
    team_id: Option<String>,
    uwp_store_id: Option<String>,
    package_sid: Option<String>,
    extension_item_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewClientBody {
    #[serde(rename = "type")]
    client_type: String,
    name: String,
    #[serde(default)]
    redirect_uris: Vec<String>,
    #[serde(default)]
    app_check: bool,
    #[serde(flatten)]
    fields: TypeFields,
}

async fn clients_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(project): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult {
    let b: NewClientBody = body(&headers, &bytes)?;
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

async fn client_get(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, client)): Path<(String, String)>,
) -> ApiResult {
    ok(admin::client_show(&*state.store, &caller.actor(), ClientRef::within(&project, &client)).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientPatch {
    name: Option<String>,
    redirect_uris: Option<Vec<String>>,
    #[serde(flatten)]
    fields: TypeFields,
}

async fn client_patch(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, client)): Path<(String, String)>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult {
    let p: ClientPatch = body(&headers, &bytes)?;
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

async fn client_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, client)): Path<(String, String)>,
) -> ApiResult {
    ok(admin::client_delete(&*state.store, &caller.actor(), ClientRef::within(&project, &client), state.clock.now())
        .await?)
}

async fn client_restore_post(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, client)): Path<(String, String)>,
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

async fn app_check_get(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, client)): Path<(String, String)>,
) -> ApiResult {
    ok(admin::client_app_check_status(
        &*state.store,
        &caller.actor(),
        ClientRef::within(&project, &client),
        state.clock.now(),
    )
    .await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppCheckBody {
    action: String,
    #[serde(default)]
    confirm: bool,
}

async fn app_check_post(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, client)): Path<(String, String)>,
    headers: HeaderMap,
    bytes: Bytes,
) -> ApiResult {
    let b: AppCheckBody = body(&headers, &bytes)?;
    let action = match b.action.as_str() {
        "enable" => AppCheckAction::Enable,
        "enforce" => AppCheckAction::Enforce,
        "unenforce" => AppCheckAction::Unenforce,
        "disable" => AppCheckAction::Disable,
        _ => {
            let message = "The action is one of enable, enforce, unenforce, disable.".into();
            return Err(AdminError::Fields(vec![FieldError { field: "action", message }]).into());
        }
    };
    let delay = state.config.app_check_propagation_secs;
    ok(admin::client_app_check(
        &*state.store,
        &caller.actor(),
        ClientRef::within(&project, &client),
        action,
        b.confirm,
        delay,
        state.clock.now(),
    )
    .await?)
}

#[derive(Deserialize)]
struct Hours {
    hours: Option<i64>,
}

async fn metrics_get(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, client)): Path<(String, String)>,
    Query(q): Query<Hours>,
) -> ApiResult {
    let hours = q.hours.unwrap_or(24).clamp(1, 24 * 90);
    ok(admin::client_app_check_metrics(
        &*state.store,
        &caller.actor(),
        ClientRef::within(&project, &client),
        hours,
        state.clock.now(),
    )
    .await?)
}

async fn debug_secret_post(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, client)): Path<(String, String)>,
) -> ApiResult {
    created(
        admin::client_app_check_debug_secret(&*state.store, &caller.actor(), ClientRef::within(&project, &client))
            .await?,
    )
}

async fn verify_ownership_post(
    State(state): State<AppState>,
    caller: Caller,
    Path((project, client)): Path<(String, String)>,
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

/// The caller's own keys (never the keys themselves).
async fn api_keys_get(State(state): State<AppState>, caller: Caller) -> ApiResult {
    ok(api_keys::api_key_list(&*state.store, &caller.0.id).await?)
}

/// Revokes one of the caller's keys (the one in use included); another developer's key is 404.
async fn api_key_delete(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> ApiResult {
    ok(api_keys::api_key_revoke(&*state.store, &caller.0.id, &id).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The OpenAPI document's operations, `(METHOD, path)`.
    fn documented() -> Vec<(String, String)> {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI).expect("docs/openapi.json is JSON");
        assert_eq!(doc["openapi"].as_str().map(|v| &v[..4]), Some("3.1."), "an OpenAPI 3.1 document");
        let mut ops = Vec::new();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for method in item.as_object().expect("path item").keys() {
                if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                    ops.push((method.to_uppercase(), path.clone()));
                }
            }
        }
        ops.sort();
        ops
    }

    #[test]
    fn every_route_is_in_the_openapi_document_and_every_documented_operation_is_a_route() {
        let mut routes: Vec<(String, String)> =
            API_ROUTES.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
        routes.sort();
        assert_eq!(routes, documented());
    }
}
