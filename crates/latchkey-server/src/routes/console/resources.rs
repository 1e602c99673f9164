//! A project's registered APIs (resources, RFC 8707) in the console: registered from the project's page (the
//! introspection secret shown once), and an API's page with its scopes, its edit form, its protected resource
//! metadata (RFC 9728) and its deletion; its secrets are [`super::resource_secrets`]. The rules are
//! `latchkey_admin::resources`; the helpers here serve the JSON API too ([`super::api`]).

use super::auth::{Developer, Posted};
use super::projects::{project_page, row, Forms};
use super::{forms, notice, see_other, Done};
use crate::error::{admin_message, admin_status};
use crate::paths::PROTECTED_RESOURCE_METADATA_PATH;
use crate::state::AppState;
use crate::views::console::{date, ConfirmPage, SecretPage, Shown};
use crate::views::page;
use crate::views::resources::{ResourceForm, ResourcePage};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use latchkey_admin::resources::{self as ops, Builtin, NewResource, ResourceChange, ResourceView};
use latchkey_admin::{Access, AdminError, AdminResult, Right};
use latchkey_core::client::FieldError;
use latchkey_core::resource::{Resource, TokenFormat, Visibility};
use latchkey_core::scope::ScopeRegistry;
use latchkey_store::Store;

/// What no registration may take: the deployment's well-known scopes and the data API's identifier.
pub(super) struct Reserved {
    scopes: ScopeRegistry,
    data_api: String,
}

impl Reserved {
    /// This deployment's.
    pub(super) fn of(state: &AppState) -> Self {
        // The well-known scopes alone, as the CLI's: the registered APIs' own scopes are checked by the store, and
        // an API may name its own scope again to describe it anew.
        Self { scopes: ScopeRegistry::new(&state.config.scope_base), data_api: state.urls.data_api_resource() }
    }

    /// As the operations take it.
    pub(super) fn builtin(&self) -> Builtin<'_> {
        Builtin { scopes: &self.scopes, data_api: &self.data_api }
    }
}

/// The result of a change, once this instance has read the registered APIs again when it succeeded (the others
/// do within 5 seconds). A store failure of the reload is logged; the change stands.
pub(super) async fn reloaded<T>(state: &AppState, result: AdminResult<T>) -> AdminResult<T> {
    if result.is_ok() {
        if let Err(e) = state.scopes.reload(&*state.store).await {
            tracing::warn!(error = %e, "reloading the registered APIs' scopes after a change");
        }
    }
    result
}

/// The API `id` if it is `project_id`'s: `NotFound` otherwise, as for one that does not exist.
pub(super) async fn resource_of(store: &dyn Store, project_id: &str, id: &str) -> AdminResult<Resource> {
    match store.resource(id.trim()).await? {
        Some(r) if r.project_id == project_id => Ok(r),
        _ => Err(AdminError::NotFound(format!("API {id}"))),
    }
}

/// The refusal of a form's or a body's field.
pub(super) fn field_error(field: &'static str, message: String) -> AdminError {
    AdminError::Fields(vec![FieldError { field, message }])
}

/// A visibility as a form or a body writes it.
pub(super) fn visibility(s: &str) -> AdminResult<Visibility> {
    Visibility::parse(s)
        .ok_or_else(|| field_error("visibility", format!("The visibility is project or public, not {s:?}.")))
}

/// A token format as a form or a body writes it.
pub(super) fn token_format(s: &str) -> AdminResult<TokenFormat> {
    TokenFormat::parse(s).ok_or_else(|| {
        field_error("token_format", format!("The access-token format is opaque, jwt or jwt-rs256, not {s:?}."))
    })
}

