//! An organisation's sign-in policy (`latchkey admin org policy`): "2-step verification required" sends a member
//! without a second step to enrolment before any consent and then on to the authorization they started; a session
//! that signed in with a password alone signs in again at the authorization endpoint; "passkeys only" refuses a
//! member's password, with or without a code, and makes no session.

use crate::login_consent::{exchange, is_consent, url_with};
use crate::organisations::{change, corp, CAROL};
use crate::support::*;
use crate::two_step::{code_at, recovery_codes, shown_secret};
use latchkey_admin::clock::SystemClock;
use latchkey_core::org::OrgChange;
use latchkey_core::time::Clock;

fn policy(require_two_step: Option<bool>, passkeys_only: Option<bool>) -> OrgChange {
    OrgChange::SignInPolicy { require_two_step, passkeys_only }
}

/// The path and query of a redirect.
fn location(page: &Page) -> String {
    page.headers.get("location").expect("a redirect").to_str().expect("text").to_owned()
}

#[tokio::test]
async fn a_member_without_a_second_step_enrols_before_consent_then_goes_on_to_the_app() {
    let server = TestServer::start().await;
    let org = corp(&server).await;
    change(&server, &org, policy(Some(true), None)).await;
    let carol = server.user(CAROL).await;
    let app = server.app().await;
    let browser = server.browser();
    let pkce = Pkce::new();
    let login = browser.get(&url_with(&server, &app, &[READONLY], &pkce, &[])).await;
    let after = browser.sign_in(&login, CAROL, PASSWORD).await;
    assert_eq!(after.status, 303, "{}", after.body);
    let enrol_at = location(&after);
    assert!(enrol_at.starts_with("/signin/enrol?continue=%2Fo%2Foauth2%2Fv2%2Fauth"), "{enrol_at}");
    assert_eq!(browser.get(&server.url("/account")).await.status, 303, "no session before enrolling");
    let enrol = browser.get(&server.url(&enrol_at)).await;
    assert!(enrol.body.contains("id=\"enrol-required\""), "{}", enrol.body);
    let secret = shown_secret(&enrol);
    let field = |name: &str| enrol.input(name).unwrap_or_else(|| panic!("{name}"));
    let code = code_at(&secret, SystemClock.now().0);
    let form = [("csrf", field("csrf")), ("continue", field("continue")), ("enrolment", field("enrolment"))];
    let mut form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    form.push(("code", &code));
    let codes = browser.post("/signin/enrol", &form).await;
    assert_eq!(codes.status, 200, "{}", codes.body);
    assert_eq!(recovery_codes(&codes).len(), 10);
    let next = codes.body.split("id=\"continue\" href=\"").nth(1).expect("the way on");
    let next = unescape(&next[..next.find('"').expect("end")]);
    assert!(next.starts_with("/o/oauth2/v2/auth?") && next.contains(&format!("authuser={carol}")), "{next}");
    let consent = browser.get(&server.url(&next)).await;
    assert!(is_consent(&consent), "{}", consent.body);
    let done = browser.decide(&consent, &[READONLY], "allow").await;
    let code = done.redirect_param("code").expect("a code");
    assert!(exchange(&server, &app, &code, &pkce).await.access_token.len() > 20);
    assert!(server.store().totp_of(&carol).await.expect("read").is_some(), "2-step verification is on");
}

#[tokio::test]
async fn a_password_session_signs_in_again_once_its_organisation_requires_a_second_step() {
    let server = TestServer::start().await;
    let org = corp(&server).await;
    server.user(CAROL).await;
    let app = server.app().await;
    let browser = server.browser();
    let pkce = Pkce::new();
    let url = url_with(&server, &app, &[READONLY], &pkce, &[]);
    assert!(is_consent(&browser.consent_page(&url, CAROL).await), "no policy: the password is enough");
    change(&server, &org, policy(Some(true), None)).await;
    let again = browser.get(&url).await;
    assert_eq!(again.status, 200);
    assert!(again.body.contains("requires 2-step verification") && again.body.contains("name=\"password\""));
    assert!(again.body.contains(&format!("value=\"{CAROL}\"")), "the address pre-filled");
    let silent = browser.get(&url_with(&server, &app, &[READONLY], &pkce, &[("prompt", "none")])).await;
    assert_eq!(silent.redirect_param("error").as_deref(), Some("login_required"));
    // Off again: the same session goes on.
    change(&server, &org, policy(Some(false), None)).await;
    assert!(is_consent(&browser.get(&url).await));
}

#[tokio::test]
async fn passkeys_only_refuses_a_members_password_with_or_without_a_code_and_makes_no_session() {
    let server = TestServer::start().await;
    let org = corp(&server).await;
    let carol = server.user(CAROL).await;
    let browser = server.browser();
    let login = browser.get(&server.url("/signin?continue=/account")).await;
    assert_eq!(browser.sign_in(&login, CAROL, PASSWORD).await.status, 303);
    crate::two_step::turn_on(&server, &browser, &carol, SystemClock.now().0).await;
    change(&server, &org, policy(Some(true), Some(true))).await;
    let shown = latchkey_admin::orgs::org_show(
        server.store(),
        &latchkey_admin::Actor::Operator,
        &org,
        &server.running.state.scopes.get(),
    )
    .await
    .expect("show");
    assert!(shown.policy.require_2sv && shown.policy.passkeys_only);
    let other = server.browser();
    let login = other.get(&server.url("/signin?continue=/account")).await;
    let refused = other.sign_in(&login, CAROL, PASSWORD).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("Sign in with a passkey"), "the page says why");
    assert!(refused.headers.get("set-cookie").is_none(), "no session, no second step");
    assert_eq!(other.get(&server.url("/account")).await.status, 303);
    let app = server.app().await;
    let pkce = Pkce::new();
    let weak = browser.get(&url_with(&server, &app, &[READONLY], &pkce, &[])).await;
    assert!(weak.body.contains("sign in with a passkey"), "a password-and-code session is not enough: {}", weak.body);
}
