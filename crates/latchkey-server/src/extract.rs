//! Request parsing shared by the handlers: form bodies, query strings, bearer tokens, the client address.

use axum::http::{header, HeaderMap};
use latchkey_core::token::MAX_FORM_PAIRS;
use latchkey_core::OAuthError;
use std::net::SocketAddr;

/// The peer address of the connection, set by the listener.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub SocketAddr);

/// Decoded `name=value` pairs of a query string or form body, in order, repeats kept.
pub type Pairs = Vec<(String, String)>;

/// The value of the field `name` of a form (the first, if it repeats), or `""`.
pub fn field<'f>(form: &'f Pairs, name: &str) -> &'f str {
    form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or("")
}

/// Decodes `application/x-www-form-urlencoded` text.
pub fn pairs(text: &[u8]) -> Pairs {
    pairs_at_most(text, usize::MAX)
}

/// The first `max` pairs of [`pairs`].
fn pairs_at_most(text: &[u8], max: usize) -> Pairs {
    form_urlencoded::parse(text).take(max).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

/// The pairs of a `/token` or `/revoke` body, decoded up to one pair past [`MAX_FORM_PAIRS`], so that
/// [`latchkey_core::token::Form::new`] refuses a longer one without every pair of it being decoded.
pub fn token_form(body: &[u8]) -> Result<Pairs, OAuthError> {
    form_body_at_most(body, MAX_FORM_PAIRS + 1)
}

/// Borrows pairs for the core's parsers.
pub fn borrowed(pairs: &Pairs) -> Vec<(&str, &str)> {
    pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// Decodes a form body, refusing any other content type (RFC 6749 §3.2).
pub fn form(headers: &HeaderMap, body: &[u8]) -> Result<Pairs, OAuthError> {
    if !is_form(headers) {
        return Err(OAuthError::invalid_request("Content-Type must be application/x-www-form-urlencoded."));
    }
    form_body(body)
}

/// Decodes a body known to be a form, refusing one that is not UTF-8 once percent-decoded.
pub fn form_body(body: &[u8]) -> Result<Pairs, OAuthError> {
    form_body_at_most(body, usize::MAX)
}

/// [`form_body`], decoding at most `max` pairs: a caller that refuses more than `max - 1` learns that there were
/// more without decoding them all.
fn form_body_at_most(body: &[u8], max: usize) -> Result<Pairs, OAuthError> {
    // Only a byte over 0x7f, raw or percent-escaped (`%8`..`%F`), can make invalid UTF-8. Two vectorised passes
    // (ASCII? any `%`?) find none in nearly every form; only then is it looked at closely, and decoded strictly.
    let high_escape =
        |after: &[u8]| after.first().is_some_and(|h| matches!(h, b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F'));
    let high = !body.is_ascii() || (body.contains(&b'%') && body.split(|&b| b == b'%').skip(1).any(high_escape));
    if high && !is_utf8_when_decoded(body) {
        return Err(OAuthError::invalid_request("The form is not valid UTF-8 once percent-decoded."));
    }
    Ok(pairs_at_most(body, max))
}

/// Whether a form body, percent-decoded, is UTF-8. The separators are ASCII, so the whole is valid exactly when
/// every name and value is.
fn is_utf8_when_decoded(body: &[u8]) -> bool {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        match (body[i], body.get(i + 1).copied().and_then(hex), body.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    std::str::from_utf8(&out).is_ok()
}

/// Whether the body is declared `application/x-www-form-urlencoded` (parameters allowed).
pub fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/x-www-form-urlencoded"))
}

/// One header's value as text, refusing a repeated header.
pub fn single_header<'h>(headers: &'h HeaderMap, name: &header::HeaderName) -> Result<Option<&'h str>, OAuthError> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(OAuthError::invalid_request(format!("The {name} header was sent more than once.")));
    }
    first
        .map(|v| v.to_str().map_err(|_| OAuthError::invalid_request(format!("The {name} header is not text."))))
        .transpose()
}
