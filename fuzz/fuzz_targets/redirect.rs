//! Redirect-URI matching against the reference model of the property tests: a match is never found where the
//! raw strings differ outside a loopback port (`scripts/fuzz.sh --planted` shows this target finds a flipped
//! check).
#![no_main]

#[path = "../../crates/latchkey-core/tests/model/redirect.rs"]
mod model;

use latchkey_core::client::ClientType;
use latchkey_core::redirect;
use libfuzzer_sys::fuzz_target;

const TYPES: [ClientType; 4] =
    [ClientType::Desktop, ClientType::Mobile, ClientType::UniversalDesktop, ClientType::BrowserExtension];

fuzz_target!(|input: (u8, &str)| {
    let (kind, uri) = input;
    let t = TYPES[usize::from(kind) % TYPES.len()];
    if redirect::check(&model::client(t), uri).is_ok() {
        assert!(model::may_match(t, uri), "{t:?} accepted {uri:?}");
    }
});
