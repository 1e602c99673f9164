//! The authorization endpoint (`docs/api.md`, "Authorization") and its user-facing errors (`docs/decisions.md`,
//! "Errors"): one test per rule.
//!
//! Until the client and its redirect URI are known good, a faulty request gets an error page (never a
//! redirect); after that the error travels back to the app's redirect URI with `state` and `iss` (RFC 9207).

use crate::support::*;
use latchkey_admin::{Actor, ClientRef};
use url::Url;

const REDIRECT: &str = "http://127.0.0.1:5555/callback";
const STATE: &str = "xyz-state";
const ANDROID_WEBVIEW_UA: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/UQ1A; wv) AppleWebKit/537.36 \
     (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.230 Mobile Safari/537.36";

/// The query of a good request, as pairs the tests then change.
fn good_pairs(app: &App, pkce: &Pkce) -> Vec<(String, String)> {
    [
        ("client_id", app.client_id.as_str()),
        ("redirect_uri", REDIRECT),
        ("response_type", "code"),
        ("scope", READONLY),
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("state", STATE),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// The pairs without `name`.
fn without(mut pairs: Vec<(String, String)>, name: &str) -> Vec<(String, String)> {
    pairs.retain(|(k, _)| k != name);
    pairs
}

/// The pairs with `name` set to `value` (added when absent).
fn with(mut pairs: Vec<(String, String)>, name: &str, value: &str) -> Vec<(String, String)> {
    match pairs.iter_mut().find(|(k, _)| k == name) {
        Some(slot) => slot.1 = value.to_owned(),
        None => pairs.push((name.to_owned(), value.to_owned())),
    }
    pairs
}

/// The pairs with `name=value` appended (a repeat when `name` is there already).
fn plus(mut pairs: Vec<(String, String)>, name: &str, value: &str) -> Vec<(String, String)> {
    pairs.push((name.to_owned(), value.to_owned()));
    pairs
}

/// The authorization URL with this query.
fn url_of(server: &TestServer, pairs: &[(String, String)]) -> String {
    let mut url = Url::parse(&server.url("/o/oauth2/v2/auth")).expect("url");
    {
        let mut q = url.query_pairs_mut();
        for (k, v) in pairs {
            q.append_pair(k, v);
        }
    }
    url.into()
}

/// The error code shown on an error page.
fn page_error_code(page: &Page) -> Option<String> {
    let needle = "<code id=\"error-code\">";
    let start = page.body.find(needle)? + needle.len();
    let end = page.body[start..].find("</code>")? + start;
    Some(unescape(&page.body[start..end]))
}

/// Asserts the headers every page carries: no framing, no caching.
fn assert_page_headers(page: &Page) {
    let header = |name: &str| page.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    assert!(header("content-type").starts_with("text/html"), "HTML page: {:?}", page.headers);
    assert!(
        header("content-security-policy").contains("frame-ancestors 'none'"),
        "CSP with frame-ancestors 'none': {:?}",
        page.headers
    );
    assert_eq!(header("x-frame-options"), "DENY");
    assert!(header("cache-control").contains("no-store"), "no-store: {:?}", page.headers);
}

/// Asserts a user-facing error page with `code` (and no redirect).
fn assert_error_page(page: &Page, status: u16, code: &str) {
    assert_eq!(page.status, status, "status of the error page: {}", page.body);
    assert!(page.headers.get("location").is_none(), "an error page never redirects");
    assert_page_headers(page);
    assert_eq!(page_error_code(page).as_deref(), Some(code), "error code on the page: {}", page.body);
}

/// Asserts an error redirect to [`REDIRECT`] with `code`, the request's state and the issuer.
fn assert_error_redirect(server: &TestServer, page: &Page, code: &str) {
    assert_eq!(page.status, 303, "an error redirect: {}", page.body);
    let location = page.location().expect("Location");
    assert!(location.as_str().starts_with(REDIRECT), "redirects to the app: {location}");
    assert_eq!(page.redirect_param("error").as_deref(), Some(code), "error of {location}");
    assert!(page.redirect_param("error_description").is_some_and(|d| !d.is_empty()));
    assert_eq!(page.redirect_param("state").as_deref(), Some(STATE));
    assert_eq!(page.redirect_param("iss").as_deref(), Some(server.base.as_str()));
    assert!(page.redirect_param("code").is_none());
}

/// Whether the page is the sign-in form.
fn is_sign_in(page: &Page) -> bool {
    page.body.contains("name=\"password\"") && page.body.contains("action=\"/signin\"")
}

/// Whether the page is the consent form.
fn is_consent(page: &Page) -> bool {
    page.body.contains("type=\"checkbox\" name=\"scope\"") && page.body.contains("name=\"decision\" value=\"allow\"")
}

#[tokio::test]
async fn a_request_without_client_id_gets_an_invalid_request_page() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let page = server.browser().get(&url_of(&server, &without(good_pairs(&app, &pkce), "client_id"))).await;
    assert_error_page(&page, 400, "invalid_request");
}

#[tokio::test]
async fn an_unknown_client_gets_an_invalid_client_page() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let url = url_of(&server, &with(good_pairs(&app, &pkce), "client_id", "no-such-client.apps.latchkey"));
    let page = server.browser().get(&url).await;
    assert!(page.status == 400 || page.status == 401, "status {}", page.status);
    assert_error_page(&page, page.status, "invalid_client");
}

#[tokio::test]
async fn a_deleted_client_gets_a_deleted_client_page() {
    let server = TestServer::start().await;
    let app = server.app().await;
    latchkey_admin::client_delete(
        server.store(),
        &Actor::Operator,
        ClientRef::id(&app.client_id),
        latchkey_core::time::UnixTime(1_700_000_100),
    )
    .await
    .expect("delete");
    let pkce = Pkce::new();
    let page = server.browser().get(&url_of(&server, &good_pairs(&app, &pkce))).await;
    assert_error_page(&page, 400, "deleted_client");
}

#[tokio::test]
async fn a_request_without_redirect_uri_gets_an_invalid_request_page() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let page = server.browser().get(&url_of(&server, &without(good_pairs(&app, &pkce), "redirect_uri"))).await;
    assert_error_page(&page, 400, "invalid_request");
}

