//! Revocation (RFC 7009; `docs/api.md`, "Revocation"): revoking an access or a refresh token revokes the grant,
//! unknown tokens are fine, malformed requests are 400.

use crate::support::*;
use latchkey_proto::TokenResponse;
use serde_json::Value;
use std::time::Duration;

const ALICE: &str = "alice@example.com";

async fn setup() -> (TestServer, App) {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    (server, app)
}

async fn revoke(server: &TestServer, form: &[(&str, &str)]) -> reqwest::Response {
    server.http().post(server.url("/revoke")).form(form).send().await.expect("revoke")
}

async fn refresh(server: &TestServer, app: &App, refresh_token: &str) -> reqwest::Response {
    server
        .token(&[("grant_type", "refresh_token"), ("client_id", &app.client_id), ("refresh_token", refresh_token)])
        .await
}

fn rt(t: &TokenResponse) -> &str {
    t.refresh_token.as_deref().expect("refresh token on code exchange")
}

/// Nothing of the grant works any more.
async fn assert_grant_revoked(server: &TestServer, app: &App, t: &TokenResponse, access_tokens: &[&str]) {
    for access in access_tokens {
        assert_eq!(channels(server, access).await.status(), 401, "access token revoked");
    }
    assert_eq!(error_of(refresh(server, app, rt(t)).await).await, (400, "invalid_grant".to_string()));
}

/// Everything of the grant still works.
async fn assert_grant_live(server: &TestServer, app: &App, t: &TokenResponse) {
    assert_eq!(channels(server, &t.access_token).await.status(), 200, "access token live");
    assert_eq!(refresh(server, app, rt(t)).await.status(), 200, "refresh token live");
}

#[tokio::test]
async fn revoking_a_refresh_token_revokes_every_access_token_of_its_grant() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let r = refresh(&server, &app, rt(&t)).await;
    assert_eq!(r.status(), 200);
    let later: TokenResponse = r.json().await.expect("json");
    let r = revoke(&server, &[("token", rt(&t))]).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    assert_grant_revoked(&server, &app, &t, &[&t.access_token, &later.access_token]).await;
}

#[tokio::test]
async fn revoking_an_access_token_revokes_its_paired_refresh_token() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(revoke(&server, &[("token", &t.access_token)]).await.status(), 200);
    assert_grant_revoked(&server, &app, &t, &[&t.access_token]).await;
}

#[tokio::test]
async fn revoking_an_access_token_obtained_by_refresh_revokes_the_grant() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let r = refresh(&server, &app, rt(&t)).await;
    let later: TokenResponse = r.json().await.expect("json");
    assert_eq!(revoke(&server, &[("token", &later.access_token)]).await.status(), 200);
    assert_grant_revoked(&server, &app, &t, &[&t.access_token, &later.access_token]).await;
}

#[tokio::test]
async fn revoking_one_grant_leaves_the_other_grants_of_the_user_alone() {
    let (server, app) = setup().await;
    let kept = server.tokens(&app, ALICE, &[READONLY]).await;
    let gone = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(revoke(&server, &[("token", rt(&gone))]).await.status(), 200);
    assert_grant_revoked(&server, &app, &gone, &[&gone.access_token]).await;
    assert_grant_live(&server, &app, &kept).await;
}

#[tokio::test]
async fn a_token_type_hint_is_only_a_hint() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let r = revoke(&server, &[("token", rt(&t)), ("token_type_hint", "access_token")]).await;
    assert_eq!(r.status(), 200);
    assert_grant_revoked(&server, &app, &t, &[&t.access_token]).await;

    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let r = revoke(&server, &[("token", &t.access_token), ("token_type_hint", "refresh_token")]).await;
    assert_eq!(r.status(), 200);
    assert_grant_revoked(&server, &app, &t, &[&t.access_token]).await;
}

#[tokio::test]
async fn revoking_an_expired_access_token_still_revokes_its_grant() {
    let server = TestServer::start_with(|c| c.access_token_lifetime = 1).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(revoke(&server, &[("token", &t.access_token)]).await.status(), 200);
    assert_eq!(error_of(refresh(&server, &app, rt(&t)).await).await, (400, "invalid_grant".to_string()));
}

