//! The account page (`GET /account`) and its actions: "Remove access" for an app, a new password, and "Sign out of
//! all other sessions". Every action is a form of one signed-in account (`account`, a user id) with that account's
//! CSRF token, answered by a redirect back to the page (or the page again with the reason it failed).

use super::authorize::{browser_failure, unknown_account};
use super::session_start::{retry_after, BUSY_RETRY_SECS};
use crate::error::{admin_message, admin_status};
use crate::extract::{self, ClientAddr, Pairs};
use crate::session::{self, Browser, SignedIn};
use crate::signin_throttle::{self, NotChecked};
use crate::state::AppState;
use crate::views::{self, account::AccountPage, account::Switch};
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use latchkey_admin::accounts::{self, AppAccess};
use latchkey_admin::AdminError;
use std::collections::HashMap;

/// What a finished action says on the page it returns to (`done=`); nothing the request wrote is shown.
fn notice_of(done: Option<&str>) -> Option<&'static str> {
    match done? {
        "removed" => Some("The app's access was removed. It can no longer use your account."),
        "password" => Some("Your password was changed. Every other session of this account was signed out."),
        "sessions" => Some("Every other session of this account was signed out."),
        "passkey_added" => Some("The passkey was added. You can sign in with it instead of your password."),
        "passkey_removed" => Some("The passkey was removed. Every other session of this account was signed out."),
        "two_step_on" => Some("2-step verification is on. Signing in with your password now also asks for a code."),
        "two_step_off" => Some("2-step verification is off. Every other session of this account was signed out."),
        "recovery_codes" => Some("You have new recovery codes. The old ones no longer work."),
        "password_removed" => {
            Some("Your password was removed: you sign in with a passkey. Every other session was signed out.")
        }
        _ => None,
    }
}

/// `GET /account[?authuser=ID]`: the page of one signed-in account (the most recently used by default).
pub async fn account_get(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let browser = match session::accounts(&state, &headers).await {
        Ok(b) => b,
        Err(e) => return browser_failure(&state, e),
    };
    if browser.accounts.is_empty() {
        return see_other("/signin?continue=/account");
    }
    let shown = match q.get("authuser") {
        Some(id) => browser.find(id),
        None => browser.accounts.first(),
    };
    let Some(shown) = shown else { return unknown_account() };
    render(&state, &browser, shown, StatusCode::OK, notice_of(q.get("done").map(String::as_str)), None).await
}

/// `POST /account/apps/remove`: revokes every grant of `client_id` for the account.
pub async fn apps_remove_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let (browser, form, i) = match signed_form(&state, &headers, &body).await {
        Ok(ok) => ok,
        Err(page) => return page,
    };
    let s = &browser.accounts[i];
    let client_id = field(&form, "client_id");
    match accounts::remove_app_access(&*state.store, &s.user, client_id, state.clock.now()).await {
        Ok(_) => back_to(s, "removed"),
        Err(AdminError::NotFound(_)) => {
            let why = Some("That app has no access to this account: nothing was changed.");
            render(&state, &browser, s, StatusCode::NOT_FOUND, None, why).await
        }
        Err(e) => failed(&state, &browser, s, e).await,
    }
}

/// `POST /account/password`: the current password, then the new one; every other session of the account ends.
/// The current password is checked under the sign-in throttle, like a sign-in: a stolen session cookie does not
/// let anyone guess it faster.
pub async fn password_post(
    State(state): State<AppState>,
    addr: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (browser, form, i) = match signed_form(&state, &headers, &body).await {
        Ok(ok) => ok,
        Err(page) => return page,
    };
    let s = &browser.accounts[i];
    let current = field(&form, "current_password");
    let checked = match signin_throttle::admit(&state, &s.user.id, addr.map(|Extension(a)| a.0.ip())).await {
        // An account without a password (passkey only) sets one: its session is the proof.
        Ok(_) if s.user.password_hash.is_empty() => Ok(true),
        Ok(_) if current.is_empty() => Ok(false),
        Ok(attempt) => attempt.check(current, Some(s.user.password_hash.clone())).await,
        Err(refused) => Err(refused),
    };
    let ok = match checked {
        Ok(ok) => ok,
        Err(NotChecked::Throttled(secs)) => {
            let why = format!("Too many wrong passwords. Try again in {} minutes.", secs.div_ceil(60));
            let page = render(&state, &browser, s, StatusCode::TOO_MANY_REQUESTS, None, Some(&why)).await;
            return retry_after(page, secs);
        }
        Err(NotChecked::Busy) => {
            let why = "Too many passwords are being checked right now. Try again in a few seconds.";
            let page = render(&state, &browser, s, StatusCode::SERVICE_UNAVAILABLE, None, Some(why)).await;
            return retry_after(page, BUSY_RETRY_SECS);
        }
        Err(NotChecked::Store(e)) => return failed(&state, &browser, s, e.into()).await,
    };
    let keep = Some(s.session.token_hash.clone());
    let now = state.clock.now();
    match accounts::change_password(&*state.store, &s.user, ok, field(&form, "new_password"), keep, now).await {
        Ok(()) => back_to(s, "password"),
        Err(e) => failed(&state, &browser, s, e).await,
    }
}

