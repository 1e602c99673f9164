//! The authorization request's pages (`docs/api.md`, "Pages"; `docs/decisions.md`, "The authorization request"): the
//! sign-in page, the browser session, and the consent page where the user grants some, all or none of the requested
//! scopes.

use crate::support::*;
use url::Url;

pub(crate) const REDIRECT: &str = "http://127.0.0.1:5555/callback";
pub(crate) const ALICE: &str = "alice@example.com";
pub(crate) const BOB: &str = "bob@example.com";

/// An authorization URL with extra parameters.
pub(crate) fn url_with(server: &TestServer, app: &App, scopes: &[&str], pkce: &Pkce, extra: &[(&str, &str)]) -> String {
    let mut url = Url::parse(&authorize_url(server, app, scopes, pkce, REDIRECT, "st4te")).expect("url");
    {
        let mut q = url.query_pairs_mut();
        for (k, v) in extra {
            q.append_pair(k, v);
        }
    }
    url.into()
}

/// The opening tags of the `<input>` elements of a page.
pub(crate) fn inputs(page: &Page) -> Vec<&str> {
    page.body
        .match_indices("<input")
        .filter_map(|(i, _)| page.body[i..].find('>').map(|end| &page.body[i..i + end + 1]))
        .collect()
}

/// The value of an attribute of a tag, decoded.
pub(crate) fn attr(tag: &str, name: &str) -> Option<String> {
    let needle = format!(" {name}=\"");
    let start = tag.find(&needle)? + needle.len();
    let end = tag[start..].find('"')? + start;
    Some(unescape(&tag[start..end]))
}

/// The input tag named `name`.
pub(crate) fn input_named<'p>(page: &'p Page, name: &str) -> Option<&'p str> {
    inputs(page).into_iter().find(|t| attr(t, "name").as_deref() == Some(name))
}

/// The values of the consent page's scope checkboxes, in order.
pub(crate) fn scope_checkboxes(page: &Page) -> Vec<String> {
    inputs(page)
        .into_iter()
        .filter(|t| attr(t, "type").as_deref() == Some("checkbox") && attr(t, "name").as_deref() == Some("scope"))
        .filter_map(|t| attr(t, "value"))
        .collect()
}

/// Whether the page is the sign-in form.
pub(crate) fn is_sign_in(page: &Page) -> bool {
    input_named(page, "password").is_some() && page.body.contains("action=\"/signin\"")
}

/// Whether the page is the consent form.
pub(crate) fn is_consent(page: &Page) -> bool {
    !scope_checkboxes(page).is_empty() && page.body.contains("name=\"decision\" value=\"allow\"")
}

/// The `Set-Cookie` header values of a response.
pub(crate) fn set_cookies(page: &Page) -> Vec<String> {
    page.headers.get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).map(str::to_owned).collect()
}

/// Whether the response sets a session cookie with a value (not a removal).
pub(crate) fn sets_session(page: &Page) -> bool {
    set_cookies(page).iter().any(|c| c.starts_with("__Host-lk_session=") && !c.starts_with("__Host-lk_session=;"))
}

/// The error code shown on an error page.
pub(crate) fn page_error_code(page: &Page) -> Option<String> {
    let needle = "<code id=\"error-code\">";
    let start = page.body.find(needle)? + needle.len();
    let end = page.body[start..].find("</code>")? + start;
    Some(unescape(&page.body[start..end]))
}

/// Follows a sign-in's redirect to our own path.
pub(crate) async fn follow(server: &TestServer, browser: &Browser, redirect: &Page) -> Page {
    assert_eq!(redirect.status, 303, "a redirect: {}", redirect.body);
    let to = redirect.headers["location"].to_str().expect("location");
    assert!(to.starts_with('/'), "stays on the server: {to}");
    browser.get(&server.url(to)).await
}

