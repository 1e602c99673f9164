//! Resource indicators (RFC 8707) and JWT access tokens (RFC 9068): `resource` on the authorization request
//! stands for its scopes or bounds them, `invalid_target` for a resource that is unknown, malformed or not the
//! grant's; a token request narrows the access token to one resource of the grant while the refresh token keeps
//! all of it; the data API refuses a token for another API; an API that asked for JWTs gets an `at+jwt` the JWKS
//! verifies; the SDK's verifier and introspector check both against the real server.

use crate::support::*;
use latchkey_admin::resources::CreatedResource;
use latchkey_core::resource::{TokenFormat, Visibility};
use serde_json::Value;

const ALICE: &str = "alice@example.com";
const NOTES: &str = "https://notes.example.com/mcp";
const REDIRECT: &str = "http://127.0.0.1:5555/callback";

/// Registers an API of `app`'s project with one scope, and has the server read it.
pub(crate) async fn register(
    server: &TestServer,
    app: &App,
    uri: &str,
    scope: &str,
    format: TokenFormat,
) -> CreatedResource {
    crate::resources_flow::register_with(server, &app.project_id, uri, scope, Visibility::Project, format).await
}

/// An authorization URL asking for `scopes` (none: no `scope` parameter) and `resources`.
fn url_for(server: &TestServer, app: &App, scopes: &[&str], resources: &[&str], pkce: &Pkce) -> String {
    let mut url = url::Url::parse(&authorize_url(server, app, scopes, pkce, REDIRECT, "s")).expect("url");
    let pairs: Vec<(String, String)> =
        url.query_pairs().into_owned().filter(|(k, _)| !(k == "scope" && scopes.is_empty())).collect();
    let mut query = url.query_pairs_mut();
    query.clear().extend_pairs(pairs);
    for r in resources {
        query.append_pair("resource", r);
    }
    drop(query);
    url.into()
}

/// Consents to everything asked and exchanges the code with `resources`: the token endpoint's answer.
async fn granted(server: &TestServer, app: &App, url: &str, pkce: &Pkce, resources: &[&str]) -> (u16, Value) {
    let browser = server.browser();
    let consent = browser.consent_page(url, ALICE).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    let boxes: Vec<String> = consent
        .body
        .split("name=\"scope\" value=\"")
        .skip(1)
        .map(|s| unescape(&s[..s.find('"').expect("end")]))
        .collect();
    let boxes: Vec<&str> = boxes.iter().map(String::as_str).collect();
    let done = browser.decide(&consent, &boxes, "allow").await;
    let code = done.redirect_param("code").unwrap_or_else(|| panic!("a code: {:?}", done.location()));
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("client_id", app.client_id.as_str()),
        ("code", code.as_str()),
        ("code_verifier", pkce.verifier.as_str()),
        ("redirect_uri", REDIRECT),
    ];
    form.extend(resources.iter().map(|r| ("resource", *r)));
    let r = server.token(&form).await;
    (r.status().as_u16(), r.json().await.expect("json"))
}

async fn refreshed(server: &TestServer, app: &App, refresh_token: &str, resources: &[&str]) -> (u16, Value) {
    let mut form =
        vec![("grant_type", "refresh_token"), ("client_id", &app.client_id), ("refresh_token", refresh_token)];
    form.extend(resources.iter().map(|r| ("resource", *r)));
    let r = server.token(&form).await;
    (r.status().as_u16(), r.json().await.expect("json"))
}

#[tokio::test]
async fn a_resource_named_without_scope_stands_for_its_scopes_and_the_data_api_refuses_the_token() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    register(&server, &app, NOTES, "notes:read|Read your notes", TokenFormat::Opaque).await;
    let pkce = Pkce::new();
    let consent = server.browser().consent_page(&url_for(&server, &app, &[], &[NOTES], &pkce), ALICE).await;
    assert!(consent.body.contains("Read your notes"), "the resource's scopes are asked for: {}", consent.body);
    let (status, t) = granted(&server, &app, &url_for(&server, &app, &[], &[NOTES], &pkce), &pkce, &[]).await;
    assert_eq!((status, t["scope"].as_str()), (200, Some("notes:read")), "{t}");
    let r = channels(&server, t["access_token"].as_str().expect("token")).await;
    assert_eq!(r.status(), 401, "a token for another API");
    let challenge = r.headers()["www-authenticate"].to_str().expect("text").to_owned();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
}

