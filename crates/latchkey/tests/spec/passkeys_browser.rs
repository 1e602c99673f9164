//! Passkeys in a real browser: headless Chromium with a virtual authenticator (WebDriver's WebAuthn extension, the
//! DevTools protocol's `WebAuthn` domain behind it), holding discoverable credentials and verifying its user. A
//! person adds a passkey on the account page, signs out, and signs in to an installed app with "Sign in with a
//! passkey" alone: no e-mail address, no password.

use crate::account_browser::sign_in;
use crate::browser::{find, scope_box, with_chrome, Loopback};
use crate::support::*;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::Client;
use latchkey_core::account::EventKind;
use serde_json::json;
use std::time::Duration;

const ALICE: &str = "alice@example.com";

/// `POST /session/{id}/webauthn/authenticator`: a CTAP2 authenticator built into the device, with resident keys
/// and user verification, which consents and verifies at once.
#[derive(Debug)]
struct AddVirtualAuthenticator;

impl WebDriverCompatibleCommand for AddVirtualAuthenticator {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/webauthn/authenticator", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        let options = json!({
            "protocol": "ctap2",
            "transport": "internal",
            "hasResidentKey": true,
            "hasUserVerification": true,
            "isUserConsenting": true,
            "isUserVerified": true,
        });
        (http::Method::POST, Some(options.to_string()))
    }
}

/// Waits until the page's path is `path`.
async fn wait_for_path(browser: &Client, path: &str) {
    let started = std::time::Instant::now();
    loop {
        let url = browser.current_url().await.expect("url");
        if url.path() == path {
            return;
        }
        assert!(started.elapsed() < crate::browser::WAIT, "still at {url}, waiting for {path}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_passkey_added_on_the_account_page_signs_in_to_an_app_without_email_or_password() {
    with_chrome(|browser| async move {
        let server = crate::passkeys::localhost_server().await;
        let app = server.app().await;
        let alice = server.user(ALICE).await;
        browser.issue_cmd(AddVirtualAuthenticator).await.expect("a virtual authenticator");

        browser.goto(&server.url("/account")).await.expect("open the account page");
        sign_in(&browser, ALICE).await;
        find(&browser, "#passkey-name").await.send_keys("Test laptop").await.expect("name it");
        find(&browser, "#add-passkey-button").await.click().await.expect("Add a passkey");
        let notice = find(&browser, "#account-notice").await.text().await.expect("notice");
        assert!(notice.contains("The passkey was added"), "{notice}");
        let name = find(&browser, "li.passkey .passkey-name").await.text().await.expect("listed");
        assert_eq!(name, "Test laptop");
        let kept = server.store().passkeys_of(&alice).await.expect("passkeys");
        assert_eq!(kept.len(), 1);
        let credential: serde_json::Value = serde_json::from_str(&kept[0].credential).expect("the credential's JSON");
        assert_eq!(credential["cred"]["cred_id"], kept[0].credential_id.as_str(), "kept under its own credential id");

        find(&browser, "#sign-out").await.click().await.expect("sign out");
        wait_for_path(&browser, "/").await;

        let mut loopback = Loopback::bind().await;
        let pkce = Pkce::new();
        browser
            .goto(&authorize_url(&server, &app, &[READONLY], &pkce, &loopback.redirect_uri, "s"))
            .await
            .expect("open the authorization");
        find(&browser, "#passkey-signin").await.click().await.expect("Sign in with a passkey");
        let account = find(&browser, "#account-email").await.text().await.expect("the consent page");
        assert_eq!(account, ALICE, "the passkey named its account");
        find(&browser, &scope_box(READONLY)).await.click().await.expect("tick readonly");
        find(&browser, "button[name=decision][value=allow]").await.click().await.expect("Allow");
        let callback = loopback.callback().await;
        let tokens = server.exchange(&app, callback.get("code").expect("a code"), &pkce, &loopback.redirect_uri).await;
        assert!(!tokens.access_token.is_empty());

        let used = server.store().passkeys_of(&alice).await.expect("passkeys");
        assert!(used[0].last_used_at.is_some(), "its use is noted");
        // The operator's view (`latchkey admin user show`): the methods, never a secret.
        let shown = latchkey_admin::user_show(server.store(), ALICE).await.expect("show");
        let methods = serde_json::to_value(&shown).expect("json")["methods"].clone();
        assert_eq!(methods[0]["kind"], "password");
        assert_eq!((methods[1]["kind"].as_str(), methods[1]["name"].as_str()), (Some("passkey"), Some("Test laptop")));
        assert!(methods[1]["last_used_at"].is_i64());
        assert!(!methods.to_string().contains(&used[0].credential), "no credential in the listing");
        let kinds: Vec<EventKind> =
            server.store().account_events(&alice).await.expect("events").iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EventKind::PasskeyAdded], "adding it was an event; using it is not");

        browser.goto(&server.url("/account")).await.expect("open the account page");
        find(&browser, "li.passkey form button").await.click().await.expect("Remove");
        let notice = find(&browser, "#account-notice").await.text().await.expect("notice");
        assert!(notice.contains("The passkey was removed"), "{notice}");
        assert!(browser.find(fantoccini::Locator::Css("li.passkey")).await.is_err(), "no passkey listed");
        assert!(server.store().passkeys_of(&alice).await.expect("passkeys").is_empty());
        let kinds: Vec<EventKind> =
            server.store().account_events(&alice).await.expect("events").iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EventKind::PasskeyAdded, EventKind::PasskeyRemoved]);
    })
    .await;
}
