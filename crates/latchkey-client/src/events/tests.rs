//! Tests of the receiver against SETs signed as latchkey signs them, with the keys served by a fake server.

mod discovery_and_poll;
mod keys_fetch;
mod receive;

use super::SetReceiver;
use crate::clock::ManualClock;
use crate::fake_http::{self, FakeHttp, ISSUER};
use crate::http::HttpResponse;
use crate::jose::test_keys::{ec_key, jwks, rsa_jwk, sign_rs256, signing_input};
use ring::signature::EcdsaKeyPair;
use serde_json::{json, Value};
use std::sync::Arc;

/// The app the SETs are for.
const CLIENT_ID: &str = "lkapp-test";
/// Where the fake server's keys are.
const JWKS_URI: &str = "https://as.example/jwks";
/// The `kid` of the RSA test key.
const KID: &str = "set-rsa-1";

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

/// A SET signed the way latchkey signs them.
fn set(claims: &Value) -> String {
    sign_rs256(&header(), claims)
}

/// A SET signed with a P-256 key (ES256).
fn sign_es256(key: &EcdsaKeyPair, kid: &str, claims: &Value) -> String {
    crate::jose::test_keys::sign_es256(key, &json!({ "alg": "ES256", "typ": "secevent+jwt", "kid": kid }), claims)
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
