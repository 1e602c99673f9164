//! People, "the account page" (`docs/api.md`, "The account page"): the apps with access to an account, "Remove access",
//! a new password, "Sign out of all other sessions", the operator's disable, and the same operations in the admin CLI's
//! functions and the console's JSON API.

use crate::login_consent::{exchange, follow, is_sign_in, url_with, ALICE, BOB, REDIRECT};
use crate::support::*;
use latchkey_admin::accounts;
use latchkey_core::account::EventKind;

/// Signs a fresh browser in as `email` and grants `app` the readonly scope: the browser and the tokens.
pub(crate) async fn granted(server: &TestServer, app: &App, email: &str) -> (Browser, latchkey_proto::TokenResponse) {
    let browser = server.browser();
    let pkce = Pkce::new();
    let code = browser.code(server, app, email, &[READONLY, UPLOAD], &[READONLY, UPLOAD], &pkce, REDIRECT).await;
    let tokens = exchange(server, app, &code, &pkce).await;
    (browser, tokens)
}

async fn refresh(server: &TestServer, app: &App, t: &latchkey_proto::TokenResponse) -> reqwest::Response {
    server.refresh(app, t.refresh_token.as_deref().expect("refresh token")).await
}

/// The value of the hidden input `name` of the form whose action is `action`.
pub(crate) fn form_input(page: &Page, action: &str, name: &str) -> String {
    let form = &page.body[page.body.find(&format!("action=\"{action}\"")).expect(action)..];
    let form = &form[..form.find("</form>").expect("form end")];
    Page { status: 200, headers: Default::default(), body: form.to_owned() }.input(name).expect(name)
}

/// The kinds of a user's account events, oldest first.
async fn event_kinds(server: &TestServer, user_id: &str) -> Vec<EventKind> {
    server.store().account_events(user_id).await.expect("events").iter().map(|e| e.kind).collect()
}

#[tokio::test]
async fn the_account_page_lists_each_app_and_remove_access_revokes_its_tokens_only() {
    let server = TestServer::start().await;
    let (photos, notes) = (server.app().await, server.app().await);
    let alice = server.user(ALICE).await;
    let (browser, photo_tokens) = granted(&server, &photos, ALICE).await;
    let (_, note_tokens) = granted(&server, &notes, ALICE).await;

    let page = browser.get(&server.url("/account")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.headers["content-security-policy"], latchkey_server::views::CSP);
    assert_eq!(page.headers["cache-control"], "no-store");
    let body = unescape(&page.body);
    assert_eq!(body.matches("class=\"app\"").count(), 2, "one row per app: {body}");
    assert!(body.contains(&photos.client_id) && body.contains(&notes.client_id));
    assert!(body.contains("View your account"), "permissions in words: {body}");
    assert!(body.contains(READONLY) && body.contains(UPLOAD), "scope ids shown");
    assert!(body.contains("Test project"), "the project's name");
    assert!(body.contains("Remove access"));
    assert!(!body.contains("class=\"ends\""), "access until removed shows no end");

    let csrf = form_input(&page, "/account/apps/remove", "csrf");
    let forged = browser
        .post("/account/apps/remove", &[("csrf", &csrf), ("account", &alice), ("client_id", "no-such-app")])
        .await;
    assert_eq!(forged.status, 404, "{}", forged.body);
    assert!(unescape(&forged.body).contains("nothing was changed"));
    let wrong_csrf = browser
        .post("/account/apps/remove", &[("csrf", "x"), ("account", &alice), ("client_id", &photos.client_id)])
        .await;
    assert_eq!(wrong_csrf.status, 403);
    assert_eq!(refresh(&server, &photos, &photo_tokens).await.status(), 200, "refused forms changed nothing");

    let done = browser
        .post("/account/apps/remove", &[("csrf", &csrf), ("account", &alice), ("client_id", &photos.client_id)])
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    let after = follow(&server, &browser, &done).await;
    assert!(unescape(&after.body).contains("The app's access was removed"));
    assert_eq!(unescape(&after.body).matches("class=\"app\"").count(), 1);
    assert_eq!(error_of(refresh(&server, &photos, &photo_tokens).await).await, (400, "invalid_grant".into()));
    assert_eq!(channels(&server, &photo_tokens.access_token).await.status(), 401, "its access token stops at once");
    assert_eq!(refresh(&server, &notes, &note_tokens).await.status(), 200, "the other app keeps its access");
    assert_eq!(channels(&server, &note_tokens.access_token).await.status(), 200);
    let events = server.store().account_events(&alice).await.expect("events");
    assert_eq!(
        events.iter().map(|e| (e.kind, e.client_id.as_deref())).collect::<Vec<_>>(),
        vec![(EventKind::TokensRevoked, Some(photos.client_id.as_str()))]
    );
}

