//! RFC 7636 (PKCE) at the code exchange (`docs/decisions.md`, "PKCE"): code_verifier and code_challenge, S256 and
//! plain, the verifier's length and character limits, and the PKCE-less mode of `require_pkce = false`.

use crate::support::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use latchkey_admin::clock::OsRandom;
use url::Url;

const REDIRECT: &str = "http://127.0.0.1:5555/callback";
const ALICE: &str = "alice@example.com";

/// Runs authorization with `pkce` as the extra query parameters (challenge and method, or nothing); returns
/// the code.
async fn code_with(server: &TestServer, app: &App, pkce: &[(&str, &str)]) -> String {
    let mut url = Url::parse(&server.url("/o/oauth2/v2/auth")).expect("url");
    url.query_pairs_mut()
        .append_pair("client_id", &app.client_id)
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("response_type", "code")
        .append_pair("scope", READONLY)
        .append_pair("state", "st4te")
        .extend_pairs(pkce);
    let browser = server.browser();
    let consent = browser.consent_page(url.as_str(), ALICE).await;
    assert_eq!(consent.status, 200, "consent page: {}", consent.body);
    let done = browser.decide(&consent, &[READONLY], "allow").await;
    assert_eq!(done.status, 303, "consent redirects: {}", done.body);
    done.redirect_param("code").expect("code in the redirect")
}

/// Posts the code exchange, with `verifier` when given.
async fn exchange(server: &TestServer, app: &App, code: &str, verifier: Option<&str>) -> reqwest::Response {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("client_id", app.client_id.as_str()),
        ("code", code),
        ("redirect_uri", REDIRECT),
    ];
    if let Some(v) = verifier {
        form.push(("code_verifier", v));
    }
    server.token(&form).await
}

fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()))
}

/// A verifier of `len` characters drawn from the whole allowed set.
fn verifier_of(len: usize) -> String {
    const ALLOWED: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
    let random = latchkey_core::secret::random_bytes(len, &OsRandom);
    random.iter().enumerate().map(|(i, b)| ALLOWED[(usize::from(*b) + i) % ALLOWED.len()] as char).collect()
}

async fn setup() -> (TestServer, App) {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    (server, app)
}

fn invalid_grant() -> (u16, String) {
    (400, "invalid_grant".to_string())
}

fn invalid_request() -> (u16, String) {
    (400, "invalid_request".to_string())
}