/// Exchanges a code (redirected to [`REDIRECT`]) for tokens.
pub(crate) async fn exchange(server: &TestServer, app: &App, code: &str, pkce: &Pkce) -> latchkey_proto::TokenResponse {
    server.exchange(app, code, pkce, REDIRECT).await
}

#[tokio::test]
async fn the_sign_in_page_has_email_password_and_csrf_inputs_and_login_hint_prefills_the_email() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let page = server.browser().get(&authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s")).await;
    assert_eq!(page.status, 200);
    let email = input_named(&page, "email").expect("email input");
    assert_eq!(attr(email, "value").as_deref().unwrap_or(""), "");
    let password = input_named(&page, "password").expect("password input");
    assert_eq!(attr(password, "type").as_deref(), Some("password"));
    let csrf = input_named(&page, "csrf").expect("csrf input");
    assert_eq!(attr(csrf, "type").as_deref(), Some("hidden"));
    assert!(attr(csrf, "value").is_some_and(|v| v.len() >= 32), "a CSRF token: {csrf}");
    assert!(
        set_cookies(&page).iter().any(|c| c.starts_with("__Host-lk_csrf=")),
        "the double-submit cookie is set: {:?}",
        set_cookies(&page)
    );

    let hinted = server.browser().get(&url_with(&server, &app, &[READONLY], &pkce, &[("login_hint", BOB)])).await;
    assert_eq!(hinted.status, 200);
    let email = input_named(&hinted, "email").expect("email input");
    assert_eq!(attr(email, "value").as_deref(), Some(BOB));
}

#[tokio::test]
async fn a_wrong_password_gets_a_401_sign_in_page_with_an_error_and_no_session() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let url = authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s");
    let browser = server.browser();
    let login = browser.get(&url).await;
    let refused = browser.sign_in(&login, ALICE, "not the password").await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(refused.body.contains("id=\"login-error\""), "an error message: {}", refused.body);
    assert!(is_sign_in(&refused), "the form again");
    assert!(refused.headers.get("location").is_none());
    assert!(!sets_session(&refused), "no session: {:?}", set_cookies(&refused));
    let again = browser.get(&url).await;
    assert!(is_sign_in(&again), "still signed out");

    let unknown = browser.sign_in(&login, "nobody@example.com", PASSWORD).await;
    assert_eq!(unknown.status, 401, "an unknown account looks the same");
    assert!(!sets_session(&unknown));
}

#[tokio::test]
async fn signing_in_without_the_csrf_cookie_is_refused() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let url = authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s");
    let login = server.browser().get(&url).await;
    // Another browser (no cookie) posts the first one's form.
    let other = server.browser();
    let refused = other.sign_in(&login, ALICE, PASSWORD).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.headers.get("location").is_none());
    assert!(!sets_session(&refused), "no session: {:?}", set_cookies(&refused));
    assert!(is_sign_in(&other.get(&url).await), "still signed out");
}

#[tokio::test]
async fn signing_in_with_a_wrong_csrf_value_is_refused() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let url = authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s");
    let browser = server.browser();
    let login = browser.get(&url).await;
    let cont = login.input("continue").expect("continue");
    let forged = "A".repeat(43);
    for csrf in [forged.as_str(), ""] {
        let refused = browser
            .post("/signin", &[("csrf", csrf), ("continue", &cont), ("email", ALICE), ("password", PASSWORD)])
            .await;
        assert_eq!(refused.status, 403, "{}", refused.body);
        assert!(!sets_session(&refused), "no session: {:?}", set_cookies(&refused));
    }
    assert!(is_sign_in(&browser.get(&url).await), "still signed out");
}

