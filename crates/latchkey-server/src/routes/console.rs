//! The developer console at `/console`: projects, their members and data API, OAuth clients of the four types,
//! App Check and owner verification, registered APIs ([`resources`]), API keys, organisations ([`orgs`]); and the
//! JSON admin API under `/console/api/v1` ([`api`]).
//!
//! Pages are server-rendered and work without JavaScript. Every form carries the session's CSRF token and
//! every change answers with a redirect (POST-redirect-GET), except those that show a secret once: a new client's
//! secret, a registered API's introspection secret, an App Check debug secret and an API key are rendered in the
//! POST's answer (never cached) so that the plaintext is never stored, not even for a moment. Handlers call the operations of
//! [`latchkey_admin`]; a developer acts only on the projects they are a member of
//! ([`latchkey_admin::Actor`]), and a project they are not a member of does not exist for them.

/// The value of a lookup that answers with a page when it fails (no such project or client, no access): `Ok` gives
/// the value, `Err` returns the page from the handler.
macro_rules! or_page {
    ($lookup:expr) => {
        match $lookup {
            Ok(found) => found,
            Err(page) => return page,
        }
    };
}

pub mod api;
mod app_check;
mod auth;
mod client_secrets;
mod clients;
mod forms;
mod keys;
mod orgs;
mod projects;
mod resource_secrets;
mod resources;
mod service_accounts;

use crate::error::{admin_message, admin_status};
use crate::state::AppState;
use crate::views::console::{Layout, MessagePage};
use crate::views::page;
use auth::Developer;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use latchkey_admin::{Access, AdminError, ClientRef, Right};
use latchkey_core::client::Client;

/// The console's pages and its JSON API.
pub fn router() -> Router<AppState> {
    let client = "/console/projects/{project}/clients/{client}";
    let sa = "/console/projects/{project}/service-accounts";
    let api = "/console/projects/{project}/resources/{resource}";
    Router::new()
        .route("/console", get(projects::console_get))
        .route("/console/projects", post(projects::projects_post))
        .route("/console/projects/{project}", get(projects::project_get))
        .route("/console/projects/{project}/api", post(projects::api_post))
        .route("/console/projects/{project}/time-based-access", post(projects::time_based_access_post))
        .route("/console/projects/{project}/refresh-token-rotation", post(projects::refresh_token_rotation_post))
        .route("/console/projects/{project}/open-registration", post(projects::open_registration_post))
        .route("/console/projects/{project}/delete", get(projects::delete_get).post(projects::delete_post))
        .route("/console/projects/{project}/members", post(projects::members_post))
        .route("/console/projects/{project}/members/{user}/remove", post(projects::member_remove_post))
        .route("/console/projects/{project}/members/{user}/role", post(projects::member_role_post))
        .route("/console/projects/{project}/clients", post(clients::clients_post))
        .route("/console/projects/{project}/clients/new", get(clients::client_new_get))
        .route(client, get(clients::client_get))
        .route(&format!("{client}/edit"), get(clients::edit_get).post(clients::edit_post))
        .route(&format!("{client}/delete"), get(clients::delete_get).post(clients::delete_post))
        .route(&format!("{client}/restore"), post(clients::restore_post))
        .route(&format!("{client}/secrets"), post(client_secrets::secrets_post))
        .route(&format!("{client}/secrets/{{secret}}/{{action}}"), post(client_secrets::secret_action_post))
        .route(&format!("{client}/app-check"), post(app_check::app_check_post))
        .route(&format!("{client}/app-check/{{action}}"), get(app_check::confirm_get))
        .route(&format!("{client}/app-check/debug-secret"), post(app_check::debug_secret_post))
        .route(&format!("{client}/verify-ownership"), post(app_check::verify_ownership_post))
        .route("/console/projects/{project}/resources", post(resources::resources_post))
        .route(api, get(resources::resource_get))
        .route(&format!("{api}/edit"), post(resources::edit_post))
        .route(&format!("{api}/scopes/remove"), post(resources::scope_remove_post))
        .route(&format!("{api}/delete"), get(resources::delete_get).post(resources::delete_post))
        .route(&format!("{api}/secrets"), post(resource_secrets::secrets_post))
        .route(&format!("{api}/secrets/{{secret}}/{{action}}"), post(resource_secrets::secret_action_post))
        .route("/console/projects/{project}/placement", post(orgs::placement_post))
        .route(sa, get(service_accounts::accounts_get).post(service_accounts::accounts_post))
        .route(&format!("{sa}/{{account}}"), get(service_accounts::account_get))
        .route(&format!("{sa}/{{account}}/keys"), post(service_accounts::key_post))
        .route(&format!("{sa}/{{account}}/keys/upload"), post(service_accounts::key_upload_post))
        .route(&format!("{sa}/{{account}}/keys/{{key}}/{{action}}"), post(service_accounts::key_action_post))
        .route(&format!("{sa}/{{account}}/{{action}}"), post(service_accounts::account_action_post))
        .route("/console/orgs", get(orgs::orgs_get))
        .route("/console/orgs/{org}", get(orgs::org_get))
        .route("/console/orgs/{org}/members", post(orgs::members_post))
        .route("/console/orgs/{org}/members/{user}/remove", post(orgs::member_remove_post))
        .route("/console/orgs/{org}/members/{user}/{action}", post(orgs::member_disabled_post))
        .route("/console/orgs/{org}/scopes", post(orgs::scopes_post))
        .route("/console/orgs/{org}/settings", post(orgs::settings_post))
        .route("/console/orgs/{org}/apps", post(orgs::apps_post))
        .route("/console/orgs/{org}/delegations", post(orgs::delegations_post))
        .route("/console/orgs/{org}/delegations/{client}/remove", post(orgs::delegation_remove_post))
        .route("/console/api-keys", get(keys::keys_get).post(keys::keys_post))
        .route("/console/api-keys/{id}/revoke", post(keys::revoke_post))
        .merge(api::router())
}

