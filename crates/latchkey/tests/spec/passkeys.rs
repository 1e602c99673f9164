//! Passkeys over HTTP, without an authenticator: what the pages offer, the options the ceremonies ask for, and every
//! refusal (in the page's own words, changing nothing). A ceremony's state is in the store: begun on one instance,
//! it is taken on another, once. The whole ceremony with an authenticator is `passkeys_browser.rs`.

use crate::support::*;
use latchkey_server::session::LOGIN_CSRF_COOKIE;
use serde_json::{json, Value};

const ALICE: &str = "alice@example.com";

/// A server served as `https://localhost:PORT`: WebAuthn takes no IP address as a relying-party id.
pub(crate) async fn localhost_server() -> TestServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a port").port();
    TestServer::start_with(|c| {
        c.listen = format!("127.0.0.1:{port}").parse().expect("address");
        c.public_url = Some(format!("https://localhost:{port}"));
    })
    .await
}

fn json_of(page: &Page) -> Value {
    serde_json::from_str(&page.body).unwrap_or_else(|e| panic!("JSON ({e}): {}", page.body))
}

/// An answer that parses, names an account's handle and a credential id, and proves nothing.
fn forged_answer() -> String {
    json!({
        "id": "AAAAAAAAAAAAAAAAAAAAAA",
        "rawId": "AAAAAAAAAAAAAAAAAAAAAA",
        "type": "public-key",
        "response": {
            "authenticatorData": "AAAA",
            "clientDataJSON": "AAAA",
            "signature": "AAAA",
            "userHandle": "AAAAAAAAAAAAAAAAAAAAAA",
        },
        "extensions": {},
    })
    .to_string()
}

/// The sign-in page's CSRF token, and a browser that holds its cookie.
async fn sign_in_page(server: &TestServer) -> (Browser, String) {
    let browser = server.browser();
    let page = browser.get(&server.url("/signin")).await;
    let csrf = page.input("csrf").expect("csrf");
    (browser, csrf)
}

#[tokio::test]
async fn a_server_served_under_an_ip_address_offers_no_passkeys_and_says_why() {
    let server = TestServer::start().await;
    assert!(server.base.starts_with("https://127.0.0.1:"), "{}", server.base);
    server.user(ALICE).await;
    let browser = server.browser();
    let login = browser.get(&server.url("/signin?continue=/account")).await;
    assert!(!login.body.contains("passkey-signin"), "no passkey button");
    browser.sign_in(&login, ALICE, PASSWORD).await;
    let account = browser.get(&server.url("/account")).await;
    assert!(account.body.contains("id=\"passkeys-unavailable\""), "{}", account.body);
    assert!(account.body.contains("127.0.0.1 is an IP address"), "the page says why");
    let csrf = login.input("csrf").expect("csrf");
    let options = browser.post("/signin/passkey/options", &[("csrf", &csrf)]).await;
    assert_eq!(options.status, 409);
    assert!(json_of(&options)["error"].as_str().expect("error").contains("IP address"));
}

#[tokio::test]
async fn the_options_ask_for_a_discoverable_credential_and_user_verification() {
    let server = localhost_server().await;
    let alice = server.user(ALICE).await;
    let (browser, csrf) = sign_in_page(&server).await;
    let page = browser.get(&server.url("/signin")).await;
    assert!(page.body.contains("id=\"passkey-signin\""), "the sign-in page offers passkeys");
    assert!(page.body.contains("autocomplete=\"username webauthn\""), "and its e-mail field's autofill");
    let csp = page.headers.get("content-security-policy").expect("csp").to_str().expect("text").to_owned();
    assert!(csp.contains("script-src 'self'") && csp.contains("connect-src 'self'"), "{csp}");

    let signing_in = json_of(&browser.post("/signin/passkey/options", &[("csrf", &csrf)]).await);
    let request = &signing_in["options"]["publicKey"];
    assert_eq!(request["rpId"], "localhost");
    assert_eq!(request["userVerification"], "required");
    assert!(request["allowCredentials"].as_array().is_none_or(Vec::is_empty), "discoverable: {request}");
    assert!(signing_in["ceremony"].as_str().is_some_and(|c| c.len() >= 43));

    let login = browser.get(&server.url("/signin?continue=/account")).await;
    browser.sign_in(&login, ALICE, PASSWORD).await;
    let account = browser.get(&server.url("/account")).await;
    let account_csrf = account.input("csrf").expect("csrf");
    let form = |name| [("account", alice.as_str()), ("csrf", account_csrf.as_str()), ("name", name)];
    let unnamed = browser.post("/account/passkeys/options", &form("  ")).await;
    assert_eq!(unnamed.status, 400, "a passkey needs a name");
    let adding = json_of(&browser.post("/account/passkeys/options", &form("Laptop")).await);
    let creation = &adding["options"]["publicKey"];
    assert_eq!(creation["rp"]["id"], "localhost");
    assert_eq!(creation["authenticatorSelection"]["residentKey"], "required");
    assert_eq!(creation["authenticatorSelection"]["requireResidentKey"], true);
    assert_eq!(creation["authenticatorSelection"]["userVerification"], "required");
    assert!(!creation["user"]["id"].as_str().expect("handle").contains(&alice), "the handle is not the user id");
    assert_eq!(creation["user"]["name"], ALICE);
}

