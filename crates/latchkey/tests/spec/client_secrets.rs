//! Client secret rotation (`docs/api.md`, "Client secrets: rotation"): a second secret, both working, then the old one
//! disabled and deleted; in the console's JSON API, the CLI and the console in headless Chromium. Tokens issued before
//! keep working.

use crate::browser::with_chrome;
use crate::cli::{admin, json};
use crate::console_api::{assert_error, Api};
use crate::console_browser::{click, expect_text, text, type_into, wait_for_path};
use crate::support::*;
use latchkey_admin::clock::SystemClock;
use latchkey_admin::{self as ops, Actor, ClientRef};
use latchkey_core::client::SecretChange;
use latchkey_core::time::Clock;
use serde_json::{json, Value};

/// A refresh authenticated with `secret` in the form (client_secret_post): the status.
async fn refresh_with(server: &TestServer, app: &App, refresh_token: &str, secret: &str) -> u16 {
    let form = [
        ("grant_type", "refresh_token"),
        ("client_id", app.client_id.as_str()),
        ("client_secret", secret),
        ("refresh_token", refresh_token),
    ];
    server.token(&form).await.status().as_u16()
}

/// The same with HTTP Basic (client_secret_basic).
async fn refresh_basic(server: &TestServer, app: &App, refresh_token: &str, secret: &str) -> u16 {
    let form = [("grant_type", "refresh_token"), ("refresh_token", refresh_token)];
    let r = server.http().post(server.url("/token")).basic_auth(&app.client_id, Some(secret)).form(&form).send();
    r.await.expect("token").status().as_u16()
}

#[tokio::test]
async fn old_and_new_secrets_both_work_until_the_old_one_is_disabled_and_tokens_issued_before_keep_working() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user("alice@example.com").await;
    let tokens = server.tokens(&app, "alice@example.com", &[READONLY]).await;
    let refresh = tokens.refresh_token.clone().expect("refresh token");
    let (store, op, now) = (server.store(), &Actor::Operator, SystemClock.now());
    let at = || ClientRef::id(&app.client_id);
    let old_id = ops::client_show(store, op, at()).await.expect("show").secrets[0].secret_id.clone();

    let added = ops::client_secret_add(store, op, at(), now).await.expect("add");
    assert!(added.client_secret.starts_with("lks_") && added.client_secret != app.client_secret);
    assert_eq!(refresh_with(&server, &app, &refresh, &app.client_secret).await, 200, "the old secret works");
    assert_eq!(refresh_with(&server, &app, &refresh, &added.client_secret).await, 200, "and the new one");
    assert_eq!(refresh_basic(&server, &app, &refresh, &added.client_secret).await, 200, "by HTTP Basic too");

    let view =
        ops::client_secret_change(store, op, at(), SecretChange::Disable(old_id.clone(), now)).await.expect("disable");
    assert_eq!(view.secrets.iter().map(|s| s.enabled).collect::<Vec<_>>(), [false, true]);
    assert_eq!(refresh_with(&server, &app, &refresh, &app.client_secret).await, 401, "the disabled secret fails");
    assert_eq!(refresh_basic(&server, &app, &refresh, &app.client_secret).await, 401);
    assert_eq!(refresh_with(&server, &app, &refresh, &added.client_secret).await, 200, "the new one goes on");
    assert_eq!(channels(&server, &tokens.access_token).await.status(), 200, "a token issued before still works");

    ops::client_secret_change(store, op, at(), SecretChange::Delete(old_id.clone())).await.expect("delete");
    let left = ops::client_show(store, op, at()).await.expect("show").secrets;
    assert_eq!(left.iter().map(|s| s.secret_id.as_str()).collect::<Vec<_>>(), [added.secret_id.as_str()]);
    assert_eq!(left[0].last4.as_deref(), Some(&added.client_secret[added.client_secret.len() - 4..]));
    assert_eq!(refresh_with(&server, &app, &refresh, &app.client_secret).await, 401, "a deleted secret fails");
}

#[tokio::test]
async fn the_console_api_rotates_a_secret_and_refuses_each_step_bound_to_fail() {
    let server = TestServer::start().await;
    let api = Api::new(&server, "alice@example.com").await;
    let project = api.project("Rotation").await;
    let clients = format!("/console/api/v1/projects/{project}/clients");
    let (status, created) = api.post(&clients, json!({ "type": "desktop", "name": "Desk" })).await;
    assert_eq!(status, 201, "{created}");
    let client = created["client_id"].as_str().expect("id").to_owned();
    let first = created["secrets"][0]["secret_id"].as_str().expect("secret id").to_owned();
    assert_eq!(created["secrets"][0]["enabled"], true);
    let secrets = format!("{clients}/{client}/secrets");

    assert_error(&api.post(&format!("{secrets}/{first}/disable"), Value::Null).await, 409, "conflict");
    assert_error(&api.call("DELETE", &format!("{secrets}/{first}"), None).await, 409, "conflict");
    let (status, added) = api.post(&secrets, Value::Null).await;
    assert_eq!(status, 201, "{added}");
    assert!(added["client_secret"].as_str().is_some_and(|s| s.starts_with("lks_")));
    assert_error(&api.post(&secrets, Value::Null).await, 409, "conflict");
    let (status, shown) = api.get(&format!("{clients}/{client}")).await;
    assert_eq!((status, shown["secrets"].as_array().map(Vec::len)), (200, Some(2)));
    assert!(!shown.to_string().contains(added["client_secret"].as_str().expect("secret")), "shown once only");

    let (status, v) = api.post(&format!("{secrets}/{first}/disable"), Value::Null).await;
    assert_eq!((status, &v["secrets"][0]["enabled"]), (200, &json!(false)), "{v}");
    let (status, v) = api.post(&format!("{secrets}/{first}/enable"), Value::Null).await;
    assert_eq!((status, &v["secrets"][0]["enabled"]), (200, &json!(true)), "{v}");
    api.post(&format!("{secrets}/{first}/disable"), Value::Null).await;
    let (status, v) = api.call("DELETE", &format!("{secrets}/{first}"), None).await;
    assert_eq!((status, v["secrets"].as_array().map(Vec::len)), (200, Some(1)), "{v}");
    assert_error(&api.call("DELETE", &format!("{secrets}/{first}"), None).await, 404, "not_found");

    // Another developer's key cannot touch them: 404, as for anything outside their projects.
    let bob = Api::new(&server, "bob@example.com").await;
    assert_error(&bob.post(&secrets, Value::Null).await, 404, "not_found");
}