#[tokio::test]
async fn last_used_is_recorded_in_batches_and_shown_to_the_day() {
    let server = TestServer::start_with(|c| c.last_used_flush_secs = 1).await;
    let app = server.app().await;
    let alice = server.user(ALICE).await;
    let (_, tokens) = granted(&server, &app, ALICE).await;
    assert_eq!(channels(&server, &tokens.access_token).await.status(), 200);
    let now = latchkey_core::time::Clock::now(&latchkey_admin::clock::SystemClock);
    let today = now.0 - now.0.rem_euclid(86_400);
    let mut seen = None;
    for _ in 0..50 {
        let grants = server.store().live_grants(&alice, now).await.expect("grants");
        seen = grants[0].last_used_at;
        if seen.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(seen.map(|t| t.0), Some(today), "the data-API call was recorded as today, by the batch");
}

#[tokio::test]
async fn a_new_password_needs_the_old_one_and_ends_the_accounts_other_sessions() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let alice = server.user(ALICE).await;
    let (here, _) = granted(&server, &app, ALICE).await;
    let (elsewhere, _) = granted(&server, &app, ALICE).await;
    let page = here.get(&server.url("/account")).await;
    let csrf = form_input(&page, "/account/password", "csrf");
    let wrong = here
        .post(
            "/account/password",
            &[
                ("csrf", &csrf),
                ("account", &alice),
                ("current_password", "nope"),
                ("new_password", "a new long password"),
            ],
        )
        .await;
    assert_eq!(wrong.status, 400, "{}", wrong.body);
    assert!(unescape(&wrong.body).contains("The current password is wrong."));
    let short = here
        .post(
            "/account/password",
            &[("csrf", &csrf), ("account", &alice), ("current_password", PASSWORD), ("new_password", "short")],
        )
        .await;
    assert_eq!(short.status, 400);
    let done = here
        .post(
            "/account/password",
            &[
                ("csrf", &csrf),
                ("account", &alice),
                ("current_password", PASSWORD),
                ("new_password", "a new long password"),
            ],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(here.get(&server.url("/account")).await.status, 200, "this browser stays signed in");
    let other = elsewhere.get(&server.url("/account")).await;
    assert_eq!(other.status, 303, "the other browser's session ended");
    let fresh = server.browser();
    let login = fresh.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[])).await;
    assert_eq!(fresh.sign_in(&login, ALICE, PASSWORD).await.status, 401, "the old password no longer works");
    assert_eq!(fresh.sign_in(&login, ALICE, "a new long password").await.status, 303);
    assert_eq!(event_kinds(&server, &alice).await, vec![EventKind::CredentialChanged]);
}

#[tokio::test]
async fn signing_out_of_other_sessions_keeps_this_one() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let alice = server.user(ALICE).await;
    let (here, _) = granted(&server, &app, ALICE).await;
    let (elsewhere, _) = granted(&server, &app, ALICE).await;
    let page = here.get(&server.url("/account")).await;
    let csrf = form_input(&page, "/account/sessions/end-others", "csrf");
    let done = here.post("/account/sessions/end-others", &[("csrf", &csrf), ("account", &alice)]).await;
    assert_eq!(done.status, 303);
    assert!(unescape(&follow(&server, &here, &done).await.body)
        .contains("Every other session of this account was signed out."));
    assert_eq!(elsewhere.get(&server.url("/account")).await.status, 303, "signed out elsewhere");
    assert_eq!(event_kinds(&server, &alice).await, vec![EventKind::SessionsRevoked]);
}

#[tokio::test]
async fn a_disabled_account_loses_its_sessions_at_once_and_is_told_why_at_sign_in() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let alice = server.user(ALICE).await;
    let (browser, tokens) = granted(&server, &app, ALICE).await;
    let now = latchkey_core::time::UnixTime(1_700_000_000);
    latchkey_admin::user_set_disabled(server.store(), ALICE, true, now).await.expect("disable");
    assert_eq!(browser.get(&server.url("/account")).await.status, 303, "the session ended");
    latchkey_admin::user_set_disabled(server.store(), ALICE, false, now).await.expect("enable");
    assert_eq!(browser.get(&server.url("/account")).await.status, 303, "re-enabling does not bring the session back");
    assert_eq!(refresh(&server, &app, &tokens).await.status(), 200, "enabled again, the grant works");
    latchkey_admin::user_set_disabled(server.store(), ALICE, true, now).await.expect("disable");
    let login = browser.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[])).await;
    assert!(is_sign_in(&login));
    let refused = browser.sign_in(&login, ALICE, PASSWORD).await;
    assert_eq!(refused.status, 403);
    assert!(unescape(&refused.body).contains("This account is disabled."), "{}", refused.body);
    assert_eq!(
        event_kinds(&server, &alice).await,
        vec![EventKind::AccountDisabled, EventKind::AccountEnabled, EventKind::AccountDisabled]
    );
}

