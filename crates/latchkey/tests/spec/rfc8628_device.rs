//! The device authorization grant (RFC 8628) over HTTP: a TV client's codes, the person entering the user code at
//! `/device` after signing in, the warning and the consent page, and the device's polls of the token endpoint
//! (`authorization_pending`, `slow_down`, the tokens once, `access_denied`, `expired_token`, `unauthorized_client`).

use crate::support::*;
use latchkey_admin::Actor;
use latchkey_core::client::ClientType;
use serde_json::Value;
use std::sync::Arc;

pub(crate) const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";
pub(crate) const ANN: &str = "ann@example.com";

/// A project with the data API and a TV client; its id and secret.
pub(crate) async fn tv_app(server: &TestServer) -> App {
    let now = latchkey_core::time::UnixTime(1_700_000_000);
    let p = latchkey_admin::project_create(server.store(), &Actor::Operator, "TV project", None, now).await.expect("p");
    latchkey_admin::project_set_api(server.store(), &Actor::Operator, &p.project_id, true).await.expect("api");
    let new = latchkey_admin::NewClient {
        project_id: p.project_id.clone(),
        client_type: ClientType::Tv,
        name: "Living Room TV".into(),
        redirect_uris: vec![],
        details: Default::default(),
    };
    let c = latchkey_admin::client_create(server.store(), &Actor::Operator, new, now).await.expect("client");
    App { project_id: p.project_id, client_id: c.client_id, client_secret: c.client_secret.expect("secret") }
}

async fn post(server: &TestServer, path: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let r = server.http().post(server.url(path)).form(form).send().await.expect("post");
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

pub(crate) async fn codes(server: &TestServer, app: &App, scope: &str) -> Value {
    let (status, body) = post(server, "/device/code", &[("client_id", &app.client_id), ("scope", scope)]).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn poll(server: &TestServer, app: &App, device_code: &str) -> (u16, Value) {
    post(server, "/token", &[("grant_type", DEVICE_GRANT), ("client_id", &app.client_id), ("device_code", device_code)])
        .await
}

/// Signs in at `/device?user_code=...` and enters the code as typed; returns the browser and the page it got.
async fn enter_code(server: &TestServer, shown: &str, typed: &str) -> (Browser, Page) {
    let browser = server.browser();
    let first = browser.get(&server.url(&format!("/device?user_code={shown}"))).await;
    assert_eq!(first.status, 303, "sign in first");
    let login = browser.get(&server.url(first.headers["location"].to_str().expect("location"))).await;
    let signed_in = browser.sign_in(&login, ANN, PASSWORD).await;
    assert_eq!(signed_in.status, 303, "{}", signed_in.body);
    let page = browser.get(&server.url(signed_in.headers["location"].to_str().expect("location"))).await;
    assert_eq!(page.input("user_code").as_deref(), Some(shown), "pre-filled, still a click away");
    let csrf = page.input("csrf").expect("csrf");
    let account = page.input("account").expect("account");
    let consent = browser.post("/device", &[("csrf", &csrf), ("account", &account), ("user_code", typed)]).await;
    (browser, consent)
}

/// Signs ANN in at `/device`, enters `user_code` and allows `readonly`.
pub(crate) async fn allow(server: &TestServer, user_code: &str) {
    let (browser, consent) = enter_code(server, user_code, user_code).await;
    let csrf = consent.input("csrf").expect("csrf");
    let request = consent.input("request").expect("request");
    let form = [("csrf", csrf.as_str()), ("request", &request), ("scope", READONLY), ("decision", "allow")];
    let done = browser.post("/device/consent", &form).await;
    assert!(done.body.contains("Go back to your device"), "{}", done.body);
}

#[tokio::test]
async fn the_organisation_checks_of_the_authorization_endpoint_hold_on_the_device_page() {
    let server = TestServer::start().await;
    server.user(ANN).await;
    let org = crate::organisations::corp(&server).await;
    let tv = tv_app(&server).await;
    let now = latchkey_core::time::UnixTime(1_700_000_000);
    let internal = Some(latchkey_core::org::Audience::Internal);
    latchkey_admin::orgs::project_place(
        server.store(),
        &Actor::Operator,
        &tv.project_id,
        Some(Some(&org)),
        internal,
        now,
    )
    .await
    .expect("an internal project");
    let body = codes(&server, &tv, READONLY).await;
    let shown = body["user_code"].as_str().expect("user code");
    let (_, refused) = enter_code(&server, shown, shown).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("org_internal"), "ann is no member of the app's organisation: {}", refused.body);
}

#[tokio::test]
async fn metadata_names_the_endpoint_and_only_tv_clients_get_codes() {
    let server = TestServer::start().await;
    let doc = discovery(&server).await;
    assert_eq!(doc["device_authorization_endpoint"], server.url("/device/code"));
    assert!(doc["grant_types_supported"].as_array().expect("types").iter().any(|g| g == DEVICE_GRANT));
    let desktop = server.app().await;
    let (status, body) = post(&server, "/device/code", &[("client_id", &desktop.client_id), ("scope", READONLY)]).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("unauthorized_client")));
    let tv = tv_app(&server).await;
    let (status, body) = post(&server, "/device/code", &[("client_id", &tv.client_id), ("scope", "nope")]).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_scope")));
    let body = codes(&server, &tv, READONLY).await;
    let user_code = body["user_code"].as_str().expect("user code");
    assert_eq!(user_code.len(), 9);
    assert!(user_code.chars().enumerate().all(|(i, c)| if i == 4 {
        c == '-'
    } else {
        "BCDFGHJKLMNPQRSTVWXZ".contains(c)
    }));
    assert_eq!(body["verification_uri"], server.url("/device"));
    assert_eq!(body["verification_uri_complete"], format!("{}?user_code={user_code}", server.url("/device")));
    assert_eq!((body["expires_in"].as_i64(), body["interval"].as_i64()), (Some(1800), Some(5)));
    // The authorization endpoint is not a TV client's.
    let pkce = Pkce::new();
    let page =
        server.browser().get(&authorize_url(&server, &tv, &[READONLY], &pkce, "http://127.0.0.1:5/cb", "s")).await;
    assert_eq!(page.status, 400, "{}", page.body);
    assert!(page.body.contains("invalid_request") && page.body.contains("device flow"), "{}", page.body);
    // And a code-flow client cannot poll a TV's device code.
    let (status, body) = poll(&server, &desktop, body["device_code"].as_str().expect("code")).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("unauthorized_client")));
}

