//! Refreshing an access token (RFC 6749 §6; `docs/decisions.md`, "Refresh tokens"), and the refresh and access
//! tokens' states: not rotated, narrowed by `scope`, invalid after revocation, a disabled user or a limit.

use crate::support::*;
use latchkey_admin::{Actor, ClientRef};
use latchkey_core::time::UnixTime;
use latchkey_proto::TokenResponse;
use serde_json::Value;
use std::time::Duration;

const ALICE: &str = "alice@example.com";
const NOW: UnixTime = UnixTime(1_700_000_000);
const MANAGE: &str = "https://latchkey.dev/auth/manage";

async fn setup() -> (TestServer, App) {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    (server, app)
}

/// Posts a refresh request with `extra` parameters.
async fn refresh_with(
    server: &TestServer,
    app: &App,
    refresh_token: &str,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let mut form =
        vec![("grant_type", "refresh_token"), ("client_id", app.client_id.as_str()), ("refresh_token", refresh_token)];
    form.extend_from_slice(extra);
    server.token(&form).await
}

async fn refresh(server: &TestServer, app: &App, refresh_token: &str) -> reqwest::Response {
    refresh_with(server, app, refresh_token, &[]).await
}

/// A successful refresh's body.
async fn refreshed(server: &TestServer, app: &App, refresh_token: &str, extra: &[(&str, &str)]) -> TokenResponse {
    let r = refresh_with(server, app, refresh_token, extra).await;
    assert_eq!(r.status(), 200, "refresh");
    r.json().await.expect("json")
}

fn rt(t: &TokenResponse) -> &str {
    t.refresh_token.as_deref().expect("refresh token on code exchange")
}

fn invalid_grant() -> (u16, String) {
    (400, "invalid_grant".to_string())
}

fn scopes_of(scope: &str) -> Vec<&str> {
    let mut v: Vec<&str> = scope.split(' ').collect();
    v.sort_unstable();
    v
}

#[tokio::test]
async fn a_refresh_returns_a_new_access_token_and_no_refresh_token() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY, UPLOAD]).await;
    let r = refresh(&server, &app, rt(&t)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let body: Value = r.json().await.expect("json");
    let mut keys: Vec<&str> = body.as_object().expect("object").keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["access_token", "expires_in", "scope", "token_type"], "{body}");
    assert!(body["access_token"].as_str().expect("string").starts_with("lka_"));
    assert_eq!(body["expires_in"], 3600);
    assert_eq!(scopes_of(body["scope"].as_str().expect("string")), scopes_of(&t.scope));
    assert_eq!(body["token_type"], "Bearer");
    let access = body["access_token"].as_str().expect("string");
    assert_eq!(channels(&server, access).await.status(), 200);
}

#[tokio::test]
async fn a_refresh_token_is_not_rotated_and_works_again() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    for _ in 0..3 {
        let again = refreshed(&server, &app, rt(&t), &[]).await;
        assert!(again.refresh_token.is_none());
        assert_eq!(channels(&server, &again.access_token).await.status(), 200);
    }
    assert_eq!(channels(&server, &t.access_token).await.status(), 200, "earlier access tokens stay valid");
}

#[tokio::test]
async fn a_scope_parameter_narrows_the_new_access_token_to_the_granted_scopes_asked_for() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY, FORCE_SSL, UPLOAD]).await;
    let narrowed = refreshed(&server, &app, rt(&t), &[("scope", &format!("{UPLOAD} {FORCE_SSL}"))]).await;
    assert_eq!(scopes_of(&narrowed.scope), scopes_of(&format!("{FORCE_SSL} {UPLOAD}")));

    let upload_only = refreshed(&server, &app, rt(&t), &[("scope", UPLOAD)]).await;
    assert_eq!(upload_only.scope, UPLOAD);
    // The narrowing is in the token itself: upload alone cannot list channels.
    assert_eq!(channels(&server, &upload_only.access_token).await.status(), 403);

    // Narrowing one access token leaves the grant whole.
    let whole = refreshed(&server, &app, rt(&t), &[]).await;
    assert_eq!(scopes_of(&whole.scope), scopes_of(&t.scope));
}