/// A `303 See Other` to a console path (POST-redirect-GET).
fn see_other(location: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    let h = r.headers_mut();
    h.insert(header::LOCATION, HeaderValue::from_str(location).unwrap_or(HeaderValue::from_static("/console")));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// The page for an administrative error that leaves nothing to re-render (not found, forbidden, store down).
fn failure(layout: &Layout, e: &AdminError) -> Response {
    let (status, _) = admin_status(e);
    let heading = match status {
        StatusCode::NOT_FOUND => "Not found",
        StatusCode::FORBIDDEN => "Not allowed",
        s if s.is_server_error() => "Something went wrong",
        _ => "That did not work",
    };
    page(status, &MessagePage { layout: layout.clone(), heading: heading.into(), message: admin_message(e) })
}

/// The operator, when `user` is one of the `operators` of the configuration: for the switches that are the
/// operator's alone (opening dynamic client registration).
pub(crate) fn acting_as_operator(state: &AppState, user: &latchkey_store::User) -> Option<latchkey_admin::Actor> {
    let named = state.config.operators.iter().any(|e| e.eq_ignore_ascii_case(&user.email));
    named.then_some(latchkey_admin::Actor::Operator)
}

/// The notice shown after a redirect, by the fixed code in its `done` parameter (never text from the URL).
fn notice(done: Option<&str>) -> Option<String> {
    let text = match done? {
        "project-created" => "Project created. You are its owner.",
        "project-deleted" => "Project deleted, with its OAuth clients.",
        "api-enabled" => "The data API is enabled for this project.",
        "api-disabled" => "The data API is disabled for this project.",
        "time-based-on" => "Time-based access is offered: people can limit an app's access to a period.",
        "time-based-off" => "Time-based access is no longer offered. Access already limited keeps its end.",
        "rotation-on" => "Refresh tokens rotate: each refresh returns a new one, from each token's next refresh.",
        "rotation-off" => "Refresh tokens no longer rotate. The newest token of each grant keeps working.",
        "registration-on" => "Apps may register themselves into this project at /register.",
        "registration-off" => "Apps may no longer register themselves. Those that did keep working.",
        "member-added" => "Member added.",
        "member-removed" => "Member removed.",
        "role-changed" => "Role changed.",
        "client-saved" => "Client saved.",
        "client-deleted" => "Client deleted. You can restore it from the list of deleted clients.",
        "client-restored" => "Client restored. Its tokens work again.",
        "secret-disable" => "Secret disabled: requests sending it are refused. Delete it once nothing uses it.",
        "secret-enable" => "Secret enabled again.",
        "secret-delete" => "Secret deleted.",
        "resource-saved" => "API saved. This server uses the change at once, the others within 5 seconds.",
        "scope-removed" => "Scope removed: apps can no longer ask for it, and tokens that carry it no longer name it.",
        "resource-deleted" => "API deleted: its scopes are retired and its introspection secrets stop working.",
        "app-check-enable" => "App Check is being enabled.",
        "app-check-enforce" => "App Check is being enforced.",
        "app-check-unenforce" => "App Check is being unenforced.",
        "app-check-disable" => "App Check is being disabled.",
        "ownership-verified" => "Ownership verified: you are the publisher of this extension's listing.",
        "key-revoked" => "API key revoked.",
        "sa-created" => "Service account created. Create a key for its tools, or upload a public key.",
        "sa-deleted" => "Service account deleted, with its keys: its tokens stop working.",
        "sa-disable" => "Service account disabled: it gets no new token, and its tokens are refused.",
        "sa-enable" => "Service account enabled again.",
        "key-uploaded" => "Public key added.",
        "key-disable" => "Key disabled: its assertions get no token, and its tokens are refused.",
        "key-enable" => "Key enabled again.",
        "key-delete" => "Key deleted: its tokens stop working.",
        "placement-saved" => "Organisation and audience saved. Access the new audience does not allow was revoked.",
        "org-member-added" => "Member added.",
        "org-member-removed" => "Member removed. Access their organisation's internal apps had was revoked.",
        "org-member-disabled" => "Account disabled: it cannot sign in, and its apps' tokens stop working.",
        "org-member-enabled" => "Account enabled again.",
        "org-policy-saved" => {
            "Policy saved. It holds for new authorizations, and access it no longer allows was revoked."
        }
        _ => return None,
    };
    Some(text.into())
}

/// The `done` parameter of a page's query.
#[derive(Debug, Default, serde::Deserialize)]
struct Done {
    done: Option<String>,
}

/// The developer's access to the project and the client in it (pages of a client: [`clients`], [`app_check`]), or the
/// page saying there is no such thing.
async fn access_client(
    state: &AppState,
    dev: &Developer,
    project: &str,
    client_id: &str,
) -> Result<(Access, Client), Response> {
    let at = ClientRef::within(project, client_id);
    dev.actor().client_in_project(&*state.store, at, Right::View).await.map_err(|e| dev.failure(&e))
}

impl Developer {
    /// Renders the failure page for an error, in this developer's layout.
    fn failure(&self, e: &AdminError) -> Response {
        failure(&self.layout, e)
    }
}
