//! Refresh-token rotation with reuse detection (RFC 9700 §4.14.2) for a project that switches it on: each
//! refresh a new refresh token, a retired one presented again revoking the grant with its event, the grace period,
//! and fifty refreshes at once with one token giving one new token.

use crate::support::*;
use latchkey_admin::{self as admin, Actor};
use latchkey_core::account::EventKind;
use latchkey_proto::TokenResponse;
use latchkey_store::ProjectSetting;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

const ALICE: &str = "alice@example.com";

/// A server (with `grace` seconds of grace and a clock the test moves) and an app of a project that rotates its
/// clients' refresh tokens, with Alice's first tokens.
async fn rotating(grace: i64) -> (TestServer, Arc<TestClock>, App, TokenResponse) {
    let clock = Arc::new(TestClock::default());
    let server = TestServer::start_with_clock(|c| c.refresh_rotation_grace = grace, clock.clone()).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let setting = ProjectSetting::RotateRefreshTokens;
    let view = admin::project_set(server.store(), &Actor::Operator, &app.project_id, setting, true).await.expect("on");
    assert!(view.rotate_refresh_tokens);
    let tokens = server.tokens(&app, ALICE, &[READONLY]).await;
    (server, clock, app, tokens)
}

/// A refresh that succeeds: its body.
async fn refreshed(server: &TestServer, app: &App, refresh_token: &str) -> Value {
    let r = server.refresh(app, refresh_token).await;
    assert_eq!(r.status(), 200, "refresh");
    r.json().await.expect("json")
}

fn new_token(body: &Value) -> String {
    body["refresh_token"].as_str().expect("a new refresh token").to_owned()
}

async fn events_of(server: &TestServer, email: &str) -> Vec<EventKind> {
    let user = server.store().user_by_email(email).await.expect("get").expect("user");
    server.store().account_events(&user.id).await.expect("events").iter().map(|e| e.kind).collect()
}

#[tokio::test]
async fn each_refresh_returns_a_new_refresh_token_and_the_old_one_used_again_revokes_the_grant() {
    let (server, _, app, first) = rotating(0).await;
    let first = first.refresh_token.expect("refresh token");
    let body = refreshed(&server, &app, &first).await;
    let mut keys: Vec<&str> = body.as_object().expect("object").keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["access_token", "expires_in", "refresh_token", "scope", "token_type"], "{body}");
    let second = new_token(&body);
    assert_ne!(second, first);
    assert!(second.starts_with("lkr_"));
    let third_body = refreshed(&server, &app, &second).await;
    let (third, access) = (new_token(&third_body), third_body["access_token"].as_str().expect("access").to_owned());
    assert_eq!(channels(&server, &access).await.status(), 200);
    assert!(events_of(&server, ALICE).await.is_empty());

    let reused = server.refresh(&app, &first).await;
    let (status, body): (u16, Value) = (reused.status().as_u16(), reused.json().await.expect("json"));
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{body}");
    assert!(body["error_description"].as_str().expect("description").contains("revoked"));
    assert_eq!(error_of(server.refresh(&app, &third).await).await, (400, "invalid_grant".into()), "newest token too");
    assert_eq!(channels(&server, &access).await.status(), 401, "and the access tokens");
    assert_eq!(events_of(&server, ALICE).await, [EventKind::TokensRevoked], "the app is told");
}

#[tokio::test]
async fn within_the_grace_period_a_retired_token_gets_the_same_new_token_and_after_it_revokes_the_grant() {
    let (server, clock, app, first) = rotating(30).await;
    let first = first.refresh_token.expect("refresh token");
    let second = new_token(&refreshed(&server, &app, &first).await);
    // The test clock is the system's plus what the test adds, so real seconds pass too: 25 s in (well inside the
    // 30 s, whatever a slow machine adds), then 30 s and more.
    clock.advance(25);
    let again = refreshed(&server, &app, &first).await;
    assert_eq!(new_token(&again), second, "the answer that was lost, again");
    assert_eq!(channels(&server, again["access_token"].as_str().expect("access")).await.status(), 200);
    clock.advance(5);
    assert_eq!(error_of(server.refresh(&app, &first).await).await, (400, "invalid_grant".into()));
    assert_eq!(error_of(server.refresh(&app, &second).await).await, (400, "invalid_grant".into()), "grant revoked");
}

#[tokio::test]
async fn fifty_refreshes_at_once_with_one_token_give_one_new_token() {
    for grace in [0, 30] {
        let (server, _, app, first) = rotating(grace).await;
        let first = first.refresh_token.expect("refresh token");
        let mut refreshes = tokio::task::JoinSet::new();
        for _ in 0..50 {
            let (http, url, client_id, token) =
                (server.http(), server.url("/token"), app.client_id.clone(), first.clone());
            let form = [("grant_type", "refresh_token".to_owned()), ("client_id", client_id), ("refresh_token", token)];
            refreshes.spawn(async move { http.post(url).form(&form).send().await.expect("refresh") });
        }
        let answers = refreshes.join_all().await;
        let mut issued = HashSet::new();
        let mut refused = 0;
        for r in answers {
            match r.status().as_u16() {
                200 => {
                    issued.insert(new_token(&r.json().await.expect("json")));
                }
                400 => refused += 1,
                other => panic!("unexpected status {other}"),
            }
        }
        assert_eq!(issued.len(), 1, "grace {grace}: one new refresh token among the answers");
        let new = issued.into_iter().next().expect("one");
        if grace == 0 {
            assert_eq!(refused, 49, "without grace, every other refresh presented a retired token");
            assert_eq!(error_of(server.refresh(&app, &new).await).await.1, "invalid_grant", "and revoked the grant");
        } else {
            assert_eq!(refused, 0, "within the grace period every refresh gets the same new token");
            assert!(new_token(&refreshed(&server, &app, &new).await).starts_with("lkr_"), "the grant lives on");
        }
    }
}

#[tokio::test]
async fn switched_off_the_newest_token_keeps_working_without_rotating() {
    let (server, clock, app, first) = rotating(0).await;
    let second = new_token(&refreshed(&server, &app, first.refresh_token.as_deref().expect("rt")).await);
    let setting = ProjectSetting::RotateRefreshTokens;
    admin::project_set(server.store(), &Actor::Operator, &app.project_id, setting, false).await.expect("off");
    clock.advance(1);
    for _ in 0..2 {
        assert_eq!(refreshed(&server, &app, &second).await.get("refresh_token"), None, "no rotation");
    }
}

#[tokio::test]
async fn the_refresh_token_limits_count_a_rotated_chain_as_one_token() {
    let clock = Arc::new(TestClock::default());
    let server = TestServer::start_with_clock(|c| c.refresh_tokens_per_client_user = 1, clock).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let setting = ProjectSetting::RotateRefreshTokens;
    admin::project_set(server.store(), &Actor::Operator, &app.project_id, setting, true).await.expect("on");
    let mut token = server.tokens(&app, ALICE, &[READONLY]).await.refresh_token.expect("refresh token");
    for _ in 0..5 {
        token = new_token(&refreshed(&server, &app, &token).await);
    }
    let user = server.store().user_by_email(ALICE).await.expect("get").expect("alice");
    let now = latchkey_core::time::Clock::now(&latchkey_admin::clock::SystemClock);
    assert_eq!(server.store().live_grants(&user.id, now).await.expect("live").len(), 1, "one grant, one token");
    refreshed(&server, &app, &token).await;
}
