//! Where domain errors become protocol responses: the one place that maps them.
//!
//! - Token and revocation endpoints: RFC 6749 §5.2 JSON, 400 by default, 401 for `invalid_client`, 503 with
//!   `Retry-After` when the store is unavailable, always `Cache-Control: no-store`.
//! - Authorization endpoint: an error page when the client or redirect URI cannot be trusted, otherwise a
//!   redirect carrying `error`, `error_description`, `state` and `iss`.
//! - Data API: the platform's JSON error body, 401 with `WWW-Authenticate` (RFC 6750 §3) or 403.
//! - Console (pages and JSON API): administrative errors get their status in [`admin_status`]; the JSON API sends
//!   `{"error", "error_description", "field"}`.
//! - Store errors are logged here and become `server_error` or `temporarily_unavailable`.
//! - Refusals before a handler runs, or by the web framework (body too large, method not allowed, unknown path):
//!   [`refusal`], in the format of the endpoint asked.

pub mod refusal;

use crate::views;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use latchkey_admin::AdminError;
use latchkey_core::redirect;
use latchkey_core::{ErrorCode, OAuthError};
use latchkey_proto::ErrorResponse;
use latchkey_store::StoreError;

/// Seconds a client should wait before retrying when the store is unavailable.
pub const RETRY_AFTER_SECS: &str = "5";

/// What a refusal said, carried on its response to the router's middleware, which logs the refusal once at info
/// level with the request id and counts its code (`crate::metrics`). Only refusals carry one: a successful
/// response allocates nothing for it.
#[derive(Debug, Clone)]
pub struct RefusalNote {
    /// The error code: OAuth's, the data API's reason, or the console's.
    pub code: &'static str,
    /// What the response said.
    pub description: String,
    /// The client the request named, when known.
    pub client_id: Option<String>,
}

/// `response`, noted as a refusal. What goes to the log is made safe for it: a description can repeat what the
/// client sent, so control characters are escaped (no forged line), and a client id is kept only when it is short
/// and printable.
pub fn noted(mut response: Response, code: &'static str, description: &str, client_id: Option<String>) -> Response {
    let description = description
        .chars()
        .flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] })
        .collect();
    let client_id = client_id.filter(|id| id.len() <= 200 && id.bytes().all(|b| b.is_ascii_graphic()));
    response.extensions_mut().insert(RefusalNote { code, description, client_id });
    response
}

/// Logs a store failure and turns it into the protocol error that reports it.
pub fn store_error(e: StoreError) -> OAuthError {
    match e {
        StoreError::Unavailable(detail) => {
            tracing::warn!(%detail, "store unavailable");
            OAuthError::new(ErrorCode::TemporarilyUnavailable, "The service is temporarily unavailable; retry shortly.")
        }
        other => {
            tracing::error!(error = %other, "store failure");
            OAuthError::new(ErrorCode::ServerError, "The server encountered an unexpected condition.")
        }
    }
}

/// An error of the token or revocation endpoint.
#[derive(Debug)]
pub struct TokenError {
    /// The error.
    pub error: OAuthError,
    /// Whether the client authenticated with HTTP Basic (a 401 then names that scheme).
    pub basic_auth: bool,
    /// The status, when the request itself was refused (413, 415, 405) rather than the error code's.
    pub status: Option<StatusCode>,
    /// Seconds before the client may retry, when a rate limit refused the request (429).
    pub retry_after: Option<u64>,
    /// The client the request named, for the log line ([`RefusalNote`]).
    pub client_id: Option<String>,
}

impl From<OAuthError> for TokenError {
    fn from(error: OAuthError) -> Self {
        Self { error, basic_auth: false, status: None, retry_after: None, client_id: None }
    }
}

impl TokenError {
    /// A request over a rate limit: 429 `temporarily_unavailable` with `Retry-After` (RFC 6585 §4), the code
    /// RFC 6749 gives an overloaded server, so that a standard client treats it as worth retrying later.
    pub fn too_many(refused: crate::rate_limit::Refused) -> Self {
        let whose = match refused.by {
            crate::rate_limit::Subject::Address => "from this address",
            crate::rate_limit::Subject::Client => "for this client",
            crate::rate_limit::Subject::ApiKey => "with this API key",
        };
        crate::metrics::RATE_LIMITED.inc(match refused.by {
            crate::rate_limit::Subject::Address => "address",
            crate::rate_limit::Subject::Client => "client",
            crate::rate_limit::Subject::ApiKey => "api_key",
        });
        let secs = refused.retry_after_secs;
        let description = format!("Too many requests {whose}; retry after {secs} seconds.");
        let mut e = Self::from(OAuthError::new(ErrorCode::TemporarilyUnavailable, description));
        e.status = Some(StatusCode::TOO_MANY_REQUESTS);
        e.retry_after = Some(secs);
        e
    }
}

