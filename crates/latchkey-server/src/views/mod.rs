//! Server-rendered pages: one askama struct per page, and the headers every page carries.
//!
//! Pages work without JavaScript, cannot be framed (`frame-ancestors 'none'`), are never cached and send no
//! referrer. Inputs keep the names browser automation relies on: `email`, `password`, `scope`, `decision`.

pub mod account;
pub mod console;
pub mod org_console;
pub mod resource_forms;
pub mod resources;
pub mod service_accounts;
pub mod two_step;

use askama::Template;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use latchkey_core::OAuthError;

/// The content security policy of every page: nothing but our own stylesheet and script files (no inline script),
/// and no framing. (No `form-action`: Chromium applies it to the redirect to the app after the consent form.)
pub const CSP: &str =
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'";

/// The sign-in page.
#[derive(Template)]
#[template(path = "login.html")]
pub struct LoginPage<'a> {
    /// The app asking, when there is one.
    pub app_name: Option<&'a str>,
    /// A message for a failed attempt.
    pub error: Option<&'a str>,
    /// The CSRF token.
    pub csrf: &'a str,
    /// Where to go after signing in (a path of ours).
    pub continue_to: &'a str,
    /// The pre-filled e-mail address (`login_hint`).
    pub email: &'a str,
    /// Whether passkeys are available on this server ("Sign in with a passkey").
    pub passkeys: bool,
}

/// One scope on the consent page.
pub struct ConsentScope<'a> {
    /// The scope identifier, the checkbox value.
    pub id: &'a str,
    /// What it allows.
    pub summary: &'a str,
    /// Whether the box is ticked.
    pub checked: bool,
    /// The API service it gives access to (`None` for an identity scope: `openid`, `email`, `profile`).
    pub api: Option<&'a str>,
}

/// One access period offered on the consent page (time-based access).
pub struct Period {
    /// The seconds, the radio button's value (0: until removed).
    pub secs: i64,
    /// Its label.
    pub label: &'static str,
}

/// The consent page.
#[derive(Template)]
#[template(path = "consent.html")]
pub struct ConsentPage<'a> {
    /// The client's name.
    pub app_name: &'a str,
    /// Who is signed in.
    pub user_email: &'a str,
    /// The account chooser, to continue as another account.
    pub switch_href: &'a str,
    /// The access periods offered (time-based access), none when the project does not offer them.
    pub periods: Vec<Period>,
    /// The requested scopes.
    pub scopes: Vec<ConsentScope<'a>>,
    /// Whether the app gets all the requested scopes or none (an app the account's organisation trusts): no
    /// checkbox per scope.
    pub all_or_none: bool,
    /// The CSRF token.
    pub csrf: &'a str,
    /// The authorization request, form-encoded (or a device's user code), carried through the form.
    pub request: &'a str,
    /// Where the form goes (the authorization endpoint, or `/device/consent`).
    pub action: &'a str,
    /// A warning above the permissions (a device's request: only go on for a device you own).
    pub warning: Option<&'a str>,
    /// Where an app that registered itself comes from (`registered itself`, or its metadata document's host):
    /// the page says it is unverified.
    pub unverified: Option<String>,
    /// A message when the form was sent without a choice.
    pub error: Option<&'a str>,
}

/// One account on the chooser: its address and where choosing it leads.
pub struct Choice<'a> {
    /// The account's e-mail address.
    pub email: &'a str,
    /// Its display name, if any.
    pub name: Option<&'a str>,
    /// Continue as this account.
    pub href: String,
}

/// The account chooser: every signed-in account, most recently used first, and "Use another account".
#[derive(Template)]
#[template(path = "select_account.html")]
pub struct SelectAccountPage<'a> {
    /// The client's name.
    pub app_name: &'a str,
    /// The signed-in accounts.
    pub accounts: Vec<Choice<'a>>,
    /// Sign in with another account.
    pub switch_href: &'a str,
}

/// The "Request details" of an error page about a client or its redirect URI: what the app sent and, for its
/// developer, what the client accepts. Never another client's data, never a secret.
#[derive(Debug, Clone, Default)]
pub struct RequestDetails {
    /// The `client_id` sent.
    pub client_id: String,
    /// The client's name, when the client exists.
    pub client_name: Option<String>,
    /// The client's type, when the client exists.
    pub client_type: Option<&'static str>,
    /// The `redirect_uri` sent.
    pub redirect_uri: Option<String>,
    /// The forms of redirect URI the client accepts.
    pub accepted: Vec<String>,
    /// A hint for the likely cause.
    pub hint: Option<&'static str>,
}

/// A user-facing error.
#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    heading: &'a str,
    status: u16,
    code: &'a str,
    description: &'a str,
    details: Option<&'a RequestDetails>,
    /// Where to continue as another account, if another may be let in.
    another_account: Option<&'a str>,
    /// The request's id, also in the log line of the refusal.
    request_id: &'a str,
}

