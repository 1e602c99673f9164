//! The DPoP proof parser and verifier (RFC 9449 §4.3): any `DPoP` header value is refused or accepted without a
//! panic, and an accepted proof is bound to the method and URL asked for.
#![no_main]

use latchkey_core::dpop::{self, Window};
use latchkey_core::time::UnixTime;
use libfuzzer_sys::fuzz_target;

const URL: &str = "https://127.0.0.1:8443/token";

fuzz_target!(|proof: &str| {
    let window = Window { max_age: 60, max_future: 5 };
    let now = UnixTime(1_700_000_000);
    if let Ok(p) = dpop::verify(proof, "POST", URL, now, window) {
        // Only a proof signed by the key it names gets here (a seed is; the fuzzer cannot forge one).
        assert!(p.jkt.len() == 43 && !p.jti.is_empty());
        assert!((now.0 - window.max_age..=now.0 + window.max_future).contains(&p.iat.0), "{}", p.iat.0);
        assert!(proof.contains('.') && proof.len() <= 8192);
    }
});
