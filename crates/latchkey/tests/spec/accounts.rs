//! People, "several accounts per browser" (`docs/decisions.md`, "Accounts and sessions"): the account chooser,
//! `login_hint` by e-mail address and by `sub`, `authuser`, `prompt=none`, sign-out of one account or all, the limit
//! per browser, and a cookie we did not set.

use crate::login_consent::{attr, follow, input_named, is_consent, is_sign_in, set_cookies, url_with, ALICE, BOB};
use crate::support::*;

const CAROL: &str = "carol@example.com";

/// Signs `browser` in as `email` through an authorization request, adding the account; returns the consent page.
async fn add_account(server: &TestServer, app: &App, browser: &Browser, email: &str) -> Page {
    let url = url_with(server, app, &[READONLY], &Pkce::new(), &[("prompt", "login")]);
    let login = browser.get(&url).await;
    assert!(is_sign_in(&login), "{}", login.body);
    let next = follow(server, browser, &browser.sign_in(&login, email, PASSWORD).await).await;
    assert!(is_consent(&next), "consent after signing in as {email}: {}", next.body);
    assert!(unescape(&next.body).contains(email));
    next
}

/// The `href`s of a page's links to the authorization endpoint.
fn chooser_links(page: &Page) -> Vec<String> {
    page.body
        .match_indices("<a ")
        .filter_map(|(i, _)| page.body[i..].find('>').map(|e| &page.body[i..i + e + 1]))
        .filter_map(|tag| attr(tag, "href"))
        .filter(|h| h.starts_with("/o/oauth2/v2/auth?"))
        .collect()
}

/// The account a consent page is for.
fn consent_account(page: &Page) -> String {
    let start = page.body.find("id=\"account-email\">").expect("account on the consent page") + 19;
    unescape(&page.body[start..start + page.body[start..].find('<').expect("end")])
}

#[tokio::test]
async fn two_accounts_in_one_browser_show_the_chooser_and_each_hint_selects_its_own() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let bob_id = server.user(BOB).await;
    let browser = server.browser();
    add_account(&server, &app, &browser, ALICE).await;
    add_account(&server, &app, &browser, BOB).await;
    let pkce = Pkce::new();

    let chooser = browser.get(&url_with(&server, &app, &[READONLY], &pkce, &[])).await;
    assert_eq!(chooser.status, 200);
    assert!(!is_consent(&chooser) && !is_sign_in(&chooser), "two accounts, no hint: the chooser: {}", chooser.body);
    let body = unescape(&chooser.body);
    let (alice_at, bob_at) = (body.find(ALICE).expect("alice listed"), body.find(BOB).expect("bob listed"));
    assert!(bob_at < alice_at, "the most recently used account comes first");
    let links = chooser_links(&chooser);
    assert_eq!(links.len(), 3, "one link per account and 'Use another account': {links:?}");
    let chosen = browser.get(&server.url(&links[1])).await;
    assert_eq!(consent_account(&chosen), ALICE, "choosing alice leads to alice's consent");
    assert!(is_sign_in(&browser.get(&server.url(&links[2])).await), "use another account: the sign-in page");

    for (hint, who) in [("Bob@Example.COM", BOB), (ALICE, ALICE), (bob_id.as_str(), BOB)] {
        let page = browser.get(&url_with(&server, &app, &[READONLY], &pkce, &[("login_hint", hint)])).await;
        assert_eq!(consent_account(&page), who, "login_hint {hint} selects {who}");
    }
    let select = browser
        .get(&url_with(&server, &app, &[READONLY], &pkce, &[("prompt", "select_account"), ("login_hint", ALICE)]))
        .await;
    assert_eq!(chooser_links(&select).len(), 3, "prompt=select_account shows the chooser whatever the hint");
}

#[tokio::test]
async fn a_hint_for_an_account_not_signed_in_prefills_an_email_but_never_a_sub() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let carol_id = server.user(CAROL).await;
    let browser = server.browser();
    add_account(&server, &app, &browser, ALICE).await;
    let pkce = Pkce::new();

    let by_email = browser.get(&url_with(&server, &app, &[READONLY], &pkce, &[("login_hint", CAROL)])).await;
    assert!(is_sign_in(&by_email));
    assert_eq!(input_named(&by_email, "email").and_then(|t| attr(t, "value")).as_deref(), Some(CAROL));
    let by_sub = browser.get(&url_with(&server, &app, &[READONLY], &pkce, &[("login_hint", &carol_id)])).await;
    assert!(is_sign_in(&by_sub), "a sub of an account not signed in: the sign-in page");
    assert_eq!(
        input_named(&by_sub, "email").and_then(|t| attr(t, "value")).as_deref(),
        Some(""),
        "no sub in the e-mail field"
    );
    assert!(!by_sub.body.contains(&carol_id), "the sub is nowhere on the page");
    let next = follow(&server, &browser, &browser.sign_in(&by_sub, CAROL, PASSWORD).await).await;
    assert_eq!(consent_account(&next), CAROL, "signing in continues as the new account, not the chooser");
}

#[tokio::test]
async fn prompt_none_with_several_accounts_and_no_hint_asks_the_app_to_select_one() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    server.user(BOB).await;
    let browser = server.browser();
    add_account(&server, &app, &browser, ALICE).await;
    add_account(&server, &app, &browser, BOB).await;
    let page = browser.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[("prompt", "none")])).await;
    assert_eq!(page.redirect_param("error").as_deref(), Some("account_selection_required"), "{}", page.body);
    let hinted = browser
        .get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[("prompt", "none"), ("login_hint", BOB)]))
        .await;
    assert_eq!(hinted.redirect_param("error").as_deref(), Some("consent_required"), "the hint selects bob");
}

