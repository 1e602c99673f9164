//! Form bodies (`application/x-www-form-urlencoded`) as `/token` and `/revoke` read them: UTF-8 once
//! percent-decoded, and a parameter sent twice refused (RFC 6749 §3.2).
#![no_main]

use latchkey_core::token::Form;
use latchkey_server::parsers::form_body;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let Ok(pairs) = form_body(body) else { return };
    let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let repeated = borrowed.iter().enumerate().any(|(i, (k, _))| borrowed[..i].iter().any(|(p, _)| p == k));
    let form = Form::new(borrowed.clone());
    assert_eq!(form.is_err(), repeated, "a form is refused exactly when a name repeats");
    if let Ok(form) = form {
        for (k, v) in &borrowed {
            assert_eq!(form.get(k), Some(*v).filter(|v| !v.is_empty()));
        }
    }
});
