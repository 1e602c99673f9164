//! The console in headless Chromium, as a new developer meets it: sign in, create a project, enable the data
//! API, create a client of each of the four types (seeing a message next to an invalid field), delete and
//! restore a client, switch App Check on and enforce it, verify ownership of an extension. The pages are
//! photographed into `target/screenshots/console-*.png`, and into `docs/screenshots/` (the pictures the docs
//! show) when `LATCHKEY_UPDATE_SCREENSHOTS=1`, so that a test run does not rewrite committed files.

use crate::browser::{find, with_chrome};
use crate::support::*;
use fantoccini::Client;
use latchkey_admin::clock::SystemClock;
use latchkey_core::time::Clock;
use std::path::Path;

const EMAIL: &str = "dev@example.com";
const ITEM_ID: &str = "lkbrowsertestextensionitem";

/// Writes a screenshot of the window to `target/screenshots/console-<name>.png` (and `docs/screenshots/`).
pub(crate) async fn shot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.expect("screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), Into::into);
    let mut dirs = vec![target.join("screenshots")];
    if std::env::var("LATCHKEY_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        dirs.push(root.join("docs/screenshots"));
    }
    for dir in dirs {
        std::fs::create_dir_all(&dir).expect("the screenshot directory");
        std::fs::write(dir.join(format!("console-{name}.png")), &png).expect("write the screenshot");
    }
}

pub(crate) async fn click(browser: &Client, css: &str) {
    find(browser, css).await.click().await.unwrap_or_else(|e| panic!("click {css}: {e}"));
}

pub(crate) async fn type_into(browser: &Client, css: &str, text: &str) {
    let e = find(browser, css).await;
    e.clear().await.expect("clear");
    e.send_keys(text).await.unwrap_or_else(|e| panic!("type into {css}: {e}"));
}

