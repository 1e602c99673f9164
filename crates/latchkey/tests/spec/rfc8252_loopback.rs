//! RFC 8252 §7.3 and §8.3 (loopback redirects of native apps), as `docs/decisions.md` ("Redirect URIs") settles them:
//! desktop clients may use any port of `127.0.0.1` or `[::1]` without registering, `localhost` only when registered,
//! and every other URI is compared as an exact string.

use crate::support::*;

const ALICE: &str = "alice@example.com";

/// The error code shown on an error page.
fn page_error_code(page: &Page) -> Option<String> {
    let needle = "<code id=\"error-code\">";
    let start = page.body.find(needle)? + needle.len();
    let end = page.body[start..].find("</code>")? + start;
    Some(unescape(&page.body[start..end]))
}

/// Asserts that `redirect_uri` is refused with a `redirect_uri_mismatch` page (never a redirect).
async fn assert_refused(server: &TestServer, app: &App, redirect_uri: &str) {
    let pkce = Pkce::new();
    let page = server.browser().get(&authorize_url(server, app, &[READONLY], &pkce, redirect_uri, "s")).await;
    assert_eq!(page.status, 400, "{redirect_uri} is refused: {}", page.body);
    assert!(page.headers.get("location").is_none(), "{redirect_uri}: no redirect");
    assert_eq!(page_error_code(&page).as_deref(), Some("redirect_uri_mismatch"), "{redirect_uri}");
}

/// Runs the flow to `redirect_uri` and asserts the code comes back there; returns the code.
async fn code_at(server: &TestServer, app: &App, redirect_uri: &str, pkce: &Pkce) -> String {
    let browser = server.browser();
    let consent =
        browser.consent_page(&authorize_url(server, app, &[READONLY], pkce, redirect_uri, "st4te"), ALICE).await;
    assert_eq!(consent.status, 200, "{redirect_uri} is accepted: {}", consent.body);
    let done = browser.decide(&consent, &[READONLY], "allow").await;
    assert_eq!(done.status, 303, "{}", done.body);
    let location = done.headers["location"].to_str().expect("location").to_owned();
    let base = redirect_uri.split('?').next().unwrap_or(redirect_uri);
    assert!(location.starts_with(&format!("{base}?")), "the response goes to {redirect_uri}: {location}");
    assert_eq!(done.redirect_param("state").as_deref(), Some("st4te"));
    done.redirect_param("code").expect("code")
}

/// Exchanges a code, returning the response.
async fn exchange(server: &TestServer, app: &App, code: &str, pkce: &Pkce, redirect_uri: &str) -> reqwest::Response {
    server
        .token(&[
            ("grant_type", "authorization_code"),
            ("client_id", &app.client_id),
            ("code", code),
            ("code_verifier", &pkce.verifier),
            ("redirect_uri", redirect_uri),
        ])
        .await
}

#[tokio::test]
async fn a_desktop_client_accepts_any_port_and_path_of_127_0_0_1_and_ipv6_loopback_without_registration() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    for uri in [
        "http://127.0.0.1:49152/",
        "http://127.0.0.1:8080/oauth2/callback",
        "http://127.0.0.1:65535/cb?from=app",
        "http://127.0.0.1/",
        "http://[::1]:51000/",
        "http://[::1]:3000/callback",
    ] {
        let pkce = Pkce::new();
        let code = code_at(&server, &app, uri, &pkce).await;
        let r = exchange(&server, &app, &code, &pkce, uri).await;
        assert_eq!(r.status(), 200, "exchange for {uri}");
    }
}

#[tokio::test]
async fn localhost_is_refused_unless_the_client_registered_it() {
    let server = TestServer::start().await;
    let app = server.app().await;
    for uri in ["http://localhost:8080/", "http://localhost/", "http://localhost:8080/callback"] {
        assert_refused(&server, &app, uri).await;
    }
}

#[tokio::test]
async fn a_registered_localhost_uri_works_on_any_port() {
    let server = TestServer::start().await;
    let app = server.app_with(true, &["http://localhost:8080/callback"]).await;
    server.user(ALICE).await;
    for uri in ["http://localhost:8080/callback", "http://localhost:49200/callback"] {
        let pkce = Pkce::new();
        let code = code_at(&server, &app, uri, &pkce).await;
        assert_eq!(exchange(&server, &app, &code, &pkce, uri).await.status(), 200, "{uri}");
    }
    // Only the port may differ: another path is not the registered URI.
    assert_refused(&server, &app, "http://localhost:49200/other").await;
    assert_refused(&server, &app, "http://localhost:49200/callback/").await;
}

#[tokio::test]
async fn other_spellings_of_the_loopback_address_are_refused_without_normalisation() {
    let server = TestServer::start().await;
    let app = server.app().await;
    for uri in [
        "http://127.1:80/",
        "http://127.0.0.1:080/",
        "http://127.000.000.001:8080/",
        "http://2130706433:8080/",
        "http://[0:0:0:0:0:0:0:1]:8080/",
        "http://LOCALHOST:8080/",
        "https://127.0.0.1:8080/",
    ] {
        assert_refused(&server, &app, uri).await;
    }
}

#[tokio::test]
async fn the_code_is_bound_to_the_exact_redirect_uri_of_the_request() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let pkce = Pkce::new();
    let code = code_at(&server, &app, "http://127.0.0.1:5555/callback", &pkce).await;
    for other in ["http://127.0.0.1:5556/callback", "http://127.0.0.1:5555/callback/", "http://[::1]:5555/callback"] {
        let r = exchange(&server, &app, &code, &pkce, other).await;
        assert_eq!(error_of(r).await, (400, "invalid_grant".to_string()), "exchange with {other}");
    }
}

#[tokio::test]
async fn registered_redirect_uris_are_compared_as_exact_strings() {
    let server = TestServer::start().await;
    let app = server.app_with(true, &["com.example.app:/oauth2redirect", "https://app.example.com/callback"]).await;
    server.user(ALICE).await;
    for uri in ["com.example.app:/oauth2redirect", "https://app.example.com/callback"] {
        let pkce = Pkce::new();
        let code = code_at(&server, &app, uri, &pkce).await;
        assert_eq!(exchange(&server, &app, &code, &pkce, uri).await.status(), 200, "{uri}");
    }
    for uri in [
        "com.example.app:/oauth2redirect/",
        "COM.EXAMPLE.APP:/oauth2redirect",
        "https://app.example.com/callback/",
        "https://app.example.com:443/callback",
        "https://APP.example.com/callback",
        "https://app.example.com/./callback",
        "https://app.example.com/callback?x=1",
    ] {
        assert_refused(&server, &app, uri).await;
    }
}
