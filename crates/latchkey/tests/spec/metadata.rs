//! Discovery (RFC 8414, OpenID Connect Discovery 1.0) and identity: the id_token (returned only when an identity scope
//! was granted, `docs/decisions.md`, "Scopes"), checked as an OpenID Connect Core §3.1.3.7 client would, the JWKS
//! across a key rotation, and UserInfo.

use crate::support::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use latchkey_core::time::Clock;
use latchkey_proto::TokenResponse;
use latchkey_store::KeyKind;
use serde_json::Value;
use url::Url;

const REDIRECT: &str = "http://127.0.0.1:5555/callback";
const ALICE: &str = "alice@example.com";
const DATA_SCOPES: [&str; 7] =
    ["readonly", "force-ssl", "manage", "channel-memberships.creator", "upload", "partner", "partner-channel-audit"];

async fn get_json(server: &TestServer, url: &str) -> Value {
    let r = server.http().get(url).send().await.expect("get");
    assert_eq!(r.status(), 200, "{url}");
    let content_type = r.headers()["content-type"].to_str().expect("text").to_owned();
    assert!(content_type.starts_with("application/json"), "{url}: {content_type}");
    r.json().await.expect("json")
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().expect("array").iter().map(|s| s.as_str().expect("string")).collect()
}

#[tokio::test]
async fn both_discovery_documents_describe_the_server() {
    let server = TestServer::start().await;
    let oauth = get_json(&server, &server.url("/.well-known/oauth-authorization-server")).await;
    let oidc = get_json(&server, &server.url("/.well-known/openid-configuration")).await;
    assert_eq!(oauth, oidc, "one document under both names");
    for doc in [&oauth, &oidc] {
        // RFC 8414 §3.3: the issuer is exactly the base URL the document was fetched from.
        assert_eq!(doc["issuer"], server.base.as_str());
        assert!(server.base.starts_with("https://127.0.0.1:"), "{}", server.base);
        assert!(!server.base.ends_with('/'));
        assert_eq!(doc["authorization_endpoint"], server.url("/o/oauth2/v2/auth"));
        assert_eq!(doc["token_endpoint"], server.url("/token"));
        assert_eq!(doc["revocation_endpoint"], server.url("/revoke"));
        assert_eq!(doc["userinfo_endpoint"], server.url("/v1/userinfo"));
        assert_eq!(doc["jwks_uri"], server.url("/oauth2/v3/certs"));
        assert_eq!(strings(&doc["response_types_supported"]), ["code"]);
        let grants = strings(&doc["grant_types_supported"]);
        assert!(grants.contains(&"authorization_code") && grants.contains(&"refresh_token"), "{grants:?}");
        assert_eq!(strings(&doc["code_challenge_methods_supported"]), ["S256", "plain"]);
        let scopes = strings(&doc["scopes_supported"]);
        for s in DATA_SCOPES {
            let id = format!("{BASE}{s}");
            assert!(scopes.contains(&id.as_str()), "{id} in {scopes:?}");
        }
        for s in ["openid", "email", "profile"] {
            assert!(scopes.contains(&s), "{s} in {scopes:?}");
        }
        let methods = strings(&doc["token_endpoint_auth_methods_supported"]);
        for m in ["none", "client_secret_post", "client_secret_basic"] {
            assert!(methods.contains(&m), "{m} in {methods:?}");
        }
        assert_eq!(strings(&doc["subject_types_supported"]), ["public"]);
        assert_eq!(strings(&doc["id_token_signing_alg_values_supported"]), ["ES256"]);
    }
    // The document parses as the wire type the SDK uses.
    let typed: latchkey_proto::ServerMetadata = serde_json::from_value(oauth).expect("ServerMetadata");
    assert_eq!(typed.issuer, server.base);
}

