//! Tests of both ways an API checks its access tokens, against a fake latchkey.

mod access_token;
mod introspection;

use crate::clock::ManualClock;
use crate::fake_http::{self, FakeHttp, ISSUER};
use crate::Error;
use serde_json::{json, Value};
use std::sync::Arc;

/// The API's resource URI.
const API: &str = "https://api.example.com/orders";
/// The time the tests start at.
const NOW: i64 = 1_800_000_000;

/// The error a refused token gets, which must not repeat the token.
fn invalid(result: Result<impl std::fmt::Debug, Error>, token: &str) -> String {
    match result {
        Err(Error::InvalidToken(why)) => {
            assert!(token.is_empty() || !why.contains(token), "the error repeats the token");
            why
        }
        other => panic!("not an invalid token: {other:?}"),
    }
}