/// Where an API serves its protected resource metadata (RFC 9728 §3.1): the well-known path inserted between its
/// identifier's host and its path and query (a path of `/` alone left out).
pub(super) fn metadata_url(uri: &str) -> String {
    let (scheme, rest) = uri.split_once("://").unwrap_or(("https", uri));
    let (host, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let path = if path == "/" { "" } else { path };
    format!("{scheme}://{host}{PROTECTED_RESOURCE_METADATA_PATH}{path}")
}

/// The developer's access to the project and its API named in the path, or the page saying there is no such thing.
pub(super) async fn access_resource(
    state: &AppState,
    dev: &Developer,
    project: &str,
    id: &str,
) -> Result<(Access, Resource), Response> {
    let access = dev.actor().project(&*state.store, project, Right::View).await.map_err(|e| dev.failure(&e))?;
    let found = resource_of(&*state.store, &access.project.id, id).await.map_err(|e| dev.failure(&e))?;
    Ok((access, found))
}

/// The values of a posted register or edit form, to show again.
fn typed(form: &Posted) -> ResourceForm {
    ResourceForm {
        uri: form.get("uri").to_owned(),
        name: form.get("name").to_owned(),
        scopes: form.get("scopes").to_owned(),
        visibility: form.get("visibility").to_owned(),
        token_format: form.get("token_format").to_owned(),
        error: None,
    }
}

/// Whether an error is the developer's to fix in the form (shown next to it) rather than a page of its own.
fn fixable(e: &AdminError) -> bool {
    let (status, _) = admin_status(e);
    status != StatusCode::NOT_FOUND && !status.is_server_error()
}

/// `POST /console/projects/{project}/resources`: registers an API and shows its introspection secret, this once.
pub async fn resources_post(State(state): State<AppState>, Path(project): Path<String>, form: Posted) -> Response {
    let store = &*state.store;
    let access = match form.dev.actor().project(store, &project, Right::View).await {
        Ok(a) => a,
        Err(e) => return form.dev.failure(&e),
    };
    let reserved = Reserved::of(&state);
    let made = match (visibility(form.get("visibility")), token_format(form.get("token_format"))) {
        (Ok(visibility), Ok(token_format)) => {
            let new = NewResource {
                project_id: access.project.id.clone(),
                uri: form.get("uri").to_owned(),
                name: form.get("name").to_owned(),
                scopes: forms::lines(form.get("scopes")),
                visibility,
                token_format,
            };
            ops::resource_create(store, &form.dev.actor(), new, &reserved.builtin(), state.clock.now()).await
        }
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    match reloaded(&state, made).await {
        Ok(made) => {
            let id = made.resource.resource_id;
            let view = SecretPage {
                layout: form.dev.layout,
                heading: format!("{} registered", made.resource.name),
                shown: vec![
                    Shown { label: "API ID", value: id.clone(), id: "resource-id" },
                    Shown { label: "Introspection secret", value: made.secret, id: "resource-secret" },
                ],
                note: "The introspection secret is shown only this once: latchkey keeps only a hash of it. The API \
                       sends its ID and this secret to the introspection endpoint; store it where the API reads it."
                    .into(),
                continue_href: format!("/console/projects/{project}/resources/{id}"),
                continue_label: "Go to the API".into(),
                download: None,
            };
            page(StatusCode::OK, &view)
        }
        Err(e) if fixable(&e) => {
            let (status, _) = admin_status(&e);
            let shown = ResourceForm { error: Some(admin_message(&e)), ..typed(&form) };
            project_page(&state, form.dev, access, status, None, None, Forms::resource(shown)).await
        }
        Err(e) => form.dev.failure(&e),
    }
}

/// Renders an API's page; `edit` is the edit form as posted (else the stored values).
async fn resource_page(
    state: &AppState,
    dev: Developer,
    access: &Access,
    r: &Resource,
    status: StatusCode,
    (notice, error): (Option<String>, Option<String>),
    edit: Option<ResourceForm>,
) -> Response {
    let metadata = match ops::resource_metadata(&*state.store, &dev.actor(), &r.id, &state.urls.issuer).await {
        Ok(m) => serde_json::to_string_pretty(&m).unwrap_or_default(),
        Err(e) => return dev.failure(&e),
    };
    let edit = edit.unwrap_or_else(|| ResourceForm {
        name: r.name.clone(),
        visibility: r.visibility.as_str().into(),
        token_format: r.token_format.as_str().into(),
        ..ResourceForm::default()
    });
    let action = format!("/console/projects/{}/resources/{}/secrets", access.project.id, r.id);
    let view = ResourcePage {
        layout: dev.layout,
        project: row(access),
        notice,
        error,
        resource: ResourceView::from(r),
        created: date(r.created_at),
        edit,
        secrets: crate::views::console::SecretsPanel::of(&r.secrets, action, true),
        can_delete: access.role.is_some_and(|role| Right::Delete.held_by(role)),
        metadata,
        metadata_url: metadata_url(&r.uri),
    };
    page(status, &view)
}

/// The API's page again with the error of an action on it, or the failure page when there is nothing to show.
pub(super) async fn refused(
    state: &AppState,
    dev: Developer,
    access: &Access,
    r: &Resource,
    e: AdminError,
    edit: Option<ResourceForm>,
) -> Response {
    if !fixable(&e) {
        return dev.failure(&e);
    }
    let (status, _) = admin_status(&e);
    resource_page(state, dev, access, r, status, (None, Some(admin_message(&e))), edit).await
}

/// `GET /console/projects/{project}/resources/{resource}`.
pub async fn resource_get(
    State(state): State<AppState>,
    dev: Developer,
    Path((project, resource)): Path<(String, String)>,
    Query(q): Query<Done>,
) -> Response {
    let (access, r) = or_page!(access_resource(&state, &dev, &project, &resource).await);
    resource_page(&state, dev, &access, &r, StatusCode::OK, (notice(q.done.as_deref()), None), None).await
}

/// Applies a change to the API and answers with its page and the notice `done`, or the page again with the refusal
/// (and `edit`, the edit form as posted).
async fn change(
    state: AppState,
    (project, resource): (String, String),
    form: Posted,
    change: AdminResult<ResourceChange>,
    done: &str,
    edit: Option<ResourceForm>,
) -> Response {
    let (access, r) = or_page!(access_resource(&state, &form.dev, &project, &resource).await);
    let (store, actor, reserved) = (&*state.store, form.dev.actor(), Reserved::of(&state));
    let changed = match change {
        Ok(c) => ops::resource_update(store, &actor, &r.id, c, &reserved.builtin(), state.clock.now()).await,
        Err(e) => Err(e),
    };
    match reloaded(&state, changed).await {
        Ok(_) => see_other(&format!("/console/projects/{project}/resources/{}?done={done}", r.id)),
        Err(e) => refused(&state, form.dev, &access, &r, e, edit).await,
    }
}

/// `POST .../resources/{resource}/edit`: the name, visibility and token format, and scopes to add or describe anew.
pub async fn edit_post(State(state): State<AppState>, Path(path): Path<(String, String)>, form: Posted) -> Response {
    let edit = visibility(form.get("visibility")).and_then(|v| {
        Ok(ResourceChange {
            name: Some(form.get("name").to_owned()),
            visibility: Some(v),
            token_format: Some(token_format(form.get("token_format"))?),
            scopes: forms::lines(form.get("scopes")),
            remove_scopes: Vec::new(),
        })
    });
    let typed = Some(typed(&form));
    change(state, path, form, edit, "resource-saved", typed).await
}

/// `POST .../resources/{resource}/scopes/remove`: takes the scope named `scope` away.
pub async fn scope_remove_post(
    State(state): State<AppState>,
    Path(path): Path<(String, String)>,
    form: Posted,
) -> Response {
    let removal = match form.get("scope").trim() {
        "" => Err(AdminError::Invalid("name the scope to remove".into())),
        scope => Ok(ResourceChange { remove_scopes: vec![scope.to_owned()], ..ResourceChange::default() }),
    };
    change(state, path, form, removal, "scope-removed", None).await
}

/// `GET .../resources/{resource}/delete`: asks for confirmation.
pub async fn delete_get(
    State(state): State<AppState>,
    dev: Developer,
    Path((project, resource)): Path<(String, String)>,
) -> Response {
    let (_, r) = or_page!(access_resource(&state, &dev, &project, &resource).await);
    let view = ConfirmPage {
        layout: dev.layout,
        heading: format!("Delete {}?", r.name),
        paragraphs: vec![
            format!("The API {} is deleted for good: this cannot be undone.", r.uri),
            "Its scopes are retired: apps can no longer ask for them, and tokens that carry them no longer name the \
             API. Its introspection secrets stop working at once."
                .into(),
        ],
        action: format!("/console/projects/{project}/resources/{}/delete", r.id),
        hidden: vec![],
        confirm_label: "Delete API".into(),
        cancel_href: format!("/console/projects/{project}/resources/{}", r.id),
    };
    page(StatusCode::OK, &view)
}

/// `POST .../resources/{resource}/delete`: owners only.
pub async fn delete_post(
    State(state): State<AppState>,
    Path((project, resource)): Path<(String, String)>,
    form: Posted,
) -> Response {
    let (access, r) = or_page!(access_resource(&state, &form.dev, &project, &resource).await);
    let deleted = ops::resource_delete(&*state.store, &form.dev.actor(), &r.id, state.clock.now()).await;
    match reloaded(&state, deleted).await {
        Ok(_) => see_other(&format!("/console/projects/{project}?done=resource-deleted#resources")),
        Err(e) => refused(&state, form.dev, &access, &r, e, None).await,
    }
}

#[cfg(test)]
mod tests {
    use super::metadata_url;

    #[test]
    fn the_metadata_url_puts_the_well_known_path_between_the_host_and_the_path() {
        let base = "https://notes.example.com/.well-known/oauth-protected-resource";
        assert_eq!(metadata_url("https://notes.example.com"), base);
        assert_eq!(metadata_url("https://notes.example.com/"), base);
        assert_eq!(metadata_url("https://notes.example.com/mcp"), format!("{base}/mcp"));
        assert_eq!(metadata_url("https://notes.example.com/a/b?x=1"), format!("{base}/a/b?x=1"));
        let port = "https://notes.example.com:8443/.well-known/oauth-protected-resource/v1";
        assert_eq!(metadata_url("https://notes.example.com:8443/v1"), port);
    }
}
