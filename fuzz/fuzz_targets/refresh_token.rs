//! Refresh tokens and authorization codes as presented: a refresh token names its grant only in the form we issue
//! (`lkr_` ...); anything else is unknown, without a panic. (A code is opaque: it is found by its hash alone.)
#![no_main]

use latchkey_core::refresh_token;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|token: &str| {
    if let Some(id) = refresh_token::grant_id(token) {
        // The id is the token's own: 22 characters after the prefix, which encode it again the same way.
        assert_eq!(&token[refresh_token::PREFIX.len()..][..22], id.encode(), "{token:?}");
    }
});
