use super::*;
use crate::client::ClientDetails;
use crate::time::UnixTime;

fn client(t: ClientType, uris: &[&str]) -> Client {
    Client {
        client_id: "c".into(),
        project_id: "p".into(),
        name: "n".into(),
        client_type: t,
        redirect_uris: uris.iter().map(|s| s.to_string()).collect(),
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

fn code(r: Result<(), OAuthError>) -> Option<ErrorCode> {
    r.err().map(|e| {
        assert!(!e.redirectable, "redirect URI errors are never redirected");
        e.code
    })
}

#[test]
fn desktop_clients_take_loopback_ip_literals_on_any_port_unregistered() {
    let c = client(ClientType::Desktop, &[]);
    for uri in ["http://127.0.0.1:53682/", "http://127.0.0.1:1/cb?x=1", "http://[::1]:65535/", "http://127.0.0.1/x"] {
        assert_eq!(code(check(&c, uri)), None, "{uri}");
    }
}

#[test]
fn other_spellings_of_loopback_are_not_normalised_into_a_match() {
    let c = client(ClientType::Desktop, &[]);
    for uri in [
        "http://127.1:8080/",
        "http://127.0.0.1:08080/",
        "http://127.0.0.1:65536/",
        "http://127.0.0.1:80@evil.example/",
        "http://127.0.0.1.evil.example/",
        "http://[0:0:0:0:0:0:0:1]:80/",
        "https://127.0.0.1:80/",
        "http://localhost:8080/",
    ] {
        assert_eq!(code(check(&c, uri)), Some(ErrorCode::RedirectUriMismatch), "{uri}");
    }
}

#[test]
fn localhost_is_accepted_only_when_registered_and_then_on_any_port() {
    let c = client(ClientType::Desktop, &["http://localhost:8080/cb"]);
    assert_eq!(code(check(&c, "http://localhost:8080/cb")), None);
    assert_eq!(code(check(&c, "http://localhost:9999/cb")), None);
    assert_eq!(code(check(&c, "http://localhost:9999/other")), Some(ErrorCode::RedirectUriMismatch));
}

#[test]
fn oob_is_redirect_uri_mismatch() {
    let c = client(ClientType::Desktop, &["urn:ietf:wg:oauth:2.0:oob"]);
    for uri in OOB {
        assert_eq!(code(check(&c, uri)), Some(ErrorCode::RedirectUriMismatch));
    }
}

#[test]
fn registered_uris_match_exactly_not_after_normalisation() {
    let c = client(ClientType::Mobile, &["com.example.app:/oauth2redirect"]);
    assert_eq!(code(check(&c, "com.example.app:/oauth2redirect")), None);
    assert_eq!(code(check(&c, "com.example.app:/oauth2redirect/")), Some(ErrorCode::RedirectUriMismatch));
    assert_eq!(code(check(&c, "COM.example.app:/oauth2redirect")), Some(ErrorCode::RedirectUriMismatch));
}

#[test]
fn loopback_is_refused_for_every_type_but_desktop() {
    for t in [ClientType::Mobile, ClientType::UniversalDesktop, ClientType::BrowserExtension] {
        let c = client(t, &["http://127.0.0.1:8080/"]);
        assert_eq!(code(check(&c, "http://127.0.0.1:8080/")), Some(ErrorCode::RedirectUriMismatch), "{t:?}");
    }
}

#[test]
fn browser_extensions_refuse_custom_schemes_with_invalid_request_in_the_specs_words() {
    let c = client(ClientType::BrowserExtension, &["com.example:/cb"]);
    let e = check(&c, "com.example:/cb").unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest);
    assert!(e.description.contains("not supported on Android or Chrome apps"), "{}", e.description);
}

#[test]
fn universal_desktop_schemes_are_at_most_39_characters() {
    let long = format!("{}://s-1-15-2-1", "a".repeat(40));
    let mut c = client(ClientType::UniversalDesktop, &[&long, "ms-app://s-1-15-2-1"]);
    c.details.package_sid = Some("s-1-15-2-1".into());
    assert_eq!(code(check(&c, &long)), Some(ErrorCode::RedirectUriMismatch));
    assert_eq!(code(check(&c, "ms-app://s-1-15-2-1")), None);
}

#[test]
fn a_universal_desktop_redirect_names_the_clients_own_package_sid() {
    // Registered (as a client stored before the rule would be), yet not of the client's package SID: refused.
    let others = ["ms-app://s-1-15-2-2", "ms-app://s-1-15-2-1/cb", "ms-app://s-1-15-2-1.evil"];
    let mut c = client(ClientType::UniversalDesktop, &["ms-app://s-1-15-2-1", others[0], others[1], others[2]]);
    c.details.package_sid = Some("s-1-15-2-1".into());
    assert_eq!(code(check(&c, "ms-app://s-1-15-2-1")), None);
    for uri in others {
        assert_eq!(code(check(&c, uri)), Some(ErrorCode::RedirectUriMismatch), "{uri}");
    }
    c.details.package_sid = None;
    assert_eq!(code(check(&c, "ms-app://s-1-15-2-1")), Some(ErrorCode::RedirectUriMismatch), "no SID, no redirect");
}

#[test]
fn fragments_and_control_characters_are_refused() {
    let c = client(ClientType::Desktop, &[]);
    assert_eq!(code(check(&c, "http://127.0.0.1:1/#x")), Some(ErrorCode::RedirectUriMismatch));
    assert_eq!(code(check(&c, "http://127.0.0.1:1/\nx")), Some(ErrorCode::RedirectUriMismatch));
}

#[test]
fn response_parameters_are_appended_to_the_query() {
    assert_eq!(
        with_params("http://127.0.0.1:1/cb", &[("code", "a b"), ("state", "s&t")]),
        "http://127.0.0.1:1/cb?code=a%20b&state=s%26t"
    );
    assert_eq!(with_params("app:/cb?x=1", &[("error", "access_denied")]), "app:/cb?x=1&error=access_denied");
}