#[tokio::test]
async fn the_person_allows_on_another_device_and_the_device_gets_tokens_once() {
    let clock = Arc::new(TestClock::default());
    let server = TestServer::start_with_clock(|_| {}, clock.clone()).await;
    server.user(ANN).await;
    let tv = tv_app(&server).await;
    let body = codes(&server, &tv, READONLY).await;
    let (device_code, shown) = (body["device_code"].as_str().expect("dc"), body["user_code"].as_str().expect("uc"));
    assert_eq!(poll(&server, &tv, device_code).await.1["error"], "authorization_pending");
    assert_eq!(poll(&server, &tv, device_code).await.1["error"], "slow_down", "a poll at once");
    clock.advance(11);
    assert_eq!(poll(&server, &tv, device_code).await.1["error"], "authorization_pending", "at the grown pace");

    let typed = shown.to_lowercase().replace('-', " ");
    let (browser, consent) = enter_code(&server, shown, &typed).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    assert!(
        consent.body.contains("Living Room TV") && consent.body.contains("id=\"device-warning\""),
        "{}",
        consent.body
    );
    let csrf = consent.input("csrf").expect("csrf");
    let code = consent.input("request").expect("the user code");
    let done = browser
        .post("/device/consent", &[("csrf", &csrf), ("request", &code), ("scope", READONLY), ("decision", "allow")])
        .await;
    assert_eq!(done.status, 200);
    assert!(done.body.contains("Go back to your device"), "{}", done.body);

    clock.advance(20);
    let (status, tokens) = poll(&server, &tv, device_code).await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().expect("access token");
    assert!(tokens["refresh_token"].is_string());
    assert_eq!(channels(&server, access).await.status(), 200);
    clock.advance(20);
    let (status, again) = poll(&server, &tv, device_code).await;
    assert_eq!((status, again["error"].as_str()), (400, Some("invalid_grant")), "single use");
    assert_eq!(channels(&server, access).await.status(), 200, "a second poll revokes nothing");
    let refreshed = server.refresh(&tv, tokens["refresh_token"].as_str().expect("rt")).await;
    assert_eq!(refreshed.status(), 200);
    // The grant shows on the account page like any other, marked as a device sign-in; Remove access works.
    let account = browser.get(&server.url("/account")).await;
    assert!(
        account.body.contains("Living Room TV") && account.body.contains("class=\"device-sign-in\""),
        "{}",
        account.body
    );
    let csrf = crate::account_page::form_input(&account, "/account/apps/remove", "csrf");
    let user = account.input("account").expect("account");
    let removed = browser
        .post("/account/apps/remove", &[("csrf", &csrf), ("account", &user), ("client_id", &tv.client_id)])
        .await;
    assert_eq!(removed.status, 303);
    assert_eq!(channels(&server, access).await.status(), 401, "removed");
}

