//! Creating (type chooser, then the type's form), showing, editing, deleting and restoring a client.

use super::app_check::client_page;
use super::auth::{Developer, Posted};
use super::projects::{refused, row};
use super::{access_client, forms, see_other, Done};
use crate::state::AppState;
use crate::views::console::{ClientFormPage, ClientTypePage, ConfirmPage, SecretPage, Shown};
use crate::views::page;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use latchkey_admin::{self as admin, Access, AdminError, ClientRef, Right};
use latchkey_core::client::{Client, ClientType, FieldError};

/// The `type` query parameter of the new-client page.
#[derive(serde::Deserialize)]
pub struct TypeQuery {
    #[serde(rename = "type")]
    client_type: Option<String>,
}

fn form_page(
    access: &Access,
    dev: Developer,
    t: ClientType,
    fields: Vec<crate::views::console::Field>,
    editing: Option<&Client>,
) -> ClientFormPage {
    let project = row(access);
    let (heading, action, submit_label, cancel_href) = match editing {
        None => (
            format!("Create a {} client", t.label().to_lowercase()),
            format!("/console/projects/{}/clients", project.id),
            "Create client",
            format!("/console/projects/{}/clients/new", project.id),
        ),
        Some(c) => (
            format!("Edit {}", c.name),
            format!("/console/projects/{}/clients/{}/edit", project.id, c.client_id),
            "Save",
            format!("/console/projects/{}/clients/{}", project.id, c.client_id),
        ),
    };
    ClientFormPage {
        layout: dev.layout,
        project,
        heading,
        action,
        submit_label,
        type_value: t.as_str(),
        type_label: t.label(),
        type_help: forms::help(t),
        fields,
        cancel_href,
    }
}

/// `GET /console/projects/{project}/clients/new[?type=...]`: the type chooser, then the type's form.
pub async fn client_new_get(
    State(state): State<AppState>,
    dev: Developer,
    Path(project): Path<String>,
    Query(q): Query<TypeQuery>,
) -> Response {
    let access = match dev.actor().project(&*state.store, &project, Right::View).await {
        Ok(a) => a,
        Err(e) => return dev.failure(&e),
    };
    match q.client_type.as_deref().map(ClientType::parse) {
        Some(Some(t)) => {
            let view = form_page(&access, dev, t, forms::fields(t, None), None);
            page(StatusCode::OK, &view)
        }
        chosen => {
            let error = chosen.map(|_| "Choose the type of your application.".to_owned());
            let status = if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
            page(
                status,
                &ClientTypePage { layout: dev.layout, project: row(&access), types: forms::type_choices(), error },
            )
        }
    }
}

/// `POST /console/projects/{project}/clients`: creates the client and shows its secret, this once.
pub async fn clients_post(State(state): State<AppState>, Path(project): Path<String>, form: Posted) -> Response {
    let store = &*state.store;
    let access = match form.dev.actor().project(store, &project, Right::View).await {
        Ok(a) => a,
        Err(e) => return form.dev.failure(&e),
    };
    let Some(t) = ClientType::parse(form.get("type")) else {
        return see_other(&format!("/console/projects/{project}/clients/new"));
    };
    match admin::client_create(store, &form.dev.actor(), forms::new_client(&form, &project, t), state.clock.now()).await
    {
        Ok(v) => {
            let secret = v.client_secret.clone().unwrap_or_default();
            let download = match state.store.client(&v.client_id).await {
                Ok(Some(c)) => Some(super::client_secrets::client_secret_file(&state, &c, &secret)),
                _ => None,
            };
            let id = v.client_id;
            let view = SecretPage {
                layout: form.dev.layout,
                heading: format!("{} created", v.name),
                shown: vec![
                    Shown { label: "Client ID", value: id.clone(), id: "client-id" },
                    Shown { label: "Client secret", value: secret, id: "client-secret" },
                ],
                note: "The client secret is shown only this once: latchkey keeps only a hash of it. Installed apps \
                       need not send it; if yours does, store it now."
                    .into(),
                continue_href: format!("/console/projects/{project}/clients/{id}"),
                continue_label: "Go to the client".into(),
                download,
            };
            page(StatusCode::OK, &view)
        }
        Err(AdminError::Fields(errors)) => invalid_form(access, form, t, None, &errors),
        Err(e) => form.dev.failure(&e),
    }
}