impl From<StoreError> for TokenError {
    fn from(e: StoreError) -> Self {
        store_error(e).into()
    }
}

impl IntoResponse for TokenError {
    fn into_response(self) -> Response {
        let status = self.status.unwrap_or_else(|| match self.error.code {
            // A device request the person declined is an error of the token request (RFC 8628 §3.5, RFC 6749 §5.2).
            ErrorCode::AccessDenied => StatusCode::BAD_REQUEST,
            code => status_of(code),
        });
        let code = self.error.code.as_str();
        let body =
            ErrorResponse { error: code.to_owned(), error_description: Some(self.error.description.into_owned()) };
        let description = body.error_description.as_deref().unwrap_or_default();
        let mut response = noted((status, no_store_json(&body)).into_response(), code, description, self.client_id);
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
        if status == StatusCode::UNAUTHORIZED {
            let scheme = match (self.basic_auth, self.error.code) {
                (true, _) => "Basic realm=\"latchkey\"",
                (false, ErrorCode::InvalidToken) => "Bearer realm=\"latchkey\", error=\"invalid_token\"",
                (false, _) => "Bearer realm=\"latchkey\"",
            };
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(scheme));
        }
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        } else if status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
        }
        response
    }
}

/// Serializes a body as JSON, with the JSON content type.
pub fn no_store_json<T: serde::Serialize>(body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], bytes).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "serializing a response");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// A failure at the authorization endpoint: shown on a page or sent back to the app.
#[derive(Debug)]
pub struct AuthorizeFailure {
    /// The error.
    pub error: OAuthError,
    /// Where to send it (redirect URI and state); `None` shows a page.
    pub redirect: Option<(String, Option<String>)>,
    /// The issuer, added to redirects (RFC 9207).
    pub issuer: String,
    /// The request's details for the error page, when the client or its redirect URI was refused.
    pub details: Option<Box<views::RequestDetails>>,
}

/// The HTTP status of an OAuth error code, wherever it is answered (the token and revocation endpoints' JSON,
/// the authorization endpoint's pages): 401 for a client that did not authenticate (RFC 6749 §5.2), 500 and 503
/// for the server's own failures, 403 for what the user or an organisation's policy refused (codes only the
/// authorization endpoint's pages carry), 400 for the rest.
pub fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::InvalidClient => StatusCode::UNAUTHORIZED,
        ErrorCode::ServerError => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::TemporarilyUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::AccessDenied | ErrorCode::AdminPolicyEnforced | ErrorCode::OrgInternal => StatusCode::FORBIDDEN,
        _ => StatusCode::BAD_REQUEST,
    }
}

impl AuthorizeFailure {
    /// A failure shown on a page.
    pub fn page(error: OAuthError, issuer: &str) -> Self {
        Self { error, redirect: None, issuer: issuer.to_owned(), details: None }
    }
}

impl IntoResponse for AuthorizeFailure {
    fn into_response(self) -> Response {
        match self.redirect {
            Some((uri, state)) if self.error.redirectable => {
                let mut params =
                    vec![("error", self.error.code.as_str()), ("error_description", &*self.error.description)];
                if let Some(s) = &state {
                    params.push(("state", s));
                }
                params.push(("iss", &self.issuer));
                let client_id = self.details.map(|d| d.client_id);
                let response = redirect_to_app(&redirect::with_params(&uri, &params));
                noted(response, self.error.code.as_str(), &self.error.description, client_id)
            }
            _ => {
                let status = status_of(self.error.code);
                let mut response = views::error_page(status, &self.error, self.details.as_deref());
                if status == StatusCode::SERVICE_UNAVAILABLE {
                    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
                }
                let client_id = self.details.map(|d| d.client_id);
                noted(response, self.error.code.as_str(), &self.error.description, client_id)
            }
        }
    }
}

