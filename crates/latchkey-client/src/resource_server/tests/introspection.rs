//! The introspection request, the answer read, and which answers are cached for how long.

use super::*;
use crate::http::{HttpRequest, HttpResponse};
use crate::resource_server::introspection_cache::cache_key;
use crate::resource_server::{Introspection, Introspector};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use std::time::Duration;

/// Where the fake latchkey's introspection endpoint is.
const ENDPOINT: &str = "https://as.example/introspect";
/// The API's resource id.
const RESOURCE_ID: &str = "res_0123456789abcdef";
/// A token.
const TOKEN: &str = "lka_secret-access-token";

/// An introspector of the API at time [`NOW`] whose latchkey answers `answers`.
fn introspector(answers: Vec<HttpResponse>) -> (Introspector, Arc<FakeHttp>, Arc<ManualClock>) {
    let http = FakeHttp::new(answers);
    let clock = ManualClock::at(NOW);
    let introspector = Introspector::new(ENDPOINT, RESOURCE_ID, "s3cret", http.clone()).with_clock(clock.clone());
    (introspector, http, clock)
}

/// An active answer for a token expiring at `exp`, as latchkey gives it.
fn active(exp: i64) -> HttpResponse {
    fake_http::json(
        200,
        json!({
            "active": true, "scope": "orders.read orders.write", "client_id": "lkapp-test", "sub": "u1",
            "aud": [API, "https://api.example.com/billing"], "iss": ISSUER, "exp": exp, "iat": NOW - 10,
            "token_type": "DPoP", "cnf": { "jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" },
        }),
    )
}

/// The inactive answer.
fn inactive() -> HttpResponse {
    fake_http::json(200, json!({ "active": false }))
}

/// The credentials of a request's HTTP Basic header, decoded from base64 but not from the form encoding.
fn basic_credentials(request: &HttpRequest) -> String {
    let value = fake_http::header(request, "authorization").expect("an Authorization header");
    let encoded = value.strip_prefix("Basic ").expect("HTTP Basic");
    String::from_utf8(STANDARD.decode(encoded).expect("base64")).expect("UTF-8")
}

#[tokio::test]
async fn the_request_is_a_form_authenticated_with_basic_whose_id_and_secret_are_form_encoded_first() {
    let http = FakeHttp::new(vec![inactive()]);
    let introspector = Introspector::new(ENDPOINT, "res_1 é", "s:e+c ret/%", http.clone());
    introspector.introspect(TOKEN).await.expect("an answer");
    let sent = http.requests();
    assert_eq!((sent.len(), sent[0].method, sent[0].url.as_str()), (1, "POST", ENDPOINT));
    assert_eq!(basic_credentials(&sent[0]), "res_1+%C3%A9:s%3Ae%2Bc+ret%2F%25");
    assert_eq!(fake_http::header(&sent[0], "content-type"), Some("application/x-www-form-urlencoded"));
    assert_eq!(fake_http::header(&sent[0], "accept"), Some("application/json"));
    assert_eq!(String::from_utf8_lossy(&sent[0].body), format!("token={TOKEN}&token_type_hint=access_token"));
    assert!(!format!("{introspector:?}").contains("s:e+c"), "the secret stays out of logs");
}

#[tokio::test]
async fn an_active_answer_is_read_with_an_array_aud() {
    let (introspector, _, _) = introspector(vec![active(NOW + 300)]);
    let answer = introspector.introspect(TOKEN).await.expect("an answer");
    assert_eq!(
        answer,
        Introspection {
            active: true,
            scope: vec!["orders.read".into(), "orders.write".into()],
            client_id: Some("lkapp-test".into()),
            sub: Some("u1".into()),
            aud: vec![API.into(), "https://api.example.com/billing".into()],
            iss: Some(ISSUER.into()),
            exp: Some(NOW + 300),
            iat: Some(NOW - 10),
            token_type: Some("DPoP".into()),
            cnf_jkt: Some("0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I".into()),
        }
    );
    assert!(answer.has_scope("orders.read") && !answer.has_scope("orders") && !answer.has_scope(""));
    assert!(answer.audience_includes(API) && !answer.audience_includes("https://api.example.com"));
}

#[tokio::test]
async fn an_answer_with_a_string_aud_or_none_is_read() {
    let string_aud = fake_http::json(200, json!({ "active": true, "aud": API, "exp": NOW + 60 }));
    let bare = fake_http::json(200, json!({ "active": true }));
    let (introspector, _, _) = introspector(vec![string_aud, bare]);
    let answer = introspector.introspect(TOKEN).await.expect("an answer");
    assert_eq!((answer.aud.as_slice(), answer.scope.len()), (&[API.to_owned()][..], 0));
    assert!(answer.audience_includes(API));
    let answer = introspector.introspect("lka_other").await.expect("an answer");
    assert!(answer.active && answer.aud.is_empty() && answer.exp.is_none() && !answer.audience_includes(API));
}

#[tokio::test]
async fn an_inactive_answer_tells_nothing_more_and_is_not_cached() {
    let told_more = fake_http::json(200, json!({ "active": false, "scope": "orders.read", "aud": API }));
    let (introspector, http, _) = introspector(vec![told_more, inactive()]);
    let answer = introspector.introspect(TOKEN).await.expect("an answer");
    assert_eq!(answer, Introspection::default());
    assert!(!answer.has_scope("orders.read") && !answer.audience_includes(API));
    assert_eq!(introspector.introspect(TOKEN).await.expect("an answer"), Introspection::default());
    assert_eq!(http.requests().len(), 2, "asked again");
}

