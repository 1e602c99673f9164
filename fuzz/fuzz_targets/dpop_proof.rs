//! The DPoP proof parser and verifier (RFC 9449 §4.3): any `DPoP` header value is refused or accepted without a
//! panic, and an accepted proof is bound to the method and URL asked for.
#![no_main]

use latchkey_core::dpop::{self, Window};
use latchkey_core::time::UnixTime;
use libfuzzer_sys::fuzz_target;

const URL: &str = "https://127.0.0.1:8443/token";

fuzz_target!(|proof: &str| {
    let window = Window { max_age: 60, max_future: 5 };
    if let Ok(p) = dpop::verify(proof, "POST", URL, UnixTime(1_700_000_000), window) {
        // Only a proof signed by the key it names gets here: the fuzzer cannot forge one.
        assert!(!p.jkt.is_empty());
    }
});