#[tokio::test]
async fn scopes_never_granted_are_left_out_of_a_narrowed_token() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY, UPLOAD]).await;
    let asked = format!("{READONLY} {MANAGE} openid https://example.com/not-a-scope");
    let narrowed = refreshed(&server, &app, rt(&t), &[("scope", &asked)]).await;
    assert_eq!(narrowed.scope, READONLY);
}

#[tokio::test]
async fn a_scope_parameter_with_nothing_in_common_with_the_grant_is_invalid_scope() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let r = refresh_with(&server, &app, rt(&t), &[("scope", &format!("{MANAGE} {UPLOAD}"))]).await;
    assert_eq!(error_of(r).await, (400, "invalid_scope".to_string()));
    assert_eq!(refresh(&server, &app, rt(&t)).await.status(), 200, "the refresh token still works");
}

#[tokio::test]
async fn a_redirect_uri_on_a_refresh_request_is_ignored() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let again = refreshed(&server, &app, rt(&t), &[("redirect_uri", "https://attacker.example/cb")]).await;
    assert_eq!(channels(&server, &again.access_token).await.status(), 200);
}

#[tokio::test]
async fn a_refresh_token_presented_by_another_client_is_invalid_grant() {
    let (server, app) = setup().await;
    let other = server.app().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(error_of(refresh(&server, &other, rt(&t)).await).await, invalid_grant());
    let r = refresh_with(&server, &other, rt(&t), &[("client_secret", &other.client_secret)]).await;
    assert_eq!(error_of(r).await, invalid_grant(), "also with the other client's secret");
    assert_eq!(refresh(&server, &app, rt(&t)).await.status(), 200, "the owner still refreshes");
}

#[tokio::test]
async fn an_unknown_refresh_token_is_invalid_grant_and_a_missing_one_is_invalid_request() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(error_of(refresh(&server, &app, "lkr_nosuchtoken").await).await, invalid_grant());
    // An access token is not a refresh token.
    assert_eq!(error_of(refresh(&server, &app, &t.access_token).await).await, invalid_grant());
    let r = server.token(&[("grant_type", "refresh_token"), ("client_id", &app.client_id)]).await;
    assert_eq!(error_of(r).await, (400, "invalid_request".to_string()));
}

#[tokio::test]
async fn a_refresh_token_naming_a_real_grant_with_another_secret_is_invalid_grant() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(error_of(refresh(&server, &app, &forged_refresh_token(rt(&t))).await).await, invalid_grant());
    assert_eq!(refresh(&server, &app, rt(&t)).await.status(), 200, "the real token still works");
}

#[tokio::test]
async fn a_revoked_refresh_token_is_invalid_grant() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let r = server.http().post(server.url("/revoke")).form(&[("token", rt(&t))]).send().await.expect("revoke");
    assert_eq!(r.status(), 200);
    assert_eq!(error_of(refresh(&server, &app, rt(&t)).await).await, invalid_grant());
}

#[tokio::test]
async fn a_disabled_user_cannot_refresh_until_re_enabled() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    latchkey_admin::user_set_disabled(server.store(), ALICE, true, NOW).await.expect("disable");
    assert_eq!(error_of(refresh(&server, &app, rt(&t)).await).await, invalid_grant());
    assert_eq!(channels(&server, &t.access_token).await.status(), 401);
    latchkey_admin::user_set_disabled(server.store(), ALICE, false, NOW).await.expect("enable");
    let again = refreshed(&server, &app, rt(&t), &[]).await;
    assert_eq!(channels(&server, &again.access_token).await.status(), 200);
}

#[tokio::test]
async fn a_deleted_user_cannot_refresh() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    latchkey_admin::user_delete(server.store(), ALICE, latchkey_core::time::UnixTime(1_700_000_000))
        .await
        .expect("delete");
    assert_eq!(error_of(refresh(&server, &app, rt(&t)).await).await, invalid_grant());
}

