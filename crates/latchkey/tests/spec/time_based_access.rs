//! Time-based access (`docs/decisions.md`, "Time-based access"; `docs/api.md`, "Time-based access": the refresh
//! token's end, `refresh_token_expires_in`): the project's switch, the periods offered on the consent page, the
//! counting down, and the end, with a clock moved by hand.

use crate::login_consent::{exchange, url_with, ALICE};
use crate::support::*;
use latchkey_admin::{self as admin, accounts, Actor};
use latchkey_core::time::Clock;
use latchkey_store::ProjectSetting;
use std::sync::Arc;

/// The `duration` radio values of a consent page.
fn periods(page: &Page) -> Vec<String> {
    page.body
        .match_indices("name=\"duration\" value=\"")
        .map(|(i, m)| {
            let rest = &page.body[i + m.len()..];
            rest[..rest.find('"').expect("end")].to_owned()
        })
        .collect()
}

/// Authorizes `app` as alice for readonly with `duration` chosen; returns the token response.
async fn authorize(
    server: &TestServer,
    app: &App,
    duration: Option<&str>,
) -> (Page, Option<latchkey_proto::TokenResponse>) {
    let browser = server.browser();
    let pkce = Pkce::new();
    let consent = browser.consent_page(&url_with(server, app, &[READONLY], &pkce, &[]), ALICE).await;
    let mut form = vec![
        ("csrf".to_owned(), consent.input("csrf").expect("csrf")),
        ("request".to_owned(), consent.input("request").expect("request")),
        ("scope".to_owned(), READONLY.to_owned()),
        ("decision".to_owned(), "allow".to_owned()),
    ];
    if let Some(d) = duration {
        form.push(("duration".to_owned(), d.to_owned()));
    }
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let done = browser.post("/o/oauth2/v2/auth", &form).await;
    let tokens = match done.redirect_param("code") {
        Some(code) => Some(exchange(server, app, &code, &pkce).await),
        None => None,
    };
    (consent, tokens)
}

/// Alice's account page, in a browser signed in for it.
async fn account_page(server: &TestServer) -> Page {
    let browser = server.browser();
    let login = browser.get(&server.url("/signin?continue=/account")).await;
    let signed_in = browser.sign_in(&login, ALICE, PASSWORD).await;
    assert_eq!(signed_in.status, 303, "{}", signed_in.body);
    let to = signed_in.headers["location"].to_str().expect("location").to_owned();
    browser.get(&server.url(&to)).await
}

#[tokio::test]
async fn without_the_switch_no_period_is_offered_and_none_is_accepted() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let (consent, tokens) = authorize(&server, &app, None).await;
    assert!(periods(&consent).is_empty(), "no radio group");
    let t = tokens.expect("a code");
    assert_eq!(t.refresh_token_expires_in, None, "an unlimited grant never carries the field");
    let r = server.refresh(&app, t.refresh_token.as_deref().expect("rt")).await;
    let body: serde_json::Value = r.json().await.expect("json");
    assert!(body.get("refresh_token_expires_in").is_none(), "{body}");
    let (_, refused) = authorize(&server, &app, Some("3600")).await;
    assert!(refused.is_none(), "a period the project does not offer gets no code");
}

#[tokio::test]
async fn a_one_hour_grant_counts_down_then_fails_on_refresh_and_on_the_data_api() {
    let clock = Arc::new(TestClock::default());
    let server = TestServer::start_with_clock(|_| {}, clock.clone()).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let now = latchkey_core::time::UnixTime(1_700_000_000);
    let view =
        admin::project_set(server.store(), &Actor::Operator, &app.project_id, ProjectSetting::TimeBasedAccess, true)
            .await
            .expect("switch");
    assert!(view.time_based_access);
    let _ = now;

    let (consent, tokens) = authorize(&server, &app, Some("3600")).await;
    assert_eq!(periods(&consent), vec!["0", "3600", "86400", "604800", "2592000"]);
    assert!(consent.body.contains("name=\"duration\" value=\"0\" checked"), "until I remove it is the default");
    let t = tokens.expect("a code");
    let first = t.refresh_token_expires_in.expect("a limited grant carries the field");
    assert!((3590..=3600).contains(&first), "{first}");
    let rt = t.refresh_token.clone().expect("rt");
    let page = account_page(&server).await;
    assert_eq!(page.body.matches("class=\"ends\"").count(), 1, "the account page says when access ends: {}", page.body);
    let listed = accounts::user_grants(server.store(), ALICE, &server.running.state.scopes.get(), clock.now()).await;
    let end = listed.expect("grants").apps[0].expires_at.expect("an end");
    assert!((clock.now().0 + 3590..=clock.now().0 + 3600).contains(&end), "{end}");

    clock.advance(1200);
    let r = server.refresh(&app, &rt).await;
    assert_eq!(r.status(), 200);
    let later: latchkey_proto::TokenResponse = r.json().await.expect("json");
    let left = later.refresh_token_expires_in.expect("still carried");
    assert!(left < first && (2390..=2400).contains(&left), "counting down: {first} then {left}");
    assert_eq!(channels(&server, &later.access_token).await.status(), 200);

    clock.advance(2400);
    assert_eq!(error_of(server.refresh(&app, &rt).await).await, (400, "invalid_grant".into()), "the period ended");
    assert_eq!(channels(&server, &later.access_token).await.status(), 401, "its access tokens stop with it");
    let listed = accounts::user_grants(server.store(), ALICE, &server.running.state.scopes.get(), clock.now()).await;
    assert!(listed.expect("grants").apps.is_empty(), "an ended grant no longer gives the app access");

    let (_, forever) = authorize(&server, &app, Some("0")).await;
    assert_eq!(forever.expect("code").refresh_token_expires_in, None, "until I remove it: no field");
    let (_, bogus) = authorize(&server, &app, Some("60")).await;
    assert!(bogus.is_none(), "a period not offered gets an error page and no code");
}

#[tokio::test]
async fn a_period_not_offered_gets_an_error_page_and_changes_nothing() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    admin::project_set(server.store(), &Actor::Operator, &app.project_id, ProjectSetting::TimeBasedAccess, true)
        .await
        .expect("switch");
    let browser = server.browser();
    let pkce = Pkce::new();
    let consent = browser.consent_page(&url_with(&server, &app, &[READONLY], &pkce, &[]), ALICE).await;
    let csrf = consent.input("csrf").expect("csrf");
    let request = consent.input("request").expect("request");
    for bad in ["7200", "-1", "forever"] {
        let page = browser
            .post(
                "/o/oauth2/v2/auth",
                &[
                    ("csrf", &csrf),
                    ("request", &request),
                    ("scope", READONLY),
                    ("duration", bad),
                    ("decision", "allow"),
                ],
            )
            .await;
        assert_eq!(page.status, 400, "{bad}: {}", page.body);
        assert!(page.headers.get("location").is_none(), "an error page, not a redirect");
        assert!(unescape(&page.body).contains("not one this app offers"));
    }
}
