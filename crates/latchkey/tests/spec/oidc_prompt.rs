//! `prompt=none` and `max_age` (OIDC Core §3.1.2.1, §3.1.2.6): with `prompt=none` no page is shown, whatever stops
//! the request (an organisation's policy, an `authuser` not signed in here, a cookie latchkey did not set); an
//! account that signed in longer ago than `max_age` signs in again. And signing out takes a CSRF token: a
//! cross-site form signs no one out.

use crate::login_consent::{is_sign_in, set_cookies, url_with, ALICE};
use crate::organisations::CAROL;
use crate::organisations::{change, corp};
use crate::support::*;
use latchkey_core::org::{AppAccess, OrgChange};
use std::sync::Arc;

/// A browser signed in as `email` (with a grant for `app`, so that `prompt=none` would otherwise give a code).
async fn signed_in(server: &TestServer, app: &App, email: &str) -> Browser {
    let browser = server.browser();
    let pkce = Pkce::new();
    browser.code(server, app, email, &[READONLY], &[READONLY], &pkce, crate::login_consent::REDIRECT).await;
    browser
}

#[tokio::test]
async fn with_prompt_none_a_policy_refusal_goes_back_to_the_app_instead_of_a_page() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(CAROL).await;
    let browser = signed_in(&server, &app, CAROL).await;
    let org = corp(&server).await;
    change(&server, &org, OrgChange::AppAccess { client_id: app.client_id.clone(), access: Some(AppAccess::Blocked) })
        .await;
    let silent = browser.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[("prompt", "none")])).await;
    assert_eq!(silent.status, 303, "{}", silent.body);
    assert_eq!(silent.redirect_param("error").as_deref(), Some("admin_policy_enforced"));
    // Without prompt=none it is still a page, never a redirect.
    let page = browser.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[])).await;
    assert_eq!(page.status, 403, "{}", page.body);
}

#[tokio::test]
async fn with_prompt_none_an_authuser_not_signed_in_or_an_unreadable_cookie_is_login_required() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let browser = signed_in(&server, &app, ALICE).await;
    let extra = [("prompt", "none"), ("authuser", "u-not-here")];
    let silent = browser.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &extra)).await;
    assert_eq!(silent.redirect_param("error").as_deref(), Some("login_required"), "{}", silent.body);
    let forged = server.browser();
    let url = url_with(&server, &app, &[READONLY], &Pkce::new(), &[("prompt", "none")]);
    let r = forged
        .http
        .get(&url)
        .header("cookie", "__Host-lk_session=not!a!token")
        .header("user-agent", CHROME_UA)
        .send()
        .await
        .expect("get");
    let location = r.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    assert!(location.contains("error=login_required"), "{} {location}", r.status());
}

#[tokio::test]
async fn an_account_that_signed_in_longer_ago_than_max_age_signs_in_again() {
    let clock = Arc::new(TestClock::default());
    let server = TestServer::start_with_clock(|_| {}, clock.clone()).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let browser = signed_in(&server, &app, ALICE).await;
    let fresh = browser.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[("max_age", "60")])).await;
    assert!(!is_sign_in(&fresh), "signed in moments ago: {}", fresh.body);
    clock.advance(120);
    let stale = browser.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[("max_age", "60")])).await;
    assert!(is_sign_in(&stale), "signed in two minutes ago, max_age one: {}", stale.body);
    let silent = browser
        .get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[("max_age", "60"), ("prompt", "none")]))
        .await;
    assert_eq!(silent.redirect_param("error").as_deref(), Some("login_required"));
    let bad = browser.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[("max_age", "soon")])).await;
    assert_eq!(bad.redirect_param("error").as_deref(), Some("invalid_request"));
}

#[tokio::test]
async fn a_cross_site_sign_out_form_without_the_cookie_signs_no_one_out() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let browser = signed_in(&server, &app, ALICE).await;
    // A form posted from another site carries no SameSite=Lax cookie and no token.
    let r = server.http().post(server.url("/signout")).form(&[("all", "1")]).send().await.expect("post");
    let page = Page { status: r.status().as_u16(), headers: r.headers().clone(), body: String::new() };
    assert!(set_cookies(&page).is_empty(), "no cookie is cleared: {:?}", page.headers);
    let account = browser.get(&server.url("/account")).await;
    assert_eq!(account.status, 200, "the browser is still signed in");
}