/// The text of an element, read again when the page changed under it.
pub(crate) async fn text(browser: &Client, css: &str) -> String {
    let deadline = std::time::Instant::now() + crate::browser::WAIT;
    loop {
        match find(browser, css).await.text().await {
            Ok(t) => return t,
            Err(e) if std::time::Instant::now() > deadline => panic!("text of {css}: {e}"),
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    }
}

/// Waits until an element's text contains `expected` (the page after a click may take a moment to arrive).
pub(crate) async fn expect_text(browser: &Client, css: &str, expected: &str) {
    let deadline = std::time::Instant::now() + crate::browser::WAIT;
    loop {
        let t = text(browser, css).await;
        if t.contains(expected) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{css} never said {expected:?}: {t:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Waits until the page's path ends with `suffix`.
pub(crate) async fn wait_for_path(browser: &Client, suffix: &str) {
    let deadline = std::time::Instant::now() + crate::browser::WAIT;
    loop {
        let url = browser.current_url().await.expect("url");
        if url.path().ends_with(suffix) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "never reached …{suffix}: at {url}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// From the project page, creates a client of `kind` with `fields` (CSS id, value); returns its client_id.
async fn create_client(browser: &Client, kind: &str, fields: &[(&str, &str)]) -> String {
    click(browser, "main a[href$='/clients/new']").await;
    click(browser, &format!("input[name=type][value='{kind}']")).await;
    click(browser, "main button.primary").await;
    find(browser, "input[name=type][type=hidden]").await;
    for (id, value) in fields {
        if *value == "on" {
            click(browser, &format!("#{id}")).await;
        } else {
            type_into(browser, &format!("#{id}"), value).await;
        }
    }
    click(browser, "main form button.primary").await;
    let id = text(browser, "#client-id").await;
    assert!(text(browser, "#client-secret").await.starts_with("lks_"), "the secret is shown once");
    id
}

#[tokio::test]
async fn a_new_developer_sets_up_a_project_and_clients_of_every_type_in_chromium() {
    with_chrome(|browser| async move {
        let server = TestServer::start().await;
        server.user(EMAIL).await;
        latchkey_admin::listing_add(server.store(), ITEM_ID, Some(EMAIL), None, SystemClock.now())
            .await
            .expect("listing");
        browser.set_window_size(1200, 1500).await.expect("window size");

        // Sign in: the console sends the developer to the sign-in page and back.
        browser.goto(&server.url("/console")).await.expect("open the console");
        type_into(&browser, "input[name=email]", EMAIL).await;
        type_into(&browser, "input[name=password]", PASSWORD).await;
        click(&browser, "form button[type=submit]").await;
        wait_for_path(&browser, "/console").await;
        expect_text(&browser, "main", "You are not a member of any project yet").await;
        shot(&browser, "projects-empty").await;

        // A project, and an empty name first.
        click(&browser, "form[action='/console/projects'] button.primary").await;
        expect_text(&browser, "#name-error", "Enter a project name.").await;
        type_into(&browser, "#name", "Video Uploader").await;
        click(&browser, "form[action='/console/projects'] button.primary").await;
        expect_text(&browser, ".notice", "You are its owner").await;
        click(&browser, "form[action$='/api'] button").await;
        expect_text(&browser, ".notice", "data API is enabled").await;
        let project_url = browser.current_url().await.expect("url");
        let project_path = project_url.path().to_owned();

        // The type chooser.
        click(&browser, "main a[href$='/clients/new']").await;
        shot(&browser, "client-type").await;
        browser.goto(project_url.as_str()).await.expect("back");

        // Desktop.
        let desktop = create_client(&browser, "desktop", &[("name", "Uploader for Desktop")]).await;
        shot(&browser, "client-secret").await;
        click(&browser, "main a.button.primary").await;
        expect_text(&browser, "#details-heading", "Client details").await;
        assert_eq!(text(&browser, "#client-id").await, desktop);

        // Mobile: an invalid field first, with its message next to it.
        browser.goto(project_url.as_str()).await.expect("project");
        click(&browser, "main a[href$='/clients/new']").await;
        click(&browser, "input[name=type][value='mobile']").await;
        click(&browser, "main button.primary").await;
        type_into(&browser, "#name", "Uploader for Phones").await;
        type_into(&browser, "#bundle_id", "com.example.*").await;
        type_into(&browser, "#store_id", "12ab").await;
        click(&browser, "#app_check").await;
        click(&browser, "main form button.primary").await;
        expect_text(&browser, "#bundle_id-error", "must not contain *").await;
        expect_text(&browser, "#store_id-error", "digits only").await;
        expect_text(&browser, "#team_id-error", "required when App Check is enabled").await;
        let bundle = find(&browser, "#bundle_id").await;
        assert_eq!(
            bundle.attr("aria-describedby").await.expect("attr").as_deref(),
            Some("bundle_id-hint bundle_id-error")
        );
        assert_eq!(bundle.prop("value").await.expect("value").as_deref(), Some("com.example.*"), "the value stays");
        let focused = browser.active_element().await.expect("focus");
        assert_eq!(
            focused.attr("id").await.expect("id").as_deref(),
            Some("bundle_id"),
            "the first invalid field has the focus"
        );
        shot(&browser, "client-invalid").await;
        type_into(&browser, "#bundle_id", "com.example.uploader").await;
        type_into(&browser, "#store_id", "1234567890").await;
        type_into(&browser, "#team_id", "ABCDE12345").await;
        click(&browser, "#app_check").await; // off: App Check is switched on below, from the client's page
        type_into(&browser, "#redirect_uris", "com.example.uploader:/oauth2redirect").await;
        click(&browser, "main form button.primary").await;
        let mobile = text(&browser, "#client-id").await;

        // Universal desktop and browser extension.
        browser.goto(project_url.as_str()).await.expect("project");
        let uwp = create_client(
            &browser,
            "universal-desktop",
            &[
                ("name", "Uploader for Windows"),
                ("uwp_store_id", "9NBLGGH4NNS1"),
                ("package_sid", "s-1-15-2-1234567890"),
                ("redirect_uris", "ms-app://s-1-15-2-1234567890"),
            ],
        )
        .await;
        browser.goto(project_url.as_str()).await.expect("project");
        let extension = create_client(
            &browser,
            "browser-extension",
            &[("name", "Uploader for Browsers"), ("extension_item_id", ITEM_ID)],
        )
        .await;
        browser.goto(project_url.as_str()).await.expect("project");
        let list = text(&browser, "main").await;
        for id in [&desktop, &mobile, &uwp, &extension] {
            assert!(list.contains(id.as_str()), "{id} is listed");
        }
        for label in ["Desktop app", "Mobile platform app", "Universal desktop platform app", "Browser extension"] {
            assert!(list.contains(label), "{label} is listed");
        }
        shot(&browser, "project").await;

        // Delete (confirmed) and restore.
        browser.goto(&server.url(&format!("{project_path}/clients/{uwp}"))).await.expect("client");
        click(&browser, "a.button.danger").await;
        expect_text(&browser, "h1", "Delete Uploader for Windows?").await;
        click(&browser, "main form button.primary").await;
        expect_text(&browser, ".notice", "Client deleted").await;
        expect_text(&browser, "#deleted-heading", "Deleted clients").await;
        // At 1200 px the deleted-clients table fits its panel: nothing sticks out, nothing needs scrolling.
        let fit = browser
            .execute(
                "const w = document.getElementById('deleted-clients'); const p = w.closest('.panel'); \
                 const t = w.querySelector('table'); \
                 return [w.scrollWidth - w.clientWidth, t.getBoundingClientRect().right - p.getBoundingClientRect().right];",
                vec![],
            )
            .await
            .expect("measure the deleted-clients table");
        let fit: Vec<f64> = serde_json::from_value(fit).expect("two numbers");
        assert!(fit[0] <= 0.0, "the deleted-clients table needs no scrolling at 1200 px: {fit:?}");
        assert!(fit[1] <= 0.0, "the deleted-clients table stays inside its panel: {fit:?}");
        shot(&browser, "deleted").await;
        click(&browser, &format!("form[action$='/clients/{uwp}/restore'] button")).await;
        expect_text(&browser, ".notice", "Client restored").await;

        // App Check: enable, then enforce after the confirmation.
        browser.goto(&server.url(&format!("{project_path}/clients/{mobile}"))).await.expect("client");
        expect_text(&browser, "#app-check-state", "Disabled").await;
        click(&browser, "form[action$='/app-check'] button.primary").await;
        expect_text(&browser, "#app-check-pending", "Enabled, not enforced").await;
        click(&browser, "a[href$='/app-check/enforce']").await;
        expect_text(&browser, "main", "all unverified requests are rejected").await;
        shot(&browser, "app-check-confirm").await;
        click(&browser, "main form button.primary").await;
        expect_text(&browser, "#app-check-pending", "Enforced").await;
        let c = server.store().client(&mobile).await.expect("get").expect("client");
        assert_eq!(c.app_check.target(), latchkey_core::app_check::AppCheckState::Enforced);
        let hour = latchkey_core::time::UnixTime(SystemClock.now().0 / 3600 * 3600);
        for (cat, n) in [
            (latchkey_core::app_check::Category::Verified, 12),
            (latchkey_core::app_check::Category::UnverifiedOutdatedClient, 3),
            (latchkey_core::app_check::Category::UnverifiedUnknownOrigin, 1),
            (latchkey_core::app_check::Category::UnverifiedInvalid, 2),
        ] {
            for _ in 0..n {
                server.store().count_app_check(&mobile, hour, cat).await.expect("count");
            }
            server.store().count_app_check(&mobile, hour.plus(-3600), cat).await.expect("count");
        }
        let panel = server.url(&format!("{project_path}/clients/{mobile}#app-check"));
        browser.goto(&panel).await.expect("the App Check panel");
        find(&browser, "table.metrics rect.s1").await;
        shot(&browser, "app-check").await;

        // Verify ownership of the extension.
        browser.goto(&server.url(&format!("{project_path}/clients/{extension}"))).await.expect("client");
        click(&browser, "form[action$='/verify-ownership'] button").await;
        expect_text(&browser, "#notice", "Ownership verified").await;
        shot(&browser, "ownership").await;
    })
    .await;
}
