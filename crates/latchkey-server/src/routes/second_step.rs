//! What follows a correct password: the session at once, the second-step page (`/signin/second-step`: an
//! authenticator app's code, a recovery code, or a passkey), enrolment when the person's organisation requires
//! 2-step verification and they have none (`/signin/enrol`), or a refusal under "passkeys only"
//! (`latchkey_core::sign_in::after_password` decides). Between the password and the second step the browser holds
//! only a short-lived proof of the password ([`crate::two_step::passed_cookie`]): no session exists until the
//! second step is done, so nothing reaches the consent page or the account page.

use super::session_start::{retry_after, safe_continue, see_other, signed_in, unavailable, NoSession};
use crate::extract::{self, ClientAddr, Pairs};
use crate::session;
use crate::signin_throttle::{self, NotChecked};
use crate::state::AppState;
use crate::two_step::{self, Passed};
use crate::views::{self, two_step::EnrolPage, two_step::RecoveryCodesPage, two_step::SecondStepPage};
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::Extension;
use latchkey_core::sign_in::{self, AfterPassword, Factors, Method};
use latchkey_store::{StoreError, User};
use std::collections::HashMap;

/// The page for a person whose organisation allows passkeys only.
const PASSKEYS_ONLY: &str = "Your organisation requires you to sign in with a passkey, not a password. Use \"Sign \
                             in with a passkey\" on the sign-in page. If you have no passkey yet, ask your \
                             administrator.";

/// What follows a correct password for `user` (not disabled), going on to `continue_to`.
pub(super) async fn after_password(
    state: &AppState,
    headers: &HeaderMap,
    user: &User,
    continue_to: &str,
) -> Result<Response, NoSession> {
    let next = match decide(state, user).await {
        Ok(next) => next,
        Err(e) => return Err(NoSession::Store(e)),
    };
    let to_step = |path: &str, enrol: bool| {
        let mut response = see_other(&format!("{path}?{}", query_of(continue_to)));
        let passed = Passed { user_id: user.id.clone(), enrol };
        response.headers_mut().append(header::SET_COOKIE, two_step::passed_cookie(state, headers, &passed));
        response
    };
    Ok(match next {
        AfterPassword::SignedIn => return signed_in(state, headers, &user.id, Method::Password, continue_to).await,
        AfterPassword::SecondStep { .. } => to_step("/signin/second-step", false),
        AfterPassword::Enrol => to_step("/signin/enrol", true),
        AfterPassword::PasskeysOnly => {
            tracing::info!(user_id = %user.id, "a password sign-in was refused: passkeys only");
            views::notice(StatusCode::FORBIDDEN, "Sign in with a passkey", PASSKEYS_ONLY)
        }
    })
}

async fn decide(state: &AppState, user: &User) -> Result<AfterPassword, StoreError> {
    let store = &state.store;
    let policy = match store.membership_of(&user.id).await? {
        Some((org_id, _)) => store.org(&org_id).await?.map(|o| o.sign_in).unwrap_or_default(),
        None => sign_in::Policy::default(),
    };
    let factors = Factors {
        password: !user.password_hash.is_empty(),
        totp: store.totp_of(&user.id).await?.is_some(),
        passkeys: !store.passkeys_of(&user.id).await?.is_empty(),
    };
    Ok(sign_in::after_password(factors, policy))
}

/// The browser's proof of a correct password and its account (not disabled), or the response that sends it back
/// to the sign-in page.
async fn passed_user(state: &AppState, headers: &HeaderMap, continue_to: &str) -> Result<(Passed, User), Response> {
    let again = || see_other(&format!("/signin?{}", query_of(continue_to)));
    let Some(passed) = two_step::passed(state, headers) else { return Err(again()) };
    match state.store.user(&passed.user_id).await {
        Ok(Some(u)) if u.disabled_at.is_none() => Ok((passed, u)),
        Ok(_) => Err(again()),
        Err(e) => Err(unavailable(e)),
    }
}

/// `GET /signin/second-step` and `GET /signin/enrol` (`?continue=...`): the page the browser's proof of a right
/// password asks for: enrolment when the organisation requires a second step the account lacks, else the second
/// step.
pub async fn step_get(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let continue_to = safe_continue(q.get("continue").map(String::as_str));
    let (passed, user) = match passed_user(&state, &headers, continue_to).await {
        Ok(p) => p,
        Err(page) => return page,
    };
    if passed.enrol {
        let (csrf, _) = session::login_csrf(&headers);
        let form = EnrolForm { action: "/signin/enrol", csrf: &csrf, account: None, continue_to, required: true };
        return enrol_page(&state, &user, form, &two_step::new_secret(), StatusCode::OK, None);
    }
    second_step_page(&state, &headers, &user, continue_to, StatusCode::OK, None).await
}

/// `continue=...`, for the pages' URLs.
fn query_of(continue_to: &str) -> String {
    form_urlencoded::Serializer::new(String::new()).append_pair("continue", continue_to).finish()
}