#[tokio::test]
async fn a_redirect_uri_the_client_does_not_allow_gets_a_redirect_uri_mismatch_page() {
    let server = TestServer::start().await;
    let app = server.app_with(true, &["com.example.app:/oauth2redirect"]).await;
    let pkce = Pkce::new();
    for uri in ["https://evil.example/callback", "com.example.other:/oauth2redirect", "com.example.app:/other"] {
        let page = server.browser().get(&url_of(&server, &with(good_pairs(&app, &pkce), "redirect_uri", uri))).await;
        assert_error_page(&page, 400, "redirect_uri_mismatch");
        assert!(!page.body.contains("evil.example/callback?"), "no link to the unverified URI");
    }
}

/// A client of type `t` with `details` and `redirect_uris` in a project with the data API.
async fn client_of(
    server: &TestServer,
    t: latchkey_core::client::ClientType,
    redirect_uris: &[&str],
    details: latchkey_core::client::ClientDetails,
) -> App {
    let app = server.app().await;
    let now = latchkey_core::time::UnixTime(1_700_000_000);
    let new = latchkey_admin::NewClient {
        project_id: app.project_id.clone(),
        client_type: t,
        name: "Typed".into(),
        redirect_uris: redirect_uris.iter().map(|s| s.to_string()).collect(),
        details,
    };
    let c = latchkey_admin::client_create(server.store(), &Actor::Operator, new, now).await.expect("client");
    App { project_id: app.project_id, client_id: c.client_id, client_secret: c.client_secret.unwrap_or_default() }
}

#[tokio::test]
async fn a_universal_desktop_redirect_must_name_the_clients_own_package_sid() {
    use latchkey_core::client::{ClientDetails, ClientType};
    let server = TestServer::start().await;
    let details = ClientDetails {
        uwp_store_id: Some("9NBLGGH4NNS1".into()),
        package_sid: Some("s-1-15-2-1".into()),
        ..Default::default()
    };
    let app = client_of(&server, ClientType::UniversalDesktop, &["ms-app://s-1-15-2-1"], details).await;
    let pkce = Pkce::new();
    let request = |uri: &str| url_of(&server, &with(good_pairs(&app, &pkce), "redirect_uri", uri));
    assert!(is_sign_in(&server.browser().get(&request("ms-app://s-1-15-2-1")).await), "its own package SID");
    for uri in ["ms-app://s-1-15-2-2", "ms-app://s-1-15-2-1/x", "other-app://s-1-15-2-1.example"] {
        let page = server.browser().get(&request(uri)).await;
        assert_error_page(&page, 400, "redirect_uri_mismatch");
    }
}

