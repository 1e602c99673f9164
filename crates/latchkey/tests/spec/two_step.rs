//! 2-step verification over HTTP, with codes computed by an implementation apart from the server's (`totp-lite`):
//! enrolment confirmed by one code, the second-step page after a right password (no session before it), a code
//! counted once per time step, recovery codes each used once, turning it off, passkey-only accounts, and the
//! operator's reset.

use crate::account_page::form_input;
use crate::support::*;
use latchkey_admin::clock::SystemClock;
use latchkey_core::account::EventKind;
use latchkey_core::time::Clock;
use std::sync::Arc;

pub(crate) const CAROL: &str = "carol@example.com";

/// Decodes RFC 4648 base32 (the secret as the enrolment page shows it), as an authenticator app does.
pub(crate) fn base32(text: &str) -> Vec<u8> {
    let (mut bits, mut acc, mut out) = (0u32, 0u32, Vec::new());
    for c in text.bytes().filter(|c| *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'2'..=b'7' => c - b'2' + 26,
            other => panic!("not base32: {}", other as char),
        };
        acc = (acc << 5) | u32::from(v);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// The code an authenticator app shows for `secret` at `now` (Unix seconds).
pub(crate) fn code_at(secret: &[u8], now: i64) -> String {
    totp_lite::totp_custom::<totp_lite::Sha1>(30, 6, secret, u64::try_from(now).expect("after 1970"))
}

/// The text between `<code id="totp-secret">` and `</code>`.
pub(crate) fn shown_secret(page: &Page) -> Vec<u8> {
    let start = page.body.find("id=\"totp-secret\">").expect("the secret as text") + "id=\"totp-secret\">".len();
    let text = &page.body[start..start + page.body[start..].find('<').expect("end")];
    assert_eq!(text.len(), 32, "32 base32 characters: {text}");
    base32(text)
}

/// The recovery codes a page lists, each in its own `<li><code>`.
pub(crate) fn recovery_codes(page: &Page) -> Vec<String> {
    page.body.split("<li><code>").skip(1).map(|s| s[..s.find("</code>").expect("end")].to_owned()).collect()
}

/// Turns 2-step verification on for the account signed in in `browser` (its id `user_id`) at `now`; returns the
/// secret and the recovery codes.
pub(crate) async fn turn_on(server: &TestServer, browser: &Browser, user_id: &str, now: i64) -> (Vec<u8>, Vec<String>) {
    let account = browser.get(&server.url("/account")).await;
    assert!(account.body.contains("Turn on 2-step verification"), "{}", account.body);
    let csrf = form_input(&account, "/account/two-step/start", "csrf");
    let enrol = browser.post("/account/two-step/start", &[("csrf", &csrf), ("account", user_id)]).await;
    assert_eq!(enrol.status, 200, "{}", enrol.body);
    assert!(enrol.body.contains("<svg") && enrol.body.contains("id=\"totp-qr\""), "a QR code drawn as SVG");
    let secret = shown_secret(&enrol);
    let enrolment = enrol.input("enrolment").expect("the sealed enrolment");
    let form = |code: String| {
        vec![
            ("csrf".to_owned(), csrf.clone()),
            ("account".to_owned(), user_id.to_owned()),
            ("enrolment".to_owned(), enrolment.clone()),
            ("code".to_owned(), code),
        ]
    };
    let post = |f: Vec<(String, String)>| async move {
        let pairs: Vec<(&str, &str)> = f.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        browser.post("/account/two-step", &pairs).await
    };
    let wrong = post(form(code_at(&secret, now + 300))).await;
    assert_eq!(wrong.status, 400, "a wrong code confirms nothing");
    assert!(wrong.body.contains("That code is wrong"), "{}", wrong.body);
    assert!(server.store().totp_of(user_id).await.expect("read").is_none(), "nothing stored before it is confirmed");
    let done = post(form(code_at(&secret, now))).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let codes = recovery_codes(&done);
    assert_eq!(codes.len(), 10, "{}", done.body);
    (secret, codes)
}

/// Signs in with the password: the response (the second-step page's redirect when 2-step verification is on).
pub(crate) async fn password_step(server: &TestServer, browser: &Browser, email: &str) -> Page {
    let login = browser.get(&server.url("/signin?continue=/account")).await;
    browser.sign_in(&login, email, PASSWORD).await
}

async fn second_step(browser: &Browser, server: &TestServer, code: &str) -> Page {
    let page = browser.get(&server.url("/signin/second-step?continue=/account")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let csrf = page.input("csrf").expect("csrf");
    browser.post("/signin/second-step", &[("csrf", &csrf), ("continue", "/account"), ("code", code)]).await
}

async fn kinds(server: &TestServer, user_id: &str) -> Vec<EventKind> {
    server.store().account_events(user_id).await.expect("events").iter().map(|e| e.kind).collect()
}

#[tokio::test]
async fn a_password_then_a_code_each_code_once_each_recovery_code_once() {
    let clock = Arc::new(TestClock::default());
    let server = TestServer::start_with_clock(|_| {}, clock.clone()).await;
    let carol = server.user(CAROL).await;
    let browser = server.browser();
    assert_eq!(password_step(&server, &browser, CAROL).await.status, 303);
    let (secret, codes) = turn_on(&server, &browser, &carol, clock.now().0).await;
    let stored = server.store().totp_of(&carol).await.expect("read").expect("on").secret;
    assert!(!stored.windows(secret.len()).any(|w| w == secret.as_slice()), "the secret is sealed at rest");
    let account = browser.get(&server.url("/account")).await;
    assert!(account.body.contains("is <strong>on</strong>") && account.body.contains("10 recovery"));

    // A password alone makes no session: the second-step page follows.
    let phone = server.browser();
    let after = password_step(&server, &phone, CAROL).await;
    assert_eq!(after.status, 303);
    let next = after.headers["location"].to_str().expect("location");
    assert!(next.starts_with("/signin/second-step?"), "{next}");
    assert_eq!(phone.get(&server.url("/account")).await.status, 303, "no session before the second step");
    let page = phone.get(&server.url(next)).await;
    assert!(page.body.contains("name=\"code\"") && page.body.contains("Lost your phone?"), "{}", page.body);
    let wrong = second_step(&phone, &server, &code_at(&secret, clock.now().0 + 600)).await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.body.contains("That code is wrong"));
    // The code that confirmed enrolment was counted: its time step is used.
    let replayed = second_step(&phone, &server, &code_at(&secret, clock.now().0)).await;
    assert_eq!(replayed.status, 401);
    assert!(replayed.body.contains("used already"), "{}", replayed.body);
    clock.advance(30);
    let code = code_at(&secret, clock.now().0);
    let done = second_step(&phone, &server, &code).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(done.headers["location"].to_str().expect("location"), format!("/account?authuser={carol}"));
    assert_eq!(phone.get(&server.url("/account")).await.status, 200, "signed in");

    let laptop = server.browser();
    password_step(&server, &laptop, CAROL).await;
    let again = second_step(&laptop, &server, &code).await;
    assert_eq!(again.status, 401, "a code counts once, in any browser");
    // Case, spaces and dashes do not matter in a recovery code; each works once.
    let typed = codes[0].to_uppercase().replace('-', " ");
    assert_eq!(second_step(&laptop, &server, &typed).await.status, 303);
    let tablet = server.browser();
    password_step(&server, &tablet, CAROL).await;
    let used = second_step(&tablet, &server, &codes[0]).await;
    assert_eq!(used.status, 401);
    assert!(used.body.contains("used already"));
    let shown = latchkey_admin::user_show(server.store(), CAROL).await.expect("show");
    let methods: Vec<(&str, &str)> = shown.methods.iter().map(|m| (m.kind, m.name.as_str())).collect();
    assert_eq!(
        methods,
        [("password", "password"), ("totp", "authenticator app"), ("recovery_codes", "9 recovery codes left")]
    );

    let account = browser.get(&server.url("/account")).await;
    let csrf = form_input(&account, "/account/two-step/off", "csrf");
    let off = browser.post("/account/two-step/off", &[("csrf", &csrf), ("account", &carol)]).await;
    assert_eq!(off.status, 303);
    assert_eq!(phone.get(&server.url("/account")).await.status, 303, "turning it off ends the other sessions");
    assert_eq!(
        password_step(&server, &tablet, CAROL).await.headers["location"],
        "/account?authuser=".to_owned() + &carol
    );
    use EventKind::*;
    assert_eq!(kinds(&server, &carol).await, [TwoStepOn, RecoveryCodeUsed, TwoStepOff]);
}

#[tokio::test]
async fn wrong_codes_are_throttled_like_passwords_and_knowing_the_password_buys_no_more() {
    let server = TestServer::start_with(|c| c.login_max_failures = 3).await;
    let carol = server.user(CAROL).await;
    let browser = server.browser();
    password_step(&server, &browser, CAROL).await;
    turn_on(&server, &browser, &carol, SystemClock.now().0).await;
    let guesser = server.browser();
    let mut statuses = Vec::new();
    for _ in 0..3 {
        // The password again before each guess: a right password clears its own count, not the code's.
        password_step(&server, &guesser, CAROL).await;
        for _ in 0..2 {
            statuses.push(second_step(&guesser, &server, "000000").await.status);
        }
    }
    assert_eq!(statuses, [401, 401, 401, 429, 429, 429], "three wrong codes, then refused unchecked");
}

#[tokio::test]
async fn a_recovery_code_set_renewed_voids_the_old_one() {
    let server = TestServer::start().await;
    let carol = server.user(CAROL).await;
    let browser = server.browser();
    password_step(&server, &browser, CAROL).await;
    let (_, old) = turn_on(&server, &browser, &carol, SystemClock.now().0).await;
    let account = browser.get(&server.url("/account")).await;
    let csrf = form_input(&account, "/account/recovery-codes", "csrf");
    let renewed = browser.post("/account/recovery-codes", &[("csrf", &csrf), ("account", &carol)]).await;
    let new = recovery_codes(&renewed);
    assert_eq!(new.len(), 10);
    assert!(new.iter().all(|c| !old.contains(c)));
    let other = server.browser();
    password_step(&server, &other, CAROL).await;
    assert_eq!(second_step(&other, &server, &old[1]).await.status, 401, "the old set no longer works");
    assert_eq!(second_step(&other, &server, &new[1]).await.status, 303);
    use EventKind::*;
    assert_eq!(kinds(&server, &carol).await, [TwoStepOn, RecoveryCodesRenewed, RecoveryCodeUsed]);
}

#[tokio::test]
async fn the_operator_resets_a_locked_out_person_who_then_signs_in_with_the_password() {
    let server = TestServer::start().await;
    let carol = server.user(CAROL).await;
    let browser = server.browser();
    password_step(&server, &browser, CAROL).await;
    turn_on(&server, &browser, &carol, SystemClock.now().0).await;
    let now = SystemClock.now();
    latchkey_admin::user_reset_two_step(server.store(), CAROL, now).await.expect("reset");
    assert_eq!(browser.get(&server.url("/account")).await.status, 303, "every session ended");
    assert!(server.store().totp_of(&carol).await.expect("read").is_none());
    let again = latchkey_admin::user_reset_two_step(server.store(), CAROL, now).await;
    assert!(matches!(again, Err(latchkey_admin::AdminError::Conflict(_))), "nothing left to reset");
    let signed_in = password_step(&server, &browser, CAROL).await;
    assert_eq!(signed_in.headers["location"], format!("/account?authuser={carol}"), "the password alone again");
    assert_eq!(*kinds(&server, &carol).await.last().expect("event"), EventKind::TwoStepReset);
}

#[tokio::test]
async fn an_account_with_a_passkey_may_drop_its_password_and_set_one_again() {
    let server = TestServer::start().await;
    let carol = server.user(CAROL).await;
    let browser = server.browser();
    password_step(&server, &browser, CAROL).await;
    let account = browser.get(&server.url("/account")).await;
    assert!(!account.body.contains("/account/password/remove"), "no passkey: the password stays");
    let csrf = form_input(&account, "/account/sessions/end-others", "csrf");
    let refused = browser.post("/account/password/remove", &[("csrf", &csrf), ("account", &carol)]).await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    let passkey = latchkey_core::passkey::PasskeyRecord {
        credential_id: "cred-1".into(),
        user_id: carol.clone(),
        name: "Laptop".into(),
        credential: "{}".into(),
        created_at: SystemClock.now(),
        last_used_at: None,
    };
    latchkey_admin::passkeys::add_passkey(server.store(), passkey, SystemClock.now()).await.expect("add");
    let account = browser.get(&server.url("/account")).await;
    assert!(account.body.contains("Use passkeys only"), "{}", account.body);
    let removed = browser.post("/account/password/remove", &[("csrf", &csrf), ("account", &carol)]).await;
    assert_eq!(removed.status, 303);
    let other = server.browser();
    assert_eq!(password_step(&server, &other, CAROL).await.status, 401, "the old password no longer signs in");
    let account = browser.get(&server.url("/account")).await;
    assert!(account.body.contains("Set a password") && !account.body.contains("current_password"));
    let set = [("csrf", csrf.as_str()), ("account", &carol), ("new_password", PASSWORD)];
    assert_eq!(browser.post("/account/password", &set).await.status, 303);
    assert_eq!(password_step(&server, &other, CAROL).await.status, 303, "a password again");
    use EventKind::*;
    assert_eq!(kinds(&server, &carol).await, [PasskeyAdded, PasswordRemoved, CredentialChanged]);
}

#[tokio::test]
async fn each_change_of_second_steps_reaches_a_receiver_as_a_verified_credential_change() {
    use crate::cross_account_protection::{ca, server_for, Ssf};
    use crate::set_receiver::TestReceiver;
    use latchkey_client::events::{ChangeType, Event};
    use serde_json::json;
    let receiver_dir = tempfile::tempdir().expect("dir");
    let server = server_for(receiver_dir.path()).await;
    let app = server.app().await;
    let carol = server.user(CAROL).await;
    let (browser, _) = crate::account_page::granted(&server, &app, CAROL).await;
    let receiver = TestReceiver::start(&server.base, &app.client_id, &ca(&server), receiver_dir.path()).await;
    let ssf = Ssf::member_of(&server, &app, "dana@example.com").await;
    let delivery = json!({"method": "urn:ietf:rfc:8935", "endpoint_url": receiver.url});
    ssf.create(json!({"aud": app.client_id, "delivery": delivery})).await;

    let (_, codes) = turn_on(&server, &browser, &carol, SystemClock.now().0).await;
    let phone = server.browser();
    password_step(&server, &phone, CAROL).await;
    assert_eq!(second_step(&phone, &server, &codes[2]).await.status, 303);
    latchkey_admin::user_reset_two_step(server.store(), CAROL, SystemClock.now()).await.expect("reset");

    // On, a recovery code used, then the reset: the app and the passkeys revoked, and the sessions ended.
    let events = receiver.wait_for(6, 30).await;
    let changes: Vec<(String, ChangeType, Option<String>)> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::CredentialChange(c) => {
                Some((c.credential_type.clone(), c.change_type.clone(), c.friendly_name.clone()))
            }
            _ => None,
        })
        .collect();
    let app_named = |change, name: &str| ("app".to_owned(), change, Some(name.to_owned()));
    assert_eq!(
        changes,
        [
            app_named(ChangeType::Create, "authenticator app"),
            app_named(ChangeType::Update, "recovery codes"),
            app_named(ChangeType::Revoke, "authenticator app"),
            ("fido2-platform".to_owned(), ChangeType::Revoke, None),
        ]
    );
    assert_eq!(events.len(), 6, "and the reset's sessions-revoked and session-revoked");
}

