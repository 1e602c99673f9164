//! JWT access tokens signed as latchkey signs them (ES256 with the ID token key, `typ: at+jwt`), and each way a
//! token is refused.

use super::*;
use crate::http::HttpResponse;
use crate::jose::test_keys::{ec_key, jwks, rsa_jwk, sign_es256, sign_rs256, signing_input};
use crate::resource_server::{AccessTokenClaims, AccessTokenVerifier};
use ring::signature::EcdsaKeyPair;
use std::time::Duration;

/// Where the fake latchkey's keys are.
const JWKS_URI: &str = "https://as.example/oauth2/v3/certs";
/// The `kid` of the issuer's P-256 key.
const KID: &str = "idt-ec-1";

/// A verifier of the fake issuer's tokens for the API at time [`NOW`], whose latchkey answers `answers`.
fn verifier(answers: Vec<HttpResponse>) -> (AccessTokenVerifier, Arc<FakeHttp>, Arc<ManualClock>) {
    let http = FakeHttp::new(answers);
    let clock = ManualClock::at(NOW);
    let verifier =
        AccessTokenVerifier::new(format!("{ISSUER}/"), API, JWKS_URI, http.clone()).with_clock(clock.clone());
    (verifier, http, clock)
}

/// The header latchkey puts on an access token.
fn header(alg: &str, kid: &str) -> Value {
    json!({ "alg": alg, "typ": "at+jwt", "kid": kid })
}

/// The claims latchkey puts in an access token for the API.
fn claims() -> Value {
    json!({
        "iss": ISSUER, "aud": API, "sub": "u1", "client_id": "lkapp-test", "scope": "orders.read orders.write",
        "exp": NOW + 300, "iat": NOW, "jti": "at-1", "auth_time": NOW - 100,
    })
}

/// An access token signed with `key` under [`KID`].
fn token(key: &EcdsaKeyPair, claims: &Value) -> String {
    sign_es256(key, &header("ES256", KID), claims)
}

/// The claims of the token of [`claims`].
fn expected() -> AccessTokenClaims {
    AccessTokenClaims {
        iss: ISSUER.into(),
        sub: "u1".into(),
        aud: vec![API.into()],
        client_id: "lkapp-test".into(),
        scope: vec!["orders.read".into(), "orders.write".into()],
        exp: NOW + 300,
        iat: NOW,
        jti: "at-1".into(),
        auth_time: Some(NOW - 100),
    }
}

/// A verifier holding the issuer's P-256 key, and that key.
fn with_ec_key() -> (AccessTokenVerifier, Arc<FakeHttp>, Arc<ManualClock>, EcdsaKeyPair) {
    let (key, jwk) = ec_key(KID);
    let (verifier, http, clock) = verifier(vec![jwks(vec![jwk])]);
    (verifier, http, clock, key)
}

#[tokio::test]
async fn an_es256_token_as_latchkey_makes_them_verifies() {
    let (verifier, http, _, key) = with_ec_key();
    let claims = verifier.verify(&token(&key, &claims())).await.expect("verified");
    assert_eq!(claims, expected());
    assert!(claims.has_scope("orders.read") && !claims.has_scope("orders"));
    let sent = http.requests();
    assert_eq!((sent.len(), sent[0].method, sent[0].url.as_str()), (1, "GET", JWKS_URI));
    let mut c = self::claims();
    c["aud"] = json!(["https://api.example.com/billing", API]);
    c.as_object_mut().expect("object").remove("scope");
    c.as_object_mut().expect("object").remove("auth_time");
    let claims = verifier.verify(&token(&key, &c)).await.expect("an array aud naming the API");
    assert_eq!((claims.scope.len(), claims.auth_time, claims.aud.len()), (0, None, 2));
    assert_eq!(http.requests().len(), 1, "the keys are cached");
    assert_eq!((verifier.issuer(), verifier.audience(), verifier.jwks_uri()), (ISSUER, API, JWKS_URI));
}