#[tokio::test]
async fn the_session_cookie_is_host_prefixed_secure_http_only_same_site_lax_with_path_root() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let browser = server.browser();
    let login = browser.get(&authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s")).await;
    let done = browser.sign_in(&login, ALICE, PASSWORD).await;
    assert_eq!(done.status, 303, "{}", done.body);
    let cookie =
        set_cookies(&done).into_iter().find(|c| c.starts_with("__Host-lk_session=")).expect("a session cookie");
    let attributes: Vec<String> = cookie.split(';').skip(1).map(|a| a.trim().to_ascii_lowercase()).collect();
    for wanted in ["secure", "httponly", "samesite=lax", "path=/"] {
        assert!(attributes.iter().any(|a| a == wanted), "{wanted} in {cookie}");
    }
    assert!(!attributes.iter().any(|a| a.starts_with("domain=")), "a __Host- cookie has no Domain: {cookie}");
    let value = cookie["__Host-lk_session=".len()..].split(';').next().unwrap_or("");
    assert!(value.len() >= 32, "a long random value: {cookie}");
}

#[tokio::test]
async fn after_five_failed_sign_ins_the_sixth_is_throttled_even_with_the_right_password() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let browser = server.browser();
    let login = browser.get(&authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s")).await;
    for attempt in 1..=5 {
        let refused = browser.sign_in(&login, ALICE, "wrong password").await;
        assert_eq!(refused.status, 401, "attempt {attempt}: {}", refused.body);
    }
    let throttled = browser.sign_in(&login, ALICE, PASSWORD).await;
    assert_eq!(throttled.status, 429, "{}", throttled.body);
    assert!(!sets_session(&throttled));
    assert!(throttled.headers.get("location").is_none());
}

#[tokio::test]
async fn the_consent_page_names_the_app_the_api_and_each_requested_scope_with_a_checkbox() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let url = authorize_url(&server, &app, &[READONLY, UPLOAD], &pkce, REDIRECT, "s");
    let consent = server.browser().consent_page(&url, ALICE).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    let text = unescape(&consent.body);
    assert!(text.contains("Test App"), "the app name");
    assert!(text.contains("Video Data API"), "the API service");
    assert!(text.contains("View your account"), "the readonly summary");
    assert!(text.contains("Manage your videos"), "the upload summary");
    assert!(!text.contains("Manage your account"), "no summary of a scope not requested");
    assert_eq!(scope_checkboxes(&consent), vec![READONLY.to_owned(), UPLOAD.to_owned()]);
    for tag in inputs(&consent).into_iter().filter(|t| attr(t, "type").as_deref() == Some("checkbox")) {
        assert!(!tag.contains(" checked"), "unticked by default: {tag}");
    }
    assert!(consent.body.contains("name=\"decision\" value=\"allow\""));
    assert!(consent.body.contains("name=\"decision\" value=\"deny\""));
    assert!(consent.input("csrf").is_some_and(|v| !v.is_empty()));
    assert!(consent.input("request").is_some_and(|v| !v.is_empty()));
}

#[tokio::test]
async fn denying_sends_access_denied_and_the_state_back_to_the_app() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let browser = server.browser();
    let consent =
        browser.consent_page(&authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "st4te"), ALICE).await;
    let done = browser.decide(&consent, &[READONLY], "deny").await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert!(done.location().is_some_and(|l| l.as_str().starts_with(REDIRECT)));
    assert_eq!(done.redirect_param("error").as_deref(), Some("access_denied"));
    assert_eq!(done.redirect_param("state").as_deref(), Some("st4te"));
    assert_eq!(done.redirect_param("iss").as_deref(), Some(server.base.as_str()));
    assert!(done.redirect_param("code").is_none());
}

#[tokio::test]
async fn granting_one_of_two_scopes_yields_a_token_with_only_that_scope() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let code = server.browser().code(&server, &app, ALICE, &[READONLY, UPLOAD], &[UPLOAD], &pkce, REDIRECT).await;
    let t = exchange(&server, &app, &code, &pkce).await;
    assert_eq!(t.scope, UPLOAD);
}

