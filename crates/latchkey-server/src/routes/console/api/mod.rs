//! The console's JSON admin API, `/console/api/v1/...`: the console's operations for scripts, authenticated by a
//! developer's API key (`Authorization: Bearer lk_...`), with the same membership checks as the pages. A key
//! lists and revokes its developer's keys but cannot create one: a leaked key must not be able to mint others
//! that outlive its revocation, so keys are created on the console's page (signed in) and with the CLI. Errors
//! are `{"error", "error_description", "field"}` (`crate::error::ConsoleApiError`). Each operation is declared
//! once, by its handler's `#[utoipa::path]`: [`router`] routes the handlers and builds the OpenAPI 3.1 document
//! from the same declarations, served at [`OPENAPI_PATH`].

mod app_check;
mod client_secrets;
mod clients;
mod content_owners;
mod doc;
mod keys;
mod orgs;
mod projects;
mod resource_secrets;
mod resources;
mod service_accounts;
mod users;

use crate::error::ConsoleApiError;
use crate::extract;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use latchkey_admin::api_keys;
use latchkey_admin::{Actor, ClientRef, Right};
use latchkey_store::User;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::OnceLock;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Where the OpenAPI description is served.
pub const OPENAPI_PATH: &str = "/console/api/openapi.json";

/// The API's routes and its OpenAPI document, both from the handlers' `#[utoipa::path]`.
fn parts() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(doc::ApiDoc::openapi())
        .routes(routes!(openapi_get))
        .routes(routes!(projects::projects_get, projects::projects_post))
        .routes(routes!(projects::project_get, projects::project_delete))
        .routes(routes!(projects::project_api_put))
        .routes(routes!(projects::project_time_based_access_put))
        .routes(routes!(projects::project_refresh_token_rotation_put))
        .routes(routes!(projects::project_open_registration_put))
        .routes(routes!(users::user_apps_get))
        .routes(routes!(users::user_app_delete))
        .routes(routes!(users::user_disable_post))
        .routes(routes!(users::user_enable_post))
        .routes(routes!(users::user_delete))
        .routes(routes!(users::user_methods_get))
        .routes(routes!(users::user_reset_two_step_post))
        .routes(routes!(projects::members_get, projects::members_post))
        .routes(routes!(projects::member_patch, projects::member_delete))
        .routes(routes!(clients::clients_get, clients::clients_post))
        .routes(routes!(clients::client_get, clients::client_patch, clients::client_delete))
        .routes(routes!(clients::client_restore_post))
        .routes(routes!(client_secrets::secrets_post))
        .routes(routes!(client_secrets::secret_disable_post))
        .routes(routes!(client_secrets::secret_enable_post))
        .routes(routes!(client_secrets::secret_delete))
        .routes(routes!(clients::verify_ownership_post))
        .routes(routes!(resources::resources_get, resources::resources_post))
        .routes(routes!(resources::resource_get, resources::resource_patch, resources::resource_delete))
        .routes(routes!(resources::resource_metadata_get))
        .routes(routes!(resource_secrets::secrets_post))
        .routes(routes!(resource_secrets::secret_disable_post))
        .routes(routes!(resource_secrets::secret_enable_post))
        .routes(routes!(resource_secrets::secret_delete))
        .routes(routes!(app_check::app_check_get, app_check::app_check_post))
        .routes(routes!(app_check::metrics_get))
        .routes(routes!(app_check::debug_secret_post))
        .routes(routes!(keys::api_keys_get))
        .routes(routes!(keys::api_key_delete))
        .routes(routes!(orgs::orgs_get, orgs::orgs_post))
        .routes(routes!(orgs::org_get))
        .routes(routes!(orgs::org_domains_post))
        .routes(routes!(orgs::org_members_post))
        .routes(routes!(orgs::org_member_delete))
        .routes(routes!(orgs::org_member_disable_post))
        .routes(routes!(orgs::org_member_enable_post))
        .routes(routes!(orgs::org_app_put))
        .routes(routes!(orgs::org_scopes_put))
        .routes(routes!(orgs::org_settings_put))
        .routes(routes!(orgs::org_delegation_put, orgs::org_delegation_delete))
        .routes(routes!(orgs::project_placement_put))
        .routes(routes!(service_accounts::accounts_get, service_accounts::accounts_post))
        .routes(routes!(
            service_accounts::account_get,
            service_accounts::account_patch,
            service_accounts::account_delete
        ))
        .routes(routes!(service_accounts::keys_get, service_accounts::keys_post))
        .routes(routes!(service_accounts::keys_upload_post))
        .routes(routes!(service_accounts::key_patch, service_accounts::key_delete))
        .routes(routes!(content_owners::owners_post))
        .routes(routes!(content_owners::owner_get))
        .routes(routes!(content_owners::admins_post))
        .routes(routes!(content_owners::channels_post))
        .routes(routes!(content_owners::channel_delete))
        .routes(routes!(content_owners::grant_put, content_owners::grant_delete))
        .split_for_parts()
}

