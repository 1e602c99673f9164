use super::*;
use crate::client::{ClientDetails, ClientType};
use crate::time::UnixTime;

const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const CHROME: &str =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36";

/// A desktop client `app` (also the token flows' tests' client).
pub(crate) fn desktop() -> Client {
    Client {
        client_id: "app".into(),
        project_id: "p".into(),
        name: "App".into(),
        client_type: ClientType::Desktop,
        redirect_uris: vec![],
        secrets: vec![],
        details: ClientDetails::default(),
        created_at: UnixTime(0),
        deleted_at: None,
        last_used_at: None,
        app_check: Default::default(),
        ownership_verified_at: None,
        registration: None,
        project_rotates: false,
    }
}

fn good() -> Vec<(&'static str, String)> {
    vec![
        ("client_id", "app".into()),
        ("redirect_uri", "http://127.0.0.1:4000/cb".into()),
        ("response_type", "code".into()),
        ("scope", "https://latchkey.dev/auth/readonly openid".into()),
        ("code_challenge", CHALLENGE.into()),
        ("code_challenge_method", "S256".into()),
        ("state", "xyz".into()),
    ]
}

fn run(pairs: &[(&str, String)], client: Option<&Client>) -> Result<ValidRequest, AuthorizeError> {
    let registry = ScopeRegistry::new("https://latchkey.dev");
    let params = AuthorizeParams::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
    validate(
        &params,
        Context { client, api_enabled: true, registry: &registry, require_pkce: true, user_agent: CHROME },
    )
}