/// A `303 See Other` to the app's redirect URI, never cached and with no referrer.
pub fn redirect_to_app(location: &str) -> Response {
    match HeaderValue::from_str(location) {
        Ok(value) => {
            let mut r = StatusCode::SEE_OTHER.into_response();
            let h = r.headers_mut();
            h.insert(header::LOCATION, value);
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
            r
        }
        Err(_) => {
            let error = OAuthError::page(ErrorCode::RedirectUriMismatch, "The redirect URI cannot be used.");
            noted(
                views::error_page(StatusCode::BAD_REQUEST, &error, None),
                error.code.as_str(),
                &error.description,
                None,
            )
        }
    }
}

/// An error of the data API, in the platform's JSON error format.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    reason: &'static str,
    message: String,
    www_authenticate: Option<String>,
}

impl ApiError {
    /// 401: no usable access token (RFC 6750 §3.1 `invalid_token`, or no credentials at all).
    pub fn unauthenticated(message: &str, token_sent: bool) -> Self {
        let challenge = if token_sent {
            format!("Bearer realm=\"latchkey\", error=\"invalid_token\", error_description=\"{message}\"")
        } else {
            "Bearer realm=\"latchkey\"".to_owned()
        };
        Self {
            status: StatusCode::UNAUTHORIZED,
            reason: "authError",
            message: message.to_owned(),
            www_authenticate: Some(challenge),
        }
    }

    /// 403: the token lacks every scope that allows the call.
    pub fn insufficient_scope(scopes: &str) -> Self {
        Self {
            status: StatusCode::FORBIDDEN,
            reason: "insufficientPermissions",
            message: "Request had insufficient authentication scopes.".into(),
            www_authenticate: Some(format!(
                "Bearer realm=\"latchkey\", error=\"insufficient_scope\", scope=\"{scopes}\""
            )),
        }
    }

    /// Points the challenge, if the error has one, at the protected resource's metadata (RFC 9728 §5.1), where a
    /// client finds the authorization server to get a token from.
    pub fn with_resource_metadata(mut self, url: &str) -> Self {
        if let Some(challenge) = &mut self.www_authenticate {
            challenge.push_str(", resource_metadata=\"");
            challenge.push_str(url);
            challenge.push('"');
        }
        self
    }

    /// 400 with a reason, for a bad parameter.
    pub fn bad_request(reason: &'static str, message: String) -> Self {
        Self { status: StatusCode::BAD_REQUEST, reason, message, www_authenticate: None }
    }

    /// 403 with a reason.
    pub fn forbidden(reason: &'static str, message: String) -> Self {
        Self { status: StatusCode::FORBIDDEN, reason, message, www_authenticate: None }
    }

    /// Any status with a reason (the refusals of [`refusal`]).
    pub fn with_status(status: StatusCode, reason: &'static str, message: String) -> Self {
        Self { status, reason, message, www_authenticate: None }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        store_error(e).into()
    }
}

impl From<OAuthError> for ApiError {
    /// The server's own failure (the store's, as [`store_error`] words it): 503 when it may pass, else 500.
    fn from(e: OAuthError) -> Self {
        let status = if e.code == ErrorCode::TemporarilyUnavailable {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        Self { status, reason: "backendError", message: e.description.into_owned(), www_authenticate: None }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "error": {
                "code": self.status.as_u16(),
                "message": self.message,
                "errors": [{ "message": self.message, "domain": "global", "reason": self.reason }],
            }
        });
        let mut response = noted((self.status, no_store_json(&body)).into_response(), self.reason, &self.message, None);
        if let Some(v) = self.www_authenticate.and_then(|v| HeaderValue::from_str(&v).ok()) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
        }
        response
    }
}