#[tokio::test]
async fn declined_expired_and_wrong_codes() {
    let clock = Arc::new(TestClock::default());
    let server = TestServer::start_with_clock(|_| {}, clock.clone()).await;
    server.user(ANN).await;
    let tv = tv_app(&server).await;
    let body = codes(&server, &tv, READONLY).await;
    let (device_code, shown) = (body["device_code"].as_str().expect("dc"), body["user_code"].as_str().expect("uc"));
    let (browser, consent) = enter_code(&server, shown, shown).await;
    let csrf = consent.input("csrf").expect("csrf");
    let declined = browser
        .post("/device/consent", &[("csrf", &csrf), ("request", &shown.replace('-', "")), ("decision", "deny")])
        .await;
    assert_eq!(declined.status, 200);
    let (status, refused) = poll(&server, &tv, device_code).await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("access_denied")));

    let expiring = codes(&server, &tv, READONLY).await;
    clock.advance(1800);
    let (_, expired) = poll(&server, &tv, expiring["device_code"].as_str().expect("dc")).await;
    assert_eq!(expired["error"], "expired_token");

    let fresh = codes(&server, &tv, READONLY).await;
    let (browser, _) = enter_code(&server, fresh["user_code"].as_str().expect("uc"), "BBBB-BBBB").await;
    let page = browser.get(&server.url("/device")).await;
    let (csrf, account) = (page.input("csrf").expect("csrf"), page.input("account").expect("account"));
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(
            browser.post("/device", &[("csrf", &csrf), ("account", &account), ("user_code", "CCCC-CCCC")]).await.status,
        );
    }
    assert_eq!(statuses, [400, 400, 400, 400, 429, 429], "five wrong codes a minute (one was entered before)");
    clock.advance(61);
    let right = browser
        .post(
            "/device",
            &[("csrf", &csrf), ("account", &account), ("user_code", fresh["user_code"].as_str().expect("uc"))],
        )
        .await;
    assert_eq!(right.status, 200, "a minute later, the right code goes on");
}

#[tokio::test]
async fn another_devices_code_and_a_code_entered_again_change_nothing() {
    let server = TestServer::start().await;
    server.user(ANN).await;
    let (tv, other) = (tv_app(&server).await, tv_app(&server).await);
    let body = codes(&server, &tv, READONLY).await;
    let (device_code, shown) = (body["device_code"].as_str().expect("dc"), body["user_code"].as_str().expect("uc"));
    assert_eq!(poll(&server, &tv, device_code).await.1["error"], "authorization_pending");
    let (status, refused) = poll(&server, &other, device_code).await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_grant")), "another TV's device code");
    allow(&server, shown).await;
    let (_, again) = enter_code(&server, shown, shown).await;
    assert_eq!(again.status, 400, "a code already decided: {}", again.body);
    assert!(again.body.contains("not valid"), "{}", again.body);
    let (status, tokens) = poll(&server, &tv, device_code).await;
    assert_eq!(status, 200, "the device still gets its tokens: {tokens}");
}