#[tokio::test]
async fn the_advertised_jwks_uri_serves_es256_public_keys() {
    let server = TestServer::start().await;
    let doc = get_json(&server, &server.url("/.well-known/openid-configuration")).await;
    let jwks = get_json(&server, doc["jwks_uri"].as_str().expect("jwks_uri")).await;
    let keys = jwks["keys"].as_array().expect("keys");
    assert!(!keys.is_empty());
    for k in keys {
        assert_eq!(k["kty"], "EC");
        assert_eq!(k["crv"], "P-256");
        assert_eq!(k["alg"], "ES256");
        assert_eq!(k["use"], "sig");
        assert!(k["kid"].is_string());
        assert!(k.get("d").is_none(), "no private key material: {k}");
        assert_eq!(URL_SAFE_NO_PAD.decode(k["x"].as_str().expect("x")).expect("b64").len(), 32);
        assert_eq!(URL_SAFE_NO_PAD.decode(k["y"].as_str().expect("y")).expect("b64").len(), 32);
    }
}

/// Runs the flow for `scopes` (all granted) with `extra` authorization parameters; returns the tokens.
async fn tokens_with(server: &TestServer, app: &App, scopes: &[&str], extra: &[(&str, &str)]) -> TokenResponse {
    let pkce = Pkce::new();
    let mut url = Url::parse(&authorize_url(server, app, scopes, &pkce, REDIRECT, "st4te")).expect("url");
    url.query_pairs_mut().extend_pairs(extra);
    let browser = server.browser();
    let consent = browser.consent_page(url.as_str(), ALICE).await;
    assert_eq!(consent.status, 200, "consent page: {}", consent.body);
    let done = browser.decide(&consent, scopes, "allow").await;
    assert_eq!(done.status, 303, "consent redirects: {}", done.body);
    let code = done.redirect_param("code").expect("code");
    let r = server
        .token(&[
            ("grant_type", "authorization_code"),
            ("client_id", &app.client_id),
            ("code", &code),
            ("code_verifier", &pkce.verifier),
            ("redirect_uri", REDIRECT),
        ])
        .await;
    assert_eq!(r.status(), 200);
    r.json().await.expect("token response")
}

/// Verifies an id_token's ES256 signature with the JWKS key its `kid` names; returns header and claims.
pub(crate) async fn verified(server: &TestServer, id_token: &str) -> (Value, Value) {
    let parts: Vec<&str> = id_token.split('.').collect();
    assert_eq!(parts.len(), 3, "compact JWS");
    let decode = |p: &str| URL_SAFE_NO_PAD.decode(p).expect("base64url without padding");
    let header: Value = serde_json::from_slice(&decode(parts[0])).expect("header json");
    let claims: Value = serde_json::from_slice(&decode(parts[1])).expect("claims json");
    assert_eq!(header["alg"], "ES256");
    let kid = header["kid"].as_str().expect("kid");
    let jwks = get_json(server, &server.url("/oauth2/v3/certs")).await;
    let key = jwks["keys"].as_array().expect("keys").iter().find(|k| k["kid"] == kid).expect("the kid is published");
    let mut point = vec![4u8];
    point.extend(decode(key["x"].as_str().expect("x")));
    point.extend(decode(key["y"].as_str().expect("y")));
    let signature = decode(parts[2]);
    assert_eq!(signature.len(), 64, "raw R|S");
    let signing_input = format!("{}.{}", parts[0], parts[1]);
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, &point)
        .verify(signing_input.as_bytes(), &signature)
        .expect("the signature verifies with the published key");
    (header, claims)
}

fn at_hash(access_token: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, access_token.as_bytes());
    URL_SAFE_NO_PAD.encode(&digest.as_ref()[..16])
}

fn now() -> i64 {
    latchkey_admin::clock::SystemClock.now().0
}

