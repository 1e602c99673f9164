//! Passkeys on the account page (add, remove) and on the sign-in page ("Sign in with a passkey", and the e-mail
//! field's autofill). `/static/passkeys.js` runs each ceremony: it asks for the options, hands them to
//! `navigator.credentials`, and posts the answer back, each request a form with its CSRF token. The options and
//! the answers are JSON: `{ "ceremony", "options" }`, then `{ "next" }` (where to go) or `{ "error" }` (what to
//! say on the page).
//!
//! A sign-in with a passkey asks for no e-mail address: the passkey names its account (discoverable credentials,
//! no `allowCredentials`), and user verification is required, so it stands for both steps of a sign-in.

use super::account::{back_to, failed, field, signed_form};
use super::session_start::{continue_as, safe_continue, start_session, NoSession};
use crate::extract;
use crate::extract::Pairs;
use crate::passkeys::{self, CeremonyError};
use crate::session;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use latchkey_admin::passkeys::{add_passkey, remove_passkey};
use latchkey_admin::AdminError;
use latchkey_core::passkey::{self as rules, PasskeyRecord};
use latchkey_core::sign_in::Method;
use serde_json::json;
use webauthn_rs::prelude::{
    DiscoverableAuthentication, DiscoverableKey, Passkey, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential, Webauthn,
};

/// A JSON answer, never cached.
fn json_answer(status: StatusCode, body: serde_json::Value) -> Response {
    let mut r = (status, axum::Json(body)).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// What the page says when a step failed.
fn refused(status: StatusCode, message: &str) -> Response {
    json_answer(status, json!({ "error": message }))
}

fn ceremony_refused(e: CeremonyError) -> Response {
    match e {
        CeremonyError::Expired => refused(StatusCode::BAD_REQUEST, &e.to_string()),
        CeremonyError::Store(e) => store_failed(e),
    }
}

fn store_failed(e: latchkey_store::StoreError) -> Response {
    let e = crate::error::store_error(e);
    refused(StatusCode::SERVICE_UNAVAILABLE, &e.description)
}

/// Passkeys are unavailable on this server (its public URL names an IP address): why.
fn unavailable(why: &str) -> Response {
    refused(StatusCode::CONFLICT, why)
}

/// The relying party and the authenticator's answer (the form's `credential`) of a ceremony that finishes, or the
/// status and what to say.
fn answer_of<T: serde::de::DeserializeOwned>(
    state: &AppState,
    form: &Pairs,
) -> Result<(Webauthn, T), (StatusCode, String)> {
    let rp = passkeys::relying_party(&state.urls.issuer).map_err(|why| (StatusCode::CONFLICT, why))?;
    let answer = serde_json::from_str(field(form, "credential"))
        .map_err(|_| (StatusCode::BAD_REQUEST, "The passkey's answer could not be read. Try again.".to_owned()))?;
    Ok((rp, answer))
}

/// `POST /account/passkeys/options`: the options of a new passkey for the account (its name checked first).
pub async fn add_options_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let (browser, form, i) = match signed_form(&state, &headers, &body).await {
        Ok(ok) => ok,
        Err(page) => return page,
    };
    let user = &browser.accounts[i].user;
    if let Err(why) = rules::name(field(&form, "name")) {
        return refused(StatusCode::BAD_REQUEST, why);
    }
    let rp = match passkeys::relying_party(&state.urls.issuer) {
        Ok(rp) => rp,
        Err(why) => return unavailable(&why),
    };
    let existing = match state.store.passkeys_of(&user.id).await {
        Ok(list) => list,
        Err(e) => return store_failed(e),
    };
    let exclude =
        existing.iter().filter_map(|k| URL_SAFE_NO_PAD.decode(&k.credential_id).ok()).map(Into::into).collect();
    let display = user.name.as_deref().unwrap_or(&user.email);
    let (options, registration) =
        match rp.start_passkey_registration(passkeys::user_handle(&user.id), &user.email, display, Some(exclude)) {
            Ok(started) => started,
            Err(e) => return refused(StatusCode::INTERNAL_SERVER_ERROR, &format!("Passkeys failed: {e}")),
        };
    // A discoverable credential, so that signing in needs no e-mail address (the library asks for none by default;
    // nothing of it is checked when the answer comes back).
    let mut options = serde_json::to_value(options).unwrap_or_default();
    if let Some(selection) = options.pointer_mut("/publicKey/authenticatorSelection").and_then(|s| s.as_object_mut()) {
        selection.insert("residentKey".into(), "required".into());
        selection.insert("requireResidentKey".into(), true.into());
    }
    match passkeys::begin(&*state.store, Some(&user.id), &registration, state.clock.now()).await {
        Ok(ceremony) => json_answer(StatusCode::OK, json!({ "ceremony": ceremony, "options": options })),
        Err(e) => ceremony_refused(e),
    }
}