#[tokio::test]
async fn the_consent_form_counts_the_user_code_it_carries_and_reads_its_decision_like_the_code_flow() {
    let server = TestServer::start().await;
    server.user(ANN).await;
    let tv = tv_app(&server).await;
    let body = codes(&server, &tv, READONLY).await;
    let (device_code, shown) = (body["device_code"].as_str().expect("dc"), body["user_code"].as_str().expect("uc"));
    let (browser, consent) = enter_code(&server, shown, shown).await;
    assert!(consent.body.contains("(project TV project)"), "the app's project is named: {}", consent.body);
    let csrf = consent.input("csrf").expect("csrf");
    let request = consent.input("request").expect("request");
    // Neither Allow nor Cancel: refused, and the code stays pending.
    let neither = browser.post("/device/consent", &[("csrf", &csrf), ("request", &request)]).await;
    assert_eq!(neither.status, 400, "{}", neither.body);
    assert!(neither.body.contains("Choose Allow or Cancel"), "{}", neither.body);
    assert_eq!(poll(&server, &tv, device_code).await.1["error"], "authorization_pending");
    // Guessing codes through the consent form is counted like typing them on /device.
    let mut statuses = Vec::new();
    for guess in ["CCCC-CCCC", "DDDD-DDDD", "FFFF-FFFF", "GGGG-GGGG", "HHHH-HHHH", "JJJJ-JJJJ"] {
        let form = [("csrf", csrf.as_str()), ("request", guess), ("scope", READONLY), ("decision", "deny")];
        statuses.push(browser.post("/device/consent", &form).await.status);
    }
    assert_eq!(statuses, [400, 400, 400, 400, 400, 429], "five wrong codes a minute, whichever form sends them");
    let right = [("csrf", csrf.as_str()), ("request", &request), ("scope", READONLY), ("decision", "allow")];
    assert_eq!(browser.post("/device/consent", &right).await.status, 429, "past the limit nothing is checked");
    assert_eq!(poll(&server, &tv, device_code).await.1["error"], "slow_down", "still undecided");
}

#[tokio::test]
async fn a_device_code_sent_as_an_authorization_code_is_unknown_and_revokes_nothing() {
    let server = TestServer::start().await;
    server.user(ANN).await;
    let tv = tv_app(&server).await;
    let body = codes(&server, &tv, READONLY).await;
    let device_code = body["device_code"].as_str().expect("dc");
    allow(&server, body["user_code"].as_str().expect("uc")).await;
    let (status, tokens) = poll(&server, &tv, device_code).await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().expect("access token");
    let exchange = [
        ("grant_type", "authorization_code"),
        ("client_id", tv.client_id.as_str()),
        ("code", device_code),
        ("redirect_uri", DEVICE_GRANT),
        ("code_verifier", "a-verifier-that-is-long-enough-to-be-read-as-one-0123456789"),
    ];
    let (status, refused) = post(&server, "/token", &exchange).await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_grant")), "{refused}");
    assert_eq!(channels(&server, access).await.status(), 200, "the device's grant stands");
}

#[tokio::test]
async fn the_device_authorization_endpoint_refuses_in_oauth_json_before_its_handler_runs() {
    let server = TestServer::start().await;
    let r = server.http().get(server.url("/device/code")).send().await.expect("get");
    assert_eq!(r.status(), 405);
    assert!(r.headers()["allow"].to_str().expect("allow").contains("POST"));
    let body: Value = r.json().await.expect("an OAuth JSON error, not a page");
    assert_eq!(body["error"], "invalid_request");
    let r = server.http().post(server.url("/device/code")).body("client_id=x").send().await.expect("post");
    let body: Value = r.json().await.expect("JSON for a body that is no form");
    assert_eq!(body["error"], "invalid_request");
}
