//! The console's pages for an organisation's administrators: its members (add, remove, disable) and its API
//! access controls (restricted scopes, app access, trust of internal apps, domain-wide delegation); and a
//! project's organisation and audience. Every change is an operation of [`latchkey_admin::orgs`], which decides who
//! may make it; an organisation the developer does not administer does not exist for them.

use super::auth::{Developer, Posted};
use super::{notice, see_other, Done};
use crate::state::AppState;
use crate::views::org_console::{OrgPage, OrgsPage, ScopeRow};
use crate::views::page;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use latchkey_admin::orgs::{self, app_access, data_scopes};
use latchkey_admin::AdminError;
use latchkey_core::org::{Audience, OrgChange};

/// `GET /console/orgs`: the organisations the developer administers.
pub async fn orgs_get(State(state): State<AppState>, dev: Developer) -> Response {
    match orgs::org_list(&*state.store, &dev.actor()).await {
        Ok(list) => page(StatusCode::OK, &OrgsPage { layout: dev.layout, orgs: list.orgs }),
        Err(e) => dev.failure(&e),
    }
}

/// `GET /console/orgs/{org}`: the organisation's members and API access controls.
pub async fn org_get(
    State(state): State<AppState>,
    dev: Developer,
    Path(org): Path<String>,
    Query(q): Query<Done>,
) -> Response {
    let detail = match orgs::org_show(&*state.store, &dev.actor(), &org, &state.scopes.get()).await {
        Ok(d) => d,
        Err(e) => return dev.failure(&e),
    };
    let registry = state.scopes.get();
    let scopes = registry
        .all()
        .iter()
        .filter(|s| !s.identity)
        .map(|s| ScopeRow {
            id: s.id.clone(),
            summary: s.summary.to_string(),
            restricted: detail.policy.restricted_scopes.contains(&s.id),
        })
        .collect();
    let view =
        OrgPage { notice: notice(q.done.as_deref()), org: detail, scopes, me: dev.user.id.clone(), layout: dev.layout };
    page(StatusCode::OK, &view)
}

/// Every value of a repeated form field.
fn all(form: &Posted, name: &str) -> Vec<String> {
    form.fields.iter().filter(|(k, _)| k == name).map(|(_, v)| v.clone()).collect()
}

/// Applies a change made with a form, then shows the organisation's page with a notice.
async fn apply(state: &AppState, form: &Posted, org: &str, change: Result<OrgChange, AdminError>) -> Response {
    let done = match &change {
        Ok(OrgChange::RemoveMember { .. }) => "org-member-removed",
        _ => "org-policy-saved",
    };
    let result = match change {
        Ok(c) => orgs::org_change(&*state.store, &form.dev.actor(), org, c, state.clock.now()).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(_) => see_other(&format!("/console/orgs/{org}?done={done}")),
        Err(e) => form.dev.failure(&e),
    }
}

/// `POST /console/orgs/{org}/members`: adds a member or an administrator by e-mail address.
pub async fn members_post(State(state): State<AppState>, Path(org): Path<String>, form: Posted) -> Response {
    let (email, admin) = (form.get("email"), form.get("admin") == "true");
    match orgs::org_add_member(&*state.store, &form.dev.actor(), &org, email, admin, state.clock.now()).await {
        Ok(_) => see_other(&format!("/console/orgs/{org}?done=org-member-added")),
        Err(e) => form.dev.failure(&e),
    }
}

/// `POST /console/orgs/{org}/members/{user}/remove`.
pub async fn member_remove_post(
    State(state): State<AppState>,
    Path((org, user)): Path<(String, String)>,
    form: Posted,
) -> Response {
    apply(&state, &form, &org, Ok(OrgChange::RemoveMember { user_id: user })).await
}

/// `POST /console/orgs/{org}/members/{user}/{disable|enable}`: disables a member's account, or enables it again.
pub async fn member_disabled_post(
    State(state): State<AppState>,
    Path((org, user, action)): Path<(String, String, String)>,
    form: Posted,
) -> Response {
    let disabled = match action.as_str() {
        "disable" => true,
        "enable" => false,
        _ => return form.dev.failure(&AdminError::NotFound(format!("action {action}"))),
    };
    let now = state.clock.now();
    match orgs::org_member_set_disabled(&*state.store, &form.dev.actor(), &org, &user, disabled, now).await {
        Ok(_) => see_other(&format!("/console/orgs/{org}?done=org-member-{action}d")),
        Err(e) => form.dev.failure(&e),
    }
}