#[tokio::test]
async fn refused_ceremonies_say_why_and_change_nothing() {
    let server = localhost_server().await;
    let alice = server.user(ALICE).await;
    let (browser, csrf) = sign_in_page(&server).await;
    let expired = browser.post("/signin/passkey/options", &[("csrf", "wrong")]).await;
    assert_eq!(expired.status, 403, "a form without its CSRF token");

    let started = json_of(&browser.post("/signin/passkey/options", &[("csrf", &csrf)]).await);
    let ceremony = started["ceremony"].as_str().expect("ceremony").to_owned();
    let answer = forged_answer();
    let finish = |ceremony: String| {
        let (browser, csrf, answer) = (&browser, csrf.clone(), answer.clone());
        async move {
            let fields = [("csrf", csrf.as_str()), ("ceremony", &ceremony), ("continue", "/"), ("credential", &answer)];
            browser.post("/signin/passkey", &fields).await
        }
    };
    let unknown = finish(ceremony.clone()).await;
    assert_eq!(unknown.status, 401, "{}", unknown.body);
    assert!(json_of(&unknown)["error"].as_str().expect("error").contains("not registered here"));
    let again = finish(ceremony).await;
    assert_eq!(again.status, 400, "a ceremony is taken once: {}", again.body);
    assert!(json_of(&again)["error"].as_str().expect("error").contains("expired or was already used"));
    assert_eq!(finish("AAAA".into()).await.status, 400, "a ceremony that never was");
    let unreadable = [("csrf", csrf.as_str()), ("ceremony", "x"), ("credential", "{")];
    assert_eq!(browser.post("/signin/passkey", &unreadable).await.status, 400);
    assert!(!browser.get(&server.url("/account")).await.body.contains("Your account"), "nobody signed in");

    let login = browser.get(&server.url("/signin?continue=/account")).await;
    browser.sign_in(&login, ALICE, PASSWORD).await;
    let account = browser.get(&server.url("/account")).await;
    let account_csrf = account.input("csrf").expect("csrf");
    let remove = [("account", alice.as_str()), ("csrf", account_csrf.as_str()), ("credential_id", "no-such-passkey")];
    let removed = browser.post("/account/passkeys/remove", &remove).await;
    assert_eq!(removed.status, 404, "not one of the account's passkeys");
    assert!(server.store().account_events(&alice).await.expect("events").is_empty(), "nothing changed");
}

#[tokio::test]
async fn a_ceremony_begun_on_one_instance_is_taken_on_another_once() {
    let first = localhost_server().await;
    let (dir, issuer) = (first.dir.path().to_path_buf(), first.base.clone());
    let second = TestServer::start_with(|c| {
        c.data_dir = dir;
        c.public_url = Some(issuer);
    })
    .await;
    let (browser, csrf) = sign_in_page(&first).await;
    let started = json_of(&browser.post("/signin/passkey/options", &[("csrf", &csrf)]).await);
    let ceremony = started["ceremony"].as_str().expect("ceremony").to_owned();
    // The second instance, through its own listener, with the sign-in form's cookie and token.
    let answer = forged_answer();
    let fields = [("csrf", csrf.as_str()), ("ceremony", ceremony.as_str()), ("continue", "/"), ("credential", &answer)];
    let at_second = second
        .http()
        .post(format!("https://{}/signin/passkey", second.running.addr))
        .header("cookie", format!("{LOGIN_CSRF_COOKIE}={csrf}"))
        .form(&fields)
        .send()
        .await
        .expect("POST");
    let (status, body) = (at_second.status().as_u16(), at_second.text().await.expect("body"));
    assert_eq!(status, 401, "the second instance took the ceremony, then found no such passkey: {body}");
    let at_first = browser.post("/signin/passkey", &fields).await;
    assert_eq!(at_first.status, 400, "taken already, at the other instance: {}", at_first.body);
}