fn with(change: &[(&'static str, Option<&str>)]) -> Vec<(&'static str, String)> {
    let mut p = good();
    for (k, v) in change {
        p.retain(|(n, _)| n != k);
        if let Some(v) = v {
            p.push((k, v.to_string()));
        }
    }
    p
}

fn page_error(r: Result<ValidRequest, AuthorizeError>) -> ErrorCode {
    let e = r.unwrap_err();
    assert!(e.redirect.is_none() && !e.error.redirectable, "expected an error page, got {e:?}");
    e.error.code
}

fn redirected_error(r: Result<ValidRequest, AuthorizeError>) -> ErrorCode {
    let e = r.unwrap_err();
    assert_eq!(e.redirect, Some(("http://127.0.0.1:4000/cb".into(), Some("xyz".into()))), "{e:?}");
    e.error.code
}

#[test]
fn a_good_request_passes_with_its_parts() {
    let c = desktop();
    let v = run(&good(), Some(&c)).unwrap();
    assert_eq!(v.redirect_uri, "http://127.0.0.1:4000/cb");
    assert_eq!(v.challenge, Some((ChallengeMethod::S256, CHALLENGE.into())));
    assert_eq!(v.state.as_deref(), Some("xyz"));
}

#[test]
fn untrusted_client_or_redirect_uri_gives_a_page() {
    let c = desktop();
    assert_eq!(page_error(run(&with(&[("client_id", None)]), Some(&c))), ErrorCode::InvalidRequest);
    assert_eq!(page_error(run(&good(), None)), ErrorCode::InvalidClient);
    let deleted = Client { deleted_at: Some(UnixTime(1)), ..desktop() };
    assert_eq!(page_error(run(&good(), Some(&deleted))), ErrorCode::DeletedClient);
    assert_eq!(page_error(run(&with(&[("redirect_uri", None)]), Some(&c))), ErrorCode::InvalidRequest);
    let oob = with(&[("redirect_uri", Some("urn:ietf:wg:oauth:2.0:oob"))]);
    assert_eq!(page_error(run(&oob, Some(&c))), ErrorCode::RedirectUriMismatch);
    let evil = with(&[("redirect_uri", Some("https://evil.example/cb"))]);
    assert_eq!(page_error(run(&evil, Some(&c))), ErrorCode::RedirectUriMismatch);
    let mut dup = good();
    dup.push(("redirect_uri", "http://127.0.0.1:5/x".into()));
    assert_eq!(page_error(run(&dup, Some(&c))), ErrorCode::InvalidRequest);
    let tv = Client { client_type: ClientType::Tv, ..desktop() };
    assert_eq!(page_error(run(&good(), Some(&tv))), ErrorCode::InvalidRequest, "a TV client uses the device flow");
}

#[test]
fn an_embedded_web_view_gets_disallowed_useragent() {
    let registry = ScopeRegistry::new("https://latchkey.dev");
    let c = desktop();
    let pairs = good();
    let params = AuthorizeParams::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
    let ua = "Mozilla/5.0 (Linux; Android 14; wv) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36";
    let r = validate(
        &params,
        Context { client: Some(&c), api_enabled: true, registry: &registry, require_pkce: true, user_agent: ua },
    );
    assert_eq!(page_error(r), ErrorCode::DisallowedUseragent);
}

#[test]
fn other_faults_redirect_with_the_state() {
    let c = desktop();
    type Change<'a> = &'a [(&'static str, Option<&'a str>)];
    let cases: [(Change, ErrorCode); 9] = [
        (&[("response_type", None)], ErrorCode::InvalidRequest),
        (&[("response_type", Some("token"))], ErrorCode::UnsupportedResponseType),
        (&[("scope", None)], ErrorCode::InvalidRequest),
        (&[("scope", Some("https://latchkey.dev/auth/nope"))], ErrorCode::InvalidScope),
        (&[("code_challenge", None)], ErrorCode::InvalidGrant),
        (&[("code_challenge", Some("short"))], ErrorCode::InvalidGrant),
        (&[("code_challenge_method", Some("S512"))], ErrorCode::InvalidRequest),
        (&[("prompt", Some("sometimes"))], ErrorCode::InvalidRequest),
        (&[("response_mode", Some("fragment"))], ErrorCode::InvalidRequest),
    ];
    for (change, code) in cases {
        assert_eq!(redirected_error(run(&with(change), Some(&c))), code, "{change:?}");
    }
    let mut dup = good();
    dup.push(("scope", "openid".into()));
    assert_eq!(redirected_error(run(&dup, Some(&c))), ErrorCode::InvalidRequest);
}

#[test]
fn pkce_may_be_optional_by_setting() {
    let registry = ScopeRegistry::new("https://latchkey.dev");
    let c = desktop();
    let pairs = with(&[("code_challenge", None), ("code_challenge_method", None)]);
    let params = AuthorizeParams::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
    let cx = Context { client: Some(&c), api_enabled: true, registry: &registry, require_pkce: false, user_agent: "" };
    assert_eq!(validate(&params, cx).unwrap().challenge, None);
}

#[test]
fn a_project_without_the_api_may_only_ask_for_identity_scopes() {
    let registry = ScopeRegistry::new("https://latchkey.dev");
    let c = desktop();
    let pairs = good();
    let params = AuthorizeParams::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
    let cx = Context { client: Some(&c), api_enabled: false, registry: &registry, require_pkce: true, user_agent: "" };
    assert_eq!(redirected_error(validate(&params, cx)), ErrorCode::UnauthorizedClient);
    let pairs = with(&[("scope", Some("openid email"))]);
    let params = AuthorizeParams::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
    assert!(validate(&params, cx).is_ok());
}

#[test]
fn extra_parameters_of_existing_clients_are_accepted() {
    let c = desktop();
    let p = with(&[
        ("access_type", Some("offline")),
        ("include_granted_scopes", Some("true")),
        ("prompt", Some("consent select_account")),
    ]);
    let v = run(&p, Some(&c)).unwrap();
    assert!(v.prompt.select_account && !v.prompt.none);
}

#[test]
fn params_round_trip_through_pairs() {
    let pairs = good();
    let params = AuthorizeParams::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
    let again = AuthorizeParams::from_pairs(params.to_pairs());
    assert_eq!(params, again);
}