#[tokio::test]
async fn an_id_token_is_signed_and_carries_the_identity_claims() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let user_id = server.user(ALICE).await;
    let before = now();
    let nonce = "n-0S6_WzA2Mj &=/+ü";
    let t = tokens_with(&server, &app, &["openid", "email", "profile", READONLY], &[("nonce", nonce)]).await;
    let id_token = t.id_token.as_deref().expect("id_token for identity scopes");
    let (header, claims) = verified(&server, id_token).await;
    assert_eq!(header["typ"], "JWT");
    assert_eq!(claims["iss"], server.base.as_str());
    assert_eq!(claims["sub"], user_id.as_str());
    assert_eq!(claims["aud"], app.client_id.as_str());
    assert_eq!(claims["azp"], app.client_id.as_str());
    assert_eq!(claims["nonce"], nonce, "the nonce comes back exactly, through the sign-in page");
    assert_eq!(claims["email"], ALICE);
    assert_eq!(claims["email_verified"], true);
    assert_eq!(claims["name"], "Test User");
    assert_eq!(claims["at_hash"], at_hash(&t.access_token));
    let iat = claims["iat"].as_i64().expect("iat");
    let exp = claims["exp"].as_i64().expect("exp");
    let auth_time = claims["auth_time"].as_i64().expect("auth_time");
    assert!(before - 1 <= iat && iat <= now() + 1, "iat {iat} is now");
    assert!(exp > iat, "exp {exp} after iat {iat}");
    assert!(auth_time <= iat && auth_time >= before - 1, "auth_time {auth_time}");
}

#[tokio::test]
async fn the_id_token_claims_follow_the_granted_identity_scopes() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let user_id = server.user(ALICE).await;
    let t = tokens_with(&server, &app, &["openid"], &[]).await;
    let (_, claims) = verified(&server, t.id_token.as_deref().expect("id_token")).await;
    assert_eq!(claims["sub"], user_id.as_str());
    for absent in ["email", "email_verified", "name", "nonce"] {
        assert!(claims.get(absent).is_none(), "{absent} without its scope or parameter: {claims}");
    }

    let t = tokens_with(&server, &app, &["openid", "email"], &[]).await;
    let (_, claims) = verified(&server, t.id_token.as_deref().expect("id_token")).await;
    assert_eq!(claims["email"], ALICE);
    assert!(claims.get("name").is_none(), "{claims}");
}

#[tokio::test]
async fn there_is_no_id_token_without_an_identity_scope() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let t = tokens_with(&server, &app, &[READONLY, UPLOAD], &[("nonce", "abc")]).await;
    assert!(t.id_token.is_none());
}

#[tokio::test]
async fn there_is_no_id_token_on_refresh() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let t = tokens_with(&server, &app, &["openid", READONLY], &[]).await;
    assert!(t.id_token.is_some());
    let r = server
        .token(&[
            ("grant_type", "refresh_token"),
            ("client_id", &app.client_id),
            ("refresh_token", t.refresh_token.as_deref().expect("refresh token")),
        ])
        .await;
    assert_eq!(r.status(), 200);
    let again: TokenResponse = r.json().await.expect("json");
    assert!(again.id_token.is_none());
}

#[tokio::test]
async fn after_a_key_rotation_new_id_tokens_carry_the_new_kid_and_the_jwks_lists_both_keys() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let before = tokens_with(&server, &app, &["openid"], &[]).await;
    let before_token = before.id_token.expect("id_token");
    let (old_header, _) = verified(&server, &before_token).await;
    let old_kid = old_header["kid"].as_str().expect("kid").to_owned();

    let at = latchkey_core::time::UnixTime(now());
    let secrets = server.running.state.keys.secret_source();
    latchkey_admin::key_rotate(server.store(), secrets, KeyKind::IdToken, at).await.expect("rotate");
    server.running.state.keys.reload(server.store(), at).await.expect("reload");

    let after = tokens_with(&server, &app, &["openid"], &[]).await;
    let (new_header, _) = verified(&server, after.id_token.as_deref().expect("id_token")).await;
    let new_kid = new_header["kid"].as_str().expect("kid").to_owned();
    assert_ne!(new_kid, old_kid, "the new key signs");

    let jwks = get_json(&server, &server.url("/oauth2/v3/certs")).await;
    let kids: Vec<&str> =
        jwks["keys"].as_array().expect("keys").iter().map(|k| k["kid"].as_str().expect("kid")).collect();
    assert!(kids.contains(&old_kid.as_str()) && kids.contains(&new_kid.as_str()), "{kids:?}");
    // id_tokens signed before the rotation still verify.
    verified(&server, &before_token).await;
}

