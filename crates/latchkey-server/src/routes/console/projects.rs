//! The project list, a project's page (with its registered APIs, [`super::resources`]), its data API switch and its
//! members.

use super::auth::{Developer, Posted};
use super::{notice, see_other, Done};
use crate::error::admin_status;
use crate::state::AppState;
use crate::views::console::{
    date, ClientRow, ConfirmPage, DeletedRow, MemberRow, ProjectPage, ProjectRow, ProjectsPage,
};
use crate::views::page;
use crate::views::resources::{ResourceForm, ResourceRow};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use latchkey_admin::resources::resource_list;
use latchkey_admin::{self as admin, members, Access, AdminError, Right};
use latchkey_core::client;
use latchkey_core::org::Audience;
use latchkey_store::{ProjectRole, ProjectSetting};

/// A project as the console lists it.
pub(super) fn row(access: &Access) -> ProjectRow {
    ProjectRow {
        id: access.project.id.clone(),
        name: access.project.name.clone(),
        role: access.role.map_or("", |r| r.as_str()),
        api_enabled: access.project.api_enabled,
        time_based_access: access.project.time_based_access,
        rotate_refresh_tokens: access.project.rotate_refresh_tokens,
        open_registration: access.project.open_registration,
        org_id: access.project.org_id.clone(),
        internal: access.project.audience == Audience::Internal,
        created: date(access.project.created_at),
    }
}

/// `GET /console`: the developer's projects.
pub async fn console_get(State(state): State<AppState>, dev: Developer, Query(q): Query<Done>) -> Response {
    projects_page(&state, dev, StatusCode::OK, notice(q.done.as_deref()), String::new(), None).await
}

async fn projects_page(
    state: &AppState,
    dev: Developer,
    status: StatusCode,
    notice: Option<String>,
    name: String,
    name_error: Option<String>,
) -> Response {
    let projects = match state.store.projects_of(&dev.user.id).await {
        Ok(p) => p,
        Err(e) => return dev.failure(&e.into()),
    };
    let projects = projects.into_iter().map(|(project, role)| row(&Access { project, role: Some(role) })).collect();
    page(status, &ProjectsPage { layout: dev.layout, notice, projects, name, name_error })
}

/// `POST /console/projects`: creates a project owned by the developer.
pub async fn projects_post(State(state): State<AppState>, form: Posted) -> Response {
    let now = state.clock.now();
    let name = form.get("name").to_owned();
    match admin::project_create(&*state.store, &form.dev.actor(), &name, None, now).await {
        Ok(v) => see_other(&format!("/console/projects/{}?done=project-created", v.project_id)),
        Err(AdminError::Fields(errors)) => {
            let message = errors.into_iter().map(|e| e.message).collect::<Vec<_>>().join(" ");
            let message = if name.trim().is_empty() { "Enter a project name.".into() } else { message };
            projects_page(&state, form.dev, StatusCode::BAD_REQUEST, None, name, Some(message)).await
        }
        Err(e) => form.dev.failure(&e),
    }
}

/// What the add-member form shows again after a refusal.
#[derive(Default)]
pub(super) struct MemberForm {
    email: String,
    role: String,
    error: Option<String>,
}

/// What the project page's forms show again after a refusal: the add-member form and the form that registers an
/// API.
#[derive(Default)]
pub(super) struct Forms {
    member: MemberForm,
    resource: ResourceForm,
}

impl Forms {
    /// The register-API form as typed, with its refusal.
    pub(super) fn resource(resource: ResourceForm) -> Self {
        Self { resource, ..Self::default() }
    }
}

