//! Refusals made before a handler reads the request, or by the web framework on its behalf (a body over the limit, a
//! method the path does not have, an unknown path): each answered in the error format of the endpoint asked, never the
//! framework's plain text (`docs/security.md`, "Bad input"). [`Surface::of`] decides the format from the path;
//! [`admit`] and [`reword`] apply it around every request, in the router's one middleware (which also logs), so that no
//! layer of its own adds to each request's cost.

use super::{ApiError, ConsoleApiError, TokenError};
use crate::extract::ClientAddr;
use crate::paths::{
    APP_CHECK_DEBUG_PATH, DEVICE_CODE_PATH, INTROSPECT_PATH, JWKS_PATH, METRICS_PATH, REGISTER_PATH, REVOKE_PATH,
    TOKEN_PATH, USERINFO_PATH,
};
use crate::rate_limit::RateLimits;
use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use latchkey_core::{ErrorCode, OAuthError};

/// The most a request body may hold.
pub const BODY_LIMIT: usize = 64 * 1024;
/// The longest path and query read (an authorization request with every scope fits many times over).
pub const URL_LIMIT: usize = 8 * 1024;
/// The most the request's header fields may hold, names and values together (a session cookie for the most
/// accounts, an `Authorization` header and a DPoP proof fit several times over). Past hyper's own read buffer
/// (about 400 KiB) hyper refuses the request itself.
pub const HEADERS_LIMIT: usize = 16 * 1024;
/// A body announced over [`BODY_LIMIT`] is read (and dropped) up to this much before the 413, so that a client
/// still sending can read the answer; beyond it the connection is closed.
pub const DRAIN_LIMIT: u64 = 1024 * 1024;

/// The error format of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// RFC 6749 §5.2 JSON with `no-store`: the token, revocation and App Check endpoints, metadata and keys.
    OAuth,
    /// The data API's error body (UserInfo too).
    DataApi,
    /// `{"error", "error_description"}`: the console's JSON API and the Shared Signals endpoints.
    ConsoleApi,
    /// An HTML page: everything a browser visits.
    Page,
}

impl Surface {
    /// The format of the endpoint at `path`.
    pub fn of(path: &str) -> Self {
        let oauth = [TOKEN_PATH, REVOKE_PATH, INTROSPECT_PATH, DEVICE_CODE_PATH, APP_CHECK_DEBUG_PATH, JWKS_PATH];
        let registration =
            path.strip_prefix(REGISTER_PATH).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
        if oauth.contains(&path) || registration {
            Self::OAuth
        } else if path.starts_with("/video/") || path == USERINFO_PATH {
            Self::DataApi
        } else if path.starts_with("/console/api/")
            || path == METRICS_PATH
            || path.starts_with("/ssf/")
            || path == "/.well-known/ssf-configuration"
            || path == "/.well-known/risc-configuration"
        {
            Self::ConsoleApi
        } else if path.starts_with("/.well-known/") {
            Self::OAuth
        } else {
            Self::Page
        }
    }

    /// The refusal with `status` and `description`, in this format.
    pub fn refuse(self, status: StatusCode, description: &str) -> Response {
        match self {
            Self::OAuth => {
                let mut error = TokenError::from(OAuthError::invalid_request(description.to_owned()));
                error.status = Some(status);
                error.into_response()
            }
            Self::DataApi => ApiError::with_status(status, data_api_reason(status), description.into()).into_response(),
            Self::ConsoleApi => ConsoleApiError::unreadable(status, description).into_response(),
            Self::Page => super::noted(
                crate::views::notice(status, heading(status), description),
                data_api_reason(status),
                description,
                None,
            ),
        }
    }
}

fn data_api_reason(status: StatusCode) -> &'static str {
    match status {
        StatusCode::NOT_FOUND => "notFound",
        StatusCode::METHOD_NOT_ALLOWED => "httpMethodNotAllowed",
        StatusCode::PAYLOAD_TOO_LARGE => "requestTooLarge",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupportedMediaType",
        StatusCode::URI_TOO_LONG => "uriTooLong",
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => "headersTooLarge",
        StatusCode::REQUEST_TIMEOUT => "requestTimeout",
        _ => "badRequest",
    }
}

fn heading(status: StatusCode) -> &'static str {
    match status {
        StatusCode::NOT_FOUND => "Not found",
        StatusCode::METHOD_NOT_ALLOWED => "Not allowed",
        StatusCode::PAYLOAD_TOO_LARGE => "Too large",
        StatusCode::REQUEST_TIMEOUT => "Too slow",
        _ => "That did not work",
    }
}

