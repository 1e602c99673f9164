//! The code exchange (`docs/api.md`, "Token"; RFC 6749 §4.1.3, §5.1, §5.2), and the token endpoint's
//! errors: one negative test per rule.

use crate::support::*;
use latchkey_admin::{Actor, ClientRef};
use latchkey_core::time::UnixTime;
use serde_json::Value;

const REDIRECT: &str = "http://127.0.0.1:5555/callback";
const ALICE: &str = "alice@example.com";
const NOW: UnixTime = UnixTime(1_700_000_000);

/// A server with alice and an app.
async fn setup() -> (TestServer, App) {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    (server, app)
}

/// A fresh code for `readonly`, with its PKCE pair.
async fn code_for(server: &TestServer, app: &App) -> (String, Pkce) {
    let pkce = Pkce::new();
    let code = server.browser().code(server, app, ALICE, &[READONLY], &[READONLY], &pkce, REDIRECT).await;
    (code, pkce)
}

/// The valid exchange request for a code.
fn exchange_form<'a>(app: &'a App, code: &'a str, verifier: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("grant_type", "authorization_code"),
        ("client_id", &app.client_id),
        ("code", code),
        ("code_verifier", verifier),
        ("redirect_uri", REDIRECT),
    ]
}

async fn refresh(server: &TestServer, app: &App, refresh_token: &str) -> reqwest::Response {
    server
        .token(&[("grant_type", "refresh_token"), ("client_id", &app.client_id), ("refresh_token", refresh_token)])
        .await
}

fn invalid_grant() -> (u16, String) {
    (400, "invalid_grant".to_string())
}

fn invalid_request() -> (u16, String) {
    (400, "invalid_request".to_string())
}

fn invalid_client() -> (u16, String) {
    (401, "invalid_client".to_string())
}

#[tokio::test]
async fn a_code_exchange_returns_exactly_the_documented_fields() {
    let (server, app) = setup().await;
    let pkce = Pkce::new();
    let code = server.browser().code(&server, &app, ALICE, &[READONLY, UPLOAD], &[READONLY], &pkce, REDIRECT).await;
    let r = server.token(&exchange_form(&app, &code, &pkce.verifier)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let content_type = r.headers()["content-type"].to_str().expect("text");
    assert!(content_type.starts_with("application/json"), "{content_type}");
    let body: Value = r.json().await.expect("json");
    let mut keys: Vec<&str> = body.as_object().expect("object").keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["access_token", "expires_in", "refresh_token", "scope", "token_type"], "{body}");
    assert!(body["access_token"].as_str().expect("string").starts_with("lka_"));
    assert!(body["refresh_token"].as_str().expect("string").starts_with("lkr_"));
    assert_eq!(body["expires_in"], 3600);
    assert_eq!(body["scope"], READONLY, "the granted scopes, not the requested ones");
    assert_eq!(body["token_type"], "Bearer");
}

#[tokio::test]
async fn errors_are_rfc6749_json_bodies_that_are_never_cached() {
    let (server, app) = setup().await;
    let r = server.token(&exchange_form(&app, "lkc_nosuchcode", &Pkce::new().verifier)).await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let content_type = r.headers()["content-type"].to_str().expect("text");
    assert!(content_type.starts_with("application/json"), "{content_type}");
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"], "invalid_grant");
    assert!(body["error_description"].is_string(), "{body}");
}