/// A plain message.
#[derive(Template)]
#[template(path = "notice.html")]
pub struct NoticePage<'a> {
    /// The heading.
    pub heading: &'a str,
    /// The message.
    pub message: &'a str,
}

/// The home page `/`: the signed-in accounts, with links to the account page and the developer console.
#[derive(Template)]
#[template(path = "home.html")]
pub struct HomePage<'a> {
    /// The signed-in accounts' e-mail addresses and ids, most recently used first.
    pub accounts: Vec<(&'a str, &'a str)>,
}

/// Renders a page with the headers every page carries.
pub fn page(status: StatusCode, template: &impl Template) -> Response {
    match template.render() {
        Ok(html) => {
            let mut r = (status, html).into_response();
            let h = r.headers_mut();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
            h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
            h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
            h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
            r
        }
        Err(e) => {
            tracing::error!(error = %e, "rendering a page");
            (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response()
        }
    }
}

/// The user-facing error page for an error of the authorization endpoint. It is rendered here without the
/// request's id, and carries what it shows ([`ErrorPageParts`]) so that the router's middleware, which makes the id,
/// renders it again with it ([`with_request_id`]): a request answered as asked pays nothing for the id.
pub fn error_page(status: StatusCode, error: &OAuthError, details: Option<&RequestDetails>) -> Response {
    let heading = match error.code {
        latchkey_core::ErrorCode::ServerError | latchkey_core::ErrorCode::TemporarilyUnavailable => {
            "Something went wrong"
        }
        latchkey_core::ErrorCode::AdminPolicyEnforced => "Access blocked: your organisation's policy",
        latchkey_core::ErrorCode::OrgInternal => "Access blocked: this app is for its organisation's accounts",
        _ => "Access blocked: this app's request is invalid",
    };
    let parts = ErrorPageParts {
        heading,
        status: status.as_u16(),
        code: error.code.as_str(),
        description: error.description.clone().into_owned(),
        details: details.cloned(),
        another_account: None,
    };
    let mut response = page(status, &parts.page(""));
    response.extensions_mut().insert(parts);
    response
}

/// What an error page shows, kept on its response until the request's id is known.
#[derive(Debug, Clone)]
pub struct ErrorPageParts {
    heading: &'static str,
    status: u16,
    code: &'static str,
    description: String,
    details: Option<RequestDetails>,
    /// Where to continue as another account, when another account may be let in (an organisation's refusal).
    another_account: Option<String>,
}

impl ErrorPageParts {
    fn page<'a>(&'a self, request_id: &'a str) -> ErrorPage<'a> {
        ErrorPage {
            heading: self.heading,
            status: self.status,
            code: self.code,
            description: &self.description,
            details: self.details.as_ref(),
            another_account: self.another_account.as_deref(),
            request_id,
        }
    }
}

/// An error page that offers to continue as another account (`href`, the account chooser): an organisation
/// refused this account, and another may be let in. Any other response as it is.
pub fn offering_another_account(mut response: Response, href: String) -> Response {
    let Some(parts) = response.extensions_mut().get_mut::<ErrorPageParts>() else { return response };
    parts.another_account = Some(href);
    // Rendered again now, and once more with the request's id by `with_request_id`.
    match parts.page("").render() {
        Ok(html) => *response.body_mut() = axum::body::Body::from(html),
        Err(e) => tracing::error!(error = %e, "rendering a page"),
    }
    response.headers_mut().remove(header::CONTENT_LENGTH);
    response
}

/// An error page's body again, now with the request's id; any other response as it is.
pub fn with_request_id(mut response: Response, request_id: &str) -> Response {
    let Some(parts) = response.extensions_mut().remove::<ErrorPageParts>() else { return response };
    match parts.page(request_id).render() {
        Ok(html) => *response.body_mut() = axum::body::Body::from(html),
        Err(e) => tracing::error!(error = %e, "rendering a page"),
    }
    response.headers_mut().remove(header::CONTENT_LENGTH);
    response
}

/// A page with a heading and a message.
pub fn notice(status: StatusCode, heading: &str, message: &str) -> Response {
    page(status, &NoticePage { heading, message })
}

/// The device flow's page where the person enters the code their device shows.
#[derive(Template)]
#[template(path = "device.html")]
pub struct DevicePage<'a> {
    /// The session's CSRF token.
    pub csrf: &'a str,
    /// The account entering the code.
    pub account: &'a str,
    /// Its e-mail address.
    pub email: &'a str,
    /// The code as typed or pre-filled.
    pub user_code: &'a str,
    /// Why the last code was refused.
    pub error: Option<&'a str>,
}