/// The answer to a request that took longer than `limit` (its body sent too slowly, or its handler stuck): 408,
/// in the endpoint's format; the handler was dropped, so nothing it had not committed is kept.
pub fn timed_out(surface: Surface, limit: std::time::Duration) -> Response {
    crate::metrics::REQUEST_TIMEOUTS.inc();
    let description = format!("The request took longer than {} seconds.", limit.as_secs());
    surface.refuse(StatusCode::REQUEST_TIMEOUT, &description)
}

/// What a framework refusal says, by its status.
fn description(status: StatusCode) -> &'static str {
    match status {
        StatusCode::NOT_FOUND => "There is nothing at this address.",
        StatusCode::METHOD_NOT_ALLOWED => "This method is not allowed here; the Allow header lists those that are.",
        StatusCode::PAYLOAD_TOO_LARGE => "The request body is over 64 KiB.",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "The request's Content-Type is not one this endpoint reads.",
        StatusCode::URI_TOO_LONG => "The request's path and query are over 8 KiB.",
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => "The request's header fields are over 16 KiB.",
        _ => "The request could not be read.",
    }
}

/// Whether a response is the framework's own (plain text or no body type), not one of ours.
fn is_framework(response: &Response) -> bool {
    let status = response.status();
    status.is_client_error()
        && response.headers().get(header::CONTENT_TYPE).is_none_or(|v| v.as_bytes().starts_with(b"text/plain"))
}

/// Whether requests to `path` count against their address's rate limit (`crate::rate_limit`).
fn is_rate_limited(path: &str) -> bool {
    path == TOKEN_PATH || path == REVOKE_PATH || path == INTROSPECT_PATH || path == DEVICE_CODE_PATH
}

/// Lets a request through, unless its path and query or its header fields are over their limits (414, 431), its
/// address is over its rate limit (429, on the token, revocation, introspection and device authorization endpoints), or its body
/// is announced over the limit: then the body is read to [`DRAIN_LIMIT`] (so that the client, still sending, reads
/// the answer; beyond it the connection closes) and refused with 413 before any handler runs. Every other request costs one look at the body's size hint, which the server set from
/// `Content-Length` when it read the head (a body without one is bounded by the extractors' limit instead).
pub async fn admit(request: Request, surface: Surface, limits: &RateLimits) -> Result<Request, Response> {
    if request.uri().path_and_query().is_some_and(|p| p.as_str().len() > URL_LIMIT) {
        return Err(surface.refuse(StatusCode::URI_TOO_LONG, description(StatusCode::URI_TOO_LONG)));
    }
    if surface == Surface::OAuth && is_rate_limited(request.uri().path()) {
        if let Some(ClientAddr(peer)) = request.extensions().get::<ClientAddr>() {
            limits.admit_address(peer.ip()).map_err(|refused| TokenError::too_many(refused).into_response())?;
        }
    }
    let headers: usize = request.headers().iter().map(|(name, value)| name.as_str().len() + value.len()).sum();
    if headers > HEADERS_LIMIT {
        let status = StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE;
        return Err(surface.refuse(status, description(status)));
    }
    let length = request.body().size_hint().lower();
    if length <= BODY_LIMIT as u64 {
        return Ok(request);
    }
    let mut response = surface.refuse(StatusCode::PAYLOAD_TOO_LARGE, description(StatusCode::PAYLOAD_TOO_LARGE));
    if length > DRAIN_LIMIT || drain(request.into_body()).await.is_err() {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    Err(response)
}

/// Answers a refusal the framework made (a method not allowed, a body over the limit it found, a rejection) again in
/// the endpoint's format, its headers such as `Allow` kept. Our own responses pass untouched.
pub fn reword(surface: Surface, response: Response) -> Response {
    if !is_framework(&response) {
        return response;
    }
    let status = response.status();
    let mut ours = surface.refuse(status, description(status));
    for name in [header::ALLOW, header::CONNECTION] {
        if let Some(v) = response.headers().get(&name) {
            ours.headers_mut().insert(name, v.clone());
        }
    }
    ours
}

/// Reads a body to its end (at most [`DRAIN_LIMIT`]), keeping nothing.
async fn drain(body: Body) -> Result<(), ()> {
    let mut body = std::pin::pin!(body);
    let mut read = 0u64;
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        read += frame.map_err(drop)?.data_ref().map_or(0, |d| d.len() as u64);
        if read > DRAIN_LIMIT {
            return Err(());
        }
    }
    Ok(())
}

/// The token and revocation endpoints' refusal of a body that is not a form (415).
pub fn not_a_form() -> TokenError {
    let mut e = TokenError::from(OAuthError::new(
        ErrorCode::InvalidRequest,
        "Content-Type must be application/x-www-form-urlencoded.",
    ));
    e.status = Some(StatusCode::UNSUPPORTED_MEDIA_TYPE);
    e
}
