//! Browser sessions and CSRF tokens.
//!
//! The session cookie is `__Host-` prefixed, Secure, HttpOnly and SameSite=Lax; the store keeps only its hash.
//! Forms of a signed-in user carry a CSRF token bound to the session (an HMAC of the session's hash under the
//! server key); the sign-in form, which comes before any session, uses a double-submit cookie.

use crate::clock::OsRandom;
use crate::state::AppState;
use axum::http::{header, HeaderMap, HeaderValue};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use latchkey_core::secret::{self, Secret};
use latchkey_store::{Session, StoreResult, User};

/// The session cookie.
pub const SESSION_COOKIE: &str = "__Host-lk_session";
/// The sign-in form's double-submit cookie.
pub const LOGIN_CSRF_COOKIE: &str = "__Host-lk_csrf";

/// A signed-in user.
#[derive(Debug, Clone)]
pub struct SignedIn {
    /// The session.
    pub session: Session,
    /// The user.
    pub user: User,
}

/// The value of a cookie in the request.
pub fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A `Set-Cookie` value for one of our cookies; `max_age` 0 removes it.
pub fn set_cookie(name: &str, value: &str, max_age: i64) -> HeaderValue {
    HeaderValue::from_str(&format!("{name}={value}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age={max_age}"))
        .unwrap_or_else(|_| HeaderValue::from_static("invalid=1; Max-Age=0"))
}

/// The signed-in user of the request, if the session is live and the user enabled.
pub async fn current(state: &AppState, headers: &HeaderMap) -> StoreResult<Option<SignedIn>> {
    let Some(token) = cookie(headers, SESSION_COOKIE) else { return Ok(None) };
    let now = state.clock.now();
    let Some(session) = state.store.session(&secret::hash(token), now).await? else { return Ok(None) };
    let Some(user) = state.store.user(&session.user_id).await? else { return Ok(None) };
    Ok(Some(SignedIn { session, user }))
}

/// Starts a session: stores it and returns the `Set-Cookie` value.
pub async fn start(state: &AppState, user_id: &str) -> StoreResult<HeaderValue> {
    let now = state.clock.now();
    let token = Secret::generate("", &OsRandom);
    let lifetime = state.config.session_lifetime;
    state
        .store
        .create_session(&Session {
            token_hash: token.hash(),
            user_id: user_id.to_owned(),
            created_at: now,
            expires_at: now.plus(lifetime),
        })
        .await?;
    Ok(set_cookie(SESSION_COOKIE, token.expose(), lifetime))
}

/// The CSRF token of a session's forms.
pub fn csrf_token(state: &AppState, session: &Session) -> String {
    let keys = state.keys.get();
    URL_SAFE_NO_PAD.encode(keys.mac_signer().tag(&csrf_input(session)))
}

/// Whether `token` is the CSRF token of `session` (under any live key, in constant time).
pub fn csrf_ok(state: &AppState, session: &Session, token: &str) -> bool {
    let Ok(tag) = URL_SAFE_NO_PAD.decode(token) else { return false };
    let input = csrf_input(session);
    state.keys.get().mac.iter().any(|k| k.verify_tag(&input, &tag))
}

fn csrf_input(session: &Session) -> Vec<u8> {
    let mut v = b"latchkey-csrf:".to_vec();
    v.extend_from_slice(&session.token_hash);
    v
}

/// The sign-in form's CSRF token: the cookie's value if the browser has one, else a new one to set.
pub fn login_csrf(headers: &HeaderMap) -> (String, Option<HeaderValue>) {
    match cookie(headers, LOGIN_CSRF_COOKIE).filter(|v| v.len() >= 32) {
        Some(v) => (v.to_owned(), None),
        None => {
            let token = secret::random_b64(32, &OsRandom);
            let set = set_cookie(LOGIN_CSRF_COOKIE, &token, 86_400);
            (token, Some(set))
        }
    }
}

/// Whether the sign-in form's token matches its cookie.
pub fn login_csrf_ok(headers: &HeaderMap, form_token: &str) -> bool {
    cookie(headers, LOGIN_CSRF_COOKIE)
        .is_some_and(|c| c.len() >= 32 && secret::ct_eq(c.as_bytes(), form_token.as_bytes()))
}
