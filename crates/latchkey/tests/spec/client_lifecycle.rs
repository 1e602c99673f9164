//! The OAuth client's lifecycle (`docs/decisions.md`, "Clients"): a deleted client is refused (tokens and the
//! authorization page) and restorable for 30 days, after which it is purged with its grants; a client unused
//! for 180 days is deleted automatically; edits re-run the type's rules, the bundle ID frozen once App Check is
//! used; the `latchkey admin client restore|update|purge` commands.

use crate::support::*;
use latchkey_admin::clock::SystemClock;
use latchkey_admin::{self as admin, ClientEdit, Lifecycle};
use latchkey_admin::{Actor, ClientRef};
use latchkey_core::client::DAY;
use latchkey_core::time::{Clock, UnixTime};
use latchkey_proto::TokenResponse;
use std::path::Path;
use std::process::{Command, Stdio};

const ALICE: &str = "alice@example.com";

async fn refresh(server: &TestServer, app: &App, t: &TokenResponse) -> reqwest::Response {
    let rt = t.refresh_token.as_deref().expect("refresh token");
    server.token(&[("grant_type", "refresh_token"), ("client_id", &app.client_id), ("refresh_token", rt)]).await
}

#[tokio::test]
async fn a_restored_client_works_again_with_its_tokens() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let now = SystemClock.now();
    admin::client_delete(server.store(), &Actor::Operator, ClientRef::id(&app.client_id), now).await.expect("delete");
    assert_eq!(error_of(refresh(&server, &app, &t).await).await, (401, "invalid_client".to_string()));
    assert_eq!(channels(&server, &t.access_token).await.status(), 401, "the access token stops working");

    let restored = admin::client_restore(
        server.store(),
        &Actor::Operator,
        ClientRef::id(&app.client_id),
        Lifecycle::default(),
        now,
    )
    .await;
    assert_eq!(restored.expect("restore").restored, Some(true));
    assert_eq!(refresh(&server, &app, &t).await.status(), 200, "the refresh token works again");
    assert_eq!(channels(&server, &t.access_token).await.status(), 200, "and the access token");
    let again = server.tokens(&app, ALICE, &[READONLY]).await;
    assert!(!again.access_token.is_empty(), "and the flow");
}

#[tokio::test]
async fn a_client_deleted_more_than_30_days_ago_cannot_be_restored() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let deleted = UnixTime(1_700_000_000);
    admin::client_delete(server.store(), &Actor::Operator, ClientRef::id(&app.client_id), deleted)
        .await
        .expect("delete");
    let late = admin::client_restore(
        server.store(),
        &Actor::Operator,
        ClientRef::id(&app.client_id),
        Lifecycle::default(),
        deleted.plus(30 * DAY + 1),
    )
    .await
    .expect_err("too late");
    assert!(late.to_string().contains("more than 30 days ago"), "{late}");
    assert!(server.store().client(&app.client_id).await.expect("get").expect("kept").deleted_at.is_some());
    // A shorter configured window applies the same way.
    let short = Lifecycle { unused_days: 180, restore_days: 7 };
    let late = admin::client_restore(
        server.store(),
        &Actor::Operator,
        ClientRef::id(&app.client_id),
        short,
        deleted.plus(8 * DAY),
    )
    .await;
    assert!(late.expect_err("too late").to_string().contains("more than 7 days ago"));
    admin::client_restore(
        server.store(),
        &Actor::Operator,
        ClientRef::id(&app.client_id),
        Lifecycle::default(),
        deleted.plus(30 * DAY),
    )
    .await
    .expect("on the last day");
    let live = admin::client_restore(
        server.store(),
        &Actor::Operator,
        ClientRef::id(&app.client_id),
        Lifecycle::default(),
        deleted.plus(30 * DAY),
    );
    assert!(live.await.expect_err("not deleted").to_string().contains("not deleted"));
}

#[tokio::test]
async fn getting_tokens_records_the_clients_last_use() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    assert_eq!(server.store().client(&app.client_id).await.expect("get").expect("c").last_used_at, None);
    let before = SystemClock.now();
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let used = server.store().client(&app.client_id).await.expect("get").expect("c").last_used_at.expect("recorded");
    assert!(used >= before && used <= SystemClock.now(), "{used:?}");
    // Within the hour, further token requests do not write again.
    assert_eq!(refresh(&server, &app, &t).await.status(), 200);
    assert_eq!(server.store().client(&app.client_id).await.expect("get").expect("c").last_used_at, Some(used));
    let shown =
        admin::client_show(server.store(), &Actor::Operator, ClientRef::id(&app.client_id)).await.expect("show");
    assert_eq!(shown.last_used_at, Some(used.0));
}

