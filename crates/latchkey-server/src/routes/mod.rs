//! The HTTP routes. A handler runs its extractors, makes one call into the core or the store, and maps the
//! result; error mapping lives in `crate::error`.

mod account;
mod account_two_step;
pub(crate) mod api;
mod appcheck;
mod authorize;
pub mod console;
mod device;
mod id_token;
mod identity;
mod introspect;
mod login;
mod metadata;
mod metrics;
mod passkeys;
mod ports;
mod register;
mod revoke;
mod second_step;
mod session_start;
mod ssf;
mod token;

use crate::error::{refusal, RefusalNote};
use crate::listener::RequestDeadline;
use crate::rate_limit::RateLimits;
use crate::request_id::RequestId;
use crate::state::AppState;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::paths::{
    APP_CHECK_DEBUG_PATH, AUTHORIZE_PATH, DATA_API_PATH, DEVICE_CODE_PATH, INTROSPECT_PATH, JWKS_PATH,
    PROTECTED_RESOURCE_METADATA_PATH, REGISTER_PATH, REVOKE_PATH, TOKEN_PATH, USERINFO_PATH,
};

/// The data API's name, as the consent page and its resource metadata show it.
pub const DATA_API_NAME: &str = "Video Data API";

/// Every route of the service.
pub fn router(state: AppState) -> Router {
    let limits = state.rate_limits.clone();
    let request_timeout = state.config.connections.request();
    Router::new()
        .route(AUTHORIZE_PATH, get(authorize::authorize_get).post(authorize::authorize_post))
        .route("/signin", get(login::signin_get).post(login::signin_post))
        .route("/signout", axum::routing::post(login::signout_post))
        .route("/account", get(account::account_get))
        .route("/account/apps/remove", axum::routing::post(account::apps_remove_post))
        .route("/account/password", axum::routing::post(account::password_post))
        .route("/account/sessions/end-others", axum::routing::post(account::end_others_post))
        .route("/account/passkeys/options", axum::routing::post(passkeys::add_options_post))
        .route("/account/passkeys", axum::routing::post(passkeys::add_post))
        .route("/account/passkeys/remove", axum::routing::post(passkeys::remove_post))
        .route("/signin/passkey/options", axum::routing::post(passkeys::signin_options_post))
        .route("/signin/passkey", axum::routing::post(passkeys::signin_post))
        .route("/signin/second-step", get(second_step::step_get).post(second_step::second_step_post))
        .route("/signin/enrol", get(second_step::step_get).post(second_step::enrol_post))
        .route("/account/two-step/start", axum::routing::post(account_two_step::start_post))
        .route("/account/two-step", axum::routing::post(account_two_step::confirm_post))
        .route("/account/two-step/off", axum::routing::post(account_two_step::off_post))
        .route("/account/recovery-codes", axum::routing::post(account_two_step::recovery_codes_post))
        .route("/account/password/remove", axum::routing::post(account_two_step::remove_password_post))
        .route(TOKEN_PATH, axum::routing::post(token::token_post))
        .route(DEVICE_CODE_PATH, axum::routing::post(device::code_post))
        .route("/device", get(device::page_get).post(device::page_post))
        .route("/device/consent", axum::routing::post(device::consent_post))
        .route(REVOKE_PATH, axum::routing::post(revoke::revoke_post))
        .route(REGISTER_PATH, axum::routing::post(register::register_post))
        .route(
            &format!("{REGISTER_PATH}/{{client_id}}"),
            get(register::registration_get).put(register::registration_put).delete(register::registration_delete),
        )
        .route(INTROSPECT_PATH, axum::routing::post(introspect::introspect_post))
        .route(APP_CHECK_DEBUG_PATH, axum::routing::post(appcheck::debug_post))
        .route("/video/v3/channels", get(api::channels_get))
        .route(USERINFO_PATH, get(identity::userinfo).post(identity::userinfo))
        .route("/.well-known/oauth-authorization-server", get(metadata::metadata_get))
        .route(&format!("{PROTECTED_RESOURCE_METADATA_PATH}{DATA_API_PATH}"), get(metadata::data_api_resource_get))
        .route("/.well-known/openid-configuration", get(metadata::metadata_get))
        .route(JWKS_PATH, get(metadata::jwks_get))
        .route(
            "/static/latchkey.css",
            get(|| asset("text/css; charset=utf-8", include_str!("../../static/latchkey.css"))),
        )
        .route(
            "/static/console.js",
            get(|| asset("text/javascript; charset=utf-8", include_str!("../../static/console.js"))),
        )
        .route(
            "/static/passkeys.js",
            get(|| asset("text/javascript; charset=utf-8", include_str!("../../static/passkeys.js"))),
        )
        .route("/static/favicon.svg", get(|| asset("image/svg+xml", include_str!("../../static/favicon.svg"))))
        .route("/favicon.ico", get(|| asset("image/svg+xml", include_str!("../../static/favicon.svg"))))
        .route("/", get(login::home_get))
        .merge(console::router())
        .merge(ssf::router())
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .route(crate::paths::METRICS_PATH, get(metrics::metrics_get))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(refusal::BODY_LIMIT))
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            log_request(limits.clone(), request_timeout, request, next)
        }))
        .with_state(state)
}

