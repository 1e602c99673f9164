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

#[test]
fn a_client_id_is_a_document_url_only_in_the_drafts_form() {
    assert!(document_url("https://app.example/oauth/client.json", false).is_some());
    for not_one in [
        "https://app.example",
        "https://app.example/",
        "http://app.example/client.json",
        "https://user:pw@app.example/client.json",
        "https://app.example/client.json#x",
        "https://app.example/a/../client.json",
        "https://app.example/./client.json",
        "lkapp-abc",
        "http://127.0.0.1:8080/client.json",
    ] {
        assert!(document_url(not_one, false).is_none(), "{not_one}");
    }
    assert!(document_url("http://127.0.0.1:8080/client.json", true).is_some(), "the tests' setting");
    assert!(document_url("http://localhost:8080/client.json", true).is_none(), "an address, not a name");
}

#[test]
fn a_document_names_itself_and_follows_the_rules_of_a_self_registered_app() {
    let url = "https://app.example/client.json";
    let good = format!(r#"{{"client_id":"{url}","client_name":"App","redirect_uris":["http://127.0.0.1/cb"]}}"#);
    assert_eq!(document(url, good.as_bytes()).expect("usable").client_name, "App");
    let other = good.replace(url, "https://evil.example/client.json");
    assert!(document(url, other.as_bytes()).expect_err("refused").contains("another client_id"));
    assert!(document(url, b"<html>").expect_err("refused").contains("not JSON"));
    assert!(document(url, br#"{"redirect_uris":["http://127.0.0.1/cb"]}"#)
        .expect_err("refused")
        .contains("no client_id"));
    let https = format!(r#"{{"client_id":"{url}","redirect_uris":["https://app.example/cb"]}}"#);
    assert!(document(url, https.as_bytes()).is_err(), "desktop redirect rules");
    let secret = format!(
        r#"{{"client_id":"{url}","redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"private_key_jwt"}}"#
    );
    assert!(document(url, secret.as_bytes()).is_err(), "no client authentication but none");
}

#[test]
fn a_document_is_kept_between_five_minutes_and_a_day() {
    assert_eq!(document_ttl(None), 300);
    assert_eq!(document_ttl(Some("max-age=3600")), 3600);
    assert_eq!(document_ttl(Some("public, max-age=10")), 300);
    assert_eq!(document_ttl(Some("max-age=9999999")), 86_400);
    assert_eq!(document_ttl(Some("max-age=3600, no-cache")), 300);
    assert_eq!(document_ttl(Some("no-store")), 300);
}
