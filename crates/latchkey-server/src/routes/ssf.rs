//! The Shared Signals Framework's endpoints (SSF 1.0 §7–§8): discovery, stream configuration, status, subjects,
//! verification, and the poll endpoint (RFC 8936). Every endpoint but discovery takes a console API key of a
//! member of the stream's client's project (`Authorization: Bearer lk_...`); errors are the console API's JSON
//! errors (`{"error", "error_description"}`) with the framework's statuses. The operations are
//! `latchkey_admin::streams`'s.

use super::console::api::{Body, Caller};
use crate::error::ConsoleApiError;
use crate::state::AppState;
use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use latchkey_admin::streams::{StreamSettings, Streaming};
use latchkey_core::events::stream::{Delivery, Status, POLL, PUSH};
use latchkey_core::events::SubjectFormat;
use serde::Deserialize;
use serde_json::{json, Value};

mod poll;

/// The stream configuration endpoint.
pub const STREAM_PATH: &str = "/ssf/stream";

type Handled = Result<Response, ConsoleApiError>;

/// The framework's routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/.well-known/ssf-configuration", get(configuration_get))
        .route("/.well-known/risc-configuration", get(configuration_get))
        .route(STREAM_PATH, get(stream_get).post(stream_post).patch(stream_patch).put(stream_put).delete(stream_delete))
        .route("/ssf/status", get(status_get).post(status_post))
        .route("/ssf/subjects/add", post(subject_add))
        .route("/ssf/subjects/remove", post(subject_remove))
        .route("/ssf/verify", post(verify_post))
        .route("/ssf/poll/{stream_id}", post(poll::poll_post))
}

/// The operations' context for this instance.
pub(super) fn streaming(state: &AppState) -> Streaming<'_> {
    Streaming {
        store: &*state.store,
        keys: &state.keys,
        issuer: &state.urls.issuer,
        allow_loopback_http: state.config.events.allow_insecure_loopback_push,
        min_verification_interval: state.config.events.min_verification_interval,
    }
}

/// The transmitter's metadata (SSF §7.1).
async fn configuration_get(State(state): State<AppState>) -> Response {
    let base = &state.urls.issuer;
    let body = json!({
        "spec_version": "1_0",
        "issuer": base,
        "jwks_uri": format!("{base}{}", super::JWKS_PATH),
        "delivery_methods_supported": [PUSH, POLL],
        "configuration_endpoint": format!("{base}{STREAM_PATH}"),
        "status_endpoint": format!("{base}/ssf/status"),
        "add_subject_endpoint": format!("{base}/ssf/subjects/add"),
        "remove_subject_endpoint": format!("{base}/ssf/subjects/remove"),
        "verification_endpoint": format!("{base}/ssf/verify"),
        "authorization_schemes": [{ "spec_urn": "urn:ietf:rfc:6750" }],
        "default_subjects": "ALL",
    });
    let mut r = crate::error::no_store_json(&body).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
    r
}

fn reply(status: StatusCode, body: &impl serde::Serialize) -> Handled {
    let mut r = (status, crate::error::no_store_json(body)).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(r)
}

fn bad(description: impl Into<String>) -> ConsoleApiError {
    ConsoleApiError::bad_request(description)
}

/// `?stream_id=`.
#[derive(Deserialize)]
struct StreamQuery {
    stream_id: Option<String>,
}

/// A stream's `delivery` as a receiver sends it.
#[derive(Deserialize)]
struct DeliveryIn {
    method: String,
    endpoint_url: Option<String>,
    authorization_header: Option<String>,
}

/// A stream configuration as a receiver sends it; the transmitter's own members (`iss`, `events_supported`...)
/// are ignored.
#[derive(Deserialize, Default)]
#[serde(default)]
struct StreamIn {
    stream_id: Option<String>,
    aud: Option<Value>,
    delivery: Option<DeliveryIn>,
    events_requested: Option<Vec<String>>,
    description: Option<String>,
    subject_format: Option<String>,
}

impl StreamIn {
    fn settings(self) -> Result<(Option<String>, Option<Value>, StreamSettings), ConsoleApiError> {
        let delivery = match self.delivery {
            None => None,
            Some(d) if d.method == PUSH => Some(Delivery::Push {
                endpoint_url: d.endpoint_url.ok_or_else(|| bad("delivery.endpoint_url is required for push"))?,
                authorization_header: d.authorization_header,
            }),
            Some(d) if d.method == POLL => Some(Delivery::Poll),
            Some(d) => return Err(bad(format!("delivery method {} is not supported (push or poll)", d.method))),
        };
        let subject_format = match self.subject_format.as_deref() {
            None => None,
            Some("iss_sub") => Some(SubjectFormat::IssSub),
            Some("email") => Some(SubjectFormat::Email),
            Some(other) => return Err(bad(format!("subject_format {other} is not supported (iss_sub or email)"))),
        };
        let settings = StreamSettings {
            delivery,
            events_requested: self.events_requested,
            subject_format,
            description: self.description,
        };
        Ok((self.stream_id, self.aud, settings))
    }
}