#[tokio::test]
async fn unused_clients_are_deleted_and_deleted_clients_purged_with_their_grants() {
    let server = TestServer::start().await;
    let used = server.app().await;
    let unused = server.app().await;
    server.user(ALICE).await;
    let t = server.tokens(&used, ALICE, &[READONLY]).await;
    // The test apps were created in 2023 (support.rs): the unused one is past 180 days.
    let now = SystemClock.now();
    let counts = admin::client_purge(server.store(), Lifecycle::default(), now).await.expect("purge");
    assert!(counts.deleted_unused >= 1, "{counts:?}");
    let gone = server.store().client(&unused.client_id).await.expect("get").expect("kept");
    assert_eq!(gone.deleted_at, Some(now), "deleted restorably");
    assert_eq!(server.store().client(&used.client_id).await.expect("get").expect("c").deleted_at, None);
    // Within the restore window nothing is purged; after it the client goes, with its grants.
    let counts = admin::client_purge(server.store(), Lifecycle::default(), now.plus(30 * DAY)).await.expect("purge");
    assert_eq!(counts.purged, 0, "{counts:?}");
    admin::client_delete(server.store(), &Actor::Operator, ClientRef::id(&used.client_id), now)
        .await
        .expect("delete the used one too");
    let counts = admin::client_purge(server.store(), Lifecycle::default(), now.plus(31 * DAY)).await.expect("purge");
    assert_eq!(counts.purged, 2, "{counts:?}");
    assert!(server.store().client(&unused.client_id).await.expect("get").is_none());
    assert!(server.store().client(&used.client_id).await.expect("get").is_none());
    assert_eq!(channels(&server, &t.access_token).await.status(), 401);
    assert_eq!(error_of(refresh(&server, &used, &t).await).await.0, 401);
}

#[tokio::test]
async fn an_edit_re_runs_the_type_rules_and_the_bundle_id_is_frozen_once_app_check_is_used() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let now = SystemClock.now();
    let new = admin::NewClient {
        project_id: app.project_id.clone(),
        client_type: latchkey_core::client::ClientType::Mobile,
        name: "Phone".into(),
        redirect_uris: vec![],
        details: latchkey_core::client::ClientDetails {
            bundle_id: Some("com.example.phone".into()),
            team_id: Some("TEAM12345".into()),
            app_check: true,
            ..Default::default()
        },
    };
    let mobile = admin::client_create(server.store(), &Actor::Operator, new, now).await.expect("create");
    let id = mobile.client_id.as_str();
    let renamed = admin::client_update(
        server.store(),
        &Actor::Operator,
        ClientRef::id(id),
        ClientEdit { name: Some("Phone 2".into()), ..Default::default() },
    )
    .await
    .expect("rename");
    assert_eq!(renamed.name, "Phone 2");
    let edit = ClientEdit { bundle_id: Some("com.example.other".into()), ..Default::default() };
    let frozen =
        admin::client_update(server.store(), &Actor::Operator, ClientRef::id(id), edit).await.expect_err("frozen");
    assert!(frozen.to_string().contains("frozen once App Check is used"), "{frozen}");
    let edit = ClientEdit { store_id: Some("abc".into()), ..Default::default() };
    let bad =
        admin::client_update(server.store(), &Actor::Operator, ClientRef::id(id), edit).await.expect_err("digits");
    assert!(bad.to_string().contains("store_id"), "{bad}");
    assert_eq!(server.store().client(id).await.expect("get").expect("c").name, "Phone 2");

    let edit = ClientEdit { redirect_uris: Some(vec!["not a uri".into()]), ..Default::default() };
    assert!(admin::client_update(server.store(), &Actor::Operator, ClientRef::id(&app.client_id), edit).await.is_err());
    admin::client_delete(server.store(), &Actor::Operator, ClientRef::id(&app.client_id), now).await.expect("delete");
    let edit = ClientEdit { name: Some("x".into()), ..Default::default() };
    let deleted = admin::client_update(server.store(), &Actor::Operator, ClientRef::id(&app.client_id), edit)
        .await
        .expect_err("deleted");
    assert!(deleted.to_string().contains("restore it first"), "{deleted}");
}

