//! The API's projects, their data API switch and their members.

use super::doc::{BadRequest, Conflict, Forbidden, MemberPath, NotFound, ProjectPath, Unauthorized};
use super::{created, ok, ApiResult, Body, Caller};
use crate::state::AppState;
use axum::extract::{Path, State};
use latchkey_admin as admin;
use latchkey_admin::members;
use latchkey_admin::results::{
    ApiSwitched, MemberChanged, MemberList, ProjectDeleted, ProjectDetail, ProjectList, ProjectView,
};
use latchkey_store::ProjectSetting;
use serde::Deserialize;
use utoipa::ToSchema;

/// List the caller's projects.
#[utoipa::path(get, path = "/console/api/v1/projects", tag = "projects", operation_id = "listProjects",
    responses((status = 200, body = ProjectList), (status = 401, response = Unauthorized)))]
pub(super) async fn projects_get(State(state): State<AppState>, caller: Caller) -> ApiResult {
    ok(admin::project_list(&*state.store, &caller.actor()).await?)
}

/// A new project.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewProject {
    /// Its name.
    #[schema(max_length = 100)]
    name: String,
}

/// Create a project; the caller becomes its owner.
#[utoipa::path(post, path = "/console/api/v1/projects", tag = "projects", operation_id = "createProject",
    request_body = NewProject,
    responses((status = 201, body = ProjectView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized)))]
pub(super) async fn projects_post(
    State(state): State<AppState>,
    caller: Caller,
    Body(p): Body<NewProject>,
) -> ApiResult {
    created(admin::project_create(&*state.store, &caller.actor(), &p.name, None, state.clock.now()).await?)
}

/// Show a project with its clients.
///
/// A project the caller is not a member of is 404, whether it exists or not.
#[utoipa::path(get, path = "/console/api/v1/projects/{project}", tag = "projects", operation_id = "getProject",
    params(ProjectPath),
    responses((status = 200, body = ProjectDetail), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn project_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
) -> ApiResult {
    ok(admin::project_show(&*state.store, &caller.actor(), &project).await?)
}

/// Delete a project with all its clients (owners only).
///
/// Deletes the project for good, as `latchkey admin project delete` does: every client of it goes with it, live
/// ones and deleted ones still in their restore window, and none can be restored; their grants go too, so apps
/// using them stop working at once. The members lose the project. An editor is refused with 403.
#[utoipa::path(delete, path = "/console/api/v1/projects/{project}", tag = "projects", operation_id = "deleteProject",
    params(ProjectPath),
    responses(
        (status = 200, body = ProjectDeleted, description = "Deleted. `clients_deleted` counts the clients deleted with it."),
        (status = 401, response = Unauthorized), (status = 403, response = Forbidden),
        (status = 404, response = NotFound)))]
pub(super) async fn project_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
) -> ApiResult {
    ok(admin::project_delete(&*state.store, &caller.actor(), &project).await?)
}

/// A project's switch (its data API, time-based access): on or off.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Switch {
    /// Whether it is on.
    enabled: bool,
}