#[tokio::test]
async fn an_active_answer_is_served_from_the_cache_for_max_cache() {
    let (introspector, http, clock) = introspector(vec![active(NOW + 3600), active(NOW + 3600)]);
    let first = introspector.introspect(TOKEN).await.expect("an answer");
    clock.advance(59);
    assert_eq!(introspector.introspect(TOKEN).await.expect("cached"), first);
    assert_eq!(http.requests().len(), 1, "no request for a cached answer");
    clock.advance(1);
    introspector.introspect(TOKEN).await.expect("asked again");
    assert_eq!(http.requests().len(), 2, "asked again after 60 s");
}

#[tokio::test]
async fn max_cache_can_be_changed() {
    let (introspector, http, clock) = introspector(vec![active(NOW + 3600); 4]);
    let introspector = introspector.with_max_cache(Duration::from_secs(5));
    introspector.introspect(TOKEN).await.expect("an answer");
    clock.advance(5);
    introspector.introspect(TOKEN).await.expect("an answer");
    assert_eq!(http.requests().len(), 2);
    let introspector = introspector.with_max_cache(Duration::ZERO);
    introspector.introspect("lka_other").await.expect("an answer");
    introspector.introspect("lka_other").await.expect("an answer");
    assert_eq!(http.requests().len(), 4, "a zero max_cache keeps nothing");
}

#[tokio::test]
async fn a_token_expiring_sooner_is_cached_until_its_exp_only() {
    let (introspector, http, clock) = introspector(vec![active(NOW + 10), inactive()]);
    introspector.introspect(TOKEN).await.expect("an answer");
    clock.advance(9);
    assert!(introspector.introspect(TOKEN).await.expect("cached").active);
    assert_eq!(http.requests().len(), 1);
    clock.advance(1);
    assert!(!introspector.introspect(TOKEN).await.expect("asked again").active, "its exp has passed");
    assert_eq!(http.requests().len(), 2);
}

#[tokio::test]
async fn an_active_answer_whose_exp_has_passed_is_never_served_from_the_cache() {
    let (introspector, http, _) = introspector(vec![active(NOW - 1), active(NOW)]);
    introspector.introspect(TOKEN).await.expect("an answer");
    introspector.introspect(TOKEN).await.expect("an answer");
    assert_eq!(http.requests().len(), 2);
    assert!(introspector.cached_keys().is_empty());
}

#[tokio::test]
async fn the_cache_is_keyed_by_the_tokens_sha256_not_the_token() {
    let (introspector, http, _) = introspector(vec![active(NOW + 300), active(NOW + 300)]);
    introspector.introspect(TOKEN).await.expect("an answer");
    introspector.introspect("lka_another-token").await.expect("another token is asked about");
    assert_eq!(http.requests().len(), 2);
    let mut keys = introspector.cached_keys();
    keys.sort();
    let mut expected = [cache_key(TOKEN), cache_key("lka_another-token")];
    expected.sort();
    assert_eq!(keys, expected);
    let sha256 = ring::digest::digest(&ring::digest::SHA256, TOKEN.as_bytes());
    assert_eq!(cache_key(TOKEN).as_slice(), sha256.as_ref());
}

#[tokio::test]
async fn the_cache_holds_at_most_max_entries() {
    let answers = vec![active(NOW + 300), active(NOW + 300), active(NOW + 300)];
    let (introspector, http, _) = introspector(answers);
    let introspector = introspector.with_max_entries(1);
    introspector.introspect("lka_a").await.expect("an answer");
    introspector.introspect("lka_b").await.expect("an answer");
    assert_eq!(introspector.cached_keys(), [cache_key("lka_b")]);
    introspector.introspect("lka_b").await.expect("cached");
    introspector.introspect("lka_a").await.expect("asked again");
    assert_eq!(http.requests().len(), 3);
}

#[tokio::test]
async fn answers_other_than_200_with_an_active_flag_are_errors() {
    let answers = vec![
        fake_http::oauth_error(401, "invalid_client"),
        fake_http::json(503, json!("unavailable")),
        fake_http::json(200, json!({ "scope": "orders.read" })),
        fake_http::json(200, json!({ "active": "true" })),
        HttpResponse { status: 200, headers: vec![], body: b"not json".to_vec() },
    ];
    let (introspector, _, _) = introspector(answers);
    let e = introspector.introspect(TOKEN).await.expect_err("401");
    assert!(matches!(&e, Error::OAuth { code, .. } if code == "invalid_client"), "{e:?}");
    let e = introspector.introspect(TOKEN).await.expect_err("503");
    assert!(matches!(&e, Error::Protocol(m) if m.contains("503")), "{e:?}");
    for what in ["no active", "a string active", "not JSON"] {
        let e = introspector.introspect(TOKEN).await.expect_err(what);
        assert!(matches!(&e, Error::Protocol(m) if !m.contains(TOKEN)), "{what}: {e:?}");
    }
    assert!(introspector.cached_keys().is_empty());
}