async fn second_step_page(
    state: &AppState,
    headers: &HeaderMap,
    user: &User,
    continue_to: &str,
    status: StatusCode,
    error: Option<&str>,
) -> Response {
    let totp = match state.store.totp_of(&user.id).await {
        Ok(t) => t.is_some(),
        Err(e) => return unavailable(e),
    };
    let (csrf, _) = session::login_csrf(headers);
    let passkeys = crate::passkeys::unavailable(&state.urls.issuer).is_none();
    views::page(status, &SecondStepPage { csrf: &csrf, continue_to, totp, passkeys, error })
}

/// Why a code was refused.
enum Refused {
    /// It matches nothing.
    Wrong,
    /// It matched a step (or a recovery code) used already.
    Used,
}

/// Checks a second step's code for `user`: an authenticator app's code (each time step counts once) or an unused
/// recovery code (used up here, with its event).
async fn check_code(state: &AppState, user: &User, typed: &str) -> Result<Result<(), Refused>, StoreError> {
    let now = state.clock.now();
    if sign_in::totp_code(typed).is_some() {
        let Some(totp) = state.store.totp_of(&user.id).await? else { return Ok(Err(Refused::Wrong)) };
        let secret = two_step::open_secret(state, &user.id, &totp.secret)?;
        let Some(step) = two_step::matching_step(&secret, typed, now) else { return Ok(Err(Refused::Wrong)) };
        return Ok(match state.store.totp_step_used(&user.id, step, now).await? {
            true => Ok(()),
            false => Err(Refused::Used),
        });
    }
    let Some(code) = sign_in::recovery_code(typed) else { return Ok(Err(Refused::Wrong)) };
    let hash = sign_in::recovery_code_hash(&user.id, &code);
    match latchkey_admin::two_step::use_code(&*state.store, &user.id, hash, now).await {
        Ok(true) => Ok(Ok(())),
        Ok(false) => Ok(Err(Refused::Used)),
        Err(e) => Err(StoreError::Other(e.to_string())),
    }
}

/// `POST /signin/second-step`: the code (`code`: an authenticator app's or a recovery code), counted under the
/// sign-in throttle's second-step keys; a right one starts the session.
pub async fn second_step_post(
    State(state): State<AppState>,
    addr: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form: Pairs = match extract::form(&headers, &body) {
        Ok(f) => f,
        Err(e) => return views::notice(StatusCode::BAD_REQUEST, "Bad request", &e.description),
    };
    let field = |name: &str| extract::field(&form, name);
    let continue_to = safe_continue(Some(field("continue")));
    let (_, user) = match passed_user(&state, &headers, continue_to).await {
        Ok(p) => p,
        Err(page) => return page,
    };
    let again = |status, why: &'static str| {
        let (state, headers, user) = (&state, &headers, &user);
        async move { second_step_page(state, headers, user, continue_to, status, Some(why)).await }
    };
    if !session::login_csrf_ok(&headers, field("csrf")) {
        return again(StatusCode::FORBIDDEN, "The form expired. Try again.").await;
    }
    let attempt = match signin_throttle::admit_second_step(&state, &user.id, addr.map(|Extension(a)| a.0.ip())).await {
        Ok(attempt) => attempt,
        Err(NotChecked::Throttled(secs)) => {
            let page = again(StatusCode::TOO_MANY_REQUESTS, "Too many wrong codes. Try again later.").await;
            return retry_after(page, secs);
        }
        Err(NotChecked::Busy) => return again(StatusCode::SERVICE_UNAVAILABLE, "Try again in a few seconds.").await,
        Err(NotChecked::Store(e)) => return unavailable(e),
    };
    let checked = match check_code(&state, &user, field("code")).await {
        Ok(c) => c,
        Err(e) => return unavailable(e),
    };
    if let Err(e) = attempt.settle(checked.is_ok()).await {
        return match e {
            NotChecked::Store(e) => unavailable(e),
            _ => again(StatusCode::SERVICE_UNAVAILABLE, "Try again in a few seconds.").await,
        };
    }
    match checked {
        Ok(()) => match signed_in(&state, &headers, &user.id, Method::TwoStep, continue_to).await {
            Ok(response) => response,
            Err(NoSession::TooMany(msg)) => views::notice(StatusCode::CONFLICT, "Too many accounts", &msg),
            Err(NoSession::Store(e)) => unavailable(e),
        },
        Err(Refused::Wrong) => {
            tracing::info!(user_id = %user.id, "a second step was refused: wrong code");
            again(StatusCode::UNAUTHORIZED, "That code is wrong. Check the app, or use a recovery code.").await
        }
        Err(Refused::Used) => {
            tracing::info!(user_id = %user.id, "a second step was refused: code used already");
            let why = "That code was used already. Wait for the app's next code, or use another recovery code.";
            again(StatusCode::UNAUTHORIZED, why).await
        }
    }
}