#[tokio::test]
async fn unknown_malformed_or_mismatched_resources_are_invalid_target() {
    let server = TestServer::start().await;
    let (app, other) = (server.app().await, server.app().await);
    server.user(ALICE).await;
    register(&server, &app, NOTES, "notes:read|Read your notes", TokenFormat::Opaque).await;
    let data_api = server.url("/video/v3");
    let pkce = Pkce::new();
    let cases: [(&App, &[&str], &[&str]); 5] = [
        (&app, &[READONLY], &["https://unknown.example.com"]),
        (&app, &[READONLY], &["https://notes.example.com/mcp#fragment"]),
        (&app, &[READONLY], &["not a uri"]),
        (&app, &["notes:read"], &[&data_api]),
        (&other, &[], &[NOTES]),
    ];
    for (client, scopes, resources) in cases {
        let page = server.browser().get(&url_for(&server, client, scopes, resources, &pkce)).await;
        assert_eq!(page.status, 303, "an error redirect for {resources:?}: {}", page.body);
        assert_eq!(page.redirect_param("error").as_deref(), Some("invalid_target"), "{resources:?}");
    }
    let both = url_for(&server, &app, &[READONLY, "notes:read"], &[&data_api, NOTES], &pkce);
    let (status, t) = granted(&server, &app, &both, &pkce, &["https://unknown.example.com"]).await;
    assert_eq!((status, t["error"].as_str()), (400, Some("invalid_target")), "{t}");
}

#[tokio::test]
async fn a_token_request_narrows_to_a_resource_of_the_grant_and_the_refresh_token_keeps_all_of_it() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    register(&server, &app, NOTES, "notes:read|Read your notes", TokenFormat::Opaque).await;
    let data_api = server.url("/video/v3");
    let pkce = Pkce::new();
    let url = url_for(&server, &app, &[READONLY, "notes:read", "openid"], &[&data_api, NOTES], &pkce);
    let (status, t) = granted(&server, &app, &url, &pkce, &[NOTES]).await;
    assert_eq!((status, t["scope"].as_str()), (200, Some("notes:read")), "the resource's scopes only: {t}");
    assert_eq!(channels(&server, t["access_token"].as_str().expect("token")).await.status(), 401);
    let refresh_token = t["refresh_token"].as_str().expect("refresh token");

    let (status, t) = refreshed(&server, &app, refresh_token, &[&data_api]).await;
    assert_eq!((status, t["scope"].as_str()), (200, Some(READONLY)), "{t}");
    assert_eq!(channels(&server, t["access_token"].as_str().expect("token")).await.status(), 200);
    let (status, t) = refreshed(&server, &app, refresh_token, &[]).await;
    assert_eq!((status, t["scope"].as_str()), (200, Some(format!("{READONLY} openid notes:read").as_str())));
    let (status, t) = refreshed(&server, &app, refresh_token, &["https://wiki.example.com"]).await;
    assert_eq!((status, t["error"].as_str()), (400, Some("invalid_target")), "{t}");
}

#[tokio::test]
async fn an_api_that_asked_for_jwts_gets_an_at_jwt_the_jwks_verifies_and_a_mixed_audience_an_opaque_token() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let user_id = server.user(ALICE).await;
    register(&server, &app, NOTES, "notes:read|Read your notes", TokenFormat::Jwt).await;
    let pkce = Pkce::new();
    let url = url_for(&server, &app, &["notes:read", READONLY], &[], &pkce);
    let (status, t) = granted(&server, &app, &url, &pkce, &[NOTES]).await;
    assert_eq!(status, 200, "{t}");
    let token = t["access_token"].as_str().expect("token");
    let (header, claims) = crate::metadata::verified(&server, token).await;
    assert_eq!(header["typ"], "at+jwt");
    assert_eq!((claims["iss"].as_str(), claims["aud"].as_str()), (Some(server.base.as_str()), Some(NOTES)));
    assert_eq!((claims["sub"].as_str(), claims["client_id"].as_str()), (Some(user_id.as_str()), Some(&*app.client_id)));
    assert_eq!(claims["scope"], "notes:read");
    assert!(claims["jti"].as_str().is_some_and(|j| j.len() >= 16) && claims["auth_time"].is_i64(), "{claims}");
    let lifetime = claims["exp"].as_i64().expect("exp") - claims["iat"].as_i64().expect("iat");
    assert_eq!((lifetime, t["expires_in"].as_i64()), (300, Some(300)), "jwt_access_token_lifetime");
    assert_eq!(channels(&server, token).await.status(), 401, "the data API takes no JWT");

    let (_, both) = refreshed(&server, &app, t["refresh_token"].as_str().expect("refresh"), &[]).await;
    let opaque = both["access_token"].as_str().expect("token");
    assert!(opaque.starts_with("lka_"), "two APIs in the audience: opaque, not a JWT");
    assert_eq!(channels(&server, opaque).await.status(), 200);
}

