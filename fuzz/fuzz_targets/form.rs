//! Form bodies (`application/x-www-form-urlencoded`) as `/token` and `/revoke` read them: UTF-8 once
//! percent-decoded, a parameter sent twice refused (RFC 6749 §3.2), and more than `MAX_FORM_PAIRS` refused.
#![no_main]

use latchkey_core::token::{Form, MAX_FORM_PAIRS};
use latchkey_server::parsers::form_body;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let Ok(pairs) = form_body(body) else { return };
    let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let repeated = borrowed.iter().enumerate().any(|(i, (k, _))| borrowed[..i].iter().any(|(p, _)| p == k));
    let form = Form::new(borrowed.clone());
    let too_many = borrowed.len() > MAX_FORM_PAIRS;
    assert_eq!(form.is_err(), repeated || too_many, "a form is refused exactly when a name repeats or it is too long");
    if let Ok(form) = form {
        for (k, v) in &borrowed {
            assert_eq!(form.get(k), Some(*v).filter(|v| !v.is_empty()));
        }
    }
});