/// `POST /account/passkeys`: the authenticator's answer; the passkey is added to the account.
pub async fn add_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let (browser, form, i) = match signed_form(&state, &headers, &body).await {
        Ok(ok) => ok,
        Err(page) => return page,
    };
    let s = &browser.accounts[i];
    let name = match rules::name(field(&form, "name")) {
        Ok(n) => n,
        Err(why) => return refused(StatusCode::BAD_REQUEST, why),
    };
    let (rp, answer) = match answer_of::<RegisterPublicKeyCredential>(&state, &form) {
        Ok(ok) => ok,
        Err((status, why)) => return refused(status, &why),
    };
    let now = state.clock.now();
    let registration = match passkeys::finish::<PasskeyRegistration>(&*state.store, field(&form, "ceremony"), now).await
    {
        Ok((Some(owner), registration)) if owner == s.user.id => registration,
        Ok(_) => return ceremony_refused(CeremonyError::Expired),
        Err(e) => return ceremony_refused(e),
    };
    let key = match rp.finish_passkey_registration(&answer, &registration) {
        Ok(k) => k,
        Err(e) => {
            tracing::info!(user_id = %s.user.id, error = %e, "a passkey registration was refused");
            return refused(StatusCode::BAD_REQUEST, "The passkey could not be verified, so it was not added.");
        }
    };
    let Ok(credential) = serde_json::to_string(&key) else {
        return refused(StatusCode::INTERNAL_SERVER_ERROR, "The passkey could not be kept.");
    };
    let record = PasskeyRecord {
        credential_id: URL_SAFE_NO_PAD.encode(key.cred_id()),
        user_id: s.user.id.clone(),
        name,
        credential,
        created_at: now,
        last_used_at: None,
    };
    match add_passkey(&*state.store, record, now).await {
        Ok(()) => {
            tracing::info!(user_id = %s.user.id, "passkey added");
            let next = format!("/account?authuser={}&done=passkey_added", s.user.id);
            json_answer(StatusCode::OK, json!({ "next": next }))
        }
        Err(AdminError::Conflict(_)) => refused(StatusCode::CONFLICT, "This passkey is registered already."),
        Err(AdminError::Store(e)) => store_failed(e),
        Err(e) => refused(StatusCode::BAD_REQUEST, &e.to_string()),
    }
}

/// `POST /account/passkeys/remove`: removes one of the account's passkeys; the account's other sessions end.
pub async fn remove_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let (browser, form, i) = match signed_form(&state, &headers, &body).await {
        Ok(ok) => ok,
        Err(page) => return page,
    };
    let s = &browser.accounts[i];
    let keep = Some(s.session.token_hash.clone());
    let id = field(&form, "credential_id");
    match remove_passkey(&*state.store, &s.user.id, id, keep, state.clock.now()).await {
        Ok(()) => back_to(s, "passkey_removed"),
        Err(e) => failed(&state, &browser, s, e).await,
    }
}