#[tokio::test]
async fn the_json_api_lists_sign_in_methods_and_an_operator_resets_second_steps() {
    let server = TestServer::start_with(|c| c.operators = vec!["ops@example.com".into()]).await;
    let carol = server.user(CAROL).await;
    server.user("ops@example.com").await;
    let browser = server.browser();
    password_step(&server, &browser, CAROL).await;
    turn_on(&server, &browser, &carol, SystemClock.now().0).await;
    let now = SystemClock.now();
    let mut keys = Vec::new();
    for who in [CAROL, "ops@example.com"] {
        keys.push(latchkey_admin::api_keys::api_key_create(server.store(), who, "k", now).await.expect("key").api_key);
    }
    let (own, ops) = (keys[0].clone(), keys[1].clone());
    let call = |method: reqwest::Method, path: &str, key: &str| {
        let request = server.http().request(method, server.url(&format!("/console/api/v1/users/{path}")));
        request.bearer_auth(key.to_owned()).send()
    };
    let listed: serde_json::Value =
        call(reqwest::Method::GET, &format!("{carol}/methods"), &own).await.expect("api").json().await.expect("json");
    let kinds: Vec<&str> =
        listed["methods"].as_array().expect("methods").iter().filter_map(|m| m["kind"].as_str()).collect();
    assert_eq!(kinds, ["password", "totp", "recovery_codes"], "{listed}");
    assert!(!listed.to_string().contains("secret"), "never a secret");
    let reset = format!("{CAROL}/reset-2sv");
    assert_eq!(call(reqwest::Method::POST, &reset, &own).await.expect("api").status(), 403, "operators only");
    assert_eq!(call(reqwest::Method::POST, &reset, &ops).await.expect("api").status(), 200);
    assert_eq!(call(reqwest::Method::POST, &reset, &ops).await.expect("api").status(), 409, "nothing left");
    assert!(server.store().totp_of(&carol).await.expect("read").is_none());
}