/// The status and the JSON API's error code of an administrative error (console pages and JSON API alike).
/// Store failures are logged here.
pub fn admin_status(e: &AdminError) -> (StatusCode, &'static str) {
    match e {
        AdminError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
        AdminError::Invalid(_) | AdminError::Fields(_) | AdminError::NotRestorable(..) | AdminError::Unconfirmed(_) => {
            (StatusCode::BAD_REQUEST, "invalid_request")
        }
        AdminError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
        AdminError::Conflict(_) | AdminError::AlreadyDeleted(_) => (StatusCode::CONFLICT, "conflict"),
        AdminError::TooSoon(..) => (StatusCode::TOO_MANY_REQUESTS, "too_many_requests"),
        AdminError::Store(StoreError::Unavailable(detail)) => {
            tracing::warn!(%detail, "store unavailable");
            (StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable")
        }
        AdminError::Store(other) => {
            tracing::error!(error = %other, "store failure");
            (StatusCode::INTERNAL_SERVER_ERROR, "server_error")
        }
    }
}

/// A refused registration (RFC 7591 §3.2.2, RFC 7592 §2): 403 `access_denied` while registration is closed,
/// 401 `invalid_token` for a registration access token that is not the client's, the store's failures as at the
/// token endpoint, and `invalid_client_metadata` for the rest.
pub fn registration_refusal(e: AdminError) -> TokenError {
    let (code, status) = match &e {
        AdminError::Forbidden(_) => (ErrorCode::AccessDenied, StatusCode::FORBIDDEN),
        AdminError::NotFound(_) => (ErrorCode::InvalidToken, StatusCode::UNAUTHORIZED),
        AdminError::Store(_) => {
            let (status, _) = admin_status(&e);
            let code = if status == StatusCode::SERVICE_UNAVAILABLE {
                ErrorCode::TemporarilyUnavailable
            } else {
                ErrorCode::ServerError
            };
            (code, status)
        }
        _ => (ErrorCode::InvalidClientMetadata, StatusCode::BAD_REQUEST),
    };
    let description = match &e {
        AdminError::NotFound(_) => "The registration access token is not valid for this client.".to_owned(),
        other => admin_message(other),
    };
    TokenError { status: Some(status), ..OAuthError::new(code, description).into() }
}

/// What a person reads about an administrative error: the message without its category.
pub fn admin_message(e: &AdminError) -> String {
    match e {
        AdminError::NotFound(what) => {
            let what = what.split(' ').next().unwrap_or("page");
            format!("There is no such {what}, or you are not a member of its project.")
        }
        AdminError::Invalid(m) | AdminError::Forbidden(m) | AdminError::Conflict(m) | AdminError::TooSoon(m) => {
            sentence(m)
        }
        AdminError::AlreadyDeleted(id) => sentence(&format!("client {id} is deleted already")),
        AdminError::NotRestorable(id, why) => sentence(&format!("client {id}: {why}")),
        AdminError::Unconfirmed(what) => sentence(&format!("{what} must be confirmed")),
        AdminError::Fields(errors) => errors.iter().map(|f| f.message.clone()).collect::<Vec<_>>().join(" "),
        AdminError::Store(StoreError::Unavailable(_)) => {
            "The service is temporarily unavailable; retry shortly.".into()
        }
        AdminError::Store(_) => "The server encountered an unexpected condition.".into(),
    }
}

/// A message starting with a capital and ending with a full stop.
fn sentence(m: &str) -> String {
    let mut chars = m.chars();
    let mut s: String = chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default();
    if !s.ends_with(['.', '!', '?']) {
        s.push('.');
    }
    s
}

/// What a console API key the service does not know is told.
const UNKNOWN_KEY: &str = "This API key is not one the service knows: it was revoked, its account is disabled, or it \
                           is mistyped. Make a new key on the console's API keys page.";

/// An error of the console's JSON API: `{"error", "error_description", "field", "fields"}` with the status of
/// [`admin_status`]; 401 with `WWW-Authenticate` when the API key is missing or wrong.
#[derive(Debug)]
pub struct ConsoleApiError {
    status: StatusCode,
    error: &'static str,
    description: String,
    fields: Vec<latchkey_core::client::FieldError>,
    /// Seconds before a retry, for a 429.
    retry_after: Option<u64>,
}

impl ConsoleApiError {
    /// 401: no API key, or not a valid one.
    pub fn unauthenticated() -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            error: "unauthorized",
            description: "Send a console API key: Authorization: Bearer lk_...".into(),
            fields: Vec::new(),
            retry_after: None,
        }
    }

    /// 401: an API key was sent, but not one the service knows (revoked, its account disabled, or mistyped).
    pub fn unknown_key() -> Self {
        Self { description: UNKNOWN_KEY.into(), ..Self::unauthenticated() }
    }

    /// 429: the API key is over its rate limit (or a stream already has a long poll waiting); retry after `secs`.
    pub fn too_many(description: impl Into<String>, secs: u64) -> Self {
        Self {
            status: StatusCode::TOO_MANY_REQUESTS,
            error: "too_many_requests",
            description: description.into(),
            fields: Vec::new(),
            retry_after: Some(secs),
        }
    }

    /// 400: the request body cannot be read.
    pub fn bad_request(description: impl Into<String>) -> Self {
        Self::unreadable(StatusCode::BAD_REQUEST, description)
    }

    /// `invalid_request` with the status of a request that could not be read (400, or 413 for a body too large).
    pub fn unreadable(status: StatusCode, description: impl Into<String>) -> Self {
        Self {
            status,
            error: "invalid_request",
            description: description.into(),
            fields: Vec::new(),
            retry_after: None,
        }
    }
}