#[tokio::test]
async fn an_s256_challenge_is_satisfied_by_its_verifier() {
    let (server, app) = setup().await;
    let pkce = Pkce::new();
    assert_eq!(pkce.challenge, s256(&pkce.verifier));
    let code =
        code_with(&server, &app, &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")]).await;
    let r = exchange(&server, &app, &code, Some(&pkce.verifier)).await;
    assert_eq!(r.status(), 200);
    let t: latchkey_proto::TokenResponse = r.json().await.expect("json");
    assert_eq!(channels(&server, &t.access_token).await.status(), 200);
}

#[tokio::test]
async fn an_s256_challenge_is_not_satisfied_by_the_challenge_itself() {
    let (server, app) = setup().await;
    let pkce = Pkce::new();
    let code =
        code_with(&server, &app, &[("code_challenge", &pkce.challenge), ("code_challenge_method", "S256")]).await;
    // The challenge is a well-formed verifier, as a client that confused the two (or used plain) would send.
    assert_eq!(error_of(exchange(&server, &app, &code, Some(&pkce.challenge)).await).await, invalid_grant());
}

#[tokio::test]
async fn a_plain_challenge_is_satisfied_by_the_identical_verifier() {
    let (server, app) = setup().await;
    let verifier = verifier_of(64);
    let code = code_with(&server, &app, &[("code_challenge", &verifier), ("code_challenge_method", "plain")]).await;
    assert_eq!(exchange(&server, &app, &code, Some(&verifier)).await.status(), 200);

    let verifier = verifier_of(64);
    let code = code_with(&server, &app, &[("code_challenge", &verifier), ("code_challenge_method", "plain")]).await;
    assert_eq!(error_of(exchange(&server, &app, &code, Some(&verifier_of(64))).await).await, invalid_grant());

    let verifier = verifier_of(64);
    let code = code_with(&server, &app, &[("code_challenge", &verifier), ("code_challenge_method", "plain")]).await;
    assert_eq!(error_of(exchange(&server, &app, &code, Some(&s256(&verifier))).await).await, invalid_grant());
}

#[tokio::test]
async fn a_challenge_without_a_method_is_plain() {
    let (server, app) = setup().await;
    let verifier = verifier_of(43);
    let code = code_with(&server, &app, &[("code_challenge", &verifier)]).await;
    assert_eq!(exchange(&server, &app, &code, Some(&verifier)).await.status(), 200);

    // The S256 reading of the same request does not apply: its challenge is the verifier, not its hash.
    let verifier = verifier_of(43);
    let code = code_with(&server, &app, &[("code_challenge", &s256(&verifier))]).await;
    assert_eq!(error_of(exchange(&server, &app, &code, Some(&verifier)).await).await, invalid_grant());
}

#[tokio::test]
async fn without_required_pkce_a_code_without_challenge_is_exchanged_without_a_verifier() {
    let server = TestServer::start_with(|c| c.require_pkce = false).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let code = code_with(&server, &app, &[]).await;
    let r = exchange(&server, &app, &code, None).await;
    assert_eq!(r.status(), 200);
    let t: latchkey_proto::TokenResponse = r.json().await.expect("json");
    assert_eq!(channels(&server, &t.access_token).await.status(), 200);
}

#[tokio::test]
async fn a_verifier_for_a_code_issued_without_a_challenge_is_invalid_grant() {
    // PKCE downgrade protection (RFC 9700 §2.1.1): an attacker who stripped the challenge from the
    // authorization request cannot make the exchange look like a PKCE one.
    let server = TestServer::start_with(|c| c.require_pkce = false).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let code = code_with(&server, &app, &[]).await;
    let pkce = Pkce::new();
    assert_eq!(error_of(exchange(&server, &app, &code, Some(&pkce.verifier)).await).await, invalid_grant());
}

#[tokio::test]
async fn verifiers_of_43_and_128_characters_are_accepted() {
    let (server, app) = setup().await;
    for len in [43, 128] {
        let verifier = verifier_of(len);
        let code =
            code_with(&server, &app, &[("code_challenge", &s256(&verifier)), ("code_challenge_method", "S256")]).await;
        let r = exchange(&server, &app, &code, Some(&verifier)).await;
        assert_eq!(r.status(), 200, "a verifier of {len} characters");
    }
}

#[tokio::test]
async fn verifiers_of_42_and_129_characters_are_invalid_request_even_when_they_match_the_challenge() {
    let (server, app) = setup().await;
    for len in [42, 129] {
        let verifier = verifier_of(len);
        let code =
            code_with(&server, &app, &[("code_challenge", &s256(&verifier)), ("code_challenge_method", "S256")]).await;
        let r = exchange(&server, &app, &code, Some(&verifier)).await;
        assert_eq!(error_of(r).await, invalid_request(), "a verifier of {len} characters");
    }
}

#[tokio::test]
async fn a_verifier_with_a_character_outside_the_allowed_set_is_invalid_request() {
    let (server, app) = setup().await;
    for bad in ['+', '/', '=', '!', ' ', '%'] {
        let verifier = format!("{}{bad}", verifier_of(50));
        let code =
            code_with(&server, &app, &[("code_challenge", &s256(&verifier)), ("code_challenge_method", "S256")]).await;
        let r = exchange(&server, &app, &code, Some(&verifier)).await;
        assert_eq!(error_of(r).await, invalid_request(), "a verifier with {bad:?}");
    }
}
