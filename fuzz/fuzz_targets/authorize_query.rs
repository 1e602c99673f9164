//! The authorization endpoint's query: decoded, and the first known parameter sent twice noted (it is refused).
#![no_main]

use latchkey_core::authorize::AuthorizeParams;
use latchkey_server::parsers::pairs;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|query: &[u8]| {
    let decoded = pairs(query);
    let params = AuthorizeParams::from_pairs(decoded.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    if let Some(name) = params.duplicate {
        assert!(decoded.iter().filter(|(k, _)| k == name).count() >= 2, "{name} was not repeated");
    }
    if let Some(id) = &params.client_id {
        assert!(decoded.iter().any(|(k, v)| k == "client_id" && v == id));
    }
});
