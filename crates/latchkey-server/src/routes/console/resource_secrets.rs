//! A registered API's introspection secrets on its console page, rotated as a client's are: add a second secret
//! (shown once), disable, enable and delete, with the client secrets' panel and actions
//! ([`super::client_secrets`]). The rules are `latchkey_admin::resources`.

use super::auth::Posted;
use super::client_secrets::secret_change;
use super::resources::{access_resource, refused, reloaded};
use super::see_other;
use crate::state::AppState;
use crate::views::console::{SecretPage, Shown};
use crate::views::page;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use latchkey_admin::resources as ops;

/// `POST .../resources/{resource}/secrets`: adds a secret and shows it, this once.
pub async fn secrets_post(
    State(state): State<AppState>,
    Path((project, resource)): Path<(String, String)>,
    form: Posted,
) -> Response {
    let (access, r) = or_page!(access_resource(&state, &form.dev, &project, &resource).await);
    let added = ops::resource_secret_add(&*state.store, &form.dev.actor(), &r.id, state.clock.now()).await;
    match reloaded(&state, added).await {
        Ok(added) => {
            let view = SecretPage {
                layout: form.dev.layout,
                heading: format!("New secret for {}", r.name),
                shown: vec![
                    Shown { label: "API ID", value: r.id.clone(), id: "resource-id" },
                    Shown { label: "Introspection secret", value: added.secret, id: "resource-secret" },
                ],
                note: "It is shown only this once: latchkey keeps only a hash of it. Both secrets work now; once your \
                       API uses the new one, disable the old one, then delete it."
                    .into(),
                continue_href: format!("/console/projects/{project}/resources/{}#secrets", r.id),
                continue_label: "Back to the API".into(),
                download: None,
            };
            page(StatusCode::OK, &view)
        }
        Err(e) => refused(&state, form.dev, &access, &r, e, None).await,
    }
}

/// `POST .../resources/{resource}/secrets/{secret}/{action}`: disables, enables or deletes a secret.
pub async fn secret_action_post(
    State(state): State<AppState>,
    Path((project, resource, secret, action)): Path<(String, String, String, String)>,
    form: Posted,
) -> Response {
    let (access, r) = or_page!(access_resource(&state, &form.dev, &project, &resource).await);
    let page_of = format!("/console/projects/{project}/resources/{}", r.id);
    let Some(change) = secret_change(&action, secret, state.clock.now()) else {
        return see_other(&page_of);
    };
    let changed = ops::change_resource_secrets(&*state.store, &form.dev.actor(), &r.id, change).await;
    match reloaded(&state, changed).await {
        Ok(_) => see_other(&format!("{page_of}?done=secret-{action}#secrets")),
        Err(e) => refused(&state, form.dev, &access, &r, e, None).await,
    }
}