/// Runs `latchkey admin --data-dir DIR <args>`; returns (exit code, stdout, stderr).
fn cli(dir: &Path, args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_latchkey"))
        .arg("admin")
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run admin");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(stdout.trim()).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), value, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_admin_cli_restores_edits_and_purges_clients_and_runs_app_check_and_listings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    assert_eq!(cli(d, &["migrate"]).0, 0, "only migrate (or serve) creates a store");
    let (code, project, _) = cli(d, &["project", "create", "--name", "P"]);
    assert_eq!(code, 0);
    let project = project["project_id"].as_str().expect("id").to_owned();
    let args = ["client", "create", "--project", &project, "--type", "mobile", "--name", "Phone"];
    let (code, client, err) =
        cli(d, &[&args[..], &["--bundle-id", "com.example.phone", "--team-id", "T1", "--app-check"]].concat());
    assert_eq!(code, 0, "{err}");
    let id = client["client_id"].as_str().expect("id").to_owned();

    let (code, updated, err) = cli(d, &["client", "update", &id, "--name", "Phone 2", "--store-id", "123"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!((updated["name"].as_str(), updated["store_id"].as_str()), (Some("Phone 2"), Some("123")));
    let (code, _, err) = cli(d, &["client", "update", &id, "--bundle-id", "com.example.other"]);
    assert_eq!(code, 5);
    assert!(err.contains("frozen once App Check is used"), "{err}");

    assert_eq!(cli(d, &["client", "delete", &id]).0, 0);
    let (code, restored, err) = cli(d, &["client", "restore", &id]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(restored["restored"], true);
    let (code, _, err) = cli(d, &["client", "restore", &id]);
    assert_eq!(code, 5);
    assert!(err.contains("not deleted"), "{err}");
    assert_eq!(cli(d, &["client", "restore", "lkapp-nope"]).0, 3);

    // App Check from the CLI (the default 15-minute delay: the change is pending).
    let (code, s, err) = cli(d, &["client", "app-check", "status", &id]);
    assert_eq!((code, s["state"].as_str()), (0, Some("enabled")), "{err}");
    let (code, _, err) = cli(d, &["client", "app-check", "enforce", &id]);
    assert_eq!(code, 5);
    assert!(err.contains("must be confirmed"), "{err}");
    let (code, s, err) = cli(d, &["client", "app-check", "enforce", &id, "--confirm"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!((s["state"].as_str(), s["pending"]["state"].as_str()), (Some("enabled"), Some("enforced")));
    let (code, m, err) = cli(d, &["client", "app-check", "metrics", &id]);
    assert_eq!((code, m["totals"]["verified"].as_u64()), (0, Some(0)), "{err}");
    let (code, s, err) = cli(d, &["client", "app-check", "debug-secret", &id]);
    assert_eq!(code, 0, "{err}");
    assert!(s["debug_secret"].as_str().is_some_and(|s| s.starts_with("lkd_")));

    // Listings and owner verification.
    let args = ["client", "create", "--project", &project, "--type", "browser-extension", "--name", "Ext"];
    let (code, ext, err) = cli(d, &[&args[..], &["--extension-item-id", "abcdefgh"]].concat());
    assert_eq!(code, 0, "{err}");
    let ext = ext["client_id"].as_str().expect("id").to_owned();
    let (code, _, err) = cli(d, &["client", "verify-ownership", &ext, "--developer", "a@example.com"]);
    assert_eq!(code, 5);
    assert!(err.contains("a listing with the same item ID"), "{err}");
    let listing = ["listing", "add", "--item-id", "abcdefgh", "--group", "Studio", "--member", "a@example.com"];
    assert_eq!(cli(d, &listing).0, 0);
    assert_eq!(cli(d, &["listing", "show", "abcdefgh"]).1["members"][0], "a@example.com");
    let (code, v, err) = cli(d, &["client", "verify-ownership", &ext, "--developer", "a@example.com"]);
    assert_eq!((code, v["ownership_verified"].as_bool()), (0, Some(true)), "{err}");
    assert_eq!(cli(d, &["listing", "remove", "abcdefgh"]).0, 0);
    assert_eq!(cli(d, &["listing", "show", "abcdefgh"]).0, 3);

    let (code, counts, err) = cli(d, &["client", "purge"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!((counts["deleted_unused"].as_u64(), counts["purged"].as_u64()), (Some(0), Some(0)), "{counts}");
}
