//! People in a real browser (headless Chromium): two accounts signed in in one browser, the account chooser,
//! `login_hint` by e-mail address and by `sub` selecting the right one, signing out of one, and the account page's
//! "Remove access" ending one app's access while another app's still works.

use crate::browser::{find, scope_box, with_chrome, Loopback};
use crate::support::*;
use fantoccini::{Client, Locator};

const ALICE: &str = "alice@example.com";
const BOB: &str = "bob@example.com";

/// Signs in on the sign-in page the browser shows.
pub(crate) async fn sign_in(browser: &Client, email: &str) {
    find(browser, "input[name=email]").await.send_keys(email).await.expect("type the email");
    find(browser, "input[name=password]").await.send_keys(PASSWORD).await.expect("type the password");
    find(browser, "form button[type=submit]").await.click().await.expect("submit the sign-in form");
}

/// On the consent page: whose it is.
async fn consent_account(browser: &Client) -> String {
    find(browser, "#account-email").await.text().await.expect("text")
}

/// Ticks readonly and allows; returns the tokens the app gets for the code.
async fn allow(
    browser: &Client,
    server: &TestServer,
    app: &App,
    loopback: &mut Loopback,
    pkce: &Pkce,
) -> latchkey_proto::TokenResponse {
    find(browser, &scope_box(READONLY)).await.click().await.expect("tick readonly");
    find(browser, "button[name=decision][value=allow]").await.click().await.expect("click Allow");
    let callback = loopback.callback().await;
    let code = callback.get("code").expect("a code");
    server.exchange(app, code, pkce, &loopback.redirect_uri).await
}

async fn refresh_status(server: &TestServer, app: &App, t: &latchkey_proto::TokenResponse) -> u16 {
    server.refresh(app, t.refresh_token.as_deref().expect("refresh token")).await.status().as_u16()
}

#[tokio::test]
async fn two_accounts_in_chromium_the_chooser_the_hints_sign_out_of_one_and_remove_access() {
    with_chrome(|browser| async move {
        let server = TestServer::start().await;
        let (photos, notes) = (server.app().await, server.app().await);
        server.user(ALICE).await;
        let bob_id = server.user(BOB).await;
        let mut loopback = Loopback::bind().await;
        let redirect_uri = loopback.redirect_uri.clone();
        let url = |app: &App, pkce: &Pkce, extra: &str| {
            format!("{}{extra}", authorize_url(&server, app, &[READONLY], pkce, &redirect_uri, "s"))
        };

        let pkce = Pkce::new();
        browser.goto(&url(&photos, &pkce, "")).await.expect("open");
        sign_in(&browser, ALICE).await;
        assert_eq!(consent_account(&browser).await, ALICE);
        let alice_photos = allow(&browser, &server, &photos, &mut loopback, &pkce).await;

        let pkce = Pkce::new();
        browser.goto(&url(&notes, &pkce, "&prompt=select_account")).await.expect("open");
        find(&browser, "#use-another").await.click().await.expect("use another account");
        sign_in(&browser, BOB).await;
        assert_eq!(consent_account(&browser).await, BOB, "the account just added goes on");
        allow(&browser, &server, &notes, &mut loopback, &pkce).await;

        let pkce = Pkce::new();
        browser.goto(&url(&notes, &pkce, "")).await.expect("open");
        let choices = browser.find_all(Locator::Css("a.account-choice")).await.expect("choices");
        assert_eq!(choices.len(), 3, "two accounts and 'Use another account'");
        assert!(choices[0].text().await.expect("text").contains(BOB), "the most recently used first");
        choices[1].click().await.expect("choose alice");
        assert_eq!(consent_account(&browser).await, ALICE, "the chooser leads to the account chosen");
        let alice_notes = allow(&browser, &server, &notes, &mut loopback, &pkce).await;

        browser.goto(&url(&notes, &Pkce::new(), &format!("&login_hint={bob_id}"))).await.expect("open");
        assert_eq!(consent_account(&browser).await, BOB, "a sub hint selects bob");
        browser.goto(&url(&notes, &Pkce::new(), "&login_hint=ALICE%40example.com")).await.expect("open");
        assert_eq!(consent_account(&browser).await, ALICE, "an e-mail hint selects alice, whatever its case");

        browser.goto(&server.url(&format!("/account?authuser={bob_id}"))).await.expect("bob's account page");
        assert_eq!(find(&browser, "#account-email").await.text().await.expect("text"), BOB);
        find(&browser, "#sign-out").await.click().await.expect("sign out of bob");
        browser.wait().for_url(&url::Url::parse(&server.url("/")).expect("url")).await.expect("home after signing out");
        browser.goto(&url(&notes, &Pkce::new(), "")).await.expect("open");
        assert_eq!(consent_account(&browser).await, ALICE, "one account left: straight to its consent page");

        browser.goto(&server.url("/account")).await.expect("the account page");
        let rows = browser.find_all(Locator::Css("tr.app")).await.expect("rows");
        assert_eq!(rows.len(), 2, "alice's two apps");
        let row = find(&browser, &format!("tr.app[data-client-id=\"{}\"]", photos.client_id)).await;
        assert!(row.text().await.expect("text").contains("View your"), "permissions in words");
        row.find(Locator::Css("button")).await.expect("button").click().await.expect("Remove access");
        let notice = find(&browser, "#account-notice").await.text().await.expect("text");
        assert!(notice.contains("access was removed"), "{notice}");
        assert_eq!(browser.find_all(Locator::Css("tr.app")).await.expect("rows").len(), 1);

        assert_eq!(refresh_status(&server, &photos, &alice_photos).await, 400, "the removed app's refresh fails");
        assert_eq!(refresh_status(&server, &notes, &alice_notes).await, 200, "the other app's grant still works");
    })
    .await;
}
