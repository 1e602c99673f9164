use super::*;
use crate::scope::Scope;

fn form<'a>(pairs: &'a [(&'a str, &'a str)]) -> Form<'a> {
    Form::new(pairs.to_vec()).unwrap()
}

fn code() -> AuthCode {
    AuthCode {
        code_hash: vec![1],
        client_id: "app".into(),
        user_id: "u".into(),
        redirect_uri: "http://127.0.0.1:4000/cb".into(),
        scopes: Scope::Readonly.set(),
        challenge: Some((ChallengeMethod::S256, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".into())),
        nonce: None,
        auth_time: UnixTime(0),
        expires_at: UnixTime(600),
        used: false,
        grant_lifetime: None,
    }
}

const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

#[test]
fn repeated_parameters_are_invalid_request() {
    let err = Form::new(vec![("code", "a"), ("code", "b")]).err().unwrap();
    assert_eq!(err.code, ErrorCode::InvalidRequest);
}

#[test]
fn a_repeat_is_found_among_many_pairs_and_too_many_pairs_are_refused() {
    let names: Vec<String> = (0..MAX_FORM_PAIRS).map(|i| format!("p{i}")).collect();
    let mut pairs: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "v")).collect();
    assert!(Form::new(pairs.clone()).is_ok(), "{MAX_FORM_PAIRS} distinct names are a form");
    pairs[40] = ("p3", "w");
    let err = Form::new(pairs.clone()).err().unwrap();
    assert_eq!((err.code, &*err.description), (ErrorCode::InvalidRequest, "Parameter sent more than once: p3"));
    pairs[40] = ("p40", "v");
    pairs.push(("one_more", "v"));
    let err = Form::new(pairs).err().unwrap();
    assert_eq!(err.code, ErrorCode::InvalidRequest);
    assert!(err.description.contains("more than 64 parameters"), "{}", err.description);
}

#[test]
fn unknown_or_missing_grant_type() {
    assert_eq!(parse(&form(&[("client_id", "a")]), None).unwrap_err().code, ErrorCode::InvalidRequest);
    let f = form(&[("client_id", "a"), ("grant_type", "password")]);
    assert_eq!(parse(&f, None).unwrap_err().code, ErrorCode::UnsupportedGrantType);
}

#[test]
fn code_exchange_needs_code_and_redirect_uri() {
    let f = form(&[("client_id", "a"), ("grant_type", "authorization_code"), ("redirect_uri", "x")]);
    assert_eq!(parse(&f, None).unwrap_err().code, ErrorCode::InvalidRequest);
    let f = form(&[("client_id", "a"), ("grant_type", "authorization_code"), ("code", "c")]);
    assert_eq!(parse(&f, None).unwrap_err().code, ErrorCode::InvalidRequest);
}

#[test]
fn client_auth_methods() {
    let f = form(&[("client_id", "app")]);
    assert_eq!(client_auth(&f, None).unwrap().method, AuthMethod::None);
    let f = form(&[("client_id", "app"), ("client_secret", "s")]);
    assert_eq!(client_auth(&f, None).unwrap().method, AuthMethod::ClientSecretPost);
    // "my%20app:s%3Ax" -> id "my app", secret "s:x"
    let header = format!("Basic {}", STANDARD.encode("my%20app:s%3Ax"));
    let a = client_auth(&form(&[]), Some(&header)).unwrap();
    assert_eq!((a.client_id.as_str(), a.secret.unwrap().expose()), ("my app", "s:x"));
    assert_eq!(client_auth(&form(&[]), Some("Basic !!")).unwrap_err().code, ErrorCode::InvalidClient);
    let f = form(&[("client_id", "other")]);
    assert_eq!(client_auth(&f, Some(&header)).unwrap_err().code, ErrorCode::InvalidRequest);
}

#[test]
fn a_wrong_or_disabled_secret_is_invalid_client_and_none_is_fine() {
    let secret = |id: &str, value: &str, disabled: bool| crate::client::ClientSecret {
        id: id.into(),
        hash: crate::secret::hash(value),
        hint: None,
        created_at: UnixTime(1),
        disabled_at: disabled.then_some(UnixTime(2)),
    };
    let client = crate::client::Client {
        secrets: vec![secret("cs_old", "old", false), secret("cs_new", "new", false)],
        ..crate::authorize::tests::desktop()
    };
    let auth = |s: Option<&str>| ClientAuth {
        client_id: "a".into(),
        secret: s.map(|s| Secret::new(s.into())),
        method: AuthMethod::ClientSecretPost,
    };
    assert!(auth(None).check_secret(&client).is_ok());
    assert!(auth(Some("old")).check_secret(&client).is_ok(), "both secrets work during a rotation");
    assert!(auth(Some("new")).check_secret(&client).is_ok());
    assert_eq!(auth(Some("wrong")).check_secret(&client).unwrap_err().code, ErrorCode::InvalidClient);
    let rotated = crate::client::Client {
        secrets: vec![secret("cs_old", "old", true), secret("cs_new", "new", false)],
        ..client
    };
    assert_eq!(auth(Some("old")).check_secret(&rotated).unwrap_err().code, ErrorCode::InvalidClient, "disabled");
    assert!(auth(Some("new")).check_secret(&rotated).is_ok());
}

#[test]
fn code_checks() {
    let v = Secret::new(VERIFIER.into());
    let uri = "http://127.0.0.1:4000/cb";
    assert!(check_code(&code(), "app", uri, Some(&v), UnixTime(10)).is_ok());
    let grant = |r: Result<(), OAuthError>| r.unwrap_err().code;
    assert_eq!(grant(check_code(&code(), "other", uri, Some(&v), UnixTime(10))), ErrorCode::InvalidGrant);
    assert_eq!(grant(check_code(&code(), "app", uri, Some(&v), UnixTime(600))), ErrorCode::InvalidGrant);
    assert_eq!(
        grant(check_code(&code(), "app", "http://127.0.0.1:4001/cb", Some(&v), UnixTime(1))),
        ErrorCode::InvalidGrant
    );
    assert_eq!(grant(check_code(&code(), "app", uri, None, UnixTime(1))), ErrorCode::InvalidGrant);
    let no_pkce = AuthCode { challenge: None, ..code() };
    assert_eq!(grant(check_code(&no_pkce, "app", uri, Some(&v), UnixTime(1))), ErrorCode::InvalidGrant);
    assert!(check_code(&no_pkce, "app", uri, None, UnixTime(1)).is_ok());
}

#[test]
fn narrowing_on_refresh_keeps_the_intersection() {
    let r = ScopeRegistry::new("https://x");
    let granted = ScopeSet(Scope::Readonly.set().0 | Scope::OpenId.set().0);
    assert_eq!(narrow(&r, granted, None).unwrap(), granted);
    assert_eq!(narrow(&r, granted, Some("openid https://x/auth/upload")).unwrap(), Scope::OpenId.set());
    assert_eq!(narrow(&r, granted, Some("https://x/auth/upload")).unwrap_err().code, ErrorCode::InvalidScope);
}
