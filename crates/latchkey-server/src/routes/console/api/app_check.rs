//! The API's App Check: the state and its changes, the request metrics, and debug secrets.

use super::doc::{BadRequest, ClientPath, NotFound, Unauthorized};
use super::{created, ok, ApiResult, Body, Caller};
use crate::error::ConsoleApiError;
use crate::state::AppState;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use latchkey_admin::results::{AppCheckMetrics, AppCheckStatus, DebugSecret};
use latchkey_admin::{self as admin, AdminError, ClientRef};
use latchkey_core::app_check::AppCheckAction;
use latchkey_core::client::FieldError;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// App Check state in force and the pending change.
#[utoipa::path(get, path = "/console/api/v1/projects/{project}/clients/{client}/app-check", tag = "app-check",
    operation_id = "getAppCheck", params(ClientPath),
    responses((status = 200, body = AppCheckStatus), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn app_check_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(ClientPath { project, client }): Path<ClientPath>,
) -> ApiResult {
    ok(admin::client_app_check_status(
        &*state.store,
        &caller.actor(),
        ClientRef::within(&project, &client),
        state.clock.now(),
    )
    .await?)
}

/// An App Check action.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AppCheckBody {
    /// The action.
    #[schema(schema_with = latchkey_admin::schema::app_check_actions)]
    action: String,
    /// Required (true) for enforce and unenforce.
    #[serde(default)]
    confirm: bool,
}

/// Apply an App Check action: a step of its state table.
///
/// enable (disabled → enabled: needs a team ID and a bundle ID without *), enforce (enabled → enforced, confirm),
/// unenforce (enforced → enabled, confirm), disable. Each change takes effect after the propagation delay (15
/// minutes by default).
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/clients/{client}/app-check", tag = "app-check",
    operation_id = "appCheckAction", params(ClientPath), request_body = AppCheckBody,
    responses((status = 200, body = AppCheckStatus), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn app_check_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(ClientPath { project, client }): Path<ClientPath>,
    Body(b): Body<AppCheckBody>,
) -> ApiResult {
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

/// The metrics' period.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct Hours {
    /// How many hours back, from 1 to 2160 (90 days); 24 when absent.
    #[param(minimum = 1, maximum = 2160)]
    hours: Option<i64>,
}

/// App Check request counts per hour and category.
#[utoipa::path(get, path = "/console/api/v1/projects/{project}/clients/{client}/app-check/metrics", tag = "app-check",
    operation_id = "getAppCheckMetrics", params(ClientPath, Hours),
    responses((status = 200, body = AppCheckMetrics), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn metrics_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(ClientPath { project, client }): Path<ClientPath>,
    q: Result<Query<Hours>, QueryRejection>,
) -> ApiResult {
    let Query(q) = q.map_err(|e| ConsoleApiError::bad_request(format!("The query is not valid: {}", e.body_text())))?;
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

/// Register a debug secret (shown this once).
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/clients/{client}/app-check/debug-secret",
    tag = "app-check", operation_id = "createAppCheckDebugSecret", params(ClientPath),
    responses((status = 201, body = DebugSecret), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn debug_secret_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(ClientPath { project, client }): Path<ClientPath>,
) -> ApiResult {
    created(
        admin::client_app_check_debug_secret(&*state.store, &caller.actor(), ClientRef::within(&project, &client))
            .await?,
    )
}
