//! The sign-in page (`GET`/`POST /signin`), sign-out, and the home page.

use super::session_start::{retry_after, safe_continue, unavailable, NoSession, BUSY_RETRY_SECS};
use crate::error::noted;
use crate::extract::{self, ClientAddr};
use crate::metrics;
use crate::session;
use crate::signin_throttle::{self, NotChecked};
use crate::state::AppState;
use crate::views::{self, LoginPage};
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use std::collections::HashMap;

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
    match super::second_step::after_password(&state, &headers, &user, continue_to).await {
        Ok(response) => response,
        Err(NoSession::TooMany(msg)) => again("too_many_accounts", StatusCode::CONFLICT, &msg),
        Err(NoSession::Store(e)) => unavailable(e),
    }
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