#[tokio::test]
async fn allowing_with_nothing_ticked_shows_the_consent_page_again_with_an_error() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let browser = server.browser();
    let consent =
        browser.consent_page(&authorize_url(&server, &app, &[READONLY, UPLOAD], &pkce, REDIRECT, "s"), ALICE).await;
    let again = browser.decide(&consent, &[], "allow").await;
    assert_eq!(again.status, 400, "{}", again.body);
    assert!(again.headers.get("location").is_none(), "no redirect");
    assert!(is_consent(&again), "the consent page again: {}", again.body);
    assert!(again.body.contains("id=\"consent-error\""), "with an error");
    assert_eq!(scope_checkboxes(&again), vec![READONLY.to_owned(), UPLOAD.to_owned()]);

    // The re-rendered page still works.
    let done = browser.decide(&again, &[READONLY], "allow").await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert!(done.redirect_param("code").is_some());
}

#[tokio::test]
async fn a_consent_post_with_a_bad_csrf_token_is_refused_without_a_code() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let browser = server.browser();
    let consent = browser.consent_page(&authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s"), ALICE).await;
    let request = consent.input("request").expect("request");
    let csrf = consent.input("csrf").expect("csrf");
    let forged = format!("{}x", csrf);
    for bad in [forged.as_str(), "", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"] {
        let refused = browser
            .post(
                "/o/oauth2/v2/auth",
                &[("csrf", bad), ("request", &request), ("scope", READONLY), ("decision", "allow")],
            )
            .await;
        assert_eq!(refused.status, 403, "{}", refused.body);
        assert!(refused.headers.get("location").is_none(), "no redirect, so no code");
        assert!(!refused.body.contains("lkc_"));
    }
    // Another signed-in user's token does not work either.
    server.user(BOB).await;
    let bob = server.browser();
    let bob_consent = bob.consent_page(&authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s"), BOB).await;
    let bobs_csrf = bob_consent.input("csrf").expect("csrf");
    assert_ne!(bobs_csrf, csrf);
    let refused = browser
        .post(
            "/o/oauth2/v2/auth",
            &[("csrf", &bobs_csrf), ("request", &request), ("scope", READONLY), ("decision", "allow")],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
}

#[tokio::test]
async fn ticked_scopes_that_were_not_requested_are_not_granted() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let code = server
        .browser()
        .code(&server, &app, ALICE, &[READONLY], &[READONLY, UPLOAD, FORCE_SSL, "openid"], &pkce, REDIRECT)
        .await;
    let t = exchange(&server, &app, &code, &pkce).await;
    assert_eq!(t.scope, READONLY);
    assert!(t.id_token.is_none(), "openid was not requested");

    // Only unrequested scopes ticked: nothing is granted.
    let browser = server.browser();
    let consent = browser.consent_page(&authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s"), ALICE).await;
    let again = browser.decide(&consent, &[UPLOAD], "allow").await;
    assert_eq!(again.status, 400, "{}", again.body);
    assert!(again.headers.get("location").is_none());
}

#[tokio::test]
async fn a_request_tampered_to_an_unregistered_redirect_uri_is_revalidated_on_post() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let browser = server.browser();
    let consent = browser.consent_page(&authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s"), ALICE).await;
    let request = consent.input("request").expect("request");
    let tampered: String = {
        let mut out = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in url::form_urlencoded::parse(request.as_bytes()) {
            let v = if k == "redirect_uri" { "https://evil.example/callback".into() } else { v };
            out.append_pair(&k, &v);
        }
        out.finish()
    };
    assert!(tampered.contains("evil.example"), "the request carries the redirect_uri: {request}");
    let csrf = consent.input("csrf").expect("csrf");
    let refused = browser
        .post(
            "/o/oauth2/v2/auth",
            &[("csrf", &csrf), ("request", &tampered), ("scope", READONLY), ("decision", "allow")],
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.headers.get("location").is_none(), "never redirected to the tampered URI");
    assert_eq!(page_error_code(&refused).as_deref(), Some("redirect_uri_mismatch"));
}

#[tokio::test]
async fn a_login_hint_for_another_account_than_the_signed_in_one_shows_the_sign_in_page() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    server.user(BOB).await;
    let pkce = Pkce::new();
    let browser = server.browser();
    let consent = browser.consent_page(&authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s"), ALICE).await;
    assert!(is_consent(&consent));

    let same = browser.get(&url_with(&server, &app, &[READONLY], &pkce, &[("login_hint", "Alice@Example.com")])).await;
    assert!(is_consent(&same), "a hint naming the signed-in account goes straight on: {}", same.body);

    let other = browser.get(&url_with(&server, &app, &[READONLY], &pkce, &[("login_hint", BOB)])).await;
    assert_eq!(other.status, 200);
    assert!(is_sign_in(&other), "the sign-in page: {}", other.body);
    assert_eq!(input_named(&other, "email").and_then(|t| attr(t, "value")).as_deref(), Some(BOB));
    let after = browser.sign_in(&other, BOB, PASSWORD).await;
    let next = follow(&server, &browser, &after).await;
    assert!(is_consent(&next), "consent after signing in as the hinted user: {}", next.body);
    assert!(unescape(&next.body).contains(BOB), "signed in as bob");
}

#[tokio::test]
async fn prompt_login_shows_the_sign_in_page_despite_a_session_then_continues_to_consent() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let browser = server.browser();
    let consent = browser.consent_page(&authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s"), ALICE).await;
    assert!(is_consent(&consent));

    let url = url_with(&server, &app, &[READONLY], &pkce, &[("prompt", "login")]);
    let login = browser.get(&url).await;
    assert_eq!(login.status, 200);
    assert!(is_sign_in(&login), "sign in again: {}", login.body);
    let after = browser.sign_in(&login, ALICE, PASSWORD).await;
    let next = follow(&server, &browser, &after).await;
    assert_eq!(next.status, 200, "{}", next.body);
    assert!(is_consent(&next), "consent, not the sign-in page again: {}", next.body);
    let done = browser.decide(&next, &[READONLY], "allow").await;
    assert!(done.redirect_param("code").is_some(), "{}", done.body);
}

#[tokio::test]
async fn prompt_select_account_shows_the_account_chooser_whose_continue_link_leads_to_consent() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let browser = server.browser();
    let consent = browser.consent_page(&authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s"), ALICE).await;
    assert!(is_consent(&consent));

    let chooser = browser.get(&url_with(&server, &app, &[READONLY], &pkce, &[("prompt", "select_account")])).await;
    assert_eq!(chooser.status, 200, "{}", chooser.body);
    assert!(!is_consent(&chooser) && !is_sign_in(&chooser), "the chooser: {}", chooser.body);
    assert!(unescape(&chooser.body).contains(ALICE), "names the signed-in account");
    let links: Vec<String> = chooser
        .body
        .match_indices("<a ")
        .filter_map(|(i, _)| chooser.body[i..].find('>').map(|e| &chooser.body[i..i + e + 1]))
        .filter_map(|tag| attr(tag, "href"))
        .filter(|h| h.starts_with("/o/oauth2/v2/auth?"))
        .collect();
    assert_eq!(links.len(), 2, "continue and use another account: {links:?}");
    let next = browser.get(&server.url(&links[0])).await;
    assert_eq!(next.status, 200, "{}", next.body);
    assert!(is_consent(&next), "continue leads to consent: {}", next.body);
    let switch = browser.get(&server.url(&links[1])).await;
    assert!(is_sign_in(&switch), "use another account leads to sign-in: {}", switch.body);
}

#[tokio::test]
async fn signing_out_ends_the_session() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let browser = server.browser();
    let url = authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s");
    let login = browser.get(&url).await;
    let signed_in = browser.sign_in(&login, ALICE, PASSWORD).await;
    let session_cookie = set_cookies(&signed_in)
        .into_iter()
        .find(|c| c.starts_with("__Host-lk_session="))
        .and_then(|c| c.split(';').next().map(str::to_owned))
        .expect("a session cookie");
    let consent = follow(&server, &browser, &signed_in).await;
    assert!(is_consent(&consent));
    let csrf = consent.input("csrf").expect("csrf");

    let refused = browser.post("/signout", &[("csrf", "forged")]).await;
    assert_eq!(refused.status, 403, "sign-out is CSRF-checked: {}", refused.body);
    assert!(is_consent(&browser.get(&url).await), "still signed in");

    let out = browser.post("/signout", &[("csrf", &csrf)]).await;
    assert_eq!(out.status, 303, "{}", out.body);
    assert!(
        set_cookies(&out).iter().any(|c| c.starts_with("__Host-lk_session=;") && c.contains("Max-Age=0")),
        "the cookie is removed: {:?}",
        set_cookies(&out)
    );
    assert!(is_sign_in(&browser.get(&url).await), "signed out");
    // The server forgot the session: replaying the old cookie does not sign anyone in.
    let replay = server.http().get(&url).header("cookie", &session_cookie).send().await.expect("GET");
    assert_eq!(replay.status(), 200);
    let body = replay.text().await.expect("body");
    assert!(body.contains("name=\"password\"") && !body.contains("name=\"decision\""), "{body}");
    let stale = browser.decide(&consent, &[READONLY], "allow").await;
    assert!(stale.redirect_param("code").is_none(), "the old consent form gives no code: {}", stale.body);
}

#[tokio::test]
async fn a_disabled_account_cannot_sign_in_and_its_session_stops_working() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    server.user(BOB).await;
    let pkce = Pkce::new();
    let url = authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s");
    let browser = server.browser();
    let consent = browser.consent_page(&url, ALICE).await;
    assert!(is_consent(&consent));
    let now = latchkey_core::time::UnixTime(1_700_000_100);
    latchkey_admin::user_set_disabled(server.store(), ALICE, true, now).await.expect("disable");
    latchkey_admin::user_set_disabled(server.store(), BOB, true, now).await.expect("disable");

    let after = browser.get(&url).await;
    assert!(is_sign_in(&after), "the session of a disabled user is over: {}", after.body);
    let done = browser.decide(&consent, &[READONLY], "allow").await;
    assert!(done.redirect_param("code").is_none(), "no code for a disabled user: {}", done.body);

    let other = server.browser();
    let login = other.get(&url).await;
    let refused = other.sign_in(&login, BOB, PASSWORD).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(!sets_session(&refused));
}