/// `POST /account/sessions/end-others`: every session of the account but this browser's ends.
pub async fn end_others_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let (browser, _, i) = match signed_form(&state, &headers, &body).await {
        Ok(ok) => ok,
        Err(page) => return page,
    };
    let s = &browser.accounts[i];
    let keep = Some(s.session.token_hash.clone());
    match accounts::end_other_sessions(&*state.store, &s.user, keep, state.clock.now()).await {
        Ok(_) => back_to(s, "sessions"),
        Err(e) => failed(&state, &browser, s, e).await,
    }
}

pub(super) use crate::extract::field;

/// The form of an action, its account (signed in in this browser) and that account's CSRF token checked: the
/// browser, the form and the account's index, or the page that refuses it.
pub(super) async fn signed_form(
    state: &AppState,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(Browser, Pairs, usize), Response> {
    let form = extract::form(headers, body)
        .map_err(|e| views::notice(StatusCode::BAD_REQUEST, "Bad request", &e.description))?;
    let browser = session::accounts(state, headers).await.map_err(|e| browser_failure(state, e))?;
    let Some(i) = browser.accounts.iter().position(|s| s.user.id == field(&form, "account")) else {
        return Err(if browser.accounts.is_empty() {
            see_other("/signin?continue=/account")
        } else {
            unknown_account()
        });
    };
    if !session::csrf_ok(state, &browser.accounts[i].session, field(&form, "csrf")) {
        return Err(views::notice(StatusCode::FORBIDDEN, "This page has expired", "Reload the page and try again."));
    }
    Ok((browser, form, i))
}

async fn render(
    state: &AppState,
    browser: &Browser,
    shown: &SignedIn,
    status: StatusCode,
    notice: Option<&str>,
    error: Option<&str>,
) -> Response {
    let apps: Vec<AppAccess> =
        match accounts::apps_of(&*state.store, &shown.user, &state.scopes.get(), state.clock.now()).await {
            Ok(list) => list.apps,
            Err(e) => return views::notice(admin_status(&e).0, "Something went wrong", &admin_message(&e)),
        };
    let passkeys = match state.store.passkeys_of(&shown.user.id).await {
        Ok(list) => list,
        Err(e) => return browser_failure(state, session::BrowserError::Store(e)),
    };
    let (totp, codes) =
        match (state.store.totp_of(&shown.user.id).await, state.store.recovery_codes_of(&shown.user.id).await) {
            (Ok(t), Ok(c)) => (t, c),
            (Err(e), _) | (_, Err(e)) => return browser_failure(state, session::BrowserError::Store(e)),
        };
    let unavailable = crate::passkeys::unavailable(&state.urls.issuer);
    let csrf = session::csrf_token(state, &shown.session);
    let switches = browser
        .accounts
        .iter()
        .map(|a| Switch { email: &a.user.email, id: &a.user.id, current: a.user.id == shown.user.id })
        .collect();
    let page = AccountPage {
        email: &shown.user.email,
        user_id: &shown.user.id,
        csrf: &csrf,
        accounts: switches,
        apps: &apps,
        passkeys: &passkeys,
        passkeys_unavailable: unavailable.as_deref(),
        has_password: !shown.user.password_hash.is_empty(),
        two_step_since: totp.map(|t| t.created_at.0),
        recovery_codes_left: codes.unused,
        notice,
        error,
    };
    views::page(status, &page)
}

pub(super) async fn failed(state: &AppState, browser: &Browser, s: &SignedIn, e: AdminError) -> Response {
    let (status, _) = admin_status(&e);
    render(state, browser, s, status, None, Some(&admin_message(&e))).await
}

pub(super) fn back_to(s: &SignedIn, done: &str) -> Response {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("authuser", &s.user.id).append_pair("done", done);
    see_other(&format!("/account?{}", query.finish()))
}

fn see_other(location: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}