#[tokio::test]
async fn an_rs256_token_verifies_with_an_rsa_key() {
    let (verifier, _, _) = verifier(vec![jwks(vec![rsa_jwk("idt-rsa-1")])]);
    let claims = verifier.verify(&sign_rs256(&header("RS256", "idt-rsa-1"), &claims())).await.expect("verified");
    assert_eq!(claims, expected());
}

#[tokio::test]
async fn the_header_must_type_the_token_as_an_access_token() {
    let (verifier, _, _, key) = with_ec_key();
    for typ in [None, Some("JWT"), Some("secevent+jwt"), Some("application/jwt")] {
        let mut h = header("ES256", KID);
        match typ {
            Some(t) => h["typ"] = json!(t),
            None => drop(h.as_object_mut().expect("object").remove("typ")),
        }
        let t = sign_es256(&key, &h, &claims());
        let why = invalid(verifier.verify(&t).await, &t);
        assert!(why.contains("typ"), "{typ:?}: {why}");
    }
    for typ in ["application/at+jwt", "AT+JWT", "Application/At+Jwt"] {
        let h = json!({ "alg": "ES256", "typ": typ, "kid": KID });
        assert!(verifier.verify(&sign_es256(&key, &h, &claims())).await.is_ok(), "{typ}");
    }
}

#[tokio::test]
async fn the_audience_must_name_this_api() {
    let (verifier, _, _, key) = with_ec_key();
    for aud in [json!("https://api.example.com/billing"), json!(["https://api.example.com"]), json!([]), json!(1)] {
        let mut c = claims();
        c["aud"] = aud.clone();
        let t = token(&key, &c);
        invalid(verifier.verify(&t).await, &t);
    }
    let mut c = claims();
    c.as_object_mut().expect("object").remove("aud");
    let t = token(&key, &c);
    invalid(verifier.verify(&t).await, &t);
}

#[tokio::test]
async fn the_issuer_must_be_exactly_the_issuer() {
    let (verifier, _, _, key) = with_ec_key();
    for iss in [json!("https://evil.example"), json!(format!("{ISSUER}/")), json!(null)] {
        let mut c = claims();
        c["iss"] = iss.clone();
        let t = token(&key, &c);
        invalid(verifier.verify(&t).await, &t);
    }
}

#[tokio::test]
async fn an_expired_token_or_one_issued_in_the_future_is_refused_with_a_minute_of_leeway() {
    let (verifier, _, clock, key) = with_ec_key();
    let t = token(&key, &claims());
    clock.advance(300 + 59);
    assert!(verifier.verify(&t).await.is_ok(), "within the leeway");
    clock.advance(1);
    assert!(invalid(verifier.verify(&t).await, &t).contains("expired"));
    let (verifier, _, _, key) = with_ec_key();
    let mut c = claims();
    c["iat"] = json!(NOW + 60);
    assert!(verifier.verify(&token(&key, &c)).await.is_ok(), "within the leeway");
    c["iat"] = json!(NOW + 61);
    let t = token(&key, &c);
    assert!(invalid(verifier.verify(&t).await, &t).contains("not valid yet"));
    let mut c = claims();
    c["nbf"] = json!(NOW + 61);
    let t = token(&key, &c);
    invalid(verifier.verify(&t).await, &t);
}

#[tokio::test]
async fn a_token_lacks_none_of_sub_client_id_exp_iat_and_jti() {
    let (verifier, _, _, key) = with_ec_key();
    for missing in ["sub", "client_id", "exp", "iat", "jti"] {
        let mut c = claims();
        c.as_object_mut().expect("object").remove(missing);
        let t = token(&key, &c);
        assert!(invalid(verifier.verify(&t).await, &t).contains(missing), "without {missing}");
    }
    let mut c = claims();
    c["sub"] = json!("");
    let t = token(&key, &c);
    invalid(verifier.verify(&t).await, &t);
}