/// Enable or disable the data API.
#[utoipa::path(put, path = "/console/api/v1/projects/{project}/api", tag = "projects", operation_id = "setProjectApi",
    params(ProjectPath), request_body = Switch,
    responses((status = 200, body = ApiSwitched), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn project_api_put(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
    Body(s): Body<Switch>,
) -> ApiResult {
    ok(admin::project_set_api(&*state.store, &caller.actor(), &project, s.enabled).await?)
}

/// Offer time-based access on the consent page of the project's clients, or stop offering it.
///
/// When on, a person authorizing one of the project's apps may limit the access to 1 hour, 1 day, 1 week or 30
/// days; the token responses of a limited grant carry `refresh_token_expires_in`. Turning it off keeps the end of
/// the grants already limited.
#[utoipa::path(put, path = "/console/api/v1/projects/{project}/time-based-access", tag = "projects",
    operation_id = "setProjectTimeBasedAccess", params(ProjectPath), request_body = Switch,
    responses((status = 200, body = ProjectView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn project_time_based_access_put(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
    Body(s): Body<Switch>,
) -> ApiResult {
    let setting = ProjectSetting::TimeBasedAccess;
    ok(admin::project_set(&*state.store, &caller.actor(), &project, setting, s.enabled).await?)
}

/// Let apps register themselves into the project (RFC 7591), or stop. Operators only.
///
/// While on, `/register` is open to anyone (rate-limited per address) and discovery names it; one project at a time
/// may collect self-registered apps (409 when another does). Turning it off keeps the apps that registered.
#[utoipa::path(put, path = "/console/api/v1/projects/{project}/open-registration", tag = "projects",
    operation_id = "setProjectOpenRegistration", params(ProjectPath), request_body = Switch,
    responses((status = 200, body = ProjectView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 403, response = Forbidden),
        (status = 404, response = NotFound), (status = 409, response = Conflict)))]
pub(super) async fn project_open_registration_put(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
    Body(s): Body<Switch>,
) -> ApiResult {
    let actor = if caller.is_operator(&state) { admin::Actor::Operator } else { caller.actor() };
    let setting = ProjectSetting::OpenRegistration;
    ok(admin::project_set(&*state.store, &actor, &project, setting, s.enabled).await?)
}

/// Rotate the refresh tokens of the project's clients, or stop rotating them.
///
/// When on, every refresh of a client of the project whose refresh token is not DPoP-bound returns a new refresh
/// token and retires the one presented; a retired token presented again revokes the grant (RFC 9700 §4.14.2).
/// It takes effect from each token's next refresh. Clients that registered themselves rotate whatever this says.
#[utoipa::path(put, path = "/console/api/v1/projects/{project}/refresh-token-rotation", tag = "projects",
    operation_id = "setProjectRefreshTokenRotation", params(ProjectPath), request_body = Switch,
    responses((status = 200, body = ProjectView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn project_refresh_token_rotation_put(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
    Body(s): Body<Switch>,
) -> ApiResult {
    let setting = ProjectSetting::RotateRefreshTokens;
    ok(admin::project_set(&*state.store, &caller.actor(), &project, setting, s.enabled).await?)
}

/// List the members.
#[utoipa::path(get, path = "/console/api/v1/projects/{project}/members", tag = "members", operation_id = "listMembers",
    params(ProjectPath),
    responses((status = 200, body = MemberList), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn members_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
) -> ApiResult {
    ok(members::member_list(&*state.store, &caller.actor(), &project).await?)
}

/// A member to add.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewMember {
    /// An existing latchkey account.
    email: String,
    /// Their role (`editor` when absent).
    #[serde(default)]
    #[schema(schema_with = latchkey_admin::schema::roles)]
    role: Option<String>,
}

/// Add a member (owners only).
#[utoipa::path(post, path = "/console/api/v1/projects/{project}/members", tag = "members", operation_id = "addMember",
    params(ProjectPath), request_body = NewMember,
    responses((status = 201, body = MemberChanged), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 403, response = Forbidden),
        (status = 404, response = NotFound), (status = 409, response = Conflict)))]
pub(super) async fn members_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
    Body(m): Body<NewMember>,
) -> ApiResult {
    let role = members::parse_role(m.role.as_deref().unwrap_or("editor"))?;
    created(members::member_add(&*state.store, &caller.actor(), &project, &m.email, role, state.clock.now()).await?)
}

/// A member's new role.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RoleChange {
    /// The role.
    #[schema(schema_with = latchkey_admin::schema::roles)]
    role: String,
}

/// Change a member's role (owners only; the last owner stays one).
#[utoipa::path(patch, path = "/console/api/v1/projects/{project}/members/{user}", tag = "members",
    operation_id = "setMemberRole", params(MemberPath), request_body = RoleChange,
    responses((status = 200, body = MemberChanged), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 403, response = Forbidden),
        (status = 404, response = NotFound), (status = 409, response = Conflict)))]
pub(super) async fn member_patch(
    State(state): State<AppState>,
    caller: Caller,
    Path(MemberPath { project, user }): Path<MemberPath>,
    Body(r): Body<RoleChange>,
) -> ApiResult {
    let role = members::parse_role(&r.role)?;
    ok(members::member_set_role(&*state.store, &caller.actor(), &project, &user, role).await?)
}

/// Remove a member (owners only; the last owner stays).
#[utoipa::path(delete, path = "/console/api/v1/projects/{project}/members/{user}", tag = "members",
    operation_id = "removeMember", params(MemberPath),
    responses((status = 200, body = MemberChanged), (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn member_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(MemberPath { project, user }): Path<MemberPath>,
) -> ApiResult {
    ok(members::member_remove(&*state.store, &caller.actor(), &project, &user).await?)
}
