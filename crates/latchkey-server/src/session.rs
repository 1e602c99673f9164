//! Browser sessions of several accounts, and CSRF tokens.
//!
//! A browser may be signed in to several accounts at once (at most `max_accounts_per_browser`). The session
//! cookie is `__Host-` prefixed, Secure, HttpOnly and SameSite=Lax; its value lists one session token per account,
//! most recently used first, separated by dots. Each token is 32 random bytes (43 characters), so the cookie's size
//! is bounded by the number of accounts (10 accounts: 440 characters). The store keeps only each token's hash, one
//! session row per account: ending one account's session leaves the others. Forms of a signed-in account carry a
//! CSRF token bound to that account's session (an HMAC of the session's hash under the server key); the sign-in
//! form, which comes before any session, uses a double-submit cookie.

use crate::state::AppState;
use axum::http::{header, HeaderMap, HeaderValue};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use latchkey_admin::clock::OsRandom;
use latchkey_core::secret::{self, Secret};
use latchkey_store::{Session, StoreError, StoreResult, User};

/// The session cookie.
pub const SESSION_COOKIE: &str = "__Host-lk_session";
/// The sign-in form's double-submit cookie.
pub const LOGIN_CSRF_COOKIE: &str = "__Host-lk_csrf";
/// The length of one session token in the cookie.
const TOKEN_LEN: usize = 43;

/// A signed-in account of the browser.
#[derive(Debug, Clone)]
pub struct SignedIn {
    /// The session.
    pub session: Session,
    /// The user.
    pub user: User,
}

/// The accounts a browser is signed in to, most recently used first.
#[derive(Debug, Default)]
pub struct Browser {
    /// The live accounts.
    pub accounts: Vec<SignedIn>,
    /// The cookie's token of each live account, in the same order.
    tokens: Vec<Secret>,
    /// Whether the cookie names sessions that have ended (it is written anew on the next change).
    pub stale: bool,
}

/// Why the browser's accounts could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The session cookie is not one we set (wrong form, or more accounts than allowed).
    #[error("the session cookie cannot be read")]
    Tampered,
}

/// Why an account could not be added to the browser.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The browser holds the most accounts allowed.
    #[error("this browser is signed in to {0} accounts, the most allowed")]
    TooMany(usize),
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

/// The `Set-Cookie` value that removes the session cookie.
pub fn clear_session_cookie() -> HeaderValue {
    set_cookie(SESSION_COOKIE, "", 0)
}

/// The session tokens of the cookie; a value we could not have set is [`BrowserError::Tampered`].
pub fn cookie_tokens(headers: &HeaderMap, max: usize) -> Result<Vec<&str>, BrowserError> {
    let Some(value) = cookie(headers, SESSION_COOKIE).filter(|v| !v.is_empty()) else { return Ok(Vec::new()) };
    let tokens: Vec<&str> = value.split('.').collect();
    let well_formed =
        |t: &&str| t.len() == TOKEN_LEN && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if tokens.len() > max || !tokens.iter().all(well_formed) {
        return Err(BrowserError::Tampered);
    }
    Ok(tokens)
}

/// The accounts the browser is signed in to: each live session of an enabled user, most recently used first.
pub async fn accounts(state: &AppState, headers: &HeaderMap) -> Result<Browser, BrowserError> {
    let now = state.clock.now();
    let mut browser = Browser::default();
    for token in cookie_tokens(headers, state.config.max_accounts_per_browser)? {
        let found = match state.store.session(&secret::hash(token), now).await? {
            Some(session) => state.store.user(&session.user_id).await?.map(|user| SignedIn { session, user }),
            None => None,
        };
        match found {
            Some(s) if browser.find(&s.user.id).is_none() => {
                browser.accounts.push(s);
                browser.tokens.push(Secret::new(token.to_owned()));
            }
            _ => browser.stale = true,
        }
    }
    Ok(browser)
}

/// [`accounts`], where a cookie that cannot be read counts as no account (for pages that replace or clear it, or
/// show nothing of it).
pub async fn accounts_or_none(state: &AppState, headers: &HeaderMap) -> StoreResult<Browser> {
    match accounts(state, headers).await {
        Ok(b) => Ok(b),
        Err(BrowserError::Tampered) => Ok(Browser::default()),
        Err(BrowserError::Store(e)) => Err(e),
    }
}

