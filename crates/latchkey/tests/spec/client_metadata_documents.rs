//! Client ID metadata documents: a `client_id` that is the URL of the app's metadata, served here from a loopback
//! server (`client_metadata.allow_insecure_loopback`, the tests' setting). The `oauth2` crate signs in with it
//! unmodified; the document is cached; every unusable document (another `client_id`, a redirect, too big, too
//! slow, not JSON, a private address, an operator's block) gets the authorization endpoint's `invalid_client`
//! page with the reason, never a redirect.

use crate::interop_oauth2_rs::{authorize_in_browser, client, discover, param, Loopback};
use crate::login_consent::page_error_code;
use crate::support::*;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use oauth2::{AuthorizationCode, CsrfToken, PkceCodeChallenge, Scope, TokenResponse};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A loopback server of documents; `fetches` counts the good document's.
struct Documents {
    base: String,
    fetches: Arc<AtomicUsize>,
    redirect: String,
}

impl Documents {
    async fn start(redirect: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://127.0.0.1:{}", listener.local_addr().expect("addr").port());
        let fetches = Arc::new(AtomicUsize::new(0));
        let doc = |id: &str, redirect: &str| {
            serde_json::json!({"client_id": id, "client_name": "Notes Desktop", "redirect_uris": [redirect],
                "client_uri": "https://notes.example/", "logo_uri": "https://notes.example/logo.png"})
            .to_string()
        };
        let good = doc(&format!("{base}/client.json"), redirect);
        let other = doc("https://elsewhere.example/client.json", redirect);
        let big = serde_json::json!({"client_id": format!("{base}/big.json"), "redirect_uris": [redirect],
            "client_name": "x".repeat(6000)})
        .to_string();
        let app = axum::Router::new()
            .route(
                "/client.json",
                get(move |State(n): State<Arc<AtomicUsize>>| async move {
                    n.fetch_add(1, Ordering::SeqCst);
                    ([(header::CACHE_CONTROL, "max-age=3600"), (header::CONTENT_TYPE, "application/json")], good)
                }),
            )
            .route("/other.json", get(move || async move { other }))
            .route("/redirect.json", get(|| async { Redirect::temporary("/client.json") }))
            .route("/big.json", get(move || async move { big }))
            .route(
                "/slow.json",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(8)).await;
                    "{}"
                }),
            )
            .route("/html.json", get(|| async { "<!doctype html><p>not a document" }))
            .route("/gone.json", get(|| async { StatusCode::NOT_FOUND.into_response() as Response }))
            .with_state(fetches.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
        Self { base, fetches, redirect: redirect.to_owned() }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

async fn server() -> TestServer {
    TestServer::start_with(|c| {
        c.client_metadata.allow_insecure_loopback = true;
        c.client_metadata.blocked_hosts = vec!["blocked.example".into()];
    })
    .await
}

/// The authorization endpoint's page for `client_id` (signed in), which must refuse it with `invalid_client`
/// naming `reason`, and never redirect.
async fn refused(server: &TestServer, client_id: &str, redirect: &str, reason: &str) {
    let app = App { project_id: String::new(), client_id: client_id.into(), client_secret: String::new() };
    let url = authorize_url(server, &app, &["openid"], &Pkce::new(), redirect, "s");
    let page = server.browser().get(&url).await;
    assert_eq!((page.status, page_error_code(&page).as_deref()), (401, Some("invalid_client")), "{}", page.body);
    assert!(page.body.contains(reason), "{client_id}: {reason} in {}", page.body);
    assert!(page.headers.get("location").is_none(), "never a redirect");
}

#[tokio::test]
async fn the_oauth2_crate_signs_in_with_a_metadata_document_as_its_client_id_fetched_once() {
    let server = server().await;
    server.user("alice@example.com").await;
    let meta = discovery(&server).await;
    assert_eq!(meta["client_id_metadata_document_supported"], true);
    let loopback = Loopback::bind().await;
    let docs = Documents::start(&loopback.redirect).await;
    let client_id = docs.url("/client.json");
    let endpoints = discover(&server).await;
    let client = client(&endpoints, &client_id, &loopback.redirect);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, _) = client
        .authorize_url(CsrfToken::new_random)
        .add_scope(Scope::new("openid".into()))
        .add_scope(Scope::new("email".into()))
        .set_pkce_challenge(challenge)
        .url();

    let consent = server.browser().consent_page(url.as_str(), "alice@example.com").await;
    assert!(consent.body.contains("Unverified app</strong> (127.0.0.1)"), "{}", consent.body);
    assert!(consent.body.contains("Notes Desktop") && !consent.body.contains("logo.png"), "no logo from its host");
    let callback = authorize_in_browser(&server, &url, loopback, &["openid", "email"]).await;
    let code = param(&callback, "code").expect("code");
    let http = server.http();
    let tokens = client.exchange_code(AuthorizationCode::new(code)).set_pkce_verifier(verifier).request_async(&http);
    let tokens = tokens.await.expect("the crate exchanges the code");
    let refresh = tokens.refresh_token().expect("refresh token").clone();
    let refreshed = client.exchange_refresh_token(&refresh).request_async(&http).await.expect("refresh");
    assert!(refreshed.refresh_token().is_some_and(|r| r.secret() != refresh.secret()), "rotated");
    assert_eq!(docs.fetches.load(Ordering::SeqCst), 1, "fetched once, then from the cache");

    let stored = server.store().client(&client_id).await.expect("get").expect("stored");
    assert_eq!(stored.project_id, latchkey_core::registration::DOCUMENTS_PROJECT, "in no developer's project");
    let cached = server.store().client_document(&client_id).await.expect("get").expect("cached");
    assert_eq!(cached.expires_at.0 - cached.fetched_at.0, 3600, "its max-age");
    assert_eq!(docs.redirect, stored.redirect_uris[0]);
}

#[tokio::test]
async fn an_unusable_document_gets_an_invalid_client_page_with_the_reason() {
    let server = server().await;
    server.user("alice@example.com").await;
    let redirect = "http://127.0.0.1:4711/cb";
    let docs = Documents::start(redirect).await;
    for (path, reason) in [
        ("/other.json", "names another client_id"),
        ("/redirect.json", "redirects are not followed"),
        ("/big.json", "larger than 5120 bytes"),
        ("/html.json", "not JSON"),
        ("/gone.json", "answered 404"),
        ("/slow.json", "took longer than 5 s"),
    ] {
        refused(&server, &docs.url(path), redirect, reason).await;
    }
    refused(&server, "https://blocked.example/client.json", redirect, "operator blocked").await;
    assert!(server.store().client(&docs.url("/other.json")).await.expect("get").is_none(), "nothing stored");
}

#[tokio::test]
async fn a_document_at_a_private_or_loopback_address_is_refused_without_the_tests_setting() {
    let server = TestServer::start().await;
    let redirect = "http://127.0.0.1:4711/cb";
    refused(&server, "https://192.168.1.10/client.json", redirect, "not a public one").await;
    refused(&server, "https://169.254.169.254/latest/meta-data.json", redirect, "not a public one").await;
    refused(&server, "https://localhost/client.json", redirect, "resolves to no public address").await;
    refused(&server, "http://127.0.0.1:9/client.json", redirect, "was not found").await;
}

#[tokio::test]
async fn switched_off_a_document_url_is_an_unknown_client() {
    let server = TestServer::start_with(|c| c.client_metadata.enabled = false).await;
    assert_eq!(discovery(&server).await["client_id_metadata_document_supported"], false);
    refused(&server, "https://app.example/client.json", "http://127.0.0.1:4711/cb", "was not found").await;
}
