//! Keys and signing for the tests of every verifier: an RSA key made once, fresh P-256 keys, their public JWKs
//! as an issuer publishes them, and compact JWSs signed with them whatever their header says.

use crate::fake_http;
use crate::http::HttpResponse;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, RsaKeyPair, RsaPublicKeyComponents};
use serde_json::{json, Value};

/// A 2048-bit RSA key made once with `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -outform DER`.
const RSA_PKCS8: &[u8] = include_bytes!("testdata/set-signing-rsa2048.pk8.der");

/// The RSA test key.
pub(crate) fn rsa_key() -> RsaKeyPair {
    RsaKeyPair::from_pkcs8(RSA_PKCS8).expect("the RSA fixture is PKCS#8")
}

/// The public JWK of the RSA test key, as latchkey publishes it.
pub(crate) fn rsa_jwk(kid: &str) -> Value {
    let public = RsaPublicKeyComponents::<Vec<u8>>::from(rsa_key().public());
    json!({
        "kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
        "n": URL_SAFE_NO_PAD.encode(&public.n), "e": URL_SAFE_NO_PAD.encode(&public.e),
    })
}

/// A fresh P-256 key and its public JWK.
pub(crate) fn ec_key(kid: &str) -> (EcdsaKeyPair, Value) {
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

/// A JWKS answer holding `keys`.
pub(crate) fn jwks(keys: Vec<Value>) -> HttpResponse {
    fake_http::json(200, json!({ "keys": keys }))
}

/// `header.claims`, base64url-encoded.
pub(crate) fn signing_input(header: &Value, claims: &Value) -> String {
    format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()))
}

/// A compact JWS signed with the RSA test key (RS256), whatever its header says.
pub(crate) fn sign_rs256(header: &Value, claims: &Value) -> String {
    let input = signing_input(header, claims);
    let key = rsa_key();
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(&ring::signature::RSA_PKCS1_SHA256, &SystemRandom::new(), input.as_bytes(), &mut signature)
        .expect("RS256 signing");
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// A compact JWS signed with a P-256 key (ES256), whatever its header says.
pub(crate) fn sign_es256(key: &EcdsaKeyPair, header: &Value, claims: &Value) -> String {
    let input = signing_input(header, claims);
    let signature = key.sign(&SystemRandom::new(), input.as_bytes()).expect("ES256 signing");
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
}