#[tokio::test]
async fn signing_in_never_continues_to_another_site() {
    let server = TestServer::start().await;
    server.user(ALICE).await;
    for target in ["https://evil.example/o/oauth2/v2/auth?x=1", "//evil.example/o/oauth2/v2/auth?x=1", "/signout"] {
        let browser = server.browser();
        let login = browser
            .get(&server.url(&format!(
                "/signin?continue={}",
                url::form_urlencoded::byte_serialize(target.as_bytes()).collect::<String>()
            )))
            .await;
        assert_eq!(login.status, 200);
        let csrf = login.input("csrf").expect("csrf");
        let done = browser
            .post("/signin", &[("csrf", &csrf), ("continue", target), ("email", ALICE), ("password", PASSWORD)])
            .await;
        assert_eq!(done.status, 303, "{}", done.body);
        let to = done.headers["location"].to_str().expect("location");
        assert_eq!(to, "/", "{target} is not followed");
    }
}

#[tokio::test]
async fn the_state_comes_back_unchanged_through_the_consent_form_whatever_its_characters() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let state = "a b+c&d=e\"'<script>%20é/?#~";
    let browser = server.browser();
    let consent = browser.consent_page(&authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, state), ALICE).await;
    assert!(is_consent(&consent), "{}", consent.body);
    assert!(!consent.body.contains("<script>"), "escaped on the page");
    let done = browser.decide(&consent, &[READONLY], "allow").await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(done.redirect_param("state").as_deref(), Some(state));
    assert!(done.redirect_param("code").is_some());
}