/// Renders a project's page.
pub(super) async fn project_page(
    state: &AppState,
    dev: Developer,
    access: Access,
    status: StatusCode,
    notice: Option<String>,
    error: Option<String>,
    forms: Forms,
) -> Response {
    let store = &*state.store;
    let (clients, members) =
        match (store.clients(Some(&access.project.id)).await, store.project_members(&access.project.id).await) {
            (Ok(c), Ok(m)) => (c, m),
            (Err(e), _) | (_, Err(e)) => return dev.failure(&e.into()),
        };
    let restore_days = state.config.client_restore_days;
    let now = state.clock.now();
    let (live, gone): (Vec<_>, Vec<_>) = clients.into_iter().partition(|c| c.deleted_at.is_none());
    let clients = live
        .iter()
        .map(|c| ClientRow {
            id: c.client_id.clone(),
            name: c.name.clone(),
            type_label: c.client_type.label(),
            registered: c.registration.is_some(),
            created: date(c.created_at),
        })
        .collect();
    let deleted = gone
        .iter()
        .filter_map(|c| {
            let at = c.deleted_at?;
            Some(DeletedRow {
                id: c.client_id.clone(),
                name: c.name.clone(),
                type_label: c.client_type.label(),
                deleted: date(at),
                restorable_until: date(at.plus(restore_days * client::DAY)),
                restorable: client::check_restore(Some(at), now, restore_days).is_ok(),
            })
        })
        .collect();
    let owners = members.iter().filter(|m| m.role == ProjectRole::Owner).count();
    let members = members
        .into_iter()
        .map(|m| MemberRow {
            last_owner: m.role == ProjectRole::Owner && owners == 1,
            is_me: m.user_id == dev.user.id,
            user_id: m.user_id,
            email: m.email,
            role: m.role.as_str(),
        })
        .collect();
    let admin_of = match store.membership_of(&dev.user.id).await {
        Ok(Some((org, true))) => Some(org),
        Ok(_) => None,
        Err(e) => return dev.failure(&e.into()),
    };
    let resources = match resource_list(store, &dev.actor(), &access.project.id).await {
        Ok(list) => list.resources.iter().map(ResourceRow::from).collect(),
        Err(e) => return dev.failure(&e),
    };
    let member_form = forms.member;
    let view = ProjectPage {
        layout: dev.layout,
        admin_of,
        notice,
        error,
        is_owner: access.role == Some(ProjectRole::Owner),
        project: row(&access),
        clients,
        deleted,
        restore_days,
        members,
        member_email: member_form.email,
        member_role: member_form.role,
        member_error: member_form.error,
        resources,
        resource_form: forms.resource,
    };
    page(status, &view)
}

/// `GET /console/projects/{project}`.
pub async fn project_get(
    State(state): State<AppState>,
    dev: Developer,
    Path(project): Path<String>,
    Query(q): Query<Done>,
) -> Response {
    match dev.actor().project(&*state.store, &project, Right::View).await {
        Ok(access) => {
            let n = notice(q.done.as_deref());
            project_page(&state, dev, access, StatusCode::OK, n, None, Forms::default()).await
        }
        Err(e) => dev.failure(&e),
    }
}

/// The project's page again with an error of an action on it (a refused member change, a late restore).
pub(super) async fn refused(state: &AppState, dev: Developer, access: Access, e: AdminError) -> Response {
    let (status, _) = admin_status(&e);
    if status == StatusCode::NOT_FOUND || status.is_server_error() {
        return dev.failure(&e);
    }
    let message = crate::error::admin_message(&e);
    project_page(state, dev, access, status, None, Some(message), Forms::default()).await
}

/// `POST /console/projects/{project}/api`: enables (`enabled=true`) or disables the data API.
pub async fn api_post(State(state): State<AppState>, Path(project): Path<String>, form: Posted) -> Response {
    let store = &*state.store;
    let enabled = form.get("enabled") == "true";
    match admin::project_set_api(store, &form.dev.actor(), &project, enabled).await {
        Ok(_) => {
            let done = if enabled { "api-enabled" } else { "api-disabled" };
            see_other(&format!("/console/projects/{project}?done={done}"))
        }
        Err(e) => form.dev.failure(&e),
    }
}

/// `POST /console/projects/{project}/time-based-access`: offers time-based access (`enabled=true`) or stops.
pub async fn time_based_access_post(state: State<AppState>, project: Path<String>, form: Posted) -> Response {
    let actor = form.dev.actor();
    switch(state, project, form, actor, (ProjectSetting::TimeBasedAccess, "time-based")).await
}

/// `POST /console/projects/{project}/refresh-token-rotation`: rotates the clients' refresh tokens
/// (`enabled=true`) or stops.
pub async fn refresh_token_rotation_post(state: State<AppState>, project: Path<String>, form: Posted) -> Response {
    let actor = form.dev.actor();
    switch(state, project, form, actor, (ProjectSetting::RotateRefreshTokens, "rotation")).await
}

/// `POST /console/projects/{project}/open-registration`: lets apps register themselves into the project
/// (`enabled=true`) or stops; an operator's switch (`operators`), who acts as the operator here.
pub async fn open_registration_post(state: State<AppState>, project: Path<String>, form: Posted) -> Response {
    let actor = super::acting_as_operator(&state.0, &form.dev.user).unwrap_or_else(|| form.dev.actor());
    switch(state, project, form, actor, (ProjectSetting::OpenRegistration, "registration")).await
}

/// Switches a project's setting as the form says, back to the project page with `done={name}-on` or `-off`.
async fn switch(
    State(state): State<AppState>,
    Path(project): Path<String>,
    form: Posted,
    actor: admin::Actor,
    (setting, name): (ProjectSetting, &str),
) -> Response {
    let on = form.get("enabled") == "true";
    match admin::project_set(&*state.store, &actor, &project, setting, on).await {
        Ok(_) => {
            let state = if on { "on" } else { "off" };
            see_other(&format!("/console/projects/{project}?done={name}-{state}"))
        }
        Err(e) => form.dev.failure(&e),
    }
}

