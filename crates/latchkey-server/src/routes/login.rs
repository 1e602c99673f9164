//! The sign-in page (`GET`/`POST /signin`), sign-out, and the home page.

use super::AUTHORIZE_PATH;
use crate::error::noted;
use crate::extract::{self, ClientAddr};
use crate::metrics;
use crate::session::{self, StartError};
use crate::signin_throttle::{self, NotChecked};
use crate::state::AppState;
use crate::views::{self, LoginPage};
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use std::collections::HashMap;

/// Seconds to wait when the password gate's queue is full.
pub const BUSY_RETRY_SECS: u64 = 2;

/// A refusal with `Retry-After` (RFC 9110 §10.2.3).
pub fn retry_after(mut response: Response, secs: u64) -> Response {
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    response
}

/// Renders the sign-in page, setting its CSRF cookie when the browser has none.
pub fn login_page(
    state: &AppState,
    headers: &HeaderMap,
    status: StatusCode,
    app_name: Option<&str>,
    error: Option<&str>,
    continue_to: &str,
    email: &str,
) -> Response {
    let (csrf, set_cookie) = session::login_csrf(headers);
    let passkeys = crate::passkeys::unavailable(&state.urls.issuer).is_none();
    let page = LoginPage { app_name, error, csrf: &csrf, continue_to, email, passkeys };
    let mut response = views::page(status, &page);
    if let Some(c) = set_cookie {
        response.headers_mut().append(header::SET_COOKIE, c);
    }
    response
}

/// `GET /signin?continue=...`.
pub async fn signin_get(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let continue_to = safe_continue(q.get("continue").map(String::as_str));
    login_page(&state, &headers, StatusCode::OK, None, None, continue_to, "")
}

/// `POST /signin`: checks the password, starts a session and goes on.
pub async fn signin_post(
    State(state): State<AppState>,
    addr: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = match extract::form(&headers, &body) {
        Ok(f) => f,
        Err(e) => return views::notice(StatusCode::BAD_REQUEST, "Bad request", &e.description),
    };
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or("");
    let continue_to = safe_continue(Some(field("continue")));
    let email = field("email").trim();
    // A refused sign-in: the form again with the message, counted by reason and logged once as a refusal (the
    // reason as its code; no client: the sign-in page serves every app).
    let again = |reason: &'static str, status, msg: &str| {
        metrics::SIGNIN_FAILURES.inc(reason);
        noted(login_page(&state, &headers, status, None, Some(msg), continue_to, email), reason, msg, None)
    };
    if !session::login_csrf_ok(&headers, field("csrf")) {
        return again("form_expired", StatusCode::FORBIDDEN, "The sign-in form expired. Try again.");
    }
    if email.is_empty() || field("password").is_empty() {
        return again("incomplete", StatusCode::BAD_REQUEST, "Enter your email and password.");
    }
    let user = match state.store.user_by_email(email).await {
        Ok(u) => u,
        Err(e) => return unavailable(e),
    };
    let account = user.as_ref().map_or_else(|| email.to_lowercase(), |u| u.id.clone());
    let checked = match signin_throttle::admit(&state, &account, addr.map(|Extension(a)| a.0.ip())).await {
        Ok(attempt) => attempt.check(field("password"), user.as_ref().map(|u| u.password_hash.clone())).await,
        Err(refused) => Err(refused),
    };
    let ok = match checked {
        Ok(ok) => ok,
        Err(NotChecked::Throttled(secs)) => {
            let minutes = secs.div_ceil(60);
            let msg = format!("Too many failed attempts. Try again in {minutes} minutes.");
            return retry_after(again("throttled", StatusCode::TOO_MANY_REQUESTS, &msg), secs);
        }
        Err(NotChecked::Busy) => {
            let msg = "Too many people are signing in right now. Try again in a few seconds.";
            return retry_after(again("busy", StatusCode::SERVICE_UNAVAILABLE, msg), BUSY_RETRY_SECS);
        }
        Err(NotChecked::Store(e)) => return unavailable(e),
    };
    let user = match user {
        Some(u) if ok => u,
        _ => {
            let reason = if user.is_some() { "wrong_password" } else { "unknown_account" };
            return again(reason, StatusCode::UNAUTHORIZED, "Wrong email or password.");
        }
    };
    if user.disabled_at.is_some() {
        return again("disabled", StatusCode::FORBIDDEN, "This account is disabled.");
    }
    let cookie = match start_session(&state, &headers, &user.id).await {
        Ok(c) => c,
        Err(NoSession::TooMany(msg)) => return again("too_many_accounts", StatusCode::CONFLICT, &msg),
        Err(NoSession::Store(e)) => return unavailable(e),
    };
    tracing::info!(user_id = %user.id, "signed in");
    let next = continue_as(continue_to, &user.id);
    let mut response = StatusCode::SEE_OTHER.into_response();
    let h = response.headers_mut();
    h.append(header::SET_COOKIE, cookie);
    h.insert(header::LOCATION, HeaderValue::from_str(&next).unwrap_or(HeaderValue::from_static("/")));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Why a sign-in that succeeded starts no session.
pub(super) enum NoSession {
    /// The browser holds as many accounts as it may: what to say.
    TooMany(String),
    /// The store failed.
    Store(latchkey_store::StoreError),
}

