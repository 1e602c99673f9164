//! A service account's JWT assertion (RFC 7523): parsed (RS256 or ES256 only) and verified against a P-256 and
//! an RSA key; nothing the fuzzer writes is signed by them, so none may pass.
#![no_main]

use latchkey_core::service_account::{Assertion, PublicKey};
use latchkey_core::time::UnixTime;
use libfuzzer_sys::fuzz_target;

/// The generator point of P-256, uncompressed: a valid public key (its private key is 1, but nothing here signs
/// with it, and the fuzzer cannot sign at all).
const P256_G: &str = "046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c2964fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

fuzz_target!(|raw: &str| {
    let Ok(assertion) = Assertion::parse(raw) else { return };
    let _ = (assertion.kid(), assertion.claims());
    let keys = [PublicKey::Es256 { point: unhex(P256_G) }, PublicKey::Rs256 { n: vec![0xc5; 256], e: vec![1, 0, 1] }];
    for key in &keys {
        let verified = assertion.verify(key, "https://127.0.0.1:8443/token", UnixTime(1_700_000_000));
        assert!(verified.is_err(), "an assertion verified without its private key");
    }
});