/// The browser's most recently used account, if any (a cookie that cannot be read counts as none).
pub async fn current(state: &AppState, headers: &HeaderMap) -> StoreResult<Option<SignedIn>> {
    let mut b = accounts_or_none(state, headers).await?;
    Ok((!b.accounts.is_empty()).then(|| b.accounts.swap_remove(0)))
}

impl Browser {
    /// The signed-in account with this user id.
    pub fn find(&self, user_id: &str) -> Option<&SignedIn> {
        self.accounts.iter().find(|s| s.user.id == user_id)
    }

    /// The signed-in account a `login_hint` names: by e-mail address (case-insensitive) or by user id (`sub`).
    pub fn hinted(&self, hint: &str) -> Option<&SignedIn> {
        self.accounts.iter().find(|s| s.user.email.eq_ignore_ascii_case(hint) || s.user.id == hint)
    }

    /// The cookie with the tokens in `order` (indexes into the accounts).
    fn cookie_of(&self, order: impl Iterator<Item = usize>, lifetime: i64) -> HeaderValue {
        let value: Vec<&str> = order.map(|i| self.tokens[i].expose()).collect();
        if value.is_empty() {
            return clear_session_cookie();
        }
        set_cookie(SESSION_COOKIE, &value.join("."), lifetime)
    }

    /// The cookie with `user_id`'s account moved first (the chooser lists accounts by last use).
    pub fn cookie_with_first(&self, user_id: &str, lifetime: i64) -> HeaderValue {
        let first = self.accounts.iter().position(|s| s.user.id == user_id);
        let rest = (0..self.accounts.len()).filter(move |i| Some(*i) != first);
        self.cookie_of(first.into_iter().chain(rest), lifetime)
    }

    /// The cookie without `user_id`'s account (removed when no account is left).
    pub fn cookie_without(&self, user_id: &str, lifetime: i64) -> HeaderValue {
        self.cookie_of((0..self.accounts.len()).filter(|i| self.accounts[*i].user.id != user_id), lifetime)
    }
}

/// Signs `user_id` in in this browser beside its other accounts, by `method`: stores a new session (ending the
/// account's earlier one in this browser) and returns the `Set-Cookie` value with the account first.
pub async fn start(
    state: &AppState,
    browser: &Browser,
    user_id: &str,
    method: latchkey_core::sign_in::Method,
) -> Result<HeaderValue, StartError> {
    let max = state.config.max_accounts_per_browser;
    let earlier = browser.find(user_id);
    if earlier.is_none() && browser.accounts.len() >= max {
        return Err(StartError::TooMany(max));
    }
    let now = state.clock.now();
    let token = Secret::generate("", &OsRandom);
    let lifetime = state.config.session_lifetime;
    let session = Session {
        token_hash: token.hash(),
        user_id: user_id.to_owned(),
        created_at: now,
        expires_at: now.plus(lifetime),
        method,
    };
    state.store.create_session(&session).await?;
    if let Some(e) = earlier {
        state.store.delete_session(&e.session.token_hash).await?;
    }
    let mut value = vec![token.expose()];
    value.extend(
        browser.accounts.iter().zip(&browser.tokens).filter(|(s, _)| s.user.id != user_id).map(|(_, t)| t.expose()),
    );
    Ok(set_cookie(SESSION_COOKIE, &value.join("."), lifetime))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn with_cookie(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_str(&format!("a=b; {SESSION_COOKIE}={value}")).expect("header"));
        h
    }

    #[test]
    fn the_cookie_lists_well_formed_tokens_up_to_the_limit() {
        let t = "A".repeat(TOKEN_LEN);
        assert_eq!(cookie_tokens(&with_cookie(&t), 10).expect("one"), vec![t.as_str()]);
        let two = format!("{t}.{}", "b-_9".repeat(10) + "xyz");
        assert_eq!(cookie_tokens(&with_cookie(&two), 10).expect("two").len(), 2);
        assert!(cookie_tokens(&HeaderMap::new(), 10).expect("none").is_empty());
        assert!(cookie_tokens(&with_cookie(""), 10).expect("empty").is_empty());
        for bad in [&"A".repeat(42), &format!("{t}."), &format!("{t}.{t}.{t}"), &"A%3D".repeat(11)] {
            assert!(matches!(cookie_tokens(&with_cookie(bad), 2), Err(BrowserError::Tampered)), "{bad}");
        }
    }
}