/// `POST /signin/passkey/options`: the options of a sign-in with any passkey of this server.
pub async fn signin_options_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let form = extract::pairs(&body);
    if !session::login_csrf_ok(&headers, field(&form, "csrf")) {
        return refused(StatusCode::FORBIDDEN, "The sign-in form expired. Reload the page and try again.");
    }
    let rp = match passkeys::relying_party(&state.urls.issuer) {
        Ok(rp) => rp,
        Err(why) => return unavailable(&why),
    };
    let (options, authentication) = match rp.start_discoverable_authentication() {
        Ok(started) => started,
        Err(e) => return refused(StatusCode::INTERNAL_SERVER_ERROR, &format!("Passkeys failed: {e}")),
    };
    match passkeys::begin(&*state.store, None, &authentication, state.clock.now()).await {
        Ok(ceremony) => json_answer(StatusCode::OK, json!({ "ceremony": ceremony, "options": options })),
        Err(e) => ceremony_refused(e),
    }
}

/// `POST /signin/passkey`: the passkey's answer; its account is signed in, and the page goes on.
pub async fn signin_post(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let form = extract::pairs(&body);
    if !session::login_csrf_ok(&headers, field(&form, "csrf")) {
        return refused(StatusCode::FORBIDDEN, "The sign-in form expired. Reload the page and try again.");
    }
    let (rp, answer) = match answer_of::<PublicKeyCredential>(&state, &form) {
        Ok(ok) => ok,
        Err((status, why)) => return refused(status, &why),
    };
    let now = state.clock.now();
    let authentication =
        match passkeys::finish::<DiscoverableAuthentication>(&*state.store, field(&form, "ceremony"), now).await {
            Ok((None, a)) => a,
            Ok(_) => return ceremony_refused(CeremonyError::Expired),
            Err(e) => return ceremony_refused(e),
        };
    let unknown =
        || refused(StatusCode::UNAUTHORIZED, "This passkey is not registered here. It may have been removed.");
    let Ok((handle, credential_id)) = rp.identify_discoverable_authentication(&answer) else { return unknown() };
    let record = match state.store.passkey(&URL_SAFE_NO_PAD.encode(credential_id)).await {
        Ok(Some(r)) if passkeys::user_handle(&r.user_id) == handle => r,
        Ok(_) => return unknown(),
        Err(e) => return store_failed(e),
    };
    let Ok(mut key) = serde_json::from_str::<Passkey>(&record.credential) else { return unknown() };
    let result = match rp.finish_discoverable_authentication(&answer, authentication, &[DiscoverableKey::from(&key)]) {
        Ok(r) => r,
        Err(e) => {
            tracing::info!(user_id = %record.user_id, error = %e, "a passkey sign-in was refused");
            return refused(StatusCode::UNAUTHORIZED, "The passkey could not be verified. Try again.");
        }
    };
    key.update_credential(&result);
    let credential = serde_json::to_string(&key).unwrap_or(record.credential);
    if let Err(e) = state.store.passkey_used(&record.credential_id, &credential, now).await {
        return store_failed(e);
    }
    let user = match state.store.user(&record.user_id).await {
        Ok(Some(u)) => u,
        Ok(None) => return unknown(),
        Err(e) => return store_failed(e),
    };
    if user.disabled_at.is_some() {
        return refused(StatusCode::FORBIDDEN, "This account is disabled.");
    }
    let cookie = match start_session(&state, &headers, &user.id, Method::Passkey).await {
        Ok(c) => c,
        Err(NoSession::TooMany(msg)) => return refused(StatusCode::CONFLICT, &msg),
        Err(NoSession::Store(e)) => return store_failed(e),
    };
    tracing::info!(user_id = %user.id, "signed in with a passkey");
    let next = continue_as(safe_continue(Some(field(&form, "continue"))), &user.id);
    let mut response = json_answer(StatusCode::OK, json!({ "next": next }));
    response.headers_mut().append(header::SET_COOKIE, cookie);
    response
}