/// The parts of an enrolment page that depend on where it is shown.
pub(super) struct EnrolForm<'a> {
    /// Where the form goes.
    pub action: &'a str,
    /// Its CSRF token.
    pub csrf: &'a str,
    /// The account's id, on the account page's form.
    pub account: Option<&'a str>,
    /// Where a sign-in goes on to.
    pub continue_to: &'a str,
    /// Whether the organisation requires it.
    pub required: bool,
}

/// The enrolment page for `secret` (new, or the one the form brought back with a wrong code).
pub(super) fn enrol_page(
    state: &AppState,
    user: &User,
    form: EnrolForm<'_>,
    secret: &[u8],
    status: StatusCode,
    error: Option<&str>,
) -> Response {
    let enrolment = match two_step::seal_enrolment(state, &user.id, secret) {
        Ok(e) => e,
        Err(e) => return unavailable(e.into()),
    };
    let host = state.urls.issuer.parse::<axum::http::Uri>().ok().and_then(|u| u.host().map(str::to_owned));
    let issuer = format!("latchkey {}", host.unwrap_or_default());
    let qr_svg = two_step::qr_svg(secret, &issuer, &user.email);
    let page = EnrolPage {
        action: form.action,
        csrf: form.csrf,
        account: form.account,
        continue_to: form.continue_to,
        required: form.required,
        qr_svg: &qr_svg,
        secret_text: &two_step::secret_text(secret),
        enrolment: &enrolment,
        error,
    };
    views::page(status, &page)
}

/// Confirms an enrolment form (`enrolment`, `code`) for `user`: turns 2-step verification on with ten new recovery
/// codes, and counts the confirming code's time step as used. The codes as shown, or the page again.
pub(super) async fn confirm(
    state: &AppState,
    user: &User,
    form: &Pairs,
    page: EnrolForm<'_>,
) -> Result<Vec<String>, Response> {
    let field = |name: &str| extract::field(form, name);
    let Ok(secret) = two_step::open_enrolment(state, &user.id, field("enrolment")) else {
        let why = "This setup expired. Scan the new code and try again.";
        return Err(enrol_page(state, user, page, &two_step::new_secret(), StatusCode::BAD_REQUEST, Some(why)));
    };
    let now = state.clock.now();
    let Some(step) = two_step::matching_step(&secret, field("code"), now) else {
        let why = "That code is wrong. Check that the app shows this account, and enter its current code.";
        return Err(enrol_page(state, user, page, &secret, StatusCode::BAD_REQUEST, Some(why)));
    };
    let sealed = two_step::seal_secret(state, &user.id, &secret).map_err(|e| unavailable(e.into()))?;
    let (codes, hashes) = two_step::new_recovery_codes(&user.id);
    let store = &*state.store;
    match latchkey_admin::two_step::turn_on(store, &user.id, sealed, hashes, now).await {
        Ok(()) => {}
        Err(e) => return Err(views::notice(StatusCode::CONFLICT, "2-step verification", &e.to_string())),
    }
    store.totp_step_used(&user.id, step, now).await.map_err(unavailable)?;
    Ok(codes)
}

/// `POST /signin/enrol`: confirms the enrolment, starts the session (two steps: the password and the code), and
/// shows the recovery codes once, with the way on.
pub async fn enrol_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let form: Pairs = match extract::form(&headers, &body) {
        Ok(f) => f,
        Err(e) => return views::notice(StatusCode::BAD_REQUEST, "Bad request", &e.description),
    };
    let continue_to = safe_continue(Some(extract::field(&form, "continue")));
    let (passed, user) = match passed_user(&state, &headers, continue_to).await {
        Ok(p) => p,
        Err(page) => return page,
    };
    let (csrf, _) = session::login_csrf(&headers);
    if !session::login_csrf_ok(&headers, extract::field(&form, "csrf")) {
        return views::notice(StatusCode::FORBIDDEN, "This page has expired", "Sign in again.");
    }
    let page = EnrolForm { action: "/signin/enrol", csrf: &csrf, account: None, continue_to, required: passed.enrol };
    let codes = match confirm(&state, &user, &form, page).await {
        Ok(codes) => codes,
        Err(page) => return page,
    };
    let response = match signed_in(&state, &headers, &user.id, Method::TwoStep, continue_to).await {
        Ok(r) => r,
        Err(NoSession::TooMany(msg)) => return views::notice(StatusCode::CONFLICT, "Too many accounts", &msg),
        Err(NoSession::Store(e)) => return unavailable(e),
    };
    // The codes first, then the way on: the redirect's target becomes the page's link.
    let next = response.headers().get(header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("/").to_owned();
    let shown = views::page(
        StatusCode::OK,
        &RecoveryCodesPage { heading: "2-step verification is on", codes: &codes, next: &next },
    );
    let mut shown = shown;
    for c in response.headers().get_all(header::SET_COOKIE).iter().cloned() {
        shown.headers_mut().append(header::SET_COOKIE, c);
    }
    shown
}
