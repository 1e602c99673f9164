//! Protected resource metadata (RFC 9728): the data API publishes where its authorization server is, and its
//! refusals point there, so that a client that knows only the API (an MCP host, say) finds where to get a token.

use crate::support::*;
use serde_json::Value;

const ALICE: &str = "alice@example.com";

/// The `resource_metadata` parameter of a challenge.
fn resource_metadata(challenge: &str) -> Option<&str> {
    let (_, rest) = challenge.split_once("resource_metadata=\"")?;
    rest.split_once('"').map(|(url, _)| url)
}

async fn challenge_of(server: &TestServer, token: Option<&str>) -> (u16, String) {
    let mut request = server.http().get(server.url("/video/v3/channels?part=id&mine=true"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let r = request.send().await.expect("get");
    let challenge = r.headers()["www-authenticate"].to_str().expect("text").to_owned();
    (r.status().as_u16(), challenge)
}

#[tokio::test]
async fn an_unauthenticated_call_leads_through_the_resource_metadata_to_the_authorization_server() {
    let server = TestServer::start().await;
    let (status, challenge) = challenge_of(&server, None).await;
    assert_eq!(status, 401);
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(!challenge.contains("error="), "no token, no error code (RFC 6750 §3.1): {challenge}");
    let url = resource_metadata(&challenge).expect("resource_metadata");
    assert_eq!(url, server.url("/.well-known/oauth-protected-resource/video/v3"));

    let r = server.http().get(url).send().await.expect("get");
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().expect("type").starts_with("application/json"));
    let doc: Value = r.json().await.expect("json");
    // RFC 9728 §3.3: the resource named is the one whose well-known URL was fetched.
    assert_eq!(doc["resource"], server.url("/video/v3"));
    assert_eq!(doc["resource_name"], "Video Data API");
    assert_eq!(doc["bearer_methods_supported"], serde_json::json!(["header", "query"]));
    let scopes: Vec<&str> =
        doc["scopes_supported"].as_array().expect("scopes").iter().filter_map(Value::as_str).collect();
    assert_eq!(scopes.len(), 7, "the data API's seven scopes: {scopes:?}");
    assert!(scopes.contains(&READONLY) && !scopes.contains(&"openid"), "{scopes:?}");

    // The authorization server it names publishes its metadata (RFC 8414), with the same issuer.
    let issuer = doc["authorization_servers"][0].as_str().expect("an authorization server");
    let as_doc: Value = server
        .http()
        .get(format!("{issuer}/.well-known/oauth-authorization-server"))
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    assert_eq!(as_doc["issuer"], issuer);
    assert_eq!(as_doc["token_endpoint"], server.url("/token"));
}

#[tokio::test]
async fn every_refusal_of_the_data_api_points_at_its_metadata() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let url = server.url("/.well-known/oauth-protected-resource/video/v3");

    let (status, challenge) = challenge_of(&server, Some("lka_not-a-token")).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    assert_eq!(resource_metadata(&challenge), Some(url.as_str()), "{challenge}");

    let t = server.tokens(&app, ALICE, &["openid"]).await;
    let (status, challenge) = challenge_of(&server, Some(&t.access_token)).await;
    assert_eq!(status, 403);
    assert!(challenge.contains("error=\"insufficient_scope\"") && challenge.contains(READONLY), "{challenge}");
    assert_eq!(resource_metadata(&challenge), Some(url.as_str()), "{challenge}");
}