#[tokio::test]
async fn a_body_that_is_not_form_encoded_is_415_invalid_request() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    let json = serde_json::json!({
        "grant_type": "authorization_code",
        "client_id": app.client_id,
        "code": code,
        "code_verifier": pkce.verifier,
        "redirect_uri": REDIRECT,
    });
    let unsupported = || (415, "invalid_request".to_string());
    let r = server.http().post(server.url("/token")).json(&json).send().await.expect("post");
    assert_eq!(error_of(r).await, unsupported());
    // The same form body with no content type at all.
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(exchange_form(&app, &code, &pkce.verifier))
        .finish();
    let r = server.http().post(server.url("/token")).body(body.clone()).send().await.expect("post");
    assert_eq!(error_of(r).await, unsupported());
    // Labelled as a form, the very same body works: the code was not used up by the refusals.
    let r = server
        .http()
        .post(server.url("/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn a_parameter_sent_twice_is_invalid_request() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    for repeated in ["grant_type", "client_id", "code", "code_verifier", "redirect_uri"] {
        let mut form = exchange_form(&app, &code, &pkce.verifier);
        let again = *form.iter().find(|(k, _)| *k == repeated).expect("present");
        form.push(again);
        let r = server.token(&form).await;
        assert_eq!(error_of(r).await, invalid_request(), "{repeated} twice");
    }
    let r = server.token(&exchange_form(&app, &code, &pkce.verifier)).await;
    assert_eq!(r.status(), 200, "the refused requests did not use the code");
}

#[tokio::test]
async fn each_missing_required_parameter_is_invalid_request() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    for missing in ["grant_type", "code", "redirect_uri", "client_id"] {
        let form: Vec<_> =
            exchange_form(&app, &code, &pkce.verifier).into_iter().filter(|(k, _)| *k != missing).collect();
        let r = server.token(&form).await;
        assert_eq!(error_of(r).await, invalid_request(), "without {missing}");
        // An empty value counts as absent (RFC 6749 §3.1).
        let form: Vec<_> = exchange_form(&app, &code, &pkce.verifier)
            .into_iter()
            .map(|(k, v)| if k == missing { (k, "") } else { (k, v) })
            .collect();
        let r = server.token(&form).await;
        assert_eq!(error_of(r).await, invalid_request(), "with an empty {missing}");
    }
    let r = server.token(&exchange_form(&app, &code, &pkce.verifier)).await;
    assert_eq!(r.status(), 200, "the refused requests did not use the code");
}

#[tokio::test]
async fn a_missing_code_verifier_for_a_code_with_a_challenge_is_invalid_grant() {
    let (server, app) = setup().await;
    let (code, _pkce) = code_for(&server, &app).await;
    let form: Vec<_> = exchange_form(&app, &code, "").into_iter().filter(|(k, _)| *k != "code_verifier").collect();
    assert_eq!(error_of(server.token(&form).await).await, invalid_grant());
}

#[tokio::test]
async fn an_unknown_grant_type_is_unsupported_grant_type() {
    let (server, app) = setup().await;
    for grant_type in
        ["password", "client_credentials", "urn:ietf:params:oauth:grant-type:saml2-bearer", "AUTHORIZATION_CODE"]
    {
        let r = server
            .token(&[
                ("grant_type", grant_type),
                ("client_id", &app.client_id),
                ("username", ALICE),
                ("password", PASSWORD),
            ])
            .await;
        assert_eq!(error_of(r).await, (400, "unsupported_grant_type".to_string()), "{grant_type}");
    }
}

#[tokio::test]
async fn an_unknown_client_is_401_invalid_client() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    let mut form = exchange_form(&app, &code, &pkce.verifier);
    form[1] = ("client_id", "no-such-client.apps.latchkey.dev");
    let r = server.token(&form).await;
    assert!(r.headers().contains_key("www-authenticate"), "a 401 names an authentication scheme");
    assert_eq!(error_of(r).await, invalid_client());
}

#[tokio::test]
async fn a_wrong_client_secret_in_the_body_is_401_invalid_client_and_the_right_one_works() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    let mut form = exchange_form(&app, &code, &pkce.verifier);
    form.push(("client_secret", "lks_wrong"));
    assert_eq!(error_of(server.token(&form).await).await, invalid_client());
    let mut form = exchange_form(&app, &code, &pkce.verifier);
    form.push(("client_secret", &app.client_secret));
    assert_eq!(server.token(&form).await.status(), 200);
}

