//! Finding the keys through the SSF configuration, and polling for SETs (RFC 8936).

use super::*;
use crate::events::{Received, SetError};
use crate::fake_http::header;
use crate::Error;

fn ssf_configuration(issuer: &str) -> HttpResponse {
    fake_http::json(
        200,
        json!({ "issuer": issuer, "jwks_uri": JWKS_URI, "delivery_methods_supported": ["urn:ietf:rfc:8935"] }),
    )
}

#[tokio::test]
async fn discovery_reads_the_jwks_uri_of_the_ssf_configuration() {
    let http = FakeHttp::new(vec![ssf_configuration(ISSUER), jwks(vec![rsa_jwk(KID)])]);
    let receiver = SetReceiver::discover(&format!("{ISSUER}/"), CLIENT_ID, http.clone()).await.expect("discovered");
    assert_eq!((receiver.issuer(), receiver.client_id(), receiver.jwks_uri()), (ISSUER, CLIENT_ID, JWKS_URI));
    assert!(receiver.receive(set(&claims("j1"))).await.is_ok());
    let urls: Vec<String> = http.requests().into_iter().map(|r| r.url).collect();
    assert_eq!(urls, [format!("{ISSUER}/.well-known/ssf-configuration"), JWKS_URI.to_owned()]);
}

#[tokio::test]
async fn discovery_refuses_a_configuration_of_another_issuer() {
    let http = FakeHttp::new(vec![ssf_configuration("https://evil.example")]);
    let e = SetReceiver::discover(ISSUER, CLIENT_ID, http).await.expect_err("another issuer");
    assert!(matches!(e, Error::Protocol(_)), "{e:?}");
    let http = FakeHttp::new(vec![fake_http::json(404, json!({}))]);
    assert!(SetReceiver::discover(ISSUER, CLIENT_ID, http).await.is_err());
}

#[tokio::test]
async fn a_poll_acknowledges_reports_errors_and_verifies_each_set() {
    let mut foreign = claims("j3");
    foreign["aud"] = json!("lkapp-other");
    let answer = fake_http::json(
        200,
        json!({ "sets": { "j1": set(&claims("j1")), "j2": set(&claims("j9")), "j3": set(&foreign) },
                "moreAvailable": true }),
    );
    let (receiver, http, _) = receiver(vec![jwks(vec![rsa_jwk(KID)]), answer]);
    receiver.refresh_keys().await.expect("keys");
    let earlier = [("j0".to_owned(), SetError::InvalidRequest("bad".into()))];
    let polled =
        receiver.poll("https://as.example/ssf/poll", "stream-token", &["ja".into()], &earlier, 10).await.expect("poll");
    assert!(polled.more_available);
    assert_eq!(polled.sets.len(), 3);
    assert!(matches!(&polled.sets[0].result, Ok(Received::Event(e)) if e.jti == "j1"));
    let errors: Vec<(String, &str)> = polled.errors().into_iter().map(|(j, e)| (j, e.err())).collect();
    assert_eq!(errors, [("j2".to_owned(), "invalid_request"), ("j3".to_owned(), "invalid_audience")]);

    let request = &http.requests()[1];
    assert_eq!((request.method, request.url.as_str()), ("POST", "https://as.example/ssf/poll"));
    assert_eq!(header(request, "authorization"), Some("Bearer stream-token"));
    let body: Value = serde_json::from_slice(&request.body).expect("JSON");
    assert_eq!(
        body,
        json!({ "maxEvents": 10, "returnImmediately": true, "ack": ["ja"],
                "setErrs": { "j0": { "err": "invalid_request", "description": "bad" } } })
    );
    assert!(receiver.receive(set(&claims("j9"))).await.is_ok(), "a SET listed under another jti is not marked");
}

#[tokio::test]
async fn a_refused_poll_is_an_error() {
    let (receiver, _, _) = receiver(vec![fake_http::oauth_error(401, "invalid_token")]);
    let e = receiver.poll("https://as.example/ssf/poll", "wrong", &[], &[], 10).await.expect_err("refused");
    assert!(matches!(e, Error::OAuth { ref code, .. } if code == "invalid_token"), "{e:?}");
}
