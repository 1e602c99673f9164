//! The browser's session cookie: any `Cookie` header yields at most the allowed number of well-formed tokens, or
//! is refused as tampered.
#![no_main]

use http::{header, HeaderMap, HeaderValue};
use latchkey_server::parsers::cookie_tokens;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|values: Vec<&[u8]>| {
    let mut headers = HeaderMap::new();
    for v in values.iter().take(4) {
        if let Ok(v) = HeaderValue::from_bytes(v) {
            headers.append(header::COOKIE, v);
        }
    }
    if let Ok(tokens) = cookie_tokens(&headers, 10) {
        assert!(tokens.len() <= 10);
        assert!(tokens.iter().all(|t| t.len() == 43));
    }
});
