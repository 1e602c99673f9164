//! When the issuer's keys are fetched: once, again for a new `kid` at most once per interval, and what a
//! failed fetch leaves.

use super::*;
use crate::events::{Received, SetError};
use std::time::Duration;

/// A SET signed with the RSA test key under another `kid`.
fn set_with_kid(kid: &str, jti: &str) -> String {
    sign_rs256(&json!({"alg": "RS256", "typ": "secevent+jwt", "kid": kid}), &claims(jti))
}

#[tokio::test]
async fn an_unknown_kid_is_refetched_once_per_interval_then_refused() {
    let answers = vec![jwks(vec![rsa_jwk(KID)]), jwks(vec![rsa_jwk(KID)]), jwks(vec![rsa_jwk(KID)])];
    let (receiver, http, clock) = receiver(answers);
    assert!(receiver.receive(set(&claims("j1"))).await.is_ok());
    assert_eq!(http.requests().len(), 1);
    assert_eq!(refused(&receiver, &set_with_kid("forged", "j2")).await, "invalid_key");
    assert_eq!(http.requests().len(), 2, "an unknown kid fetches the keys again");
    clock.advance(59);
    for n in 0..5 {
        assert_eq!(refused(&receiver, &set_with_kid(&format!("forged-{n}"), "j3")).await, "invalid_key");
    }
    assert_eq!(http.requests().len(), 2, "not again within 60 s");
    clock.advance(1);
    assert_eq!(refused(&receiver, &set_with_kid("forged", "j4")).await, "invalid_key");
    assert_eq!(http.requests().len(), 3, "again once the interval has passed");
}

#[tokio::test]
async fn a_rotated_key_is_found_by_refetching() {
    let answers = vec![jwks(vec![rsa_jwk("old")]), jwks(vec![rsa_jwk("old"), rsa_jwk("new")])];
    let (receiver, http, _) = receiver(answers);
    assert!(receiver.receive(set_with_kid("old", "j1")).await.is_ok());
    assert!(matches!(receiver.receive(set_with_kid("new", "j2")).await, Ok(Received::Event(_))));
    assert_eq!(http.requests().len(), 2);
}

#[tokio::test]
async fn the_interval_can_be_changed() {
    let answers = vec![jwks(vec![rsa_jwk(KID)]), jwks(vec![rsa_jwk(KID)])];
    let (receiver, http, clock) = receiver(answers);
    let receiver = receiver.with_min_refetch_interval(Duration::from_secs(5));
    receiver.refresh_keys().await.expect("keys");
    clock.advance(5);
    assert_eq!(refused(&receiver, &set_with_kid("forged", "j1")).await, "invalid_key");
    assert_eq!(http.requests().len(), 2);
}

#[tokio::test]
async fn a_failed_refetch_keeps_the_keys_held() {
    let answers = vec![jwks(vec![rsa_jwk(KID)]), fake_http::json(500, json!({})), jwks(vec![])];
    let (receiver, http, clock) = receiver(answers);
    assert!(receiver.receive(set(&claims("j1"))).await.is_ok());
    let e = receiver.receive(set_with_kid("new", "j2")).await.expect_err("the fetch failed");
    assert!(matches!(e, SetError::KeysUnavailable(_)), "{e:?}");
    assert_eq!(e.status(), 503);
    assert!(receiver.receive(set(&claims("j3"))).await.is_ok(), "the old key still verifies");
    clock.advance(60);
    assert!(matches!(receiver.receive(set_with_kid("new", "j4")).await, Err(SetError::KeysUnavailable(_))));
    assert!(receiver.receive(set(&claims("j5"))).await.is_ok(), "an empty JWKS replaces nothing");
    assert_eq!(http.requests().len(), 3);
}

#[tokio::test]
async fn without_any_key_a_set_cannot_be_checked_yet() {
    let (receiver, http, _) = receiver(vec![fake_http::json(404, json!({}))]);
    let e = receiver.receive(set(&claims("j1"))).await.expect_err("no keys");
    assert!(matches!(e, SetError::KeysUnavailable(_)), "{e:?}");
    assert_eq!(e.err(), "invalid_key");
    assert_eq!(http.requests().len(), 1);
    assert!(matches!(receiver.receive(set(&claims("j2"))).await, Err(SetError::KeysUnavailable(_))));
    assert_eq!(http.requests().len(), 1, "not fetched again within the interval");
    assert!(receiver.refresh_keys().await.is_err(), "the fake server has no more answers");
    assert_eq!(http.requests().len(), 2, "an explicit refresh always fetches");
}