/// Starts a session of `user_id` in this browser (password and passkey sign-ins alike): its cookie. A cookie we
/// could not have set is replaced: the browser starts over with this account.
pub(super) async fn start_session(
    state: &AppState,
    headers: &HeaderMap,
    user_id: &str,
) -> Result<HeaderValue, NoSession> {
    let browser = session::accounts_or_none(state, headers).await.map_err(NoSession::Store)?;
    session::start(state, &browser, user_id).await.map_err(|e| match e {
        StartError::TooMany(n) => NoSession::TooMany(format!(
            "This browser is signed in to {n} accounts, the most it may hold. Sign out of one of them on your \
             account page, then sign in again."
        )),
        StartError::Store(e) => NoSession::Store(e),
    })
}

/// Where to go after signing in as `user_id`: the authorization request or the account page goes on as the account
/// just signed in (`authuser`), whichever other accounts the browser holds.
pub(super) fn continue_as(continue_to: &str, user_id: &str) -> String {
    let (path, query) = continue_to.split_once('?').unwrap_or((continue_to, ""));
    if path != AUTHORIZE_PATH && path != "/account" {
        return continue_to.to_owned();
    }
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in form_urlencoded::parse(query.as_bytes()).filter(|(k, _)| k != "authuser") {
        out.append_pair(&k, &v);
    }
    out.append_pair("authuser", user_id);
    format!("{path}?{}", out.finish())
}

/// `POST /signout`: signs the browser out of one account (`account`, a user id; default the most recently used
/// one) or, with `all`, out of every account. The form's CSRF token is that of the account named.
pub async fn signout_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let form = extract::pairs(&body);
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let mut response = StatusCode::SEE_OTHER.into_response();
    response.headers_mut().insert(header::LOCATION, HeaderValue::from_static("/"));
    let browser = match session::accounts_or_none(&state, &headers).await {
        Ok(b) => b,
        Err(e) => return unavailable(e),
    };
    let target = match field("account") {
        Some(id) => browser.find(id),
        None => browser.accounts.first(),
    };
    // No account of this browser named (or no cookie sent, as from a cross-site form): nothing to do. Clearing the
    // cookie here would let any site sign the browser out of every account with a form, without a CSRF token.
    let Some(target) = target else { return response };
    if !session::csrf_ok(&state, &target.session, field("csrf").unwrap_or("")) {
        return views::notice(StatusCode::FORBIDDEN, "This page has expired", "Reload the page and try again.");
    }
    let all = field("all").is_some_and(|v| !v.is_empty());
    let ending = browser.accounts.iter().filter(|s| all || s.user.id == target.user.id);
    for s in ending {
        if let Err(e) = state.store.delete_session(&s.session.token_hash).await {
            return unavailable(e);
        }
    }
    let cookie = match all {
        true => session::clear_session_cookie(),
        false => browser.cookie_without(&target.user.id, state.config.session_lifetime),
    };
    response.headers_mut().append(header::SET_COOKIE, cookie);
    response
}

/// `GET /`: the signed-in accounts, with links to the account page and the developer console.
pub async fn home_get(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let browser = match session::accounts_or_none(&state, &headers).await {
        Ok(b) => b,
        Err(e) => return unavailable(e),
    };
    let accounts = browser.accounts.iter().map(|s| (s.user.email.as_str(), s.user.id.as_str())).collect();
    views::page(StatusCode::OK, &views::HomePage { accounts })
}

/// Where a sign-in may continue to: only our own authorization endpoint, the account page, the console or the home
/// page (no open redirect).
pub(super) fn safe_continue(target: Option<&str>) -> &str {
    let ours = |t: &str| {
        t.starts_with(&format!("{AUTHORIZE_PATH}?"))
            || t == "/account"
            || t.starts_with("/account?")
            || t == "/console"
            || t.starts_with("/console/")
            || t.starts_with("/console?")
    };
    match target {
        Some(t) if ours(t) && !t.contains(['\r', '\n', '\\']) => t,
        _ => "/",
    }
}

fn unavailable(e: latchkey_store::StoreError) -> Response {
    let e = crate::error::store_error(e);
    views::error_page(StatusCode::SERVICE_UNAVAILABLE, &e, None)
}

#[cfg(test)]
mod tests {
    #[test]
    fn continue_targets_stay_on_the_authorization_endpoint() {
        assert_eq!(super::safe_continue(Some("/o/oauth2/v2/auth?client_id=x")), "/o/oauth2/v2/auth?client_id=x");
        assert_eq!(super::safe_continue(Some("https://evil.example/")), "/");
        assert_eq!(super::safe_continue(Some("//evil.example/o/oauth2/v2/auth?")), "/");
        assert_eq!(super::safe_continue(None), "/");
        assert_eq!(super::safe_continue(Some("/console/projects/p1")), "/console/projects/p1");
        assert_eq!(super::safe_continue(Some("/consoles")), "/");
        assert_eq!(super::safe_continue(Some("/console\\evil")), "/");
        assert_eq!(super::safe_continue(Some("/account")), "/account");
        assert_eq!(super::safe_continue(Some("/accounts")), "/");
    }

    #[test]
    fn signing_in_continues_as_the_account_just_signed_in() {
        let next = super::continue_as("/o/oauth2/v2/auth?client_id=c&authuser=old&state=s%20t", "42");
        assert_eq!(next, "/o/oauth2/v2/auth?client_id=c&state=s+t&authuser=42");
        assert_eq!(super::continue_as("/account", "42"), "/account?authuser=42");
        assert_eq!(super::continue_as("/console/projects", "42"), "/console/projects");
    }
}
