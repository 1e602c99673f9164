//! The client pages of the console: the type chooser and each type's fields, invalid fields shown again, the
//! secret shown once, edit, delete and restore, App Check and owner verification.

use super::*;

#[tokio::test]
async fn the_type_chooser_comes_first_and_each_type_has_exactly_its_fields() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let project = dev.project("P").await;
    let chooser = dev.get(&format!("/console/projects/{project}/clients/new")).await;
    assert_eq!(chooser.status, 200);
    for t in ["desktop", "mobile", "universal-desktop", "browser-extension"] {
        assert!(chooser.body.contains(&format!("name=\"type\" value=\"{t}\"")), "{t} on the chooser");
    }
    let all = ["bundle_id", "store_id", "team_id", "app_check", "uwp_store_id", "package_sid", "extension_item_id"];
    for (t, own) in [
        ("desktop", vec![]),
        ("mobile", vec!["bundle_id", "store_id", "team_id", "app_check"]),
        ("universal-desktop", vec!["uwp_store_id", "package_sid"]),
        ("browser-extension", vec!["extension_item_id"]),
    ] {
        let form = dev.get(&format!("/console/projects/{project}/clients/new?type={t}")).await;
        assert_eq!(form.status, 200);
        for f in ["name", "redirect_uris"] {
            assert!(form.body.contains(&format!("name=\"{f}\"")), "{t}: {f}");
            assert!(form.body.contains(&format!("<label for=\"{f}\"")), "{t}: {f} has a label");
        }
        for f in all {
            assert_eq!(form.body.contains(&format!("name=\"{f}\"")), own.contains(&f), "{t}: {f}");
        }
    }
    let tv = dev.get(&format!("/console/projects/{project}/clients/new?type=tv")).await;
    assert_eq!(tv.status, 200);
    assert!(tv.body.contains("TVs and Limited Input devices") && tv.body.contains("name=\"name\""));
    for f in all.iter().chain(&["redirect_uris"]) {
        assert!(!tv.body.contains(&format!("name=\"{f}\"")), "tv: no {f}: the device flow has no redirect");
    }
    let bad = dev.get(&format!("/console/projects/{project}/clients/new?type=smart-fridge")).await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("Choose the type of your application."));
}

#[tokio::test]
async fn every_invalid_field_is_shown_again_with_its_value_and_a_message_next_to_it() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let project = dev.project("P").await;
    let post = |form: Vec<(&'static str, String)>| {
        let dev = &dev;
        let project = project.clone();
        async move {
            let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            dev.post(&format!("/console/projects/{project}/clients"), &form).await
        }
    };
    let s = |v: &str| v.to_owned();

    // Mobile: name, bundle ID required; store ID digits; with App Check a team ID and no * in the bundle ID.
    let r = post(vec![("type", s("mobile")), ("name", s("")), ("store_id", s("12ab")), ("app_check", s("on"))]).await;
    assert_eq!(r.status, 400);
    assert_eq!(field_error(&r, "name").as_deref(), Some("Enter a client name."));
    assert!(field_error(&r, "bundle_id").expect("bundle").contains("needs its app's bundle ID"));
    assert!(field_error(&r, "store_id").expect("store").contains("digits only"));
    assert!(field_error(&r, "team_id").expect("team").contains("required when App Check is enabled"));
    assert!(r.body.contains("value=\"12ab\""), "the value typed stays");
    assert!(r.body.contains("Fix 4 fields to continue"), "a summary links to the fields");
    let r = post(vec![
        ("type", s("mobile")),
        ("name", s("M")),
        ("bundle_id", s("com.example.*")),
        ("app_check", s("on")),
        ("team_id", s("T1")),
    ])
    .await;
    assert!(field_error(&r, "bundle_id").expect("bundle").contains("must not contain *"));
    assert!(r.body.contains("value=\"com.example.*\""));
    let r = post(vec![
        ("type", s("mobile")),
        ("name", s("M")),
        ("bundle_id", s("com.example.m")),
        ("redirect_uris", s("http://127.0.0.1:9/cb")),
    ])
    .await;
    assert!(field_error(&r, "redirect_uris").expect("uri").contains("only for desktop app clients"));

    // Universal desktop: the store ID is exactly 12 characters; the package SID lower case; the scheme ≤ 39.
    let long = format!("{}://s-1-15-2-1", "a".repeat(40));
    let r = post(vec![
        ("type", s("universal-desktop")),
        ("name", s("U")),
        ("uwp_store_id", s("9NBLGGH4NNS")),
        ("package_sid", s("S-1-15-2")),
        ("redirect_uris", long.clone()),
    ])
    .await;
    assert_eq!(r.status, 400);
    assert!(field_error(&r, "uwp_store_id").expect("store").contains("exactly 12 characters"));
    assert!(field_error(&r, "package_sid").expect("sid").contains("lower case"));
    assert!(field_error(&r, "redirect_uris").expect("uri").contains("at most 39 characters"));
    assert!(r.body.contains(&long), "the URIs typed stay");

    // Browser extension: the item ID; no custom schemes.
    let r =
        post(vec![("type", s("browser-extension")), ("name", s("E")), ("redirect_uris", s("com.example:/cb"))]).await;
    assert!(field_error(&r, "extension_item_id").expect("item").contains("item ID"));
    assert!(field_error(&r, "redirect_uris").expect("uri").contains("identity API"));

    // Desktop: no out-of-band flow.
    let r =
        post(vec![("type", s("desktop")), ("name", s("D")), ("redirect_uris", s("urn:ietf:wg:oauth:2.0:oob"))]).await;
    assert!(field_error(&r, "redirect_uris").expect("uri").contains("out-of-band"));
    assert!(server.store().clients(Some(&project)).await.expect("list").is_empty(), "nothing was created");
}