fn required(stream_id: Option<String>) -> Result<String, ConsoleApiError> {
    stream_id.filter(|s| !s.is_empty()).ok_or_else(|| bad("stream_id is required"))
}

async fn stream_get(State(state): State<AppState>, caller: Caller, Query(q): Query<StreamQuery>) -> Handled {
    let cx = streaming(&state);
    let actor = caller.actor();
    match q.stream_id {
        Some(id) => reply(StatusCode::OK, &cx.show(&actor, &id).await?),
        None => reply(StatusCode::OK, &cx.list(&actor).await?),
    }
}

async fn stream_post(State(state): State<AppState>, caller: Caller, Body(body): Body<StreamIn>) -> Handled {
    let (_, aud, settings) = body.settings()?;
    let client_id = match aud {
        Some(Value::String(c)) => c,
        Some(Value::Array(a)) if a.len() == 1 && a[0].is_string() => a[0].as_str().unwrap_or_default().to_owned(),
        _ => return Err(bad("aud (the client id whose backend receives the events) is required")),
    };
    let view = streaming(&state).create(&caller.actor(), &client_id, settings, state.clock.now()).await?;
    reply(StatusCode::CREATED, &view)
}

async fn update(state: AppState, caller: Caller, body: StreamIn, replace: bool) -> Handled {
    let (stream_id, _, settings) = body.settings()?;
    let now = state.clock.now();
    let view = streaming(&state).update(&caller.actor(), &required(stream_id)?, settings, replace, now).await?;
    reply(StatusCode::OK, &view)
}

async fn stream_patch(State(state): State<AppState>, caller: Caller, Body(body): Body<StreamIn>) -> Handled {
    update(state, caller, body, false).await
}

async fn stream_put(State(state): State<AppState>, caller: Caller, Body(body): Body<StreamIn>) -> Handled {
    update(state, caller, body, true).await
}

async fn stream_delete(State(state): State<AppState>, caller: Caller, Query(q): Query<StreamQuery>) -> Handled {
    streaming(&state).delete(&caller.actor(), &required(q.stream_id)?).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn status_body(stream_id: &str, status: Status, reason: Option<String>) -> Value {
    let mut body = json!({ "stream_id": stream_id, "status": status.as_str() });
    if let Some(r) = reason {
        body["reason"] = r.into();
    }
    body
}

async fn status_get(State(state): State<AppState>, caller: Caller, Query(q): Query<StreamQuery>) -> Handled {
    let id = required(q.stream_id)?;
    let (status, reason) = streaming(&state).status(&caller.actor(), &id).await?;
    reply(StatusCode::OK, &status_body(&id, status, reason))
}

/// A status change as a receiver sends it.
#[derive(Deserialize)]
struct StatusIn {
    stream_id: Option<String>,
    status: String,
    reason: Option<String>,
}

async fn status_post(State(state): State<AppState>, caller: Caller, Body(body): Body<StatusIn>) -> Handled {
    let id = required(body.stream_id)?;
    let status = Status::parse(&body.status)
        .ok_or_else(|| bad(format!("status {} is not one of enabled, paused, disabled", body.status)))?;
    let now = state.clock.now();
    let (status, reason) = streaming(&state).set_status(&caller.actor(), &id, status, body.reason, now).await?;
    reply(StatusCode::OK, &status_body(&id, status, reason))
}

/// A subject added or removed.
#[derive(Deserialize)]
struct SubjectIn {
    stream_id: Option<String>,
    subject: Option<Value>,
}

async fn subject(state: AppState, caller: Caller, body: SubjectIn, included: bool) -> Result<(), ConsoleApiError> {
    let id = required(body.stream_id)?;
    let subject = body.subject.ok_or_else(|| bad("subject is required"))?;
    streaming(&state).set_subject(&caller.actor(), &id, &subject, included).await?;
    Ok(())
}

async fn subject_add(State(state): State<AppState>, caller: Caller, Body(body): Body<SubjectIn>) -> Handled {
    subject(state, caller, body, true).await?;
    Ok(StatusCode::OK.into_response())
}

async fn subject_remove(State(state): State<AppState>, caller: Caller, Body(body): Body<SubjectIn>) -> Handled {
    subject(state, caller, body, false).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A verification request.
#[derive(Deserialize)]
struct VerifyIn {
    stream_id: Option<String>,
    state: Option<String>,
}

async fn verify_post(State(state): State<AppState>, caller: Caller, Body(body): Body<VerifyIn>) -> Handled {
    let id = required(body.stream_id)?;
    let now = state.clock.now();
    streaming(&state).verify(&caller.actor(), &id, body.state.as_deref(), now).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