/// The API's routes; a method a path does not have is 405 with a JSON error.
pub fn router() -> Router<AppState> {
    parts().0.method_not_allowed_fallback(method_not_allowed).layer(axum::middleware::from_fn(read_body_first))
}

/// The most a request body may hold (the server's `DefaultBodyLimit`).
const BODY_LIMIT: usize = 64 * 1024;

/// Reads the whole request body before any extractor may answer (an unknown key, a project not found, a wrong
/// content type), so that no answer leaves a body unread on the connection. Added after schemathesis once saw a
/// TLS connection end under its next request; that this was the cause is not shown (hyper marks no such answer
/// `Connection: close`), and the failure has not come back since. A body over the limit is refused with 413 and the
/// connection closed.
async fn read_body_first(req: Request, next: axum::middleware::Next) -> Response {
    let (parts, body) = req.into_parts();
    match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(bytes) => next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await,
        Err(_) => {
            let e = ConsoleApiError::unreadable(
                StatusCode::PAYLOAD_TOO_LARGE,
                "The request body is over 64 KiB, or could not be read.",
            );
            let mut r = e.into_response();
            r.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            r
        }
    }
}

/// The OpenAPI document, serialized once.
pub fn openapi() -> &'static str {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let mut document = parts().1;
        doc::rate_limited(&mut document);
        document.to_json().unwrap_or_default()
    })
}

async fn method_not_allowed() -> Response {
    let mut e = ConsoleApiError::bad_request("This method is not allowed on this path.").into_response();
    *e.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    e
}

/// This OpenAPI description.
#[utoipa::path(get, path = "/console/api/openapi.json", operation_id = "openapi", security(()),
    responses((status = 200, description = "The OpenAPI document", body = Object, content_type = "application/json")))]
async fn openapi_get() -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600")),
        ],
        openapi(),
    )
        .into_response()
}

/// The developer an API key acts for.
pub struct Caller(User);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ConsoleApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ConsoleApiError> {
        let value = extract::single_header(&parts.headers, &header::AUTHORIZATION)
            .map_err(|_| ConsoleApiError::unauthenticated())?
            .ok_or_else(ConsoleApiError::unauthenticated)?;
        let key = match value.split_once(' ') {
            Some((scheme, key)) if scheme.eq_ignore_ascii_case("bearer") => key.trim(),
            _ => return Err(ConsoleApiError::unauthenticated()),
        };
        let caller = match api_keys::authenticate(&*state.store, key, state.clock.now()).await? {
            Some(user) => Self(user),
            None => return Err(ConsoleApiError::unknown_key()),
        };
        // A known key is counted against its developer's limit, all their keys together (an unknown key spends
        // nothing of anyone's).
        if let Err(refused) = state.rate_limits.admit_api_key(&caller.0.id) {
            crate::metrics::RATE_LIMITED.inc("api_key");
            let secs = refused.retry_after_secs;
            return Err(ConsoleApiError::too_many(
                format!("Too many requests with this API key; retry after {secs} seconds."),
                secs,
            ));
        }
        // A project or client the caller cannot see is not found before the request is read further (its query
        // or body): the operation then decides, with the right it needs, what the caller may do. An operator
        // (`operators`) sees every project here, for the switches that are the operator's (open registration).
        if let Ok(params) = RawPathParams::from_request_parts(parts, state).await {
            let param = |name| params.iter().find(|(k, _)| *k == name).map(|(_, v)| v);
            let store = &*state.store;
            let actor = crate::routes::console::acting_as_operator(state, &caller.0).unwrap_or_else(|| caller.actor());
            match (param("project"), param("client")) {
                (Some(project), Some(client)) => {
                    actor.client(store, ClientRef::within(project, client), Right::View).await?;
                }
                (Some(project), None) => drop(actor.project(store, project, Right::View).await?),
                _ => {}
            }
        }
        Ok(caller)
    }
}

