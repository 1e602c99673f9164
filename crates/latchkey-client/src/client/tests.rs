use super::*;
use crate::dpop::FileKeyStore;
use crate::fake_http::{self, form, header, oauth_error, proof_claims, token_answer, with_nonce, FakeHttp, ISSUER};

mod resources;

const REDIRECT: &str = "http://127.0.0.1:5000/callback";
const READONLY: &str = "https://latchkey.dev/auth/readonly";
const UPLOAD: &str = "https://latchkey.dev/auth/upload";

fn client(http: Arc<FakeHttp>, iss_supported: bool) -> OAuthClient {
    OAuthClient::new(AppConfig::new(ISSUER, "lkapp-test"), fake_http::discovery(iss_supported), http)
}

/// The response the server would redirect with.
fn response(pending: &Authorization, code: &str, iss: Option<&str>) -> AuthorizationResponse {
    AuthorizationResponse {
        code: Some(code.into()),
        state: Some(pending.state().into()),
        iss: iss.map(str::to_owned),
        ..Default::default()
    }
}

fn key() -> (tempfile::TempDir, DpopKey) {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = DpopKey::load_or_create(&FileKeyStore::new(dir.path().join("dpop.key"))).expect("key");
    (dir, key)
}

fn tokens(refresh: Option<&str>, jkt: Option<&str>) -> TokenSet {
    TokenSet {
        issuer: ISSUER.into(),
        client_id: "lkapp-test".into(),
        access_token: "lka_old".into(),
        expires_at: 0,
        refresh_token: refresh.map(str::to_owned),
        refresh_expires_at: None,
        scope: READONLY.into(),
        id_token: None,
        dpop_jkt: jkt.map(str::to_owned),
    }
}

// Authorization request and custom-scheme redirects

#[test]
fn the_authorization_url_carries_s256_a_fresh_state_the_redirect_uri_and_the_scopes() {
    let c = client(FakeHttp::new(vec![]), true);
    let a = c.authorize(REDIRECT, &[READONLY, UPLOAD]).expect("authorize");
    let b = c.authorize(REDIRECT, &[READONLY]).expect("authorize");
    let url = url::Url::parse(a.url()).expect("a URL");
    assert_eq!(url.as_str().split('?').next(), Some("https://as.example/authorize"));
    let q: std::collections::HashMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(q["client_id"], "lkapp-test");
    assert_eq!(q["redirect_uri"], REDIRECT);
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["scope"], format!("{READONLY} {UPLOAD}"));
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["code_challenge"], Pkce::from_verifier(a.pkce.verifier().into()).challenge());
    assert_eq!(q["state"], a.state());
    assert!(a.state().len() >= 32, "an unguessable state: {}", a.state());
    assert_ne!(a.state(), b.state(), "a fresh state per request");
    assert_ne!(a.pkce.verifier(), b.pkce.verifier(), "a fresh verifier per request");
    assert!(!a.url().contains(a.pkce.verifier()), "the verifier never goes to the browser");
}

#[test]
fn finishing_a_custom_scheme_redirect_with_the_right_state_reads_the_response() {
    let c = client(FakeHttp::new(vec![]), true);
    let a = c.authorize("com.example.app:/oauth2redirect", &[READONLY]).expect("authorize");
    let redirect =
        format!("com.example.app:/oauth2redirect?code=lkc_1&state={}&iss=https%3A%2F%2Fas.example#_=_", a.state());
    let r = a.finish(&redirect).expect("the matching response");
    assert_eq!((r.code.as_deref(), r.iss.as_deref()), (Some("lkc_1"), Some(ISSUER)));
}

#[test]
fn finishing_a_redirect_with_another_state_or_none_is_a_state_mismatch() {
    let c = client(FakeHttp::new(vec![]), true);
    let a = c.authorize("com.example.app:/cb", &[READONLY]).expect("authorize");
    let other = c.authorize("com.example.app:/cb", &[READONLY]).expect("authorize");
    for redirect in [
        format!("com.example.app:/cb?code=lkc_1&state={}", other.state()),
        format!("com.example.app:/cb?code=lkc_1&state={}x", a.state()),
        "com.example.app:/cb?code=lkc_1".to_owned(),
        "com.example.app:/cb?code=lkc_1&state=".to_owned(),
        format!("com.example.app:/cb#code=lkc_1&state={}", a.state()),
    ] {
        assert!(matches!(a.finish(&redirect), Err(Error::StateMismatch)), "{redirect} is refused");
    }
}

// Code exchange

#[tokio::test]
async fn an_exchange_with_another_state_is_refused_before_anything_is_sent() {
    let http = FakeHttp::new(vec![]);
    let c = client(http.clone(), true);
    let a = c.authorize(REDIRECT, &[READONLY]).expect("authorize");
    let mut r = response(&a, "lkc_1", Some(ISSUER));
    r.state = Some("forged".into());
    assert!(matches!(c.exchange(a, &r, None).await, Err(Error::StateMismatch)));
    assert!(http.requests().is_empty(), "the code is not sent");
}

