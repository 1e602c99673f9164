//! A client's secrets on its console page: add a second secret (shown once, with a copy button and its
//! `client_secret.json`), disable, enable and delete. The rules are `latchkey_admin::client_secrets`. The panel
//! ([`SecretsPanel::of`](crate::views::console::SecretsPanel::of)) and the actions ([`secret_change`]) serve a registered API's introspection secrets too.

use super::app_check::refused;
use super::auth::Posted;
use super::{access_client, see_other};
use crate::state::AppState;
use crate::views::console::{Download, SecretPage, Shown};
use crate::views::page;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use latchkey_admin::{self as admin, ClientRef};
use latchkey_core::client::{Client, ClientType, SecretChange};
use latchkey_core::time::UnixTime;

/// `POST .../secrets`: adds a secret and shows it, this once.
pub async fn secrets_post(
    State(state): State<AppState>,
    Path((project, client)): Path<(String, String)>,
    form: Posted,
) -> Response {
    let (access, c) = or_page!(access_client(&state, &form.dev, &project, &client).await);
    let at = ClientRef::within(&project, &c.client_id);
    match admin::client_secret_add(&*state.store, &form.dev.actor(), at, state.clock.now()).await {
        Ok(added) => {
            let download = Some(client_secret_file(&state, &c, &added.client_secret));
            let view = SecretPage {
                layout: form.dev.layout,
                heading: format!("New secret for {}", c.name),
                shown: vec![
                    Shown { label: "Client ID", value: c.client_id.clone(), id: "client-id" },
                    Shown { label: "Client secret", value: added.client_secret, id: "client-secret" },
                ],
                note: "It is shown only this once: latchkey keeps only a hash of it. Both secrets work now; once your \
                       app uses the new one, disable the old one, then delete it."
                    .into(),
                continue_href: format!("/console/projects/{project}/clients/{client}#secrets"),
                continue_label: "Back to the client".into(),
                download,
            };
            page(StatusCode::OK, &view)
        }
        Err(e) => refused(&state, form.dev, &access, &c, e).await,
    }
}

/// `POST .../secrets/{secret}/{action}`: disables, enables or deletes a secret.
pub async fn secret_action_post(
    State(state): State<AppState>,
    Path((project, client, secret, action)): Path<(String, String, String, String)>,
    form: Posted,
) -> Response {
    let (access, c) = or_page!(access_client(&state, &form.dev, &project, &client).await);
    let (store, actor, at) = (&*state.store, form.dev.actor(), ClientRef::within(&project, &c.client_id));
    let Some(change) = secret_change(&action, secret, state.clock.now()) else {
        return see_other(&format!("/console/projects/{project}/clients/{client}"));
    };
    match admin::client_secret_change(store, &actor, at, change).await {
        Ok(_) => see_other(&format!("/console/projects/{project}/clients/{client}?done=secret-{action}#secrets")),
        Err(e) => refused(&state, form.dev, &access, &c, e).await,
    }
}

/// The client's `client_secret.json`, in the form the best-known provider's console downloads and the client
/// libraries read (`{"installed": {...}}`).
pub(super) fn client_secret_file(state: &AppState, c: &Client, secret: &str) -> Download {
    let mut redirect_uris = c.redirect_uris.clone();
    if c.client_type == ClientType::Desktop && redirect_uris.is_empty() {
        redirect_uris.push("http://127.0.0.1".into());
    }
    let file = serde_json::json!({
        "installed": {
            "client_id": c.client_id,
            "project_id": c.project_id,
            "auth_uri": format!("{}{}", state.urls.auth, crate::routes::AUTHORIZE_PATH),
            "token_uri": state.urls.token_endpoint,
            "client_secret": secret,
            "redirect_uris": redirect_uris,
        }
    });
    Download { filename: format!("client_secret_{}.json", c.client_id), json: file.to_string() }
}

/// The change a secret's form asks for: `disable`, `enable` or `delete` (its notice is `secret-{action}`); `None`
/// for another action.
pub(super) fn secret_change(action: &str, secret: String, now: UnixTime) -> Option<SecretChange> {
    match action {
        "disable" => Some(SecretChange::Disable(secret, now)),
        "enable" => Some(SecretChange::Enable(secret)),
        "delete" => Some(SecretChange::Delete(secret)),
        _ => None,
    }
}
