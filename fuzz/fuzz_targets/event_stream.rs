//! A Shared Signals stream's settings as a receiver sends them: the push URL (HTTPS, or loopback HTTP when
//! allowed) and the `Authorization` header value latchkey will send with each push.
#![no_main]

use latchkey_core::events::stream::{check_authorization_header, check_push_url};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (bool, &str, &str)| {
    let (loopback, url, authorization) = input;
    if check_push_url(url, loopback).is_ok() {
        let scheme = url::Url::parse(url).map(|u| u.scheme().to_owned()).expect("an accepted URL parses");
        assert!(scheme == "https" || (loopback && scheme == "http"), "{url:?}");
    }
    if check_authorization_header(authorization).is_ok() {
        assert!(http::HeaderValue::from_str(authorization).is_ok(), "{authorization:?}");
    }
});