#[tokio::test]
async fn an_exchange_with_the_iss_of_another_issuer_is_an_issuer_mismatch_and_the_code_is_not_sent() {
    let http = FakeHttp::new(vec![]);
    let c = client(http.clone(), true);
    let a = c.authorize(REDIRECT, &[READONLY]).expect("authorize");
    let r = response(&a, "lkc_1", Some("https://attacker.example"));
    match c.exchange(a, &r, None).await {
        Err(Error::IssuerMismatch(iss)) => assert_eq!(iss, "https://attacker.example"),
        other => panic!("expected IssuerMismatch, got {other:?}"),
    }
    // Not even a prefix or a trailing slash passes: RFC 9207 compares exactly.
    for iss in ["https://as.example/", "https://as.example.attacker", "HTTPS://AS.EXAMPLE"] {
        let a = c.authorize(REDIRECT, &[READONLY]).expect("authorize");
        let r = response(&a, "lkc_1", Some(iss));
        assert!(matches!(c.exchange(a, &r, None).await, Err(Error::IssuerMismatch(_))), "{iss}");
    }
    assert!(http.requests().is_empty(), "the code never reaches any token endpoint");
}

#[tokio::test]
async fn a_missing_iss_is_refused_when_the_server_promises_it_and_accepted_when_it_does_not() {
    let http = FakeHttp::new(vec![token_answer("lka_1", Some("lkr_1"), READONLY, 3600)]);
    let promising = client(http.clone(), true);
    let a = promising.authorize(REDIRECT, &[READONLY]).expect("authorize");
    let r = response(&a, "lkc_1", None);
    assert!(matches!(promising.exchange(a, &r, None).await, Err(Error::IssuerMismatch(_))));
    assert!(http.requests().is_empty());

    let plain = client(http.clone(), false);
    let a = plain.authorize(REDIRECT, &[READONLY]).expect("authorize");
    let r = response(&a, "lkc_1", None);
    assert_eq!(plain.exchange(a, &r, None).await.expect("tokens").access_token, "lka_1");
}

#[tokio::test]
async fn access_denied_in_the_redirect_is_access_denied_and_nothing_is_sent() {
    let http = FakeHttp::new(vec![]);
    let c = client(http.clone(), true);
    let a = c.authorize(REDIRECT, &[READONLY]).expect("authorize");
    let r = AuthorizationResponse {
        error: Some("access_denied".into()),
        state: Some(a.state().into()),
        iss: Some(ISSUER.into()),
        ..Default::default()
    };
    assert!(matches!(c.exchange(a, &r, None).await, Err(Error::AccessDenied)));
    assert!(http.requests().is_empty());
}

#[tokio::test]
async fn the_code_exchange_sends_the_code_the_verifier_the_redirect_uri_and_the_client_id() {
    let http = FakeHttp::new(vec![token_answer("lka_1", Some("lkr_1"), READONLY, 3600)]);
    let c = client(http.clone(), true);
    let a = c.authorize(REDIRECT, &[READONLY, UPLOAD]).expect("authorize");
    let verifier = a.pkce.verifier().to_owned();
    let r = response(&a, "lkc_1", Some(ISSUER));
    let t = c.exchange(a, &r, None).await.expect("tokens");
    let sent = http.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].method, sent[0].url.as_str()), ("POST", "https://as.example/token"));
    let f = form(&sent[0]);
    assert_eq!(f["grant_type"], "authorization_code");
    assert_eq!(f["code"], "lkc_1");
    assert_eq!(f["code_verifier"], verifier);
    assert_eq!(f["redirect_uri"], REDIRECT);
    assert_eq!(f["client_id"], "lkapp-test");
    assert!(!f.contains_key("client_secret"), "no secret unless configured");
    assert!(header(&sent[0], "dpop").is_none(), "no proof without a key");
    assert!(t.granted(READONLY) && !t.granted(UPLOAD), "only what the server granted");
    assert_eq!(t.refresh_token.as_deref(), Some("lkr_1"));
    assert!((t.expires_at - unix_now() - 3600).abs() <= 5, "expiry from expires_in");
    assert_eq!(t.dpop_jkt, None);
}