#[tokio::test]
async fn each_type_is_created_and_its_secret_is_shown_once_and_stored_only_as_a_hash() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let project = dev.project("P").await;
    let forms: [&[(&str, &str)]; 4] = [
        &[("type", "desktop"), ("name", "Desk"), ("redirect_uris", "http://localhost:8080/cb\n\ncom.example.desk:/cb")],
        &[
            ("type", "mobile"),
            ("name", "Phone"),
            ("bundle_id", "com.example.phone"),
            ("store_id", "123456"),
            ("team_id", "TEAM1"),
            ("app_check", "on"),
            ("redirect_uris", "com.example.phone:/oauth2redirect"),
        ],
        &[
            ("type", "universal-desktop"),
            ("name", "Uwp"),
            ("uwp_store_id", "9NBLGGH4NNS1"),
            ("package_sid", "s-1-15-2-1"),
            ("redirect_uris", "ms-app://s-1-15-2-1"),
        ],
        &[("type", "browser-extension"), ("name", "Ext"), ("extension_item_id", "abcdefghijklmnop")],
    ];
    for form in forms {
        let (id, secret_shown) = dev.client(&project, form).await;
        let c = server.store().client(&id).await.expect("get").expect("created");
        let hashes: Vec<_> = c.secrets.iter().map(|s| s.hash.clone()).collect();
        assert_eq!(hashes, vec![secret::hash(&secret_shown)], "only the hash is stored");
        let page = dev.get(&format!("/console/projects/{project}/clients/{id}")).await;
        assert_eq!(page.status, 200);
        assert!(page.body.contains(&id));
        assert!(!page.body.contains(&secret_shown), "the secret is never shown again");
        let list = dev.get(&format!("/console/projects/{project}")).await;
        assert!(!list.body.contains(&secret_shown));
        assert!(list.body.contains(&id) && list.body.contains(c.client_type.label()), "listed with its type");
    }
    let phone = server
        .store()
        .clients(Some(&project))
        .await
        .expect("list")
        .into_iter()
        .find(|c| c.name == "Phone")
        .expect("phone");
    assert_eq!(phone.redirect_uris, vec!["com.example.phone:/oauth2redirect".to_string()]);
    assert_eq!(phone.details.store_id.as_deref(), Some("123456"));
    assert!(phone.details.app_check);
    let desk = server
        .store()
        .clients(Some(&project))
        .await
        .expect("list")
        .into_iter()
        .find(|c| c.name == "Desk")
        .expect("desk");
    assert_eq!(desk.redirect_uris.len(), 2, "blank lines are left out");
}

