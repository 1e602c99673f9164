//! Starting a session once a sign-in succeeded (a password, a password and a second step, or a passkey), and
//! where it goes on to: shared by the sign-in page, the second step and the passkey sign-in.

use super::AUTHORIZE_PATH;
use crate::session::{self, StartError};
use crate::state::AppState;
use crate::views;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use latchkey_core::sign_in::Method;

/// Seconds to wait when the password gate's queue is full.
pub const BUSY_RETRY_SECS: u64 = 2;

/// A refusal with `Retry-After` (RFC 9110 §10.2.3).
pub fn retry_after(mut response: Response, secs: u64) -> Response {
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    response
}

/// Signs `user_id` in by `method` and goes on to `continue_to` as that account; the second-step cookie, if any,
/// goes.
pub(super) async fn signed_in(
    state: &AppState,
    headers: &HeaderMap,
    user_id: &str,
    method: Method,
    continue_to: &str,
) -> Result<Response, NoSession> {
    let cookie = start_session(state, headers, user_id, method).await?;
    tracing::info!(user_id = %user_id, method = method.as_str(), "signed in");
    let mut response = see_other(&continue_as(continue_to, user_id));
    let h = response.headers_mut();
    h.append(header::SET_COOKIE, cookie);
    if session::cookie(headers, crate::two_step::SECOND_STEP_COOKIE).is_some() {
        h.append(header::SET_COOKIE, crate::two_step::clear_passed_cookie());
    }
    Ok(response)
}

/// A `303 See Other` to `location` (a path of ours), never cached.
pub(super) fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    let h = response.headers_mut();
    h.insert(header::LOCATION, HeaderValue::from_str(location).unwrap_or(HeaderValue::from_static("/")));
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

/// Starts a session of `user_id` in this browser, signed in by `method` (password and passkey sign-ins alike): its
/// cookie. A cookie we could not have set is replaced: the browser starts over with this account.
pub(super) async fn start_session(
    state: &AppState,
    headers: &HeaderMap,
    user_id: &str,
    method: Method,
) -> Result<HeaderValue, NoSession> {
    let browser = session::accounts_or_none(state, headers).await.map_err(NoSession::Store)?;
    session::start(state, &browser, user_id, method).await.map_err(|e| match e {
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

/// Where a sign-in may continue to: only our own authorization endpoint, the account page, the console, the device
/// page or the home page (no open redirect).
pub(super) fn safe_continue(target: Option<&str>) -> &str {
    let ours = |t: &str| {
        t.starts_with(&format!("{AUTHORIZE_PATH}?"))
            || t == "/account"
            || t.starts_with("/account?")
            || t == "/console"
            || t.starts_with("/console/")
            || t.starts_with("/console?")
            || t == "/device"
            || t.starts_with("/device?")
    };
    match target {
        Some(t) if ours(t) && !t.contains(['\r', '\n', '\\']) => t,
        _ => "/",
    }
}

pub(super) fn unavailable(e: latchkey_store::StoreError) -> Response {
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
        assert_eq!(super::safe_continue(Some("/device?user_code=BCDF-GHJK")), "/device?user_code=BCDF-GHJK");
        assert_eq!(super::safe_continue(Some("/devices")), "/");
    }

    #[test]
    fn signing_in_continues_as_the_account_just_signed_in() {
        let next = super::continue_as("/o/oauth2/v2/auth?client_id=c&authuser=old&state=s%20t", "42");
        assert_eq!(next, "/o/oauth2/v2/auth?client_id=c&state=s+t&authuser=42");
        assert_eq!(super::continue_as("/account", "42"), "/account?authuser=42");
        assert_eq!(super::continue_as("/console/projects", "42"), "/console/projects");
    }
}