#[test]
fn the_cli_adds_disables_and_deletes_a_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let ok = |args: &[&str]| {
        let (code, out, err) = admin(d, args, "");
        assert_eq!(code, 0, "latchkey admin {args:?}: {err}");
        json(&out)
    };
    ok(&["migrate"]);
    let project = ok(&["project", "create", "--name", "Tools"])["project_id"].as_str().expect("id").to_owned();
    let client = ok(&["client", "create", "--project", &project, "--type", "desktop", "--name", "Tool"]);
    let client_id = client["client_id"].as_str().expect("id");
    let first = client["secrets"][0]["secret_id"].as_str().expect("secret id");
    let added = ok(&["client", "secret", "add", "--client", client_id]);
    assert!(added["client_secret"].as_str().is_some_and(|s| s.starts_with("lks_")));
    let (code, _, err) = admin(d, &["client", "secret", "delete", "--client", client_id, "--secret", first], "");
    assert_ne!(code, 0);
    assert!(err.contains("disable it first"), "{err}");
    ok(&["client", "secret", "disable", "--client", client_id, "--secret", first]);
    let left = ok(&["client", "secret", "delete", "--client", client_id, "--secret", first]);
    assert_eq!(left["secrets"].as_array().map(Vec::len), Some(1));
    assert_eq!(left["secrets"][0]["secret_id"], added["secret_id"]);
}

#[tokio::test]
async fn in_chromium_a_developer_adds_a_secret_downloads_its_json_and_retires_the_old_one() {
    with_chrome(|browser| async move {
        let server = TestServer::start().await;
        let api = Api::new(&server, "dev@example.com").await;
        let project = api.project("Rotation").await;
        let clients = format!("/console/api/v1/projects/{project}/clients");
        let (_, created) = api.post(&clients, json!({ "type": "desktop", "name": "Desk" })).await;
        let client = created["client_id"].as_str().expect("id").to_owned();
        let page = server.url(&format!("/console/projects/{project}/clients/{client}"));

        browser.goto(&page).await.expect("open the client");
        type_into(&browser, "input[name=email]", "dev@example.com").await;
        type_into(&browser, "input[name=password]", PASSWORD).await;
        click(&browser, "form button[type=submit]").await;
        wait_for_path(&browser, &client).await;
        expect_text(&browser, "#secrets-heading", "Client secrets").await;
        let copy = crate::browser::find(&browser, "button[data-copy=client-id]").await;
        assert!(copy.is_displayed().await.expect("shown"), "the copy button is shown where the script runs");
        assert!(browser.find(fantoccini::Locator::Css("#secrets button.danger")).await.is_err(), "no Delete yet");
        assert!(
            browser.find(fantoccini::Locator::Css("form[action$='/disable']")).await.is_err(),
            "no Disable for the only enabled secret"
        );

        click(&browser, "#add-secret").await;
        let secret = text(&browser, "#client-secret").await;
        assert!(secret.starts_with("lks_"), "{secret}");
        let download = crate::browser::find(&browser, "#download").await;
        assert!(download.is_displayed().await.expect("shown"), "the script offers the download");
        let json = download.attr("data-json").await.expect("attr").expect("the file's content");
        let file: Value = serde_json::from_str(&json).expect("JSON");
        download.click().await.expect("download");
        let href = download.attr("href").await.expect("attr").expect("href");
        assert!(href.starts_with("blob:"), "a blob: URL, not the secret in a URL: {href}");
        assert_eq!(file["installed"]["client_secret"], secret.as_str());
        assert_eq!(file["installed"]["client_id"], client.as_str());
        assert_eq!(file["installed"]["token_uri"], server.url("/token"));
        click(&browser, "main a.button.primary").await;

        // The old secret (the first row) can be disabled now, then deleted.
        click(&browser, "#secrets tbody tr:first-child form[action$='/disable'] button").await;
        expect_text(&browser, "#notice", "Secret disabled").await;
        click(&browser, "#secrets tbody tr:first-child form[action$='/delete'] button").await;
        expect_text(&browser, "#notice", "Secret deleted").await;
        let (_, shown) = api.get(&format!("{clients}/{client}")).await;
        assert_eq!(shown["secrets"].as_array().map(Vec::len), Some(1));
        assert_eq!(shown["secrets"][0]["last4"], &secret[secret.len() - 4..]);
    })
    .await;
}