impl From<AdminError> for ConsoleApiError {
    /// As on the pages, except that a refused restore is a conflict with the client's state (409), and an
    /// unconfirmed action names the body's `confirm` member.
    fn from(e: AdminError) -> Self {
        let (status, error) = match e {
            AdminError::NotRestorable(..) => (StatusCode::CONFLICT, "conflict"),
            _ => admin_status(&e),
        };
        let description = match e {
            AdminError::Unconfirmed(what) => sentence(&format!("{what} must be confirmed (\"confirm\": true)")),
            _ => admin_message(&e),
        };
        let fields = match e {
            AdminError::Fields(errors) => errors,
            _ => Vec::new(),
        };
        Self { status, error, description, fields, retry_after: None }
    }
}

impl From<StoreError> for ConsoleApiError {
    fn from(e: StoreError) -> Self {
        AdminError::Store(e).into()
    }
}

/// The body of a [`ConsoleApiError`] (the OpenAPI document's `ConsoleApiErrorBody`).
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct ConsoleApiErrorBody<'a> {
    /// The error code.
    #[schema(schema_with = latchkey_admin::schema::error_codes)]
    pub error: &'static str,
    /// What is wrong, for a person.
    pub error_description: &'a str,
    /// The first invalid field of the request body, when the error is about fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'static str>,
    /// Each invalid field with its message, when the error is about fields.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldMessage<'a>>,
}

/// An invalid field of a request body and what is wrong with it.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct FieldMessage<'a> {
    /// The field's name.
    pub field: &'static str,
    /// What is wrong with it.
    pub message: &'a str,
}

impl IntoResponse for ConsoleApiError {
    fn into_response(self) -> Response {
        let body = ConsoleApiErrorBody {
            error: self.error,
            error_description: &self.description,
            field: self.fields.first().map(|f| f.field),
            fields: self.fields.iter().map(|f| FieldMessage { field: f.field, message: &f.message }).collect(),
        };
        let response = (self.status, no_store_json(&body)).into_response();
        let mut response = noted(response, self.error, &self.description, None);
        let h = response.headers_mut();
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if self.status == StatusCode::UNAUTHORIZED {
            // RFC 6750 §3.1: a key that was sent and refused is an `invalid_token`; no key, no error code.
            let challenge = if self.description == UNKNOWN_KEY {
                "Bearer realm=\"latchkey-console\", error=\"invalid_token\""
            } else {
                "Bearer realm=\"latchkey-console\""
            };
            h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
        }
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            h.insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
        }
        if let Some(secs) = self.retry_after {
            h.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::{noted, RefusalNote};
    use axum::response::IntoResponse;

    #[test]
    fn a_refusal_note_escapes_what_would_forge_a_log_line_and_keeps_only_a_printable_client_id() {
        let sent = "Parameter sent more than once: a\n2026-11-27T00:00:00Z INFO forged=1";
        let response = noted(().into_response(), "invalid_request", sent, Some("bad\nid".into()));
        let note = response.extensions().get::<RefusalNote>().expect("noted");
        assert!(!note.description.contains('\n') && note.description.contains("a\\n2026"), "{}", note.description);
        assert_eq!(note.client_id, None, "an unprintable client id is not logged");
        let response = noted(().into_response(), "invalid_grant", "plain", Some("lkapp-1".into()));
        let note = response.extensions().get::<RefusalNote>().expect("noted");
        assert_eq!((note.description.as_str(), note.client_id.as_deref()), ("plain", Some("lkapp-1")));
    }
}