#[tokio::test]
async fn an_edit_keeps_the_rules_and_a_deleted_client_is_restored_from_the_project_page() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let project = dev.project("P").await;
    let (id, _) = dev
        .client(
            &project,
            &[
                ("type", "mobile"),
                ("name", "Phone"),
                ("bundle_id", "com.example.p"),
                ("team_id", "T"),
                ("app_check", "on"),
            ],
        )
        .await;
    let edit = dev.get(&format!("/console/projects/{project}/clients/{id}/edit")).await;
    assert_eq!(edit.status, 200);
    assert!(
        edit.body.contains("value=\"com.example.p\" required readonly"),
        "the bundle ID is frozen: App Check is used"
    );
    let path = format!("/console/projects/{project}/clients/{id}/edit");
    let r = dev.post(&path, &[("name", ""), ("bundle_id", "com.example.p"), ("store_id", "x"), ("team_id", "T")]).await;
    assert_eq!(r.status, 400);
    assert!(field_error(&r, "name").is_some() && field_error(&r, "store_id").is_some());
    let r = dev
        .post(&path, &[("name", "Phone 2"), ("bundle_id", "com.example.other"), ("store_id", "42"), ("team_id", "T")])
        .await;
    assert_eq!(r.status, 303, "{}", r.body);
    let c = server.store().client(&id).await.expect("get").expect("c");
    assert_eq!((c.name.as_str(), c.details.store_id.as_deref()), ("Phone 2", Some("42")));
    assert_eq!(c.details.bundle_id.as_deref(), Some("com.example.p"), "a frozen bundle ID is not changed");

    // A field of another type, posted though the form does not show it, is refused with the message the CLI and
    // the JSON API give, and changes nothing.
    let r = dev.post(&path, &[("name", "Phone 3"), ("team_id", "T"), ("uwp_store_id", "9NBLGGH4NNS1")]).await;
    assert_eq!(r.status, 400, "{}", r.body);
    let shown = field_error(&r, "name").expect("the error is shown at the top of the form");
    assert_eq!(shown, "Mobile platform app clients have no uwp_store_id.");
    assert_eq!(server.store().client(&id).await.expect("get").expect("c").name, "Phone 2");
    let r = dev
        .post(
            &format!("/console/projects/{project}/clients"),
            &[("type", "desktop"), ("name", "D"), ("bundle_id", "b")],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(field_error(&r, "name").as_deref(), Some("Desktop app clients have no bundle_id."));

    let confirm = dev.get(&format!("/console/projects/{project}/clients/{id}/delete")).await;
    assert_eq!(confirm.status, 200);
    assert!(confirm.body.contains("Delete Phone 2?") && confirm.body.contains("within 30 days"));
    let r = dev.post(&format!("/console/projects/{project}/clients/{id}/delete"), &[]).await;
    assert_eq!(r.headers["location"].to_str().expect("l"), format!("/console/projects/{project}?done=client-deleted"));
    let page = dev.get(&format!("/console/projects/{project}")).await;
    assert!(page.body.contains("Deleted clients") && page.body.contains("Restorable until"));
    assert!(page.body.contains(&format!("/clients/{id}/restore")));
    let r = dev.post(&format!("/console/projects/{project}/clients/{id}/restore"), &[]).await;
    assert_eq!(r.status, 303);
    assert!(server.store().client(&id).await.expect("get").expect("c").deleted_at.is_none());
    let again = dev.post(&format!("/console/projects/{project}/clients/{id}/restore"), &[]).await;
    assert_eq!(again.status, 400);
    assert!(again.body.contains("not deleted"));
}