#[tokio::test]
async fn none_and_hmac_are_refused_before_any_key_is_fetched() {
    let (verifier, http, _, _) = with_ec_key();
    let none = format!("{}.", signing_input(&header("none", KID), &claims()));
    invalid(verifier.verify(&none).await, &none);
    for alg in ["HS256", "RS384", "ES384"] {
        let t = sign_rs256(&header(alg, KID), &claims());
        assert!(invalid(verifier.verify(&t).await, &t).contains(alg), "{alg}");
    }
    for garbage in ["", "lka_opaque-token", "a.b.c"] {
        invalid(verifier.verify(garbage).await, garbage);
    }
    assert!(http.requests().is_empty());
}

#[tokio::test]
async fn a_signature_that_does_not_verify_is_refused() {
    let (verifier, _, _, key) = with_ec_key();
    let good = token(&key, &claims());
    let (input, _) = good.rsplit_once('.').expect("three parts");
    let mut c = claims();
    c["scope"] = json!("orders.admin");
    let other = token(&key, &c);
    let (other_input, other_signature) = other.rsplit_once('.').expect("three parts");
    let swapped = format!("{input}.{other_signature}");
    assert!(invalid(verifier.verify(&swapped).await, &swapped).contains("signature"));
    let (impostor, _) = ec_key(KID);
    let forged = token(&impostor, &c);
    assert!(invalid(verifier.verify(&forged).await, &forged).contains("signature"), "another key, the same kid");
    let rsa = sign_rs256(&header("RS256", KID), &claims());
    invalid(verifier.verify(&rsa).await, &rsa);
    assert!(verifier.verify(&format!("{other_input}.{other_signature}")).await.is_ok());
}

#[tokio::test]
async fn an_unknown_kid_is_refetched_at_most_once_per_interval_then_refused() {
    let (key, jwk) = ec_key(KID);
    let (new_key, new_jwk) = ec_key("idt-ec-2");
    let answers = vec![jwks(vec![jwk.clone()]), jwks(vec![jwk.clone()]), jwks(vec![jwk, new_jwk])];
    let (verifier, http, clock) = verifier(answers);
    verifier.verify(&token(&key, &claims())).await.expect("verified");
    let rotated = sign_es256(&new_key, &header("ES256", "idt-ec-2"), &claims());
    assert!(invalid(verifier.verify(&rotated).await, &rotated).contains("idt-ec-2"));
    assert_eq!(http.requests().len(), 2, "an unknown kid fetches the keys again");
    clock.advance(59);
    invalid(verifier.verify(&rotated).await, &rotated);
    assert_eq!(http.requests().len(), 2, "not again within the interval");
    clock.advance(1);
    assert_eq!(verifier.verify(&rotated).await.expect("the rotated key, fetched"), expected());
    assert_eq!(http.requests().len(), 3);
}

#[tokio::test]
async fn the_refetch_interval_can_be_changed() {
    let (key, jwk) = ec_key(KID);
    let (verifier, http, clock) = verifier(vec![jwks(vec![jwk.clone()]), jwks(vec![jwk])]);
    let verifier = verifier.with_min_refetch_interval(Duration::from_secs(5));
    verifier.refresh_keys().await.expect("keys");
    clock.advance(5);
    let unknown = sign_es256(&key, &header("ES256", "idt-ec-9"), &claims());
    invalid(verifier.verify(&unknown).await, &unknown);
    assert_eq!(http.requests().len(), 2);
}

#[tokio::test]
async fn keys_that_cannot_be_fetched_are_not_the_tokens_fault() {
    let (key, _) = ec_key(KID);
    let (verifier, _, _) = verifier(vec![fake_http::json(500, json!({}))]);
    let e = verifier.verify(&token(&key, &claims())).await.expect_err("no keys");
    assert!(matches!(e, Error::Transport(_)), "{e:?}");
}