#[tokio::test]
async fn a_custom_scheme_for_a_browser_extension_gets_the_specs_invalid_request_page() {
    use latchkey_core::client::{ClientDetails, ClientType};
    let server = TestServer::start().await;
    let details = ClientDetails { extension_item_id: Some("lkextensionitem".into()), ..Default::default() };
    let app = client_of(&server, ClientType::BrowserExtension, &[], details).await;
    let pkce = Pkce::new();
    let page =
        server.browser().get(&url_of(&server, &with(good_pairs(&app, &pkce), "redirect_uri", "com.example:/cb"))).await;
    assert_error_page(&page, 400, "invalid_request");
    assert!(page.body.contains("not supported on Android or Chrome apps"), "{}", page.body);
}

#[tokio::test]
async fn the_out_of_band_redirect_uri_gets_a_redirect_uri_mismatch_page() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let url = url_of(&server, &with(good_pairs(&app, &pkce), "redirect_uri", "urn:ietf:wg:oauth:2.0:oob"));
    let page = server.browser().get(&url).await;
    assert_error_page(&page, 400, "redirect_uri_mismatch");
}

#[tokio::test]
async fn a_repeated_redirect_uri_gets_an_invalid_request_page_not_a_redirect() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let pairs = plus(good_pairs(&app, &pkce), "redirect_uri", "http://127.0.0.1:6666/other");
    let page = server.browser().get(&url_of(&server, &pairs)).await;
    assert_error_page(&page, 400, "invalid_request");
}

#[tokio::test]
async fn an_embedded_android_web_view_gets_a_disallowed_useragent_page() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let response = server
        .http()
        .get(url_of(&server, &good_pairs(&app, &pkce)))
        .header("user-agent", ANDROID_WEBVIEW_UA)
        .send()
        .await
        .expect("GET");
    let page = Page {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.text().await.expect("body"),
    };
    assert_error_page(&page, 400, "disallowed_useragent");
}

#[tokio::test]
async fn a_request_without_response_type_is_sent_back_with_invalid_request() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let page = server.browser().get(&url_of(&server, &without(good_pairs(&app, &pkce), "response_type"))).await;
    assert_error_redirect(&server, &page, "invalid_request");
}

#[tokio::test]
async fn response_type_token_is_sent_back_with_unsupported_response_type() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let page = server.browser().get(&url_of(&server, &with(good_pairs(&app, &pkce), "response_type", "token"))).await;
    assert_error_redirect(&server, &page, "unsupported_response_type");
}

#[tokio::test]
async fn a_request_without_scope_is_sent_back_with_invalid_request() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let page = server.browser().get(&url_of(&server, &without(good_pairs(&app, &pkce), "scope"))).await;
    assert_error_redirect(&server, &page, "invalid_request");
}

#[tokio::test]
async fn an_unknown_scope_is_sent_back_with_invalid_scope() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let scope = format!("{READONLY} {BASE}no-such-scope");
    let page = server.browser().get(&url_of(&server, &with(good_pairs(&app, &pkce), "scope", &scope))).await;
    assert_error_redirect(&server, &page, "invalid_scope");
}

#[tokio::test]
async fn a_request_without_code_challenge_is_sent_back_with_invalid_grant_by_default() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let pairs = without(without(good_pairs(&app, &pkce), "code_challenge"), "code_challenge_method");
    let page = server.browser().get(&url_of(&server, &pairs)).await;
    assert_error_redirect(&server, &page, "invalid_grant");
}

#[tokio::test]
async fn an_invalid_code_challenge_is_sent_back_with_invalid_grant() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    for challenge in ["too-short", &format!("{}!", &pkce.challenge[..42]), &format!("{}A", pkce.challenge)] {
        let page =
            server.browser().get(&url_of(&server, &with(good_pairs(&app, &pkce), "code_challenge", challenge))).await;
        assert_error_redirect(&server, &page, "invalid_grant");
    }
}

#[tokio::test]
async fn an_unsupported_code_challenge_method_is_sent_back_with_invalid_request() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let url = url_of(&server, &with(good_pairs(&app, &pkce), "code_challenge_method", "S512"));
    let page = server.browser().get(&url).await;
    assert_error_redirect(&server, &page, "invalid_request");
}

