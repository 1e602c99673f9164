//! Tests of the receiver against SETs signed as latchkey signs them, with the keys served by a fake server.

mod discovery_and_poll;
mod keys_fetch;
mod receive;

use super::SetReceiver;
use crate::clock::Clock;
use crate::fake_http::{self, FakeHttp, ISSUER};
use crate::http::HttpResponse;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, RsaKeyPair, RsaPublicKeyComponents};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// The app the SETs are for.
const CLIENT_ID: &str = "lkapp-test";
/// Where the fake server's keys are.
const JWKS_URI: &str = "https://as.example/jwks";
/// The `kid` of the RSA test key.
const KID: &str = "set-rsa-1";

/// A 2048-bit RSA key made once with `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -outform DER`.
const RSA_PKCS8: &[u8] = include_bytes!("testdata/set-signing-rsa2048.pk8.der");

/// A clock the tests move by hand.
struct ManualClock(AtomicI64);

impl ManualClock {
    fn at(now: i64) -> Arc<Self> {
        Arc::new(Self(AtomicI64::new(now)))
    }

    fn advance(&self, seconds: i64) {
        self.0.fetch_add(seconds, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// The RSA test key.
fn rsa_key() -> RsaKeyPair {
    RsaKeyPair::from_pkcs8(RSA_PKCS8).expect("the RSA fixture is PKCS#8")
}

/// The public JWK of the RSA test key, as latchkey publishes it.
fn rsa_jwk(kid: &str) -> Value {
    let public = RsaPublicKeyComponents::<Vec<u8>>::from(rsa_key().public());
    json!({
        "kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
        "n": URL_SAFE_NO_PAD.encode(&public.n), "e": URL_SAFE_NO_PAD.encode(&public.e),
    })
}

/// A JWKS answer holding `keys`.
fn jwks(keys: Vec<Value>) -> HttpResponse {
    fake_http::json(200, json!({ "keys": keys }))
}

/// The header latchkey puts on a SET signed with the RSA test key.
fn header() -> Value {
    json!({ "alg": "RS256", "typ": "secevent+jwt", "kid": KID })
}

/// The claims of a sessions-revoked SET for user `u1`.
fn claims(jti: &str) -> Value {
    json!({
        "iss": ISSUER, "aud": CLIENT_ID, "jti": jti, "iat": 1_764_170_000, "txn": "t1",
        "sub_id": { "format": "iss_sub", "iss": ISSUER, "sub": "u1" },
        "events": { super::event_type::SESSIONS_REVOKED: {} },
    })
}

/// `header.claims`, base64url-encoded.
fn signing_input(header: &Value, claims: &Value) -> String {
    format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()))
}

/// A SET signed with the RSA test key (RS256), whatever its header says.
fn sign_rs256(header: &Value, claims: &Value) -> String {
    let input = signing_input(header, claims);
    let key = rsa_key();
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(&ring::signature::RSA_PKCS1_SHA256, &SystemRandom::new(), input.as_bytes(), &mut signature)
        .expect("RS256 signing");
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// A SET signed the way latchkey signs them.
fn set(claims: &Value) -> String {
    sign_rs256(&header(), claims)
}

/// A fresh P-256 key and its public JWK.
fn ec_key(kid: &str) -> (EcdsaKeyPair, Value) {
    let alg = &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let rng = SystemRandom::new();
    let der = EcdsaKeyPair::generate_pkcs8(alg, &rng).expect("P-256 key");
    let pair = EcdsaKeyPair::from_pkcs8(alg, der.as_ref(), &rng).expect("P-256 key");
    let point = pair.public_key().as_ref();
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..]),
    });
    (pair, jwk)
}

/// A SET signed with a P-256 key (ES256).
fn sign_es256(key: &EcdsaKeyPair, kid: &str, claims: &Value) -> String {
    let input = signing_input(&json!({ "alg": "ES256", "typ": "secevent+jwt", "kid": kid }), claims);
    let signature = key.sign(&SystemRandom::new(), input.as_bytes()).expect("ES256 signing");
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
}

/// A receiver of the fake issuer's SETs for the test app, at time 1000, whose server answers `answers`.
fn receiver(answers: Vec<HttpResponse>) -> (SetReceiver, Arc<FakeHttp>, Arc<ManualClock>) {
    let http = FakeHttp::new(answers);
    let clock = ManualClock::at(1000);
    let receiver = SetReceiver::new(ISSUER, CLIENT_ID, JWKS_URI, http.clone()).with_clock(clock.clone());
    (receiver, http, clock)
}

/// The error code a refused SET gets.
async fn refused(receiver: &SetReceiver, set: &str) -> &'static str {
    match receiver.receive(set).await {
        Ok(r) => panic!("the SET was accepted: {r:?}"),
        Err(e) => e.err(),
    }
}