#[tokio::test]
async fn a_deleted_client_cannot_refresh() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    latchkey_admin::client_delete(server.store(), &Actor::Operator, ClientRef::id(&app.client_id), NOW)
        .await
        .expect("delete");
    assert_eq!(error_of(refresh(&server, &app, rt(&t)).await).await, (401, "invalid_client".to_string()));
}

#[tokio::test]
async fn an_expired_access_token_is_replaced_by_refreshing_without_the_user() {
    let server = TestServer::start_with(|c| c.access_token_lifetime = 2).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(t.expires_in, 2);
    tokio::time::sleep(Duration::from_millis(3100)).await;
    assert_eq!(channels(&server, &t.access_token).await.status(), 401, "expired");
    let again = refreshed(&server, &app, rt(&t), &[]).await;
    assert_eq!(again.expires_in, 2);
    assert_eq!(channels(&server, &again.access_token).await.status(), 200);
}

#[tokio::test]
async fn past_the_per_client_and_user_limit_the_oldest_refresh_token_stops_working() {
    let server = TestServer::start_with(|c| c.refresh_tokens_per_client_user = 2).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let first = server.tokens(&app, ALICE, &[READONLY]).await;
    let second = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(refresh(&server, &app, rt(&first)).await.status(), 200, "within the limit");
    let third = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(error_of(refresh(&server, &app, rt(&first)).await).await, invalid_grant());
    assert_eq!(refresh(&server, &app, rt(&second)).await.status(), 200);
    assert_eq!(refresh(&server, &app, rt(&third)).await.status(), 200);

    // The limit is per user: another user's refresh tokens for the same client are counted apart.
    server.user("bob@example.com").await;
    let bobs = server.tokens(&app, "bob@example.com", &[READONLY]).await;
    assert_eq!(refresh(&server, &app, rt(&second)).await.status(), 200);
    assert_eq!(refresh(&server, &app, rt(&third)).await.status(), 200);
    assert_eq!(refresh(&server, &app, rt(&bobs)).await.status(), 200);
}

#[tokio::test]
async fn past_the_per_user_limit_the_oldest_refresh_token_of_any_client_stops_working() {
    let server = TestServer::start_with(|c| c.refresh_tokens_per_user = 2).await;
    let a = server.app().await;
    let b = server.app().await;
    server.user(ALICE).await;
    let first = server.tokens(&a, ALICE, &[READONLY]).await;
    let second = server.tokens(&b, ALICE, &[READONLY]).await;
    assert_eq!(refresh(&server, &a, rt(&first)).await.status(), 200, "within the limit");
    let third = server.tokens(&a, ALICE, &[READONLY]).await;
    assert_eq!(error_of(refresh(&server, &a, rt(&first)).await).await, invalid_grant());
    assert_eq!(refresh(&server, &b, rt(&second)).await.status(), 200);
    assert_eq!(refresh(&server, &a, rt(&third)).await.status(), 200);
    let fourth = server.tokens(&a, ALICE, &[READONLY]).await;
    assert_eq!(error_of(refresh(&server, &b, rt(&second)).await).await, invalid_grant(), "client b's is now oldest");
    assert_eq!(refresh(&server, &a, rt(&third)).await.status(), 200);
    assert_eq!(refresh(&server, &a, rt(&fourth)).await.status(), 200);
}

#[tokio::test]
async fn revoked_refresh_tokens_do_not_count_towards_the_limit() {
    let server = TestServer::start_with(|c| c.refresh_tokens_per_client_user = 2).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let first = server.tokens(&app, ALICE, &[READONLY]).await;
    let second = server.tokens(&app, ALICE, &[READONLY]).await;
    let r = server.http().post(server.url("/revoke")).form(&[("token", rt(&second))]).send().await.expect("revoke");
    assert_eq!(r.status(), 200);
    let third = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(refresh(&server, &app, rt(&first)).await.status(), 200, "two live refresh tokens are within the limit");
    assert_eq!(refresh(&server, &app, rt(&third)).await.status(), 200);
}