#[tokio::test]
async fn userinfo_returns_the_users_claims_for_an_openid_token() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let user_id = server.user(ALICE).await;
    let t = tokens_with(&server, &app, &["openid", "email", "profile"], &[]).await;
    let url = server.url("/v1/userinfo");
    for request in [server.http().get(&url), server.http().post(&url)] {
        let r = request.bearer_auth(&t.access_token).send().await.expect("userinfo");
        assert_eq!(r.status(), 200);
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["sub"], user_id.as_str());
        assert_eq!(body["email"], ALICE);
        assert_eq!(body["email_verified"], true);
        assert_eq!(body["name"], "Test User");
    }
    // The same subject as the id_token.
    let (_, claims) = verified(&server, t.id_token.as_deref().expect("id_token")).await;
    assert_eq!(claims["sub"], user_id.as_str());
}

#[tokio::test]
async fn userinfo_without_openid_is_403_and_without_a_token_401() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let r = server.http().get(server.url("/v1/userinfo")).bearer_auth(&t.access_token).send().await.expect("get");
    assert_eq!(r.status(), 403);
    let challenge = r.headers()["www-authenticate"].to_str().expect("text");
    assert!(challenge.contains("error=\"insufficient_scope\""), "{challenge}");
    let r = server.http().get(server.url("/v1/userinfo")).send().await.expect("get");
    assert_eq!(r.status(), 401);
    let r = server.http().get(server.url("/v1/userinfo")).bearer_auth("lka_garbage").send().await.expect("get");
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn userinfo_leaves_out_claims_whose_scope_was_not_granted() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let user_id = server.user(ALICE).await;
    let t = tokens_with(&server, &app, &["openid"], &[]).await;
    let r = server.http().get(server.url("/v1/userinfo")).bearer_auth(&t.access_token).send().await.expect("get");
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["sub"], user_id.as_str());
    assert!(body.get("email").is_none() && body.get("name").is_none(), "{body}");
}

#[tokio::test]
async fn configured_public_urls_are_the_issuer_and_the_bases_of_the_endpoints() {
    let server = TestServer::start_with(|c| {
        c.public_url = Some("https://id.example.test".into());
        c.token_url = Some("https://token.example.test".into());
        c.api_base_url = Some("https://api.example.test".into());
    })
    .await;
    // The listener is still on the loopback address; the documents name the public URLs.
    let local = format!("https://{}", server.running.addr);
    let doc = get_json(&server, &format!("{local}/.well-known/oauth-authorization-server")).await;
    assert_eq!(doc["issuer"], "https://id.example.test");
    assert_eq!(doc["authorization_endpoint"], "https://id.example.test/o/oauth2/v2/auth");
    assert_eq!(doc["token_endpoint"], "https://token.example.test/token");
    assert_eq!(doc["revocation_endpoint"], "https://token.example.test/revoke");
    assert_eq!(doc["jwks_uri"], "https://id.example.test/oauth2/v3/certs");
    // docs/configuration.md: api_base_url is the base of the data API and of /v1/userinfo.
    assert_eq!(doc["userinfo_endpoint"], "https://api.example.test/v1/userinfo");
    let oidc = get_json(&server, &format!("{local}/.well-known/openid-configuration")).await;
    assert_eq!(doc, oidc);
}
