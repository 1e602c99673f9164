//! The account page's sign-in actions beyond passkeys: turning 2-step verification on (`/account/two-step/start`
//! shows the QR code, `/account/two-step` confirms it with a code) and off, a new set of recovery codes, and
//! removing the password ("passkey only"). Each is a form of one signed-in account with its CSRF token.

use super::account::{back_to, failed, signed_form};
use super::second_step::{confirm, enrol_page, EnrolForm};
use crate::session;
use crate::state::AppState;
use crate::two_step;
use crate::views::{self, two_step::RecoveryCodesPage};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use latchkey_admin::two_step as ops;

fn account_form<'a>(csrf: &'a str, user_id: &'a str) -> EnrolForm<'a> {
    EnrolForm { action: "/account/two-step", csrf, account: Some(user_id), continue_to: "/account", required: false }
}

/// The account page of `user_id` after showing something once (`done`).
fn account_url(user_id: &str, done: &str) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("authuser", user_id).append_pair("done", done);
    format!("/account?{}", query.finish())
}

/// `POST /account/two-step/start`: the enrolment page with a new secret.
pub async fn start_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let (browser, _, i) = match signed_form(&state, &headers, &body).await {
        Ok(ok) => ok,
        Err(page) => return page,
    };
    let s = &browser.accounts[i];
    let csrf = session::csrf_token(&state, &s.session);
    enrol_page(&state, &s.user, account_form(&csrf, &s.user.id), &two_step::new_secret(), StatusCode::OK, None)
}

/// `POST /account/two-step`: confirms the enrolment with a code, then shows the recovery codes once.
pub async fn confirm_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let (browser, form, i) = match signed_form(&state, &headers, &body).await {
        Ok(ok) => ok,
        Err(page) => return page,
    };
    let s = &browser.accounts[i];
    let csrf = session::csrf_token(&state, &s.session);
    match confirm(&state, &s.user, &form, account_form(&csrf, &s.user.id)).await {
        Ok(codes) => {
            let next = account_url(&s.user.id, "two_step_on");
            views::page(
                StatusCode::OK,
                &RecoveryCodesPage { heading: "2-step verification is on", codes: &codes, next: &next },
            )
        }
        Err(page) => page,
    }
}

/// `POST /account/two-step/off`: turns 2-step verification off; every other session of the account ends.
pub async fn off_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let (browser, _, i) = match signed_form(&state, &headers, &body).await {
        Ok(ok) => ok,
        Err(page) => return page,
    };
    let s = &browser.accounts[i];
    let keep = Some(s.session.token_hash.clone());
    match ops::turn_off(&*state.store, &s.user.id, keep, state.clock.now()).await {
        Ok(()) => back_to(s, "two_step_off"),
        Err(e) => failed(&state, &browser, s, e).await,
    }
}

/// `POST /account/recovery-codes`: a new set of recovery codes, shown once; the old set stops working.
pub async fn recovery_codes_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let (browser, _, i) = match signed_form(&state, &headers, &body).await {
        Ok(ok) => ok,
        Err(page) => return page,
    };
    let s = &browser.accounts[i];
    let (codes, hashes) = two_step::new_recovery_codes(&s.user.id);
    match ops::renew_codes(&*state.store, &s.user.id, hashes, state.clock.now()).await {
        Ok(()) => {
            let next = account_url(&s.user.id, "recovery_codes");
            views::page(
                StatusCode::OK,
                &RecoveryCodesPage { heading: "New recovery codes", codes: &codes, next: &next },
            )
        }
        Err(e) => failed(&state, &browser, s, e).await,
    }
}

/// `POST /account/password/remove`: the account signs in with passkeys only; every other session ends.
pub async fn remove_password_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let (browser, _, i) = match signed_form(&state, &headers, &body).await {
        Ok(ok) => ok,
        Err(page) => return page,
    };
    let s = &browser.accounts[i];
    let keep = Some(s.session.token_hash.clone());
    match ops::remove_password(&*state.store, &s.user.id, keep, state.clock.now()).await {
        Ok(()) => back_to(s, "password_removed"),
        Err(e) => failed(&state, &browser, s, e).await,
    }
}