#[tokio::test]
async fn client_secret_basic_works_and_a_wrong_basic_secret_is_401_with_a_basic_challenge() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    let form: Vec<_> =
        exchange_form(&app, &code, &pkce.verifier).into_iter().filter(|(k, _)| *k != "client_id").collect();
    let r = server
        .http()
        .post(server.url("/token"))
        .basic_auth(&app.client_id, Some("lks_wrong"))
        .form(&form)
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), 401);
    let challenge = r.headers()["www-authenticate"].to_str().expect("text").to_owned();
    assert!(challenge.starts_with("Basic"), "{challenge}");
    assert_eq!(error_of(r).await, invalid_client());

    let r = server
        .http()
        .post(server.url("/token"))
        .basic_auth(&app.client_id, Some(&app.client_secret))
        .form(&form)
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), 200);
    let t: latchkey_proto::TokenResponse = r.json().await.expect("json");
    assert_eq!(channels(&server, &t.access_token).await.status(), 200);
}

#[tokio::test]
async fn a_client_secret_is_never_required() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    let form = exchange_form(&app, &code, &pkce.verifier);
    assert!(!form.iter().any(|(k, _)| *k == "client_secret"));
    let r = server.token(&form).await;
    assert_eq!(r.status(), 200);
    let t: latchkey_proto::TokenResponse = r.json().await.expect("json");
    let r = refresh(&server, &app, t.refresh_token.as_deref().expect("refresh token")).await;
    assert_eq!(r.status(), 200, "nor on refresh");
}

#[tokio::test]
async fn an_unknown_code_is_invalid_grant() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    let altered = format!("{code}x");
    for unknown in ["lkc_nosuchcode", altered.as_str()] {
        assert_eq!(error_of(server.token(&exchange_form(&app, unknown, &pkce.verifier)).await).await, invalid_grant());
    }
}

#[tokio::test]
async fn a_code_of_another_client_is_invalid_grant() {
    let (server, app) = setup().await;
    let other = server.app().await;
    let (code, pkce) = code_for(&server, &app).await;
    let r = server.token(&exchange_form(&other, &code, &pkce.verifier)).await;
    assert_eq!(error_of(r).await, invalid_grant());
    let mut form = exchange_form(&other, &code, &pkce.verifier);
    form.push(("client_secret", &other.client_secret));
    assert_eq!(error_of(server.token(&form).await).await, invalid_grant(), "also with the other client's secret");
}

#[tokio::test]
async fn a_redirect_uri_differing_from_the_authorization_request_is_invalid_grant() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    for other in [
        "http://127.0.0.1:5556/callback",
        "http://127.0.0.1:5555/callback/",
        "http://127.0.0.1:5555/Callback",
        "http://localhost:5555/callback",
        "http://127.0.0.1:5555/callback?x=1",
    ] {
        let mut form = exchange_form(&app, &code, &pkce.verifier);
        form[4] = ("redirect_uri", other);
        assert_eq!(error_of(server.token(&form).await).await, invalid_grant(), "{other}");
    }
}

#[tokio::test]
async fn a_wrong_code_verifier_is_invalid_grant() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    let other = Pkce::new();
    assert_eq!(error_of(server.token(&exchange_form(&app, &code, &other.verifier)).await).await, invalid_grant());
    // The challenge itself is a well-formed verifier, but not the right one.
    assert_eq!(error_of(server.token(&exchange_form(&app, &code, &pkce.challenge)).await).await, invalid_grant());
}

#[tokio::test]
async fn a_malformed_code_verifier_is_invalid_request() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    let short = "a".repeat(42);
    let bad_char = format!("{}!", "a".repeat(42));
    let space = format!("{} {}", "a".repeat(30), "b".repeat(20));
    let non_ascii = format!("{}é", "a".repeat(43));
    for verifier in [short.as_str(), bad_char.as_str(), space.as_str(), non_ascii.as_str()] {
        let r = server.token(&exchange_form(&app, &code, verifier)).await;
        assert_eq!(error_of(r).await, invalid_request(), "{verifier:?}");
    }
    assert_eq!(server.token(&exchange_form(&app, &code, &pkce.verifier)).await.status(), 200);
}