#[tokio::test]
async fn the_sdks_verifier_and_introspector_check_the_real_servers_tokens() {
    use latchkey_client::resource_server::{AccessTokenVerifier, Introspector};
    use latchkey_client::{Error, HttpClient, ReqwestHttp};
    const WIKI: &str = "https://wiki.example.com";
    let server = TestServer::start().await;
    let app = server.app().await;
    let user_id = server.user(ALICE).await;
    register(&server, &app, NOTES, "notes:read|Read your notes", TokenFormat::Jwt).await;
    let wiki = register(&server, &app, WIKI, "wiki:read|Read the wiki", TokenFormat::Opaque).await;
    let pkce = Pkce::new();
    let url = url_for(&server, &app, &[], &[NOTES, WIKI], &pkce);
    let (status, t) = granted(&server, &app, &url, &pkce, &[NOTES]).await;
    assert_eq!(status, 200, "{t}");
    let http: std::sync::Arc<dyn HttpClient> =
        std::sync::Arc::new(ReqwestHttp::with_ca_file(Some(&server.running.cert_path)).expect("http"));
    let jwks = server.url("/oauth2/v3/certs");

    let jwt = t["access_token"].as_str().expect("token");
    let claims = AccessTokenVerifier::new(&server.base, NOTES, &jwks, http.clone()).verify(jwt).await.expect("valid");
    assert_eq!((claims.sub.as_str(), claims.has_scope("notes:read")), (user_id.as_str(), true));
    let other = AccessTokenVerifier::new(&server.base, WIKI, &jwks, http.clone()).verify(jwt).await;
    assert!(matches!(other, Err(Error::InvalidToken(_))), "another API's audience: {other:?}");

    let refresh_token = t["refresh_token"].as_str().expect("refresh").to_owned();
    let (_, t) = refreshed(&server, &app, &refresh_token, &[WIKI]).await;
    let opaque = t["access_token"].as_str().expect("token");
    let introspector = Introspector::new(server.url("/introspect"), &wiki.resource.resource_id, &wiki.secret, http)
        .with_max_cache(std::time::Duration::ZERO);
    let answer = introspector.introspect(opaque).await.expect("introspected");
    assert!(answer.active && answer.audience_includes(WIKI) && answer.has_scope("wiki:read"), "{answer:?}");
    let revoke = [("token", refresh_token.as_str()), ("client_id", app.client_id.as_str())];
    assert_eq!(server.http().post(server.url("/revoke")).form(&revoke).send().await.expect("revoke").status(), 200);
    assert!(!introspector.introspect(opaque).await.expect("introspected").active, "revoked");
}

#[tokio::test]
async fn the_device_authorization_endpoint_takes_resource_as_the_authorization_endpoint_does() {
    let server = TestServer::start().await;
    let tv = crate::rfc8628_device::tv_app(&server).await;
    let data_api = server.url("/video/v3");
    let post = |form: Vec<(&'static str, String)>| {
        let (http, url) = (server.http(), server.url("/device/code"));
        async move {
            let r = http.post(url).form(&form).send().await.expect("post");
            (r.status().as_u16(), r.json::<Value>().await.expect("json"))
        }
    };
    let id = || ("client_id", tv.client_id.clone());
    let (status, codes) = post(vec![id(), ("resource", data_api.clone())]).await;
    assert_eq!(status, 200, "the data API named without scope stands for its scopes: {codes}");
    let (status, refused) = post(vec![id(), ("resource", "https://unknown.example.com".into())]).await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_target")), "{refused}");
    let (status, refused) =
        post(vec![id(), ("scope", READONLY.into()), ("resource", "https://unknown.example.com".into())]).await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_target")), "{refused}");
}

#[tokio::test]
async fn an_api_that_asked_for_rs256_gets_an_at_jwt_signed_with_the_published_rsa_key() {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    register(&server, &app, NOTES, "notes:read|Read your notes", TokenFormat::JwtRs256).await;
    let pkce = Pkce::new();
    let (status, t) = granted(&server, &app, &url_for(&server, &app, &[], &[NOTES], &pkce), &pkce, &[]).await;
    assert_eq!(status, 200, "{t}");
    let token = t["access_token"].as_str().expect("token");
    let parts: Vec<&str> = token.split('.').collect();
    let decode = |p: &str| URL_SAFE_NO_PAD.decode(p).expect("base64url");
    let header: Value = serde_json::from_slice(&decode(parts[0])).expect("header");
    assert_eq!((header["alg"].as_str(), header["typ"].as_str()), (Some("RS256"), Some("at+jwt")));
    let jwks: Value =
        server.http().get(server.url("/oauth2/v3/certs")).send().await.expect("jwks").json().await.expect("json");
    let key = jwks["keys"].as_array().expect("keys").iter().find(|k| k["kid"] == header["kid"]).expect("published");
    let public = ring::signature::RsaPublicKeyComponents {
        n: decode(key["n"].as_str().expect("n")),
        e: decode(key["e"].as_str().expect("e")),
    };
    let input = format!("{}.{}", parts[0], parts[1]);
    public
        .verify(&ring::signature::RSA_PKCS1_2048_8192_SHA256, input.as_bytes(), &decode(parts[2]))
        .expect("the signature verifies with the published RSA key");
    let claims: Value = serde_json::from_slice(&decode(parts[1])).expect("claims");
    assert_eq!((claims["aud"].as_str(), claims["scope"].as_str()), (Some(NOTES), Some("notes:read")));
}