/// The form again, with the values typed and a message next to each invalid field.
fn invalid_form(
    access: Access,
    form: Posted,
    t: ClientType,
    editing: Option<&Client>,
    errors: &[FieldError],
) -> Response {
    let mut fields = forms::fields(t, editing);
    if let Some(c) = editing {
        forms::stored(&mut fields, c);
    }
    forms::refill(&mut fields, &form, errors);
    page(StatusCode::BAD_REQUEST, &form_page(&access, form.dev, t, fields, editing))
}

/// `GET /console/projects/{project}/clients/{client}`.
pub async fn client_get(
    State(state): State<AppState>,
    dev: Developer,
    Path((project, client)): Path<(String, String)>,
    Query(q): Query<Done>,
) -> Response {
    let (access, client) = or_page!(access_client(&state, &dev, &project, &client).await);
    client_page(&state, dev, &access, &client, StatusCode::OK, super::notice(q.done.as_deref()), None).await
}

/// `GET .../edit`: the type's form with the stored values.
pub async fn edit_get(
    State(state): State<AppState>,
    dev: Developer,
    Path((project, client)): Path<(String, String)>,
) -> Response {
    let (access, c) = or_page!(access_client(&state, &dev, &project, &client).await);
    if c.deleted_at.is_some() {
        return dev.failure(&AdminError::Invalid("this client is deleted: restore it before editing it".into()));
    }
    let mut fields = forms::fields(c.client_type, Some(&c));
    forms::stored(&mut fields, &c);
    page(StatusCode::OK, &form_page(&access, dev, c.client_type, fields, Some(&c)))
}

/// `POST .../edit`: saves the edit, the type's rules checked again.
pub async fn edit_post(
    State(state): State<AppState>,
    Path((project, client)): Path<(String, String)>,
    form: Posted,
) -> Response {
    let (access, c) = or_page!(access_client(&state, &form.dev, &project, &client).await);
    match admin::client_update(
        &*state.store,
        &form.dev.actor(),
        ClientRef::within(&project, &c.client_id),
        forms::edit(&form, &c),
    )
    .await
    {
        Ok(_) => see_other(&format!("/console/projects/{project}/clients/{client}?done=client-saved")),
        Err(AdminError::Fields(errors)) => invalid_form(access, form, c.client_type, Some(&c), &errors),
        Err(e) => form.dev.failure(&e),
    }
}

/// `GET .../delete`: asks for confirmation.
pub async fn delete_get(
    State(state): State<AppState>,
    dev: Developer,
    Path((project, client)): Path<(String, String)>,
) -> Response {
    let (_, c) = or_page!(access_client(&state, &dev, &project, &client).await);
    let days = state.config.client_restore_days;
    let view = ConfirmPage {
        layout: dev.layout,
        heading: format!("Delete {}?", c.name),
        paragraphs: vec![
            "Apps using this client stop working at once: sign-in shows deleted_client, and its tokens are refused."
                .into(),
            format!("You can restore the client within {days} days; after that it is removed for good."),
        ],
        action: format!("/console/projects/{project}/clients/{client}/delete"),
        hidden: vec![],
        confirm_label: "Delete client".into(),
        cancel_href: format!("/console/projects/{project}/clients/{client}"),
    };
    page(StatusCode::OK, &view)
}

/// `POST .../delete`.
pub async fn delete_post(
    State(state): State<AppState>,
    Path((project, client)): Path<(String, String)>,
    form: Posted,
) -> Response {
    let (access, c) = or_page!(access_client(&state, &form.dev, &project, &client).await);
    match admin::client_delete(
        &*state.store,
        &form.dev.actor(),
        ClientRef::within(&project, &c.client_id),
        state.clock.now(),
    )
    .await
    {
        Ok(_) => see_other(&format!("/console/projects/{project}?done=client-deleted")),
        Err(e) => refused(&state, form.dev, access, e).await,
    }
}

/// `POST .../restore`: within the restore window.
pub async fn restore_post(
    State(state): State<AppState>,
    Path((project, client)): Path<(String, String)>,
    form: Posted,
) -> Response {
    let (access, c) = or_page!(access_client(&state, &form.dev, &project, &client).await);
    let lifecycle = state.config.client_lifecycle();
    match admin::client_restore(
        &*state.store,
        &form.dev.actor(),
        ClientRef::within(&project, &c.client_id),
        lifecycle,
        state.clock.now(),
    )
    .await
    {
        Ok(_) => see_other(&format!("/console/projects/{project}?done=client-restored")),
        Err(e) => refused(&state, form.dev, access, e).await,
    }
}
