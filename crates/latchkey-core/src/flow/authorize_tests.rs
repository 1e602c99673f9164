//! The authorization endpoint's checks in their order, over in-memory ports.

use super::*;
use crate::authorize::tests::desktop;
use crate::flow::tests::block_on;
use crate::org::tests::member;
use crate::sign_in::{Method, Policy};

const NOW: UnixTime = UnixTime(1_700_000_000);
const CHROME: &str =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36";

/// One client `app`, its project in organisation `org` when `member` is set (and the account a member).
struct Memory {
    registry: ScopeRegistry,
    member: Option<Membership>,
}

impl AuthorizePorts for Memory {
    type Error = ();
    fn registry(&self) -> &ScopeRegistry {
        &self.registry
    }
    fn require_pkce(&self) -> bool {
        true
    }
    fn now(&self) -> UnixTime {
        NOW
    }
    async fn client(&self, client_id: &str) -> Result<Result<Option<(Client, ProjectFacts)>, String>, ()> {
        let project = ProjectFacts { api_enabled: true, ..ProjectFacts::default() };
        Ok(Ok((client_id == "app").then(|| (desktop(), project))))
    }
    async fn membership(&self, _user_id: &str, _client_id: &str) -> Result<Option<Membership>, ()> {
        Ok(self.member.clone())
    }
}

fn ports() -> Memory {
    Memory { registry: ScopeRegistry::new("https://latchkey.dev"), member: None }
}

