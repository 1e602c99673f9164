//! A token request as the core reads it: the form's grant and the client's authentication from the body or an
//! HTTP Basic `Authorization` header (RFC 6749 §2.3.1, percent-encoded id and secret).
#![no_main]

use latchkey_core::token::{self, Form};
use latchkey_server::parsers::form_body;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (&[u8], Option<&str>)| {
    let (body, authorization) = input;
    let Ok(pairs) = form_body(body) else { return };
    let Ok(form) = Form::new(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()) else { return };
    if let Ok(request) = token::parse(&form, authorization) {
        assert!(!request.client.client_id.is_empty());
        if authorization.is_none() {
            assert_eq!(form.get("client_id"), Some(request.client.client_id.as_str()));
        }
    }
});