#[tokio::test]
async fn an_authuser_not_signed_in_here_gets_an_error_page_and_changes_nothing() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let bob_id = server.user(BOB).await;
    let browser = server.browser();
    let consent = add_account(&server, &app, &browser, ALICE).await;
    let page = browser.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[("authuser", &bob_id)])).await;
    assert_eq!(page.status, 400, "{}", page.body);
    assert!(page.body.contains("not signed in"), "{}", page.body);
    assert!(page.headers.get("location").is_none() && set_cookies(&page).is_empty(), "no redirect, no cookie change");
    let forged = consent.input("request").expect("request").replace("authuser=", "authuser=x");
    let csrf = consent.input("csrf").expect("csrf");
    let post = browser
        .post("/o/oauth2/v2/auth", &[("csrf", &csrf), ("request", &forged), ("scope", READONLY), ("decision", "allow")])
        .await;
    assert!(post.redirect_param("code").is_none(), "no code for an account not signed in: {}", post.body);
}

#[tokio::test]
async fn signing_out_of_one_account_keeps_the_other_and_all_ends_both() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let alice_id = server.user(ALICE).await;
    server.user(BOB).await;
    let browser = server.browser();
    let alice_consent = add_account(&server, &app, &browser, ALICE).await;
    let bob_consent = add_account(&server, &app, &browser, BOB).await;
    let alice_csrf = alice_consent.input("csrf").expect("csrf");

    let refused =
        browser.post("/signout", &[("csrf", &bob_consent.input("csrf").expect("csrf")), ("account", &alice_id)]).await;
    assert_eq!(refused.status, 403, "the CSRF token must be the named account's");
    let out = browser.post("/signout", &[("csrf", &alice_csrf), ("account", &alice_id)]).await;
    assert_eq!(out.status, 303);
    let pkce = Pkce::new();
    let next = browser.get(&url_with(&server, &app, &[READONLY], &pkce, &[])).await;
    assert_eq!(consent_account(&next), BOB, "bob is still signed in, alone: straight to consent");
    let gone = browser.get(&url_with(&server, &app, &[READONLY], &pkce, &[("login_hint", ALICE)])).await;
    assert!(is_sign_in(&gone), "alice is signed out");

    add_account(&server, &app, &browser, ALICE).await;
    let csrf = browser
        .get(&url_with(&server, &app, &[READONLY], &pkce, &[("login_hint", BOB)]))
        .await
        .input("csrf")
        .expect("csrf");
    let all = browser.post("/signout", &[("csrf", &csrf), ("all", "1")]).await;
    assert!(set_cookies(&all).iter().any(|c| c.starts_with("__Host-lk_session=;") && c.contains("Max-Age=0")));
    assert!(is_sign_in(&browser.get(&url_with(&server, &app, &[READONLY], &pkce, &[])).await), "signed out of both");
}

#[tokio::test]
async fn a_browser_holds_at_most_the_configured_number_of_accounts() {
    let server = TestServer::start_with(|c| c.max_accounts_per_browser = 2).await;
    let app = server.app().await;
    for who in [ALICE, BOB, CAROL] {
        server.user(who).await;
    }
    let browser = server.browser();
    add_account(&server, &app, &browser, ALICE).await;
    add_account(&server, &app, &browser, BOB).await;
    let login = browser.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[("prompt", "login")])).await;
    let refused = browser.sign_in(&login, CAROL, PASSWORD).await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(unescape(&refused.body).contains("signed in to 2 accounts, the most it may hold"), "{}", refused.body);
    assert!(set_cookies(&refused).iter().all(|c| !c.starts_with("__Host-lk_session=")), "the cookie is unchanged");
    let again = browser.sign_in(&login, ALICE, PASSWORD).await;
    assert_eq!(again.status, 303, "an account already signed in may sign in again");
    let cookie = set_cookies(&again).into_iter().find(|c| c.starts_with("__Host-lk_session=")).expect("cookie");
    let value = cookie.split(';').next().expect("value").trim_start_matches("__Host-lk_session=");
    assert_eq!(value.split('.').count(), 2, "still two accounts: {value}");
}

#[tokio::test]
async fn a_session_cookie_we_did_not_set_gets_an_error_page_and_is_removed() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let url = url_with(&server, &app, &[READONLY], &Pkce::new(), &[]);
    for bad in ["not-a-token", "AAAA.BBBB", &"A".repeat(43 * 11 + 10)] {
        let r = server
            .http()
            .get(&url)
            .header("user-agent", CHROME_UA)
            .header("cookie", format!("__Host-lk_session={bad}"))
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 400, "cookie {bad}");
        let cleared = r
            .headers()
            .get_all("set-cookie")
            .iter()
            .any(|c| c.to_str().is_ok_and(|c| c.starts_with("__Host-lk_session=;")));
        assert!(cleared, "the cookie is removed");
        assert_eq!(r.headers()["content-security-policy"], latchkey_server::views::CSP);
    }
    let unknown = format!("{}.{}", "A".repeat(43), "B".repeat(43));
    let r = server
        .http()
        .get(&url)
        .header("user-agent", CHROME_UA)
        .header("cookie", format!("__Host-lk_session={unknown}"))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200, "well-formed but unknown tokens are signed-out sessions: the sign-in page");
}