#[tokio::test]
async fn a_repeated_scope_parameter_is_sent_back_with_invalid_request() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let page = server.browser().get(&url_of(&server, &plus(good_pairs(&app, &pkce), "scope", UPLOAD))).await;
    assert_error_redirect(&server, &page, "invalid_request");
}

#[tokio::test]
async fn a_data_scope_for_a_project_without_the_api_is_sent_back_with_unauthorized_client() {
    let server = TestServer::start().await;
    let app = server.app_with(false, &[]).await;
    let pkce = Pkce::new();
    let scope = format!("openid email {READONLY}");
    let page = server.browser().get(&url_of(&server, &with(good_pairs(&app, &pkce), "scope", &scope))).await;
    assert_error_redirect(&server, &page, "unauthorized_client");
}

#[tokio::test]
async fn identity_scopes_work_for_a_project_without_the_api() {
    let server = TestServer::start().await;
    let app = server.app_with(false, &[]).await;
    server.user("alice@example.com").await;
    let pkce = Pkce::new();
    let browser = server.browser();
    let code = browser
        .code(&server, &app, "alice@example.com", &["openid", "email"], &["openid", "email"], &pkce, REDIRECT)
        .await;
    let response = server
        .token(&[
            ("grant_type", "authorization_code"),
            ("client_id", &app.client_id),
            ("code", &code),
            ("code_verifier", &pkce.verifier),
            ("redirect_uri", REDIRECT),
        ])
        .await;
    assert_eq!(response.status(), 200);
    let t: latchkey_proto::TokenResponse = response.json().await.expect("token response");
    assert_eq!(t.scope, "openid email");
    assert!(t.id_token.is_some(), "identity scopes return an id_token");
}

#[tokio::test]
async fn prompt_none_without_a_session_is_sent_back_with_login_required() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let page = server.browser().get(&url_of(&server, &with(good_pairs(&app, &pkce), "prompt", "none"))).await;
    assert_error_redirect(&server, &page, "login_required");
}

#[tokio::test]
async fn prompt_none_with_a_session_is_sent_back_with_consent_required() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user("alice@example.com").await;
    let pkce = Pkce::new();
    let browser = server.browser();
    let consent = browser.consent_page(&url_of(&server, &good_pairs(&app, &pkce)), "alice@example.com").await;
    assert!(is_consent(&consent), "signed in: {}", consent.body);
    let page = browser.get(&url_of(&server, &with(good_pairs(&app, &pkce), "prompt", "none"))).await;
    assert_error_redirect(&server, &page, "consent_required");
}

#[tokio::test]
async fn access_type_include_granted_scopes_and_prompt_consent_are_accepted() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user("alice@example.com").await;
    let pkce = Pkce::new();
    let pairs = with(
        with(with(good_pairs(&app, &pkce), "access_type", "offline"), "include_granted_scopes", "true"),
        "prompt",
        "consent",
    );
    let url = url_of(&server, &pairs);
    let browser = server.browser();
    let sign_in = browser.get(&url).await;
    assert_eq!(sign_in.status, 200, "{}", sign_in.body);
    assert!(is_sign_in(&sign_in), "the sign-in page: {}", sign_in.body);
    assert_page_headers(&sign_in);
    let consent = browser.consent_page(&url, "alice@example.com").await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    assert!(is_consent(&consent), "the consent page: {}", consent.body);
    assert_page_headers(&consent);
    let done = browser.decide(&consent, &[READONLY], "allow").await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert!(done.redirect_param("code").is_some_and(|c| c.starts_with("lkc_")));
    assert_eq!(done.redirect_param("state").as_deref(), Some(STATE));
    assert_eq!(done.redirect_param("iss").as_deref(), Some(server.base.as_str()));

    // prompt=consent shows the consent page again, even right after a grant.
    let again = browser.get(&url).await;
    assert!(is_consent(&again), "consent is asked again: {}", again.body);
}

#[tokio::test]
async fn the_sign_in_and_consent_pages_cannot_be_framed_or_cached() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user("alice@example.com").await;
    let pkce = Pkce::new();
    let browser = server.browser();
    let url = url_of(&server, &good_pairs(&app, &pkce));
    let sign_in = browser.get(&url).await;
    assert!(is_sign_in(&sign_in));
    assert_page_headers(&sign_in);
    let consent = browser.consent_page(&url, "alice@example.com").await;
    assert!(is_consent(&consent));
    assert_page_headers(&consent);
}
