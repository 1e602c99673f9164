//! The console's pages of a project's service accounts: the list and the form that makes one, an
//! account's page with its keys (a key made here is shown once as its key file; a public key uploaded), and the
//! changes (disable, enable, delete), each a POST with the CSRF token that answers with a redirect.

use super::auth::{Developer, Posted};
use super::{notice, see_other, Done};
use crate::error::admin_message;
use crate::routes::AUTHORIZE_PATH;
use crate::state::AppState;
use crate::views::console::{date, SecretPage, Shown};
use crate::views::page;
use crate::views::service_accounts::{AccountPage, AccountRow, AccountsPage, KeyRow};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use latchkey_admin::service_account_keys as keys;
use latchkey_admin::service_accounts as ops;
use latchkey_admin::{Access, AdminError, Right};
use latchkey_store::{ServiceAccount, MAX_KEYS};

fn row(a: &ServiceAccount) -> AccountRow {
    AccountRow {
        email: a.email.clone(),
        display_name: a.display_name.clone(),
        unique_id: a.id.clone(),
        disabled: a.disabled_at.is_some(),
    }
}

/// The project, if the developer may see it.
async fn project(state: &AppState, dev: &Developer, project: &str) -> Result<Access, Response> {
    dev.actor().project(&*state.store, project, Right::View).await.map_err(|e| dev.failure(&e))
}

/// The project, if the developer may see it, and the account named in the path, if it is the project's.
async fn account(state: &AppState, dev: &Developer, p: &str, name: &str) -> Result<(Access, ServiceAccount), Response> {
    let access = project(state, dev, p).await?;
    match state.store.service_account(name).await {
        Ok(Some(a)) if a.project_id == access.project.id => Ok((access, a)),
        Ok(_) => Err(dev.failure(&AdminError::NotFound(format!("service account {name}")))),
        Err(e) => Err(dev.failure(&e.into())),
    }
}

async fn list_page(
    state: &AppState,
    dev: Developer,
    access: Access,
    status: StatusCode,
    notice: Option<String>,
    form: (String, String, Option<String>),
) -> Response {
    let accounts = match state.store.service_accounts(&access.project.id).await {
        Ok(a) => a,
        Err(e) => return dev.failure(&e.into()),
    };
    let (name, display_name, name_error) = form;
    let view = AccountsPage {
        layout: dev.layout,
        notice,
        project_id: access.project.id,
        project_name: access.project.name,
        accounts: accounts.iter().map(row).collect(),
        name,
        display_name,
        name_error,
    };
    page(status, &view)
}

/// `GET /console/projects/{project}/service-accounts`.
pub async fn accounts_get(
    State(state): State<AppState>,
    dev: Developer,
    Path(p): Path<String>,
    Query(q): Query<Done>,
) -> Response {
    let access = or_page!(project(&state, &dev, &p).await);
    list_page(&state, dev, access, StatusCode::OK, notice(q.done.as_deref()), Default::default()).await
}

/// `POST /console/projects/{project}/service-accounts`: makes one, then shows its page.
pub async fn accounts_post(State(state): State<AppState>, Path(p): Path<String>, form: Posted) -> Response {
    let access = or_page!(project(&state, &form.dev, &p).await);
    let (name, display) = (form.get("name").trim().to_owned(), form.get("display_name").trim().to_owned());
    let host = match ops::identifier_host(&state.config.scope_base) {
        Ok(h) => h,
        Err(e) => return form.dev.failure(&e),
    };
    let display_name = Some(display.as_str()).filter(|d| !d.is_empty());
    let made = ops::service_account_create(
        &*state.store,
        &form.dev.actor(),
        &p,
        &name,
        display_name,
        &host,
        state.clock.now(),
    )
    .await;
    match made {
        Ok(a) => see_other(&format!("/console/projects/{p}/service-accounts/{}?done=sa-created", a.email)),
        Err(e @ (AdminError::Invalid(_) | AdminError::Conflict(_))) => {
            let message = Some(admin_message(&e));
            list_page(&state, form.dev, access, StatusCode::BAD_REQUEST, None, (name, display, message)).await
        }
        Err(e) => form.dev.failure(&e),
    }
}

async fn account_page(
    state: &AppState,
    dev: Developer,
    access: Access,
    a: ServiceAccount,
    status: StatusCode,
    (notice, error): (Option<String>, Option<String>),
) -> Response {
    let keys = match state.store.service_account_keys(&a.id).await {
        Ok(k) => k,
        Err(e) => return dev.failure(&e.into()),
    };
    let keys = keys
        .iter()
        .map(|k| KeyRow {
            id: k.id.clone(),
            alg: k.public_key.alg(),
            created: date(k.created_at),
            disabled: k.disabled_at.is_some(),
        })
        .collect();
    let view = AccountPage {
        layout: dev.layout,
        notice,
        error,
        project_id: access.project.id,
        project_name: access.project.name,
        account: row(&a),
        keys,
        max_keys: MAX_KEYS,
    };
    page(status, &view)
}

