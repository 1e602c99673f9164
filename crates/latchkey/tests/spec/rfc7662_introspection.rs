//! Token introspection (RFC 7662) at `POST /introspect`: a client asks about its own tokens, with its own client
//! authentication, and learns what an active one stands for; anything else is `active: false`. A registered API
//! asks with its own credentials about access tokens whose audience includes it. The signed answer of RFC 9701
//! when `Accept` asks for it.

use crate::support::*;
use serde_json::Value;
use std::sync::Arc;

const ALICE: &str = "alice@example.com";

/// Introspects `token` as `app` (its client id and secret in the form); the answer's JSON.
pub(crate) async fn introspect(server: &TestServer, app: &App, token: &str) -> Value {
    let form = [("token", token), ("client_id", &app.client_id), ("client_secret", &app.client_secret)];
    let r = server.http().post(server.url("/introspect")).form(&form).send().await.expect("post");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    r.json().await.expect("json")
}

#[tokio::test]
async fn discovery_names_the_endpoint_and_a_client_learns_what_its_tokens_stand_for() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let user_id = server.user(ALICE).await;
    let doc = discovery(&server).await;
    assert_eq!(doc["introspection_endpoint"], server.url("/introspect"));
    let t = server.tokens(&app, ALICE, &[READONLY, "openid"]).await;

    let access = introspect(&server, &app, &t.access_token).await;
    assert_eq!(access["active"], true, "{access}");
    assert_eq!(access["scope"], format!("{READONLY} openid"));
    assert_eq!(
        (access["client_id"].as_str(), access["sub"].as_str()),
        (Some(app.client_id.as_str()), Some(user_id.as_str()))
    );
    assert_eq!(access["iss"], doc["issuer"]);
    assert_eq!(access["aud"], server.url("/video/v3"), "the data API's scopes: its resource");
    assert_eq!(access["token_type"], "Bearer");
    let (iat, exp) = (access["iat"].as_i64().expect("iat"), access["exp"].as_i64().expect("exp"));
    assert_eq!(exp - iat, 3600, "{access}");

    let refresh = introspect(&server, &app, t.refresh_token.as_deref().expect("refresh token")).await;
    assert_eq!(refresh["active"], true, "{refresh}");
    assert_eq!(
        (refresh["token_type"].as_str(), refresh["sub"].as_str()),
        (Some("refresh_token"), Some(user_id.as_str()))
    );
    assert!(refresh.get("exp").is_none(), "a grant without an end: {refresh}");
    assert!(refresh.get("cnf").is_none(), "not DPoP-bound: {refresh}");

    // Basic authentication works as well as the form (RFC 6749 §2.3.1).
    let r = server
        .http()
        .post(server.url("/introspect"))
        .basic_auth(&app.client_id, Some(&app.client_secret))
        .form(&[("token", t.access_token.as_str()), ("token_type_hint", "refresh_token")])
        .send()
        .await
        .expect("post");
    let basic: Value = r.json().await.expect("json");
    assert_eq!(basic["active"], true, "a wrong hint is only a hint: {basic}");
}

#[tokio::test]
async fn anything_unknown_expired_revoked_or_another_clients_is_inactive_and_says_nothing_more() {
    let clock = Arc::new(TestClock::default());
    let server = TestServer::start_with_clock(|_| {}, clock.clone()).await;
    let (app, other) = (server.app().await, server.app().await);
    server.user(ALICE).await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let inactive = serde_json::json!({ "active": false });
    assert_eq!(introspect(&server, &other, &t.access_token).await, inactive, "another client's access token");
    let rt = t.refresh_token.as_deref().expect("refresh token");
    assert_eq!(introspect(&server, &other, rt).await, inactive, "another client's refresh token");
    for garbage in ["lka_nope", "1//not-a-token", &forged_refresh_token(rt)] {
        assert_eq!(introspect(&server, &app, garbage).await, inactive, "{garbage:?}");
    }
    clock.advance(3601);
    assert_eq!(introspect(&server, &app, &t.access_token).await, inactive, "expired");
    assert_eq!(introspect(&server, &app, rt).await["active"], true, "the refresh token lives on");
    let revoked = server.http().post(server.url("/revoke")).form(&[("token", rt)]).send().await.expect("revoke");
    assert_eq!(revoked.status(), 200);
    assert_eq!(introspect(&server, &app, rt).await, inactive, "revoked at once");
}

#[tokio::test]
async fn the_caller_must_authenticate_and_name_a_token() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let post = |form: Vec<(&'static str, String)>| {
        let server = &server;
        async move { error_of(server.http().post(server.url("/introspect")).form(&form).send().await.expect("post")).await }
    };
    let id = app.client_id.clone();
    assert_eq!(post(vec![("token", "x".into())]).await, (401, "invalid_client".into()), "no client named");
    let wrong = vec![("token", "x".into()), ("client_id", id.clone()), ("client_secret", "wrong".into())];
    assert_eq!(post(wrong).await, (401, "invalid_client".into()));
    let unknown = vec![("token", "x".into()), ("client_id", "nobody".into())];
    assert_eq!(post(unknown).await, (401, "invalid_client".into()));
    let no_token = vec![("client_id", id), ("client_secret", app.client_secret.clone())];
    assert_eq!(post(no_token).await, (400, "invalid_request".into()));
    let r = server.http().get(server.url("/introspect")).send().await.expect("get");
    assert_eq!(r.status(), 405, "an OAuth endpoint's refusal");
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"], "invalid_request");
}