#[tokio::test]
async fn app_check_follows_the_state_table_with_confirmations_and_the_propagation_delay() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let project = dev.project("P").await;
    let (id, _) = dev.client(&project, &[("type", "mobile"), ("name", "Phone"), ("bundle_id", "com.example.p")]).await;
    let client = format!("/console/projects/{project}/clients/{id}");
    let page = dev.get(&client).await;
    assert!(page.body.contains("id=\"app-check-state\" class=\"badge disabled\">Disabled<"));
    assert!(page.body.contains("a team ID is required to enable App Check"), "why it cannot be enabled yet");
    let r = dev.post(&format!("{client}/app-check"), &[("action", "enable")]).await;
    assert_eq!(r.status, 400);
    assert!(r.body.contains("A team ID is required to enable App Check."));

    admin::client_update(
        server.store(),
        &Actor::Operator,
        ClientRef::id(&id),
        admin::ClientEdit { team_id: Some("TEAM1".into()), ..Default::default() },
    )
    .await
    .expect("team id");
    let r = dev.post(&format!("{client}/app-check"), &[("action", "enable")]).await;
    assert_eq!(r.status, 303);
    let page = dev.get(&client).await;
    assert!(page.body.contains("Changing to “Enabled, not enforced”"), "pending for 15 minutes");
    assert!(page.body.contains("up to 15 minutes"));
    assert!(page.body.contains("/app-check/enforce\">Enforce…"));

    let confirm = dev.get(&format!("{client}/app-check/enforce")).await;
    assert!(confirm.body.contains("all unverified requests are rejected"));
    assert_eq!(confirm.input("confirm").as_deref(), Some("yes"));
    let unconfirmed = dev.post(&format!("{client}/app-check"), &[("action", "enforce")]).await;
    assert_eq!(unconfirmed.status, 400);
    assert!(unconfirmed.body.contains("must be confirmed"));
    let r = dev.post(&format!("{client}/app-check"), &[("action", "enforce"), ("confirm", "yes")]).await;
    assert_eq!(r.status, 303);
    let c = server.store().client(&id).await.expect("get").expect("c");
    assert_eq!(c.app_check.target(), latchkey_core::app_check::AppCheckState::Enforced);

    // Metrics per category and hour.
    let hour = latchkey_core::time::UnixTime(SystemClock.now().0 / 3600 * 3600);
    for cat in latchkey_core::app_check::Category::ALL {
        server.store().count_app_check(&id, hour, cat).await.expect("count");
    }
    server.store().count_app_check(&id, hour, latchkey_core::app_check::Category::Verified).await.expect("count");
    let page = dev.get(&client).await;
    assert!(page.body.contains("Unverified: likely outdated client"));
    assert!(page.body.contains("<td class=\"num\">2</td>"), "two verified requests");
    assert!(page.body.contains("<rect class=\"s1\""), "a bar per category");

    let secret = dev.post(&format!("{client}/app-check/debug-secret"), &[]).await;
    assert_eq!(secret.status, 200);
    let shown = code_text(&secret, "debug-secret").expect("shown once");
    assert!(shown.starts_with("lkd_"));
    assert!(!dev.get(&client).await.body.contains(&shown));
    let r = dev.post(&format!("{client}/app-check"), &[("action", "disable")]).await;
    assert_eq!(r.status, 303);
}

#[tokio::test]
async fn verify_ownership_shows_the_success_notice_or_the_error_prompt() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let project = dev.project("P").await;
    let item = "itemforownershiptest";
    let (id, _) =
        dev.client(&project, &[("type", "browser-extension"), ("name", "Ext"), ("extension_item_id", item)]).await;
    let client = format!("/console/projects/{project}/clients/{id}");
    assert!(dev.get(&client).await.body.contains("Not verified"));
    let r = dev.post(&format!("{client}/verify-ownership"), &[]).await;
    assert_eq!(r.status, 400);
    assert!(r.body.contains("role=\"alert\" id=\"action-error\">Ownership not verified"), "{}", r.body);

    let now = SystemClock.now();
    let members = vec!["someone@example.com".to_string(), ALICE.to_string()];
    admin::listing_add(server.store(), item, None, Some(("Example Group", &members)), now).await.expect("listing");
    let r = dev.post(&format!("{client}/verify-ownership"), &[]).await;
    assert_eq!(r.status, 303);
    let page = dev.get(r.headers["location"].to_str().expect("location")).await;
    assert!(page.body.contains("Ownership verified: you are the publisher"));
    assert!(page.body.contains("badge on\">Verified"));
}
