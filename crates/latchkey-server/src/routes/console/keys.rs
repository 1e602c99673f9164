//! The developer's API keys for the JSON admin API: created (shown once) and revoked here.

use super::auth::{Developer, Posted};
use super::{notice, see_other, Done};
use crate::state::AppState;
use crate::views::console::{date, ApiKeysPage, KeyRow, SecretPage, Shown};
use crate::views::page;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use latchkey_admin::api_keys;
use latchkey_admin::AdminError;

async fn keys_page(
    state: &AppState,
    dev: Developer,
    status: StatusCode,
    notice: Option<String>,
    name: String,
    name_error: Option<String>,
) -> Response {
    let keys = match state.store.api_keys_of(&dev.user.id).await {
        Ok(k) => k,
        Err(e) => return dev.failure(&e.into()),
    };
    let keys = keys
        .into_iter()
        .map(|k| KeyRow {
            id: k.id,
            name: k.name,
            created: date(k.created_at),
            last_used: k.last_used_at.map_or_else(|| "Never".into(), date),
        })
        .collect();
    page(status, &ApiKeysPage { layout: dev.layout, notice, keys, name, name_error })
}

/// `GET /console/api-keys`.
pub async fn keys_get(State(state): State<AppState>, dev: Developer, Query(q): Query<Done>) -> Response {
    keys_page(&state, dev, StatusCode::OK, notice(q.done.as_deref()), String::new(), None).await
}

/// `POST /console/api-keys`: creates a key and shows it, this once.
pub async fn keys_post(State(state): State<AppState>, form: Posted) -> Response {
    let name = form.get("name").to_owned();
    match api_keys::api_key_create(&*state.store, &form.dev.user.id, &name, state.clock.now()).await {
        Ok(v) => {
            let view = SecretPage {
                layout: form.dev.layout,
                heading: format!("API key “{}” created", name.trim()),
                shown: vec![Shown { label: "API key", value: v.api_key, id: "api-key" }],
                note: "It is shown only this once: latchkey keeps only a hash of it. Send it as \
                       Authorization: Bearer <key> to /console/api/v1; it acts as you on your projects."
                    .into(),
                continue_href: "/console/api-keys".into(),
                continue_label: "Back to API keys".into(),
                download: None,
            };
            page(StatusCode::OK, &view)
        }
        Err(AdminError::Fields(errors)) => {
            let message = errors.into_iter().map(|e| e.message).collect::<Vec<_>>().join(" ");
            keys_page(&state, form.dev, StatusCode::BAD_REQUEST, None, name, Some(message)).await
        }
        Err(e) => form.dev.failure(&e),
    }
}

/// `POST /console/api-keys/{id}/revoke`.
pub async fn revoke_post(State(state): State<AppState>, Path(id): Path<String>, form: Posted) -> Response {
    match api_keys::api_key_revoke(&*state.store, &form.dev.user.id, &id).await {
        Ok(_) => see_other("/console/api-keys?done=key-revoked"),
        Err(e) => form.dev.failure(&e),
    }
}