#[tokio::test]
async fn the_signed_answer_is_a_jwt_for_the_caller_verified_with_the_jwks() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let form =
        [("token", t.access_token.as_str()), ("client_id", &app.client_id), ("client_secret", &app.client_secret)];
    let r = server
        .http()
        .post(server.url("/introspect"))
        .header("accept", "application/token-introspection+jwt")
        .form(&form)
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/token-introspection+jwt");
    let jwt = r.text().await.expect("text");
    let (header, claims) = crate::metadata::verified(&server, &jwt).await;
    assert_eq!(header["typ"], "token-introspection+jwt");
    assert_eq!(claims["aud"], app.client_id.as_str());
    assert_eq!(claims["iss"], server.url(""));
    assert_eq!(claims["token_introspection"]["active"], true, "{claims}");
    assert_eq!(claims["token_introspection"]["scope"], READONLY);
}

/// Introspects `token` as a registered API (Basic, its id and secret form-encoded): the status and answer.
async fn as_api(server: &TestServer, id: &str, secret: &str, token: &str, accept: &str) -> (u16, String) {
    use base64::Engine;
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", enc(id), enc(secret)));
    let r = server
        .http()
        .post(server.url("/introspect"))
        .header("authorization", format!("Basic {basic}"))
        .header("accept", accept)
        .form(&[("token", token)])
        .send()
        .await
        .expect("post");
    (r.status().as_u16(), r.text().await.expect("body"))
}

#[tokio::test]
async fn an_api_introspects_tokens_of_its_audience_only_and_sees_only_its_own_scopes() {
    use latchkey_core::resource::TokenFormat;
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let register = crate::rfc8707_resource_indicators::register;
    let notes = register(&server, &app, "https://notes.example.com", "notes:read|Read", TokenFormat::Opaque).await;
    let wiki = register(&server, &app, "https://wiki.example.com", "wiki:read|Read", TokenFormat::Opaque).await;
    let t = server.tokens(&app, ALICE, &[READONLY, "notes:read"]).await;
    let id = notes.resource.resource_id.as_str();

    let (status, body) = as_api(&server, id, &notes.secret, &t.access_token, "application/json").await;
    let answer: Value = serde_json::from_str(&body).expect("json");
    assert_eq!((status, answer["active"].as_bool()), (200, Some(true)), "{body}");
    assert_eq!(answer["scope"], "notes:read", "only its own scopes");
    assert_eq!(answer["aud"], "https://notes.example.com", "of the token's audience, the API learns only itself");
    assert_eq!(answer["client_id"], app.client_id.as_str());

    let in_form = [("token", t.access_token.as_str()), ("client_id", id), ("client_secret", notes.secret.as_str())];
    let r = server.http().post(server.url("/introspect")).form(&in_form).send().await.expect("post");
    let answer: Value = r.json().await.expect("json");
    assert_eq!(answer["scope"], "notes:read", "the credentials in the form as client_id and client_secret: {answer}");
    let signed = "application/token-introspection+jwt";
    let (_, body) = as_api(&server, id, &notes.secret, &t.access_token, signed).await;
    let (_, claims) = crate::metadata::verified(&server, &body).await;
    assert_eq!(claims["aud"], "https://notes.example.com", "a signed answer is addressed to the API's URI");

    let wiki_id = wiki.resource.resource_id.as_str();
    let (status, body) = as_api(&server, wiki_id, &wiki.secret, &t.access_token, "application/json").await;
    assert_eq!((status, body.as_str()), (200, r#"{"active":false}"#), "outside the token's audience");
    let refresh = t.refresh_token.as_deref().expect("refresh");
    let (_, body) = as_api(&server, id, &notes.secret, refresh, "application/json").await;
    assert_eq!(body, r#"{"active":false}"#, "a refresh token is the client's business");

    for (who, secret) in [(id, "wrong"), ("res_unknown", "x"), (id, "")] {
        let (status, body) = as_api(&server, who, secret, &t.access_token, "application/json").await;
        assert_eq!(status, 401, "{who}:{secret}: {body}");
        assert!(body.contains("invalid_client"), "{body}");
    }
    let revoke = [("token", refresh), ("client_id", app.client_id.as_str())];
    assert_eq!(server.http().post(server.url("/revoke")).form(&revoke).send().await.expect("revoke").status(), 200);
    let (_, body) = as_api(&server, id, &notes.secret, &t.access_token, "application/json").await;
    assert_eq!(body, r#"{"active":false}"#, "revoked at once");
}
