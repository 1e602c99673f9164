//! A service-account public key uploaded as PEM (SubjectPublicKeyInfo): RSA of 2048 to 4096 bits or a P-256
//! point, anything else refused, without a panic.
#![no_main]

use latchkey_core::service_account::PublicKey;
use latchkey_server::parsers::public_key_of_pem;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|pem: &str| {
    match public_key_of_pem(pem) {
        Some(PublicKey::Es256 { point }) => assert!(point.len() == 65 && point[0] == 4),
        Some(PublicKey::Rs256 { n, .. }) => assert!((256..=512).contains(&n.len())),
        None => {}
    }
});