fn params(extra: &[(&str, &str)]) -> AuthorizeParams {
    let mut pairs = vec![
        ("client_id", "app"),
        ("redirect_uri", "http://127.0.0.1:4000/cb"),
        ("response_type", "code"),
        ("scope", "https://latchkey.dev/auth/readonly"),
        ("code_challenge", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"),
        ("code_challenge_method", "S256"),
        ("state", "xyz"),
    ];
    pairs.extend_from_slice(extra);
    AuthorizeParams::from_pairs(pairs)
}

const ANN: Account<'static> =
    Account { user_id: "u-ann", email: "ann@example.com", signed_in_at: NOW, method: Method::Password };
const BOB: Account<'static> =
    Account { user_id: "u-bob", email: "bob@example.com", signed_in_at: UnixTime(1), method: Method::Password };

fn show(extra: &[(&str, &str)], accounts: Result<&[Account<'_>], Unreadable>) -> Outcome {
    block_on(super::show(&ports(), &params(extra), CHROME, accounts)).expect("no store failure")
}

/// The error code of a refusal sent back to the app, and whether the cookie goes with it.
fn back_code(outcome: Outcome) -> (ErrorCode, bool) {
    match outcome {
        Outcome::Refused(Refused::Back { error, redirect, clear_cookie }) => {
            assert_eq!(redirect, ("http://127.0.0.1:4000/cb".into(), Some("xyz".into())));
            (error.code, clear_cookie)
        }
        other => panic!("not sent back to the app: {other:?}"),
    }
}

#[test]
fn the_request_is_checked_before_the_browser_and_a_bad_one_is_a_page_with_its_client() {
    let outcome = show(&[], Err(Unreadable));
    assert!(matches!(outcome, Outcome::Unreadable), "{outcome:?}");
    let unknown = block_on(super::show(&ports(), &AuthorizeParams::from_pairs([("client_id", "x")]), CHROME, Ok(&[])));
    match unknown.expect("no store failure") {
        Outcome::Refused(Refused::Request { error, redirect: None, client: None }) => {
            assert_eq!(error.code, ErrorCode::InvalidClient);
        }
        other => panic!("{other:?}"),
    }
    let embedded = block_on(super::show(&ports(), &params(&[]), "Mozilla/5.0 (Linux; Android 14; wv)", Ok(&[ANN])));
    match embedded.expect("no store failure") {
        Outcome::Refused(Refused::Request { error, redirect: None, client: Some(_) }) => {
            assert_eq!(error.code, ErrorCode::DisallowedUseragent);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unreadable_cookie_under_prompt_none_goes_back_as_login_required_and_is_removed() {
    assert_eq!(back_code(show(&[("prompt", "none")], Err(Unreadable))), (ErrorCode::LoginRequired, true));
}

#[test]
fn the_account_is_chosen_by_prompt_then_authuser_then_hint_then_the_only_one() {
    let accounts = [ANN, BOB];
    let prefilled = |o: Outcome| match o {
        Outcome::SignIn(_, prefill) => prefill,
        other => panic!("not the sign-in page: {other:?}"),
    };
    let login = show(&[("prompt", "login"), ("authuser", "u-bob"), ("login_hint", "ann@example.com")], Ok(&accounts));
    assert_eq!(prefilled(login), "ann@example.com", "prompt=login signs in whatever else is asked");
    let named = show(&[("authuser", "u-bob"), ("login_hint", "ann@example.com")], Ok(&accounts));
    assert!(matches!(named, Outcome::Consent { account: 1, consent: Consent::Granular, .. }), "{named:?}");
    assert!(matches!(show(&[("authuser", "u-carl")], Ok(&accounts)), Outcome::UnknownAccount));
    let chooser = show(&[("prompt", "select_account"), ("login_hint", "bob@example.com")], Ok(&accounts));
    assert!(matches!(chooser, Outcome::ChooseAccount(_)), "{chooser:?}");
    let hinted = show(&[("login_hint", "BOB@example.com")], Ok(&accounts));
    assert!(matches!(hinted, Outcome::Consent { account: 1, .. }), "{hinted:?}");
    assert_eq!(prefilled(show(&[("login_hint", "u-carl")], Ok(&accounts))), "", "a sub is never pre-filled");
    assert!(matches!(show(&[], Ok(&accounts)), Outcome::ChooseAccount(_)), "several: the chooser");
    assert!(matches!(show(&[], Ok(&[ANN])), Outcome::Consent { account: 0, .. }), "one goes on");
}

#[test]
fn an_account_signed_in_longer_ago_than_max_age_signs_in_again() {
    let again = show(&[("authuser", "u-bob"), ("max_age", "60")], Ok(&[ANN, BOB]));
    assert!(matches!(again, Outcome::SignIn(_, ref email) if email == "bob@example.com"), "{again:?}");
    let fresh = show(&[("authuser", "u-ann"), ("max_age", "60")], Ok(&[ANN, BOB]));
    assert!(matches!(fresh, Outcome::Consent { account: 0, .. }), "{fresh:?}");
}

#[test]
fn prompt_none_sends_back_whatever_would_need_a_page() {
    let none = [("prompt", "none")];
    assert_eq!(back_code(show(&none, Ok(&[]))).0, ErrorCode::LoginRequired);
    assert_eq!(back_code(show(&none, Ok(&[ANN, BOB]))).0, ErrorCode::AccountSelectionRequired);
    assert_eq!(back_code(show(&[none[0], ("authuser", "u-carl")], Ok(&[ANN]))).0, ErrorCode::LoginRequired);
    assert_eq!(back_code(show(&none, Ok(&[ANN]))).0, ErrorCode::ConsentRequired);
}

#[test]
fn a_delegated_client_whose_identity_is_not_assured_gets_the_consent_page_not_a_code() {
    let member = Membership { delegated: Some(ScopeSet(u64::MAX)), ..member("org") };
    let ports = Memory { member: Some(member), ..ports() };
    let outcome = block_on(super::show(&ports, &params(&[]), CHROME, Ok(&[ANN]))).expect("no store failure");
    assert!(matches!(outcome, Outcome::Consent { consent: Consent::AllOrNone, .. }), "{outcome:?}");
}

#[test]
fn a_session_weaker_than_the_organisation_asks_signs_in_again_before_any_consent() {
    let shown = |sign_in, account: Account<'static>, extra: &[(&str, &str)]| {
        let ports = Memory { member: Some(Membership { sign_in, ..member("org") }), ..ports() };
        block_on(super::show(&ports, &params(extra), CHROME, Ok(&[account]))).expect("no store failure")
    };
    let required = Policy { require_two_step: true, passkeys_only: false };
    let outcome = shown(required, ANN, &[]);
    assert!(
        matches!(&outcome, Outcome::StepUp { passkeys_only: false, email, .. } if email == ANN.email),
        "{outcome:?}"
    );
    assert_eq!(back_code(shown(required, ANN, &[("prompt", "none")])).0, ErrorCode::LoginRequired);
    let two_step = Account { method: Method::TwoStep, ..ANN };
    assert!(matches!(shown(required, two_step, &[]), Outcome::Consent { .. }));
    let only = Policy { require_two_step: false, passkeys_only: true };
    assert!(matches!(shown(only, two_step, &[]), Outcome::StepUp { passkeys_only: true, .. }));
    assert!(matches!(shown(only, Account { method: Method::Passkey, ..ANN }, &[]), Outcome::Consent { .. }));
}

fn decide(accounts: &[Account<'_>], csrf: bool, form: Decision<'_>, extra: &[(&str, &str)]) -> Outcome {
    block_on(super::decide(&ports(), &params(extra), CHROME, accounts, |_| csrf, form)).expect("no store failure")
}

#[test]
fn the_consent_form_needs_its_account_and_csrf_token_before_its_decision_counts() {
    let readonly = ScopeSet(1 << ports().registry.index_of("https://latchkey.dev/auth/readonly").expect("known"));
    let allow = Decision { decision: Some("allow"), all_or_none: false, duration: None, scopes: readonly };
    assert!(matches!(decide(&[ANN, BOB], true, allow, &[]), Outcome::SessionEnded), "several and none named");
    assert!(matches!(decide(&[ANN], false, allow, &[]), Outcome::FormExpired));
    let issued = decide(&[ANN, BOB], true, allow, &[("authuser", "u-bob")]);
    assert!(matches!(issued, Outcome::IssueCode { account: 1, lifetime: None, .. }), "{issued:?}");
    let deny = Decision { decision: Some("deny"), ..allow };
    assert_eq!(back_code(decide(&[ANN], true, deny, &[])).0, ErrorCode::AccessDenied);
    let nothing = Decision { scopes: ScopeSet::EMPTY, ..allow };
    assert!(matches!(decide(&[ANN], true, nothing, &[]), Outcome::Consent { again: Some(_), .. }));
    let changed = Decision { all_or_none: true, ..allow };
    assert!(matches!(decide(&[ANN], true, changed, &[]), Outcome::Consent { again: Some(_), .. }));
    let period = Decision { duration: Some("3600"), ..allow };
    assert!(matches!(decide(&[ANN], true, period, &[]), Outcome::Refused(Refused::Page(_))), "not offered");
}