#[tokio::test]
async fn an_expired_code_is_invalid_grant() {
    let server = TestServer::start_with(|c| c.code_lifetime = 1).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let (code, pkce) = code_for(&server, &app).await;
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_eq!(error_of(server.token(&exchange_form(&app, &code, &pkce.verifier)).await).await, invalid_grant());
}

/// Exchanges a fresh code; returns the code, its verifier and the tokens.
async fn exchanged(server: &TestServer, app: &App) -> (String, Pkce, latchkey_proto::TokenResponse) {
    let (code, pkce) = code_for(server, app).await;
    let r = server.token(&exchange_form(app, &code, &pkce.verifier)).await;
    assert_eq!(r.status(), 200);
    let t = r.json().await.expect("json");
    (code, pkce, t)
}

/// The tokens of a grant no longer work.
async fn assert_revoked(server: &TestServer, app: &App, t: &latchkey_proto::TokenResponse) {
    let r = refresh(server, app, t.refresh_token.as_deref().expect("refresh token")).await;
    assert_eq!(error_of(r).await, invalid_grant(), "refresh token revoked");
    assert_eq!(channels(server, &t.access_token).await.status(), 401, "access token revoked");
}

#[tokio::test]
async fn a_second_use_of_a_code_is_invalid_grant_and_revokes_the_tokens_issued_from_it() {
    let (server, app) = setup().await;
    let (code, pkce, t) = exchanged(&server, &app).await;
    assert_eq!(channels(&server, &t.access_token).await.status(), 200);
    let r = server.token(&exchange_form(&app, &code, &pkce.verifier)).await;
    assert_eq!(error_of(r).await, invalid_grant());
    assert_revoked(&server, &app, &t).await;
}

/// What is wrong, besides the reuse, with a second presentation of a code.
#[derive(Debug, Clone, Copy)]
enum Fault {
    WrongVerifier,
    MalformedVerifier,
    NoVerifier,
    OtherRedirectUri,
    NoRedirectUri,
    OtherClient,
    UnknownClient,
    WrongClientSecret,
}

#[tokio::test]
async fn a_second_use_of_a_code_revokes_the_tokens_even_when_the_second_request_is_otherwise_faulty() {
    // docs/decisions.md, "Lifetimes": "whatever else is wrong with the second request".
    let (server, app) = setup().await;
    let other = server.app().await;
    let wrong = Pkce::new();
    let short = "a".repeat(42);
    let faults = [
        Fault::WrongVerifier,
        Fault::MalformedVerifier,
        Fault::NoVerifier,
        Fault::OtherRedirectUri,
        Fault::NoRedirectUri,
        Fault::OtherClient,
        Fault::UnknownClient,
        Fault::WrongClientSecret,
    ];
    for fault in faults {
        let (code, pkce, t) = exchanged(&server, &app).await;
        let right = Some(pkce.verifier.as_str());
        let (client_id, verifier, redirect_uri, secret) = match fault {
            Fault::WrongVerifier => (app.client_id.as_str(), Some(wrong.verifier.as_str()), Some(REDIRECT), None),
            Fault::MalformedVerifier => (app.client_id.as_str(), Some(short.as_str()), Some(REDIRECT), None),
            Fault::NoVerifier => (app.client_id.as_str(), None, Some(REDIRECT), None),
            Fault::OtherRedirectUri => (app.client_id.as_str(), right, Some("http://127.0.0.1:9999/elsewhere"), None),
            Fault::NoRedirectUri => (app.client_id.as_str(), right, None, None),
            Fault::OtherClient => (other.client_id.as_str(), right, Some(REDIRECT), None),
            Fault::UnknownClient => ("no-such-client", right, Some(REDIRECT), None),
            Fault::WrongClientSecret => (app.client_id.as_str(), right, Some(REDIRECT), Some("lks_wrong")),
        };
        let mut form = vec![("grant_type", "authorization_code"), ("client_id", client_id), ("code", code.as_str())];
        for (name, value) in [("code_verifier", verifier), ("redirect_uri", redirect_uri), ("client_secret", secret)] {
            if let Some(v) = value {
                form.push((name, v));
            }
        }
        assert_eq!(error_of(server.token(&form).await).await, invalid_grant(), "{fault:?}");
        assert_revoked(&server, &app, &t).await;
    }
}