/// `POST /console/orgs/{org}/scopes`: restricts a scope (`restricted=true`) or lifts its restriction.
pub async fn scopes_post(State(state): State<AppState>, Path(org): Path<String>, form: Posted) -> Response {
    let change = data_scopes(&state.scopes.get(), &all(&form, "scope"))
        .map(|scopes| OrgChange::ScopeAccess { scopes, restricted: form.get("restricted") == "true" });
    apply(&state, &form, &org, change).await
}

/// `POST /console/orgs/{org}/settings`: trusts internal apps (`trust_internal_apps=true`) or stops; blocks every
/// self-registered app (`block_self_registered_apps=true`) or stops; or, from the
/// sign-in form, requires 2-step verification (`require_2sv`) and passkeys only (`passkeys_only`), each `true` or
/// `false` (the last value of each counts: the form sends a hidden `false` before each checkbox).
pub async fn settings_post(State(state): State<AppState>, Path(org): Path<String>, form: Posted) -> Response {
    // A checkbox after its hidden `false`: the last value sent counts.
    let flag = |name: &str| all(&form, name).last().map(|v| v == "true");
    let change = match (flag("require_2sv"), flag("passkeys_only")) {
        (None, None) if !form.get("block_self_registered_apps").is_empty() => {
            OrgChange::BlockSelfRegisteredApps(form.get("block_self_registered_apps") == "true")
        }
        (None, None) => OrgChange::TrustInternalApps(form.get("trust_internal_apps") == "true"),
        (require_two_step, passkeys_only) => OrgChange::SignInPolicy { require_two_step, passkeys_only },
    };
    apply(&state, &form, &org, Ok(change)).await
}

/// `POST /console/orgs/{org}/apps`: sets an app's access.
pub async fn apps_post(State(state): State<AppState>, Path(org): Path<String>, form: Posted) -> Response {
    let client_id = form.get("client").trim().to_owned();
    let access = match form.get("access") {
        "default" => Ok(None),
        name => app_access(&state.scopes.get(), name, &all(&form, "scope")).map(Some),
    };
    let change = access.map(|access| OrgChange::AppAccess { client_id, access });
    apply(&state, &form, &org, change).await
}

/// `POST /console/orgs/{org}/delegations`: delegates a client domain-wide for the scopes checked.
pub async fn delegations_post(State(state): State<AppState>, Path(org): Path<String>, form: Posted) -> Response {
    let client_id = form.get("client").trim().to_owned();
    let change = match data_scopes(&state.scopes.get(), &all(&form, "scope")) {
        Ok(s) if s.is_empty() => Err(AdminError::Invalid("check the scopes the app is delegated".into())),
        Ok(s) => Ok(OrgChange::Delegate { client_id, scopes: Some(s) }),
        Err(e) => Err(e),
    };
    apply(&state, &form, &org, change).await
}

/// `POST /console/orgs/{org}/delegations/{client}/remove`: ends a client's delegation.
pub async fn delegation_remove_post(
    State(state): State<AppState>,
    Path((org, client)): Path<(String, String)>,
    form: Posted,
) -> Response {
    apply(&state, &form, &org, Ok(OrgChange::Delegate { client_id: client, scopes: None })).await
}

/// `POST /console/projects/{project}/placement`: the project's organisation (`org`, empty for none) and audience.
pub async fn placement_post(State(state): State<AppState>, Path(project): Path<String>, form: Posted) -> Response {
    let org = Some(Some(form.get("org")).filter(|o| !o.is_empty()));
    let audience = match Audience::parse(form.get("audience")) {
        Some(a) => a,
        None => return form.dev.failure(&AdminError::Invalid("choose who the project's apps serve".into())),
    };
    let now = state.clock.now();
    match orgs::project_place(&*state.store, &form.dev.actor(), &project, org, Some(audience), now).await {
        Ok(_) => see_other(&format!("/console/projects/{project}?done=placement-saved")),
        Err(e) => form.dev.failure(&e),
    }
}