/// `POST /console/projects/{project}/members`: an owner adds a developer by e-mail address.
pub async fn members_post(State(state): State<AppState>, Path(project): Path<String>, form: Posted) -> Response {
    let store = &*state.store;
    let actor = form.dev.actor();
    let access = match actor.project(store, &project, Right::ManageMembers).await {
        Ok(a) => a,
        Err(e) => return form.dev.failure(&e),
    };
    let email = form.get("email").trim().to_owned();
    let role_name = Some(form.get("role")).filter(|r| !r.is_empty()).unwrap_or("editor").to_owned();
    let result = match members::parse_role(&role_name) {
        Ok(role) => members::member_add(store, &actor, &project, &email, role, state.clock.now()).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(_) => see_other(&format!("/console/projects/{project}?done=member-added")),
        Err(e @ (AdminError::Fields(_) | AdminError::Conflict(_))) => {
            let (status, _) = admin_status(&e);
            let error = Some(crate::error::admin_message(&e));
            let member = MemberForm { email, role: role_name, error };
            project_page(&state, form.dev, access, status, None, None, Forms { member, ..Forms::default() }).await
        }
        Err(e) => form.dev.failure(&e),
    }
}

/// `POST /console/projects/{project}/members/{user}/remove`.
pub async fn member_remove_post(
    State(state): State<AppState>,
    Path((project, user)): Path<(String, String)>,
    form: Posted,
) -> Response {
    member_change(state, project, user, form, None).await
}

/// `POST /console/projects/{project}/members/{user}/role`: `role=owner|editor`.
pub async fn member_role_post(
    State(state): State<AppState>,
    Path((project, user)): Path<(String, String)>,
    form: Posted,
) -> Response {
    let role = form.get("role").to_owned();
    member_change(state, project, user, form, Some(role)).await
}

async fn member_change(state: AppState, project: String, user: String, form: Posted, role: Option<String>) -> Response {
    let store = &*state.store;
    let actor = form.dev.actor();
    let access = match actor.project(store, &project, Right::ManageMembers).await {
        Ok(a) => a,
        Err(e) => return form.dev.failure(&e),
    };
    let (result, done) = match role {
        None => (members::member_remove(store, &actor, &project, &user).await, "member-removed"),
        Some(name) => match members::parse_role(&name) {
            Ok(role) => (members::member_set_role(store, &actor, &project, &user, role).await, "role-changed"),
            Err(e) => (Err(e), ""),
        },
    };
    match result {
        // An owner who removed themselves no longer sees the project.
        Ok(_) if user == form.dev.user.id && done == "member-removed" => see_other("/console?done=member-removed"),
        Ok(_) => see_other(&format!("/console/projects/{project}?done={done}")),
        Err(e) => refused(&state, form.dev, access, e).await,
    }
}

/// `GET /console/projects/{project}/delete`: an owner is asked to confirm, told what happens to the clients.
pub async fn delete_get(State(state): State<AppState>, dev: Developer, Path(project): Path<String>) -> Response {
    let store = &*state.store;
    let access = match dev.actor().project(store, &project, Right::Delete).await {
        Ok(a) => a,
        Err(e) => return dev.failure(&e),
    };
    let clients = match store.clients(Some(&project)).await {
        Ok(c) => c,
        Err(e) => return dev.failure(&e.into()),
    };
    let (live, deleted) = clients.iter().partition::<Vec<_>, _>(|c| c.deleted_at.is_none());
    let count = |n: usize, what: &str| if n == 1 { format!("1 {what} client") } else { format!("{n} {what} clients") };
    let view = ConfirmPage {
        layout: dev.layout,
        heading: format!("Delete {}?", access.project.name),
        paragraphs: vec![
            "The project is deleted for good: this cannot be undone, and its members lose it.".into(),
            format!(
                "Its OAuth clients are deleted with it and cannot be restored: {} and {} awaiting restore. Apps \
                 using them stop working at once: their users' grants and tokens are removed.",
                count(live.len(), "live"),
                count(deleted.len(), "deleted"),
            ),
        ],
        action: format!("/console/projects/{project}/delete"),
        hidden: vec![],
        confirm_label: "Delete project".into(),
        cancel_href: format!("/console/projects/{project}"),
    };
    page(StatusCode::OK, &view)
}

/// `POST /console/projects/{project}/delete`: owners only ([`admin::project_delete`]).
pub async fn delete_post(State(state): State<AppState>, Path(project): Path<String>, form: Posted) -> Response {
    let store = &*state.store;
    match admin::project_delete(store, &form.dev.actor(), &project).await {
        Ok(_) => see_other("/console?done=project-deleted"),
        Err(e) => form.dev.failure(&e),
    }
}
