//! The data API's `channels.list` query: one filter, known parts, `maxResults` 0 to 50, a page token we issued,
//! no parameter it reads sent twice.
#![no_main]

use latchkey_server::parsers::{channels_query, pairs, Filter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|query: &[u8]| {
    let decoded = pairs(query);
    if let Ok(q) = channels_query(&decoded) {
        assert!(!q.parts.is_empty() && q.size <= 50);
        for name in ["part", "id", "mine", "managedByMe", "maxResults", "pageToken", "onBehalfOfContentOwner"] {
            let sent = decoded.iter().filter(|(k, _)| k == name).count();
            assert!(sent <= 1, "{name} sent {sent} times was accepted");
        }
        assert!(decoded.iter().any(|(k, _)| k == "part"), "part is required");
        if let Filter::Ids(ids) = &q.filter {
            assert!(!ids.is_empty() && ids.len() <= 50);
        }
    }
});
