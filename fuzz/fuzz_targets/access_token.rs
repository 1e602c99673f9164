//! Access tokens (versions 1 and 2, for a grant or a service-account key): any string is refused or verified by
//! its MAC, without a panic; none the fuzzer writes passes.
#![no_main]

use latchkey_core::access_token::{self, MacKey};
use latchkey_core::time::UnixTime;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|token: &str| {
    let keys = [MacKey::new(1, &[7; 32]), MacKey::new(2, &[9; 32])];
    // Nothing the fuzzer writes carries a MAC under these keys.
    assert!(access_token::verify(&keys, token, UnixTime(1_700_000_000)).is_err(), "{token:?} verified");
});