type ApiResult = Result<Response, ConsoleApiError>;

fn ok<T: Serialize>(v: T) -> ApiResult {
    Ok(json(StatusCode::OK, &v))
}

fn created<T: Serialize>(v: T) -> ApiResult {
    Ok(json(StatusCode::CREATED, &v))
}

fn json<T: Serialize>(status: StatusCode, v: &T) -> Response {
    let mut r = (status, crate::error::no_store_json(v)).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// A JSON request body (`Content-Type: application/json`), refused in the API's error format.
pub(crate) struct Body<T>(pub(crate) T);

impl<T: DeserializeOwned> FromRequest<AppState> for Body<T> {
    type Rejection = ConsoleApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ConsoleApiError> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
        if !is_json {
            return Err(ConsoleApiError::bad_request("Content-Type must be application/json."));
        }
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e| ConsoleApiError::unreadable(e.status(), e.body_text()))?;
        let value = serde_json::from_slice(&bytes);
        Ok(Self(value.map_err(|e| ConsoleApiError::bad_request(format!("The JSON body is not valid: {e}")))?))
    }
}

impl Caller {
    /// The caller as an actor of administrative operations: their project roles decide ([`Actor`]).
    pub(crate) fn actor(&self) -> Actor {
        Actor::Developer(self.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// Every `$ref` under `v`.
    fn refs<'v>(v: &'v Value, out: &mut Vec<&'v str>) {
        match v {
            Value::Object(m) => {
                out.extend(m.get("$ref").and_then(Value::as_str));
                m.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn the_document_is_openapi_3_1_and_every_operation_but_its_own_needs_a_key() {
        let doc: Value = serde_json::from_str(openapi()).expect("the document is JSON");
        assert_eq!(doc["openapi"].as_str().map(|v| &v[..4]), Some("3.1."));
        assert_eq!(doc["components"]["securitySchemes"]["apiKey"]["scheme"], "bearer");
        assert_eq!(doc["security"], serde_json::json!([{ "apiKey": [] }]));
        let mut ids = Vec::new();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for (method, op) in item.as_object().expect("path item") {
                ids.push(op["operationId"].as_str().expect("operationId").to_owned());
                assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{method} {path} has a summary");
                if path == OPENAPI_PATH {
                    assert_eq!(op["security"], serde_json::json!([{}]), "the document needs no key");
                } else {
                    assert!(op.get("security").is_none(), "{method} {path} needs the key");
                    assert_eq!(op["responses"]["401"]["$ref"], "#/components/responses/Unauthorized");
                }
            }
        }
        let count = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!((ids.len(), count), (78, 78), "78 operations, each with its own id");
    }

    #[test]
    fn every_reference_of_the_document_resolves() {
        let doc: Value = serde_json::from_str(openapi()).expect("the document is JSON");
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(found.len() > 40, "{found:?}");
        for r in found {
            let pointer = r.strip_prefix('#').expect("a local reference");
            assert!(doc.pointer(pointer).is_some(), "{r} resolves");
        }
    }
}