#[tokio::test]
async fn an_unknown_token_is_answered_with_200() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let tampered = format!("{}x", t.access_token);
    // A refresh token that names the grant but carries another secret is unknown too: the grant stays live.
    let forged = forged_refresh_token(rt(&t));
    for unknown in ["lkr_nosuchtoken", "lka_nosuchtoken", "garbage", tampered.as_str(), forged.as_str()] {
        assert_eq!(revoke(&server, &[("token", unknown)]).await.status(), 200, "{unknown}");
    }
    assert_eq!(
        revoke(&server, &[("token", "lkr_nosuchtoken"), ("client_id", &app.client_id)]).await.status(),
        200,
        "also from an identified client"
    );
    assert_grant_live(&server, &app, &t).await;
}

#[tokio::test]
async fn a_request_without_a_token_is_400_invalid_request_json() {
    let (server, app) = setup().await;
    for form in [vec![], vec![("client_id", app.client_id.as_str())], vec![("token", "")]] {
        let r = revoke(&server, &form).await;
        assert_eq!(r.status(), 400, "{form:?}");
        assert_eq!(r.headers()["cache-control"], "no-store");
        let content_type = r.headers()["content-type"].to_str().expect("text");
        assert!(content_type.starts_with("application/json"), "{content_type}");
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["error"], "invalid_request", "{body}");
    }
}

#[tokio::test]
async fn a_body_that_is_not_form_encoded_is_415_invalid_request() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let r = server
        .http()
        .post(server.url("/revoke"))
        .json(&serde_json::json!({ "token": rt(&t) }))
        .send()
        .await
        .expect("revoke");
    assert_eq!(error_of(r).await, (415, "invalid_request".to_string()));
    assert_grant_live(&server, &app, &t).await;
}

#[tokio::test]
async fn a_token_sent_twice_is_invalid_request() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let r = revoke(&server, &[("token", rt(&t)), ("token", "lkr_other")]).await;
    assert_eq!(error_of(r).await, (400, "invalid_request".to_string()));
    assert_grant_live(&server, &app, &t).await;
}

#[tokio::test]
async fn a_client_cannot_revoke_another_clients_token() {
    let (server, app) = setup().await;
    let other = server.app().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    for token in [rt(&t), t.access_token.as_str()] {
        let r = revoke(&server, &[("token", token), ("client_id", &other.client_id)]).await;
        let (status, error) = error_of(r).await;
        assert_eq!(status, 400);
        assert!(!error.is_empty());
        let r = revoke(
            &server,
            &[("token", token), ("client_id", &other.client_id), ("client_secret", &other.client_secret)],
        )
        .await;
        assert_eq!(r.status(), 400, "also with the other client's secret");
    }
    assert_grant_live(&server, &app, &t).await;
}

#[tokio::test]
async fn a_wrong_client_secret_is_401_invalid_client() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let r = revoke(&server, &[("token", rt(&t)), ("client_id", &app.client_id), ("client_secret", "lks_wrong")]).await;
    assert!(r.headers().contains_key("www-authenticate"));
    assert_eq!(error_of(r).await, (401, "invalid_client".to_string()));
    let r = server
        .http()
        .post(server.url("/revoke"))
        .basic_auth(&app.client_id, Some("lks_wrong"))
        .form(&[("token", rt(&t))])
        .send()
        .await
        .expect("revoke");
    assert_eq!(r.status(), 401);
    let challenge = r.headers()["www-authenticate"].to_str().expect("text").to_owned();
    assert!(challenge.starts_with("Basic"), "{challenge}");
    assert_grant_live(&server, &app, &t).await;
}

#[tokio::test]
async fn the_owning_client_revokes_with_each_authentication_method() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(revoke(&server, &[("token", rt(&t)), ("client_id", &app.client_id)]).await.status(), 200);
    assert_grant_revoked(&server, &app, &t, &[&t.access_token]).await;

    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let form = [("token", rt(&t)), ("client_id", &app.client_id), ("client_secret", &app.client_secret)];
    assert_eq!(revoke(&server, &form).await.status(), 200);
    assert_grant_revoked(&server, &app, &t, &[&t.access_token]).await;

    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let r = server
        .http()
        .post(server.url("/revoke"))
        .basic_auth(&app.client_id, Some(&app.client_secret))
        .form(&[("token", rt(&t))])
        .send()
        .await
        .expect("revoke");
    assert_eq!(r.status(), 200);
    assert_grant_revoked(&server, &app, &t, &[&t.access_token]).await;
}

#[tokio::test]
async fn revoking_twice_is_200_both_times() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(revoke(&server, &[("token", rt(&t))]).await.status(), 200);
    assert_eq!(revoke(&server, &[("token", rt(&t))]).await.status(), 200);
    assert_eq!(revoke(&server, &[("token", &t.access_token)]).await.status(), 200);
    assert_grant_revoked(&server, &app, &t, &[&t.access_token]).await;
}