/// `GET /console/projects/{project}/service-accounts/{account}`.
pub async fn account_get(
    State(state): State<AppState>,
    dev: Developer,
    Path((p, name)): Path<(String, String)>,
    Query(q): Query<Done>,
) -> Response {
    let (access, a) = or_page!(account(&state, &dev, &p, &name).await);
    account_page(&state, dev, access, a, StatusCode::OK, (notice(q.done.as_deref()), None)).await
}

/// The account's page again with the error of an action on it, or the failure page when there is nothing to show.
async fn refused(state: &AppState, dev: Developer, access: Access, a: ServiceAccount, e: AdminError) -> Response {
    match e {
        AdminError::Invalid(_) | AdminError::Conflict(_) => {
            let error = Some(admin_message(&e));
            account_page(state, dev, access, a, StatusCode::BAD_REQUEST, (None, error)).await
        }
        e => dev.failure(&e),
    }
}

/// `POST .../service-accounts/{account}/keys`: makes a key and shows its key file, this once.
pub async fn key_post(
    State(state): State<AppState>,
    Path((p, name)): Path<(String, String)>,
    form: Posted,
) -> Response {
    let (access, a) = or_page!(account(&state, &form.dev, &p, &name).await);
    let auth_uri = format!("{}{AUTHORIZE_PATH}", state.urls.auth);
    let urls = (auth_uri.as_str(), state.urls.token_endpoint.as_str());
    match keys::key_create(&*state.store, &form.dev.actor(), &a.id, urls, state.clock.now()).await {
        Ok(file) => {
            let view = SecretPage {
                layout: form.dev.layout,
                heading: format!("Key {} created", file.private_key_id),
                shown: vec![Shown {
                    label: "Key file (save it as key.json)",
                    value: serde_json::to_string_pretty(&file).unwrap_or_default(),
                    id: "key-file",
                }],
                note: "It holds the only copy of the private key: latchkey keeps the public half alone. Keep the \
                       file where only the tool that uses it can read it; the provider's client libraries load it as \
                       it is."
                    .into(),
                continue_href: format!("/console/projects/{p}/service-accounts/{}", a.email),
                continue_label: "Back to the service account".into(),
                download: None,
            };
            page(StatusCode::OK, &view)
        }
        Err(e) => refused(&state, form.dev, access, a, e).await,
    }
}

/// `POST .../service-accounts/{account}/keys/upload`: adds a public key.
pub async fn key_upload_post(
    State(state): State<AppState>,
    Path((p, name)): Path<(String, String)>,
    form: Posted,
) -> Response {
    let (access, a) = or_page!(account(&state, &form.dev, &p, &name).await);
    let uploaded =
        keys::key_upload(&*state.store, &form.dev.actor(), &a.id, form.get("public_key"), state.clock.now()).await;
    match uploaded {
        Ok(_) => see_other(&format!("/console/projects/{p}/service-accounts/{}?done=key-uploaded", a.email)),
        Err(e) => refused(&state, form.dev, access, a, e).await,
    }
}

/// `POST .../service-accounts/{account}/keys/{key}/{action}`: `disable`, `enable` or `delete` a key.
pub async fn key_action_post(
    State(state): State<AppState>,
    Path((p, name, key, action)): Path<(String, String, String, String)>,
    form: Posted,
) -> Response {
    let (access, a) = or_page!(account(&state, &form.dev, &p, &name).await);
    let (store, actor, now) = (&*state.store, form.dev.actor(), state.clock.now());
    let of_account = matches!(store.service_account_key(&key).await, Ok(Some(k)) if k.account_id == a.id);
    let done = match action.as_str() {
        _ if !of_account => Err(AdminError::NotFound(format!("key {key}"))),
        "disable" | "enable" => keys::key_set_disabled(store, &actor, &key, action == "disable", now).await.map(drop),
        "delete" => keys::key_delete(store, &actor, &key).await.map(drop),
        _ => Err(AdminError::NotFound("page".into())),
    };
    match done {
        Ok(()) => see_other(&format!("/console/projects/{p}/service-accounts/{}?done=key-{action}", a.email)),
        Err(e) => refused(&state, form.dev, access, a, e).await,
    }
}

/// `POST .../service-accounts/{account}/{action}`: `disable`, `enable` or `delete` the account.
pub async fn account_action_post(
    State(state): State<AppState>,
    Path((p, name, action)): Path<(String, String, String)>,
    form: Posted,
) -> Response {
    let (access, a) = or_page!(account(&state, &form.dev, &p, &name).await);
    let (store, actor, now) = (&*state.store, form.dev.actor(), state.clock.now());
    let done = match action.as_str() {
        "disable" | "enable" => {
            ops::service_account_set_disabled(store, &actor, &a.id, action == "disable", now).await.map(drop)
        }
        "delete" => ops::service_account_delete(store, &actor, &a.id).await.map(drop),
        _ => Err(AdminError::NotFound("page".into())),
    };
    match (done, action.as_str()) {
        (Ok(()), "delete") => see_other(&format!("/console/projects/{p}/service-accounts?done=sa-deleted")),
        (Ok(()), _) => see_other(&format!("/console/projects/{p}/service-accounts/{}?done=sa-{action}", a.email)),
        (Err(e), _) => refused(&state, form.dev, access, a, e).await,
    }
}