/// A static file of ours, cached for an hour.
async fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600")),
        ],
        body,
    )
        .into_response()
}

async fn ready(State(state): State<AppState>) -> Response {
    match state.store.ping().await {
        Ok(()) => "ready".into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "not ready");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, crate::error::RETRY_AFTER_SECS)],
                "store unavailable",
            )
                .into_response()
        }
    }
}

async fn not_found(uri: axum::http::Uri) -> Response {
    refusal::Surface::of(uri.path()).refuse(StatusCode::NOT_FOUND, "There is nothing at this address.")
}

/// Logs method, path (never the query, which can carry tokens), status and latency, and a refusal's error code,
/// description and client with the request's id (which its error page shows); counts the request in the metrics;
/// refuses what the framework, the size limits or the address's rate limit refuse, and a request that takes longer
/// than `timeout` (408: its handler is dropped), in the endpoint's own format ([`refusal`]).
async fn log_request(limits: Arc<RateLimits>, timeout: Duration, mut request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    // The route's series, found once (before the request moves on): no copy of the pattern is kept.
    let series = crate::metrics::route(request.extensions().get::<MatchedPath>().map_or("unmatched", |m| m.as_str()));
    let started = Instant::now();
    let surface = refusal::Surface::of(&path);
    // The timeout covers the admission too: a body over the limit is drained there, and a client trickling it must
    // not hold the connection for ever. The connection's watchdog keeps it (no timer per request); a request that
    // came another way (the router called directly) gets a timer of its own.
    // Taken out of the request (nothing after this reads it): no clone of its handle per request.
    let deadline = request.extensions_mut().remove::<RequestDeadline>();
    let answered = async {
        match refusal::admit(request, surface, &limits).await {
            Ok(request) => refusal::reword(surface, next.run(request).await),
            Err(refused) => refused,
        }
    };
    let mut response = match deadline {
        Some(deadline) => tokio::select! {
            biased;
            response = answered => response,
            () = deadline.passed(started, timeout) => refusal::timed_out(surface, timeout),
        },
        None => tokio::time::timeout(timeout, answered).await.unwrap_or_else(|_| refusal::timed_out(surface, timeout)),
    };
    // Every response is served over HTTPS: browsers keep to it for a year; and no answer is sniffed into another
    // type. (Static values: no allocation; the header map holds them within its first capacity.)
    let h = response.headers_mut();
    h.insert(header::STRICT_TRANSPORT_SECURITY, HeaderValue::from_static("max-age=31536000"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    series.request(status, elapsed.as_secs_f64());
    let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
    match response.extensions_mut().remove::<RefusalNote>() {
        // A request answered as asked: no id is made or written; a refusal's line carries one, as its page and
        // `X-Request-Id` do.
        None => tracing::info!(%method, %path, status, micros, "request"),
        Some(note) => {
            let id = RequestId::next().to_string();
            series.error(note.code);
            let client_id = note.client_id.as_deref().unwrap_or("");
            tracing::info!(%method, %path, status, micros, request_id = %id, error = note.code,
                description = %note.description, client_id, "refused");
            response = crate::views::with_request_id(response, &id);
            if let Ok(value) = HeaderValue::from_str(&id) {
                response.headers_mut().insert(REQUEST_ID, value);
            }
        }
    }
    response
}

/// The header naming a refused request's id (the id its log line and its error page show).
const REQUEST_ID: &str = "x-request-id";
