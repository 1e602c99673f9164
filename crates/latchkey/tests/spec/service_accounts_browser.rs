//! A project's service accounts on the console's pages, in headless Chromium: a developer makes a service
//! account (a bad name first, its message next to the field), creates a key and sees its key file once, uploads a
//! P-256 public key, disables and deletes a key, then disables and deletes the account. The key file shown works at
//! the token endpoint. Photographed into `target/screenshots/console-service-account*.png`.

use crate::browser::{find, with_chrome};
use crate::console_browser::{click, expect_text, shot, text, type_into, wait_for_path};
use crate::rfc7523_jwt_bearer::{claims_for, sign};
use crate::support::*;
use latchkey_admin::clock::OsRandom;
use latchkey_core::jws::SigningKey;
use latchkey_core::service_account::JWT_BEARER;
use latchkey_proto::key_file::KeyFile;

const EMAIL: &str = "dev@example.com";

#[tokio::test]
async fn a_developer_manages_a_service_account_and_its_keys_in_chromium() {
    with_chrome(|browser| async move {
        let server = TestServer::start().await;
        server.user(EMAIL).await;
        browser.set_window_size(1200, 1400).await.expect("window size");
        browser.goto(&server.url("/console")).await.expect("open the console");
        type_into(&browser, "input[name=email]", EMAIL).await;
        type_into(&browser, "input[name=password]", PASSWORD).await;
        click(&browser, "form button[type=submit]").await;
        wait_for_path(&browser, "/console").await;
        type_into(&browser, "#name", "Label tools").await;
        click(&browser, "form[action='/console/projects'] button.primary").await;
        expect_text(&browser, ".notice", "You are its owner").await;

        click(&browser, "main a[href$='/service-accounts']").await;
        expect_text(&browser, "main", "This project has no service accounts").await;
        type_into(&browser, "#name", "Bad_Name").await;
        click(&browser, "main form button.primary").await;
        expect_text(&browser, "#name-error", "6 to 30 characters").await;
        type_into(&browser, "#name", "uploader").await;
        type_into(&browser, "#display_name", "Uploads").await;
        click(&browser, "main form button.primary").await;
        expect_text(&browser, ".notice", "Service account created").await;
        let email = text(&browser, ".sub code").await;
        assert!(email.starts_with("uploader@") && email.ends_with(".iam.latchkey.dev"), "{email}");
        let account_url = browser.current_url().await.expect("url");

        // A key: its key file shown once, and it works.
        click(&browser, "form[action$='/keys'] button.primary").await;
        let file: KeyFile = serde_json::from_str(&text(&browser, "#key-file").await).expect("the key file");
        shot(&browser, "service-account-key").await;
        assert_eq!(file.client_email, email);
        let r = server
            .token(&[("grant_type", JWT_BEARER), ("assertion", &sign(&file, &claims_for(&email, &file.token_uri)))])
            .await;
        assert_eq!(r.status(), 200, "the key file shown gets a token");

        // A P-256 public key uploaded; a bad one refused on the page.
        browser.goto(account_url.as_str()).await.expect("back");
        type_into(&browser, "#public_key", "not a key").await;
        click(&browser, "form[action$='/keys/upload'] button").await;
        expect_text(&browser, ".error", "PUBLIC KEY").await;
        let ec =
            SigningKey::from_pkcs8(&SigningKey::generate_pkcs8(&OsRandom).expect("pkcs8"), &OsRandom).expect("key");
        let pem = crate::service_accounts_api::p256_pem(&ec.public_jwk().to_point().expect("point"));
        type_into(&browser, "#public_key", &pem).await;
        click(&browser, "form[action$='/keys/upload'] button").await;
        expect_text(&browser, ".notice", "Public key added").await;
        expect_text(&browser, "main table", "ES256").await;
        shot(&browser, "service-account").await;

        // The first key disabled, then deleted.
        click(&browser, &format!("form[action$='/keys/{}/disable'] button", file.private_key_id)).await;
        expect_text(&browser, ".notice", "Key disabled").await;
        let r = server
            .token(&[("grant_type", JWT_BEARER), ("assertion", &sign(&file, &claims_for(&email, &file.token_uri)))])
            .await;
        assert_eq!(r.status(), 400, "a disabled key gets no token");
        click(&browser, &format!("form[action$='/keys/{}/delete'] button", file.private_key_id)).await;
        expect_text(&browser, ".notice", "Key deleted").await;
        let rows = browser.find_all(fantoccini::Locator::Css("main table tbody tr")).await.expect("rows");
        assert_eq!(rows.len(), 1, "the uploaded key is left");

        click(&browser, &format!("form[action$='{email}/disable'] button")).await;
        expect_text(&browser, ".notice", "Service account disabled").await;
        click(&browser, &format!("form[action$='{email}/delete'] button")).await;
        expect_text(&browser, ".notice", "Service account deleted").await;
        find(&browser, "main form[action$='/service-accounts']").await;
    })
    .await;
}