#[tokio::test]
async fn the_admin_operations_list_an_accounts_apps_and_remove_one() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let (_, tokens) = granted(&server, &app, ALICE).await;
    let registry = &server.running.state.scopes.get();
    let now = latchkey_core::time::Clock::now(&latchkey_admin::clock::SystemClock);
    let list = accounts::user_grants(server.store(), ALICE, registry, now).await.expect("grants");
    let json = serde_json::to_value(&list).expect("json");
    assert_eq!(json["apps"][0]["client_id"], app.client_id.as_str(), "{json}");
    assert_eq!(json["apps"][0]["permissions"].as_array().map(Vec::len), Some(2));
    assert!(json["apps"][0]["expires_at"].is_null());
    let missing = accounts::user_revoke_app(server.store(), ALICE, "no-such-client", now).await;
    assert!(matches!(missing, Err(latchkey_admin::AdminError::NotFound(_))));
    let removed = accounts::user_revoke_app(server.store(), ALICE, &app.client_id, now).await.expect("revoke");
    assert_eq!(removed.revoked, 1);
    assert_eq!(error_of(refresh(&server, &app, &tokens).await).await.1, "invalid_grant");
    assert!(accounts::user_grants(server.store(), ALICE, registry, now).await.expect("grants").apps.is_empty());
}

#[tokio::test]
async fn the_json_api_lists_and_removes_apps_for_the_account_or_an_operator_only() {
    let server = TestServer::start_with(|c| c.operators = vec!["ops@example.com".into()]).await;
    let app = server.app().await;
    let alice = server.user(ALICE).await;
    server.user(BOB).await;
    server.user("ops@example.com").await;
    let (_, tokens) = granted(&server, &app, ALICE).await;
    let now = latchkey_core::time::UnixTime(1_700_000_000);
    let mut keys = Vec::new();
    for who in [ALICE, BOB, "ops@example.com"] {
        keys.push(latchkey_admin::api_keys::api_key_create(server.store(), who, "k", now).await.expect("key").api_key);
    }
    let (alice_key, bob_key, ops_key) = (keys[0].clone(), keys[1].clone(), keys[2].clone());
    let api = |path: String, key: String, method: reqwest::Method| {
        let http = server.http();
        let url = server.url(&format!("/console/api/v1/{path}"));
        async move { http.request(method, url).bearer_auth(key).send().await.expect("api") }
    };
    let own = api(format!("users/{alice}/apps"), alice_key.clone(), reqwest::Method::GET).await;
    assert_eq!(own.status(), 200);
    let body: serde_json::Value = own.json().await.expect("json");
    assert_eq!(body["apps"][0]["client_id"], app.client_id.as_str());
    assert_eq!(api(format!("users/{alice}/apps"), bob_key.clone(), reqwest::Method::GET).await.status(), 403);
    assert_eq!(
        api(format!("users/{alice}/disable"), alice_key.clone(), reqwest::Method::POST).await.status(),
        403,
        "not an operator"
    );
    assert_eq!(api(format!("users/{ALICE}/apps"), ops_key.clone(), reqwest::Method::GET).await.status(), 200);
    let path = format!("users/{alice}/apps/{}", app.client_id);
    assert_eq!(api(path.clone(), ops_key.clone(), reqwest::Method::DELETE).await.status(), 200);
    assert_eq!(api(path, ops_key.clone(), reqwest::Method::DELETE).await.status(), 404, "nothing left to remove");
    assert_eq!(error_of(refresh(&server, &app, &tokens).await).await.1, "invalid_grant");
    assert_eq!(api(format!("users/{BOB}/disable"), ops_key.clone(), reqwest::Method::POST).await.status(), 200);
    let bob = server.store().user_by_email(BOB).await.expect("get").expect("bob");
    assert!(bob.disabled_at.is_some());
}