#[tokio::test]
async fn a_code_of_a_disabled_user_is_invalid_grant() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    latchkey_admin::user_set_disabled(server.store(), ALICE, true, NOW).await.expect("disable");
    assert_eq!(error_of(server.token(&exchange_form(&app, &code, &pkce.verifier)).await).await, invalid_grant());
}

#[tokio::test]
async fn a_code_of_a_deleted_user_is_invalid_grant() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    latchkey_admin::user_delete(server.store(), ALICE, latchkey_core::time::UnixTime(1_700_000_000))
        .await
        .expect("delete");
    assert_eq!(error_of(server.token(&exchange_form(&app, &code, &pkce.verifier)).await).await, invalid_grant());
}

#[tokio::test]
async fn a_code_of_a_deleted_client_is_401_invalid_client() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    latchkey_admin::client_delete(server.store(), &Actor::Operator, ClientRef::id(&app.client_id), NOW)
        .await
        .expect("delete");
    assert_eq!(error_of(server.token(&exchange_form(&app, &code, &pkce.verifier)).await).await, invalid_client());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_code_exchanged_by_eight_concurrent_requests_succeeds_exactly_once() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(exchange_form(&app, &code, &pkce.verifier))
        .finish();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..8 {
        // One client (and so one connection) per request, so that they really run side by side.
        let http = server.http();
        let url = server.url("/token");
        let body = body.clone();
        tasks.spawn(async move {
            let r = http
                .post(url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body)
                .send()
                .await
                .expect("post");
            let status = r.status().as_u16();
            let body: Value = r.json().await.expect("json");
            (status, body)
        });
    }
    let mut ok = 0;
    let mut winner: Option<latchkey_proto::TokenResponse> = None;
    while let Some(joined) = tasks.join_next().await {
        let (status, body) = joined.expect("task");
        if status == 200 {
            ok += 1;
            winner = Some(serde_json::from_value(body).expect("token response"));
        } else {
            assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{body}");
        }
    }
    assert_eq!(ok, 1, "exactly one exchange succeeds");
    // The code was presented more than once, so what the winner got is revoked too (RFC 6749 §4.1.2).
    let t = winner.expect("the winner's tokens");
    assert_revoked(&server, &app, &t).await;
}

#[tokio::test]
async fn a_form_content_type_with_a_charset_parameter_is_accepted() {
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(exchange_form(&app, &code, &pkce.verifier))
        .finish();
    let r = server
        .http()
        .post(server.url("/token"))
        .header("content-type", "application/x-www-form-urlencoded; charset=UTF-8")
        .body(body)
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn two_client_authentication_methods_in_one_request_are_refused() {
    // RFC 6749 §2.3: the client must not use more than one authentication method in each request.
    let (server, app) = setup().await;
    let (code, pkce) = code_for(&server, &app).await;
    let mut form = exchange_form(&app, &code, &pkce.verifier);
    form.push(("client_secret", &app.client_secret));
    let r = server
        .http()
        .post(server.url("/token"))
        .basic_auth(&app.client_id, Some(&app.client_secret))
        .form(&form)
        .send()
        .await
        .expect("post");
    assert_eq!(error_of(r).await, invalid_request());

    // A body client_id naming another client than the Basic credentials is refused too.
    let other = server.app().await;
    let mut form = exchange_form(&other, &code, &pkce.verifier);
    form.retain(|(k, _)| *k != "client_secret");
    let r = server
        .http()
        .post(server.url("/token"))
        .basic_auth(&app.client_id, Some(&app.client_secret))
        .form(&form)
        .send()
        .await
        .expect("post");
    assert_eq!(error_of(r).await, invalid_request());
    assert_eq!(server.token(&exchange_form(&app, &code, &pkce.verifier)).await.status(), 200);
}
