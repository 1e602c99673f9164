//! The metadata rules of a self-registered app: each field's refusal under its condition.

use super::*;

fn refused(body: &str) -> (ErrorCode, String) {
    let e = parse(body.as_bytes()).expect_err("refused");
    (e.code, e.description.into_owned())
}

#[test]
fn an_mcp_clients_registration_is_a_public_native_client() {
    let body = r#"{"redirect_uris":["http://localhost:3030/callback"],"client_name":"Editor",
        "grant_types":["authorization_code","refresh_token"],"response_types":["code"],
        "contacts":["a@example.com"],"software_id":"x","scope":"openid"}"#;
    let m = parse(body.as_bytes()).expect("accepted");
    assert_eq!(m.token_endpoint_auth_method, "none", "an omitted method is none");
    assert_eq!(m.client_name, "Editor");
    assert_eq!(m.grant_types, ["authorization_code", "refresh_token"]);
    assert_eq!(m.response_types, ["code"]);
    let minimal = parse(br#"{"redirect_uris":["com.example.app:/cb","http://127.0.0.1/cb","http://[::1]:8/x"]}"#);
    let minimal = minimal.expect("accepted");
    assert_eq!(minimal.client_name, UNNAMED);
    assert_eq!(minimal.grant_types, ["authorization_code", "refresh_token"], "refresh tokens come with the code");
}

#[test]
fn every_refusal_is_invalid_client_metadata_or_invalid_redirect_uri() {
    let meta = ErrorCode::InvalidClientMetadata;
    let redirect = ErrorCode::InvalidRedirectUri;
    let uri = r#""redirect_uris":["http://127.0.0.1/cb"]"#;
    for (body, code) in [
        ("not json", meta),
        ("[1]", meta),
        (&format!(r#"{{{uri},"token_endpoint_auth_method":"client_secret_basic"}}"#) as &str, meta),
        (&format!(r#"{{{uri},"token_endpoint_auth_method":"private_key_jwt"}}"#), meta),
        (&format!(r#"{{{uri},"grant_types":["client_credentials"]}}"#), meta),
        (&format!(r#"{{{uri},"grant_types":["implicit"],"response_types":["token"]}}"#), meta),
        (&format!(r#"{{{uri},"grant_types":["refresh_token"]}}"#), meta),
        (&format!(r#"{{{uri},"client_name":7}}"#), meta),
        (&format!(r#"{{{uri},"client_name":"{}"}}"#, "n".repeat(101)), meta),
        (&format!(r#"{{{uri},"client_uri":"http://example.com"}}"#), meta),
        (&format!(r#"{{{uri},"logo_uri":"javascript:alert(1)"}}"#), meta),
        (r#"{"client_name":"No redirect"}"#, redirect),
        (r#"{"redirect_uris":[]}"#, redirect),
        (r#"{"redirect_uris":"http://127.0.0.1/cb"}"#, meta),
        (r#"{"redirect_uris":["https://app.example/cb"]}"#, redirect),
        (r#"{"redirect_uris":["http://example.com/cb"]}"#, redirect),
        (r#"{"redirect_uris":["http://127.0.0.1/cb#x"]}"#, redirect),
        (r#"{"redirect_uris":["javascript:alert(1)"]}"#, redirect),
        (r#"{"redirect_uris":["data:text/html,x"]}"#, redirect),
        (r#"{"redirect_uris":["/relative"]}"#, redirect),
    ] {
        assert_eq!(refused(body).0, code, "{body}");
    }
    let many: Vec<String> = (0..11).map(|i| format!("\"http://127.0.0.1/{i}\"")).collect();
    assert_eq!(refused(&format!(r#"{{"redirect_uris":[{}]}}"#, many.join(","))).0, redirect);
}