#[tokio::test]
async fn invalid_grant_on_a_code_exchange_is_an_oauth_error_not_sign_in_again() {
    let http = FakeHttp::new(vec![oauth_error(400, "invalid_grant")]);
    let c = client(http, true);
    let a = c.authorize(REDIRECT, &[READONLY]).expect("authorize");
    let r = response(&a, "lkc_1", Some(ISSUER));
    match c.exchange(a, &r, None).await {
        Err(Error::OAuth { code, description }) => {
            assert_eq!((code.as_str(), description.as_str()), ("invalid_grant", "test: invalid_grant"))
        }
        other => panic!("expected an OAuth error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_dpop_exchange_proves_with_the_code_hash_jti_and_binds_the_token_set_to_the_key() {
    let (_dir, key) = key();
    let http = FakeHttp::new(vec![with_nonce(token_answer("lka_1", Some("lkr_1"), READONLY, 3600), "n1")]);
    let c = client(http.clone(), true);
    let a = c.authorize(REDIRECT, &[READONLY]).expect("authorize");
    let r = response(&a, "lkc_1", Some(ISSUER));
    let t = c.exchange(a, &r, Some(&key)).await.expect("tokens");
    let sent = http.requests();
    let claims = proof_claims(header(&sent[0], "dpop").expect("a DPoP proof"));
    assert_eq!(claims["jti"], crate::dpop::code_jti("lkc_1"), "the code-hash jti of a code exchange");
    assert_eq!((claims["htm"].as_str(), claims["htu"].as_str()), (Some("POST"), Some("https://as.example/token")));
    assert!(claims.get("nonce").is_none(), "no nonce known yet");
    assert_eq!(t.dpop_jkt.as_deref(), Some(key.thumbprint()));
    assert_eq!(c.cached_nonce().as_deref(), Some("n1"), "the answer's nonce is kept for the next proof");
}

// Refresh

#[tokio::test]
async fn use_dpop_nonce_is_retried_once_with_the_nonce_and_a_fresh_jti_and_the_next_nonce_is_kept() {
    let (_dir, key) = key();
    let http = FakeHttp::new(vec![
        with_nonce(oauth_error(400, "use_dpop_nonce"), "n1"),
        with_nonce(token_answer("lka_2", None, READONLY, 3600), "n2"),
        with_nonce(token_answer("lka_3", None, READONLY, 3600), "n3"),
    ]);
    let c = client(http.clone(), true);
    let old = tokens(Some("lkr_1"), Some(key.thumbprint()));
    let fresh = c.refresh(&old, Some(&key)).await.expect("refreshed after the retry");
    assert_eq!(fresh.access_token, "lka_2");
    c.refresh(&fresh, Some(&key)).await.expect("refreshed again");
    let sent = http.requests();
    assert_eq!(sent.len(), 3, "one retry, then one request");
    let proofs: Vec<serde_json::Value> = sent.iter().map(|r| proof_claims(header(r, "dpop").expect("proof"))).collect();
    assert!(proofs[0].get("nonce").is_none());
    assert_eq!(proofs[1]["nonce"], "n1", "the retry carries the server's nonce");
    assert_eq!(proofs[2]["nonce"], "n2", "the next request uses the last answer's nonce");
    assert_ne!(proofs[0]["jti"], proofs[1]["jti"], "every proof has its own jti");
    assert_ne!(proofs[1]["jti"], proofs[2]["jti"]);
    assert!(sent.iter().all(|r| form(r)["refresh_token"] == "lkr_1"));
}

#[tokio::test]
async fn a_second_use_dpop_nonce_is_not_retried_again() {
    let (_dir, key) = key();
    let http = FakeHttp::new(vec![
        with_nonce(oauth_error(400, "use_dpop_nonce"), "n1"),
        with_nonce(oauth_error(400, "use_dpop_nonce"), "n2"),
    ]);
    let c = client(http.clone(), true);
    let r = c.refresh(&tokens(Some("lkr_1"), Some(key.thumbprint())), Some(&key)).await;
    assert!(matches!(&r, Err(Error::OAuth { code, .. }) if code == "use_dpop_nonce"), "{r:?}");
    assert_eq!(http.requests().len(), 2, "exactly one retry");
}

#[tokio::test]
async fn use_dpop_nonce_without_a_key_or_without_a_nonce_header_is_not_retried() {
    let http = FakeHttp::new(vec![oauth_error(400, "use_dpop_nonce"), oauth_error(400, "use_dpop_nonce")]);
    let c = client(http.clone(), true);
    assert!(c.refresh(&tokens(Some("lkr_1"), None), None).await.is_err());
    assert_eq!(http.requests().len(), 1, "no key: nothing to retry with");
    let (_dir, key) = key();
    assert!(c.refresh(&tokens(Some("lkr_1"), None), Some(&key)).await.is_err());
    assert_eq!(http.requests().len(), 2, "no DPoP-Nonce header: nothing to retry with");
}

#[tokio::test]
async fn invalid_grant_on_refresh_means_sign_in_again() {
    let http = FakeHttp::new(vec![oauth_error(400, "invalid_grant")]);
    let c = client(http, true);
    let r = c.refresh(&tokens(Some("lkr_1"), None), None).await;
    assert!(matches!(&r, Err(Error::SignInAgain(why)) if why == "test: invalid_grant"), "{r:?}");
    let c = client(FakeHttp::new(vec![]), true);
    assert!(matches!(c.refresh(&tokens(None, None), None).await, Err(Error::SignInAgain(_))), "no refresh token");
}

#[tokio::test]
async fn a_refresh_keeps_the_refresh_token_and_the_binding_when_the_server_sends_no_new_ones() {
    let (_dir, key) = key();
    let http = FakeHttp::new(vec![token_answer("lka_2", None, READONLY, 30)]);
    let c = client(http, true);
    let mut old = tokens(Some("lkr_1"), Some(key.thumbprint()));
    old.refresh_expires_at = Some(42);
    old.id_token = Some("id".into());
    let t = c.refresh(&old, Some(&key)).await.expect("refreshed");
    assert_eq!((t.access_token.as_str(), t.refresh_token.as_deref()), ("lka_2", Some("lkr_1")));
    assert_eq!((t.refresh_expires_at, t.id_token.as_deref()), (Some(42), Some("id")));
    assert_eq!(t.dpop_jkt.as_deref(), Some(key.thumbprint()));
    assert!((t.expires_at - unix_now() - 30).abs() <= 5);
}

#[tokio::test]
async fn an_error_answer_without_an_oauth_body_is_a_protocol_error() {
    let http = FakeHttp::new(vec![fake_http::json(502, serde_json::json!("bad gateway"))]);
    let c = client(http, true);
    let r = c.refresh(&tokens(Some("lkr_1"), None), None).await;
    assert!(matches!(&r, Err(Error::Protocol(m)) if m.contains("502")), "{r:?}");
}

#[tokio::test]
async fn a_client_secret_when_configured_is_sent_with_every_token_request() {
    let http = FakeHttp::new(vec![token_answer("lka_2", None, READONLY, 3600)]);
    let mut config = AppConfig::new(ISSUER, "lkapp-test");
    config.client_secret = Some("s3cret".into());
    assert!(!format!("{config:?}").contains("s3cret"), "the secret stays out of logs");
    let c = OAuthClient::new(config, fake_http::discovery(true), http.clone());
    c.refresh(&tokens(Some("lkr_1"), None), None).await.expect("refreshed");
    assert_eq!(form(&http.requests()[0])["client_secret"], "s3cret");
}

// Revocation

#[tokio::test]
async fn revoke_posts_the_token_and_the_client_id_to_the_revocation_endpoint() {
    let http = FakeHttp::new(vec![fake_http::json(200, serde_json::json!({})), oauth_error(400, "invalid_request")]);
    let c = client(http.clone(), true);
    c.revoke("lkr_1").await.expect("revoked");
    let sent = http.requests();
    assert_eq!(sent[0].url, "https://as.example/revoke");
    let f = form(&sent[0]);
    assert_eq!((f["token"].as_str(), f["client_id"].as_str()), ("lkr_1", "lkapp-test"));
    assert!(matches!(c.revoke("lkr_1").await, Err(Error::OAuth { .. })), "a refusal is reported");
}

#[tokio::test]
async fn revoke_without_a_revocation_endpoint_is_a_protocol_error() {
    let mut d = fake_http::discovery(true);
    d.revocation_endpoint = None;
    let c = OAuthClient::new(AppConfig::new(ISSUER, "lkapp-test"), d, FakeHttp::new(vec![]));
    assert!(matches!(c.revoke("lkr_1").await, Err(Error::Protocol(_))));
}

// Discovery

#[tokio::test]
async fn discovery_reads_the_openid_configuration_and_falls_back_to_the_oauth_document() {
    let metadata = fake_http::metadata(true);
    let http = FakeHttp::new(vec![fake_http::json(404, serde_json::json!({})), fake_http::json(200, metadata)]);
    let c = OAuthClient::discover(AppConfig::new("https://as.example/", "lkapp-test"), http.clone()).await;
    assert_eq!(c.expect("discovered").discovery().token_endpoint, "https://as.example/token");
    let urls: Vec<String> = http.requests().into_iter().map(|r| r.url).collect();
    assert_eq!(
        urls,
        [
            "https://as.example/.well-known/openid-configuration",
            "https://as.example/.well-known/oauth-authorization-server"
        ]
    );
}

#[tokio::test]
async fn discovery_refuses_metadata_that_names_another_issuer() {
    let mut metadata = fake_http::metadata(true);
    metadata["issuer"] = "https://attacker.example".into();
    let http = FakeHttp::new(vec![fake_http::json(200, metadata)]);
    let r = OAuthClient::discover(AppConfig::new(ISSUER, "lkapp-test"), http).await;
    assert!(matches!(&r, Err(Error::Protocol(m)) if m.contains("attacker")), "{r:?}");
}
