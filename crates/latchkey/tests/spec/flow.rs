//! "What the service does", steps 1 to 7, end to end.

use crate::support::*;

#[tokio::test]
async fn the_whole_flow_authorize_exchange_call_refresh_revoke() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user("alice@example.com").await;
    let t = server.tokens(&app, "alice@example.com", &[READONLY]).await;
    assert_eq!(t.token_type, "Bearer");
    assert_eq!(t.scope, READONLY);
    assert_eq!(t.expires_in, 3600);
    let refresh = t.refresh_token.clone().expect("refresh token on code exchange");

    let r = channels(&server, &t.access_token).await;
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(body["items"][0]["kind"], "video#channel");

    let r = server
        .token(&[("grant_type", "refresh_token"), ("client_id", &app.client_id), ("refresh_token", &refresh)])
        .await;
    assert_eq!(r.status(), 200);
    let again: latchkey_proto::TokenResponse = r.json().await.expect("json");
    assert!(again.refresh_token.is_none());
    assert_eq!(channels(&server, &again.access_token).await.status(), 200);

    let r =
        server.http().post(server.url("/revoke")).form(&[("token", refresh.as_str())]).send().await.expect("revoke");
    assert_eq!(r.status(), 200);
    assert_eq!(channels(&server, &again.access_token).await.status(), 401);
    assert_eq!(channels(&server, &t.access_token).await.status(), 401);
    let r = server
        .token(&[("grant_type", "refresh_token"), ("client_id", &app.client_id), ("refresh_token", &refresh)])
        .await;
    assert_eq!(error_of(r).await, (400, "invalid_grant".to_string()));
}
