//! Redirect URIs: which URI a client may use (RFC 6749 §3.1.2, RFC 8252 §7, `docs/decisions.md`, "Redirect URIs"), and
//! how the authorization response is added to it.
//!
//! URIs are compared as exact strings, never after URL normalisation. The one exception is RFC 8252 §7.3: for a
//! loopback IP literal only the port may differ, and desktop apps need not register loopback URIs at all.

mod guidance;

pub use guidance::{accepted_forms, hint};

use crate::client::{is_package_sid_uri, scheme_of, Client, ClientType, CUSTOM_SCHEME_UNSUPPORTED};
use crate::{ErrorCode, OAuthError};

/// The deprecated out-of-band redirect values.
const OOB: [&str; 3] = ["urn:ietf:wg:oauth:2.0:oob", "urn:ietf:wg:oauth:2.0:oob:auto", "oob"];

/// Checks `redirect_uri` against the client. Every failure is user-facing: such a URI is never redirected to.
pub fn check(client: &Client, uri: &str) -> Result<(), OAuthError> {
    if OOB.contains(&uri) {
        return Err(mismatch(
            "The out-of-band (OOB) flow has been deprecated and is no longer supported. Use a loopback or \
             custom URI scheme redirect.",
        ));
    }
    if uri.is_empty() || uri.len() > 2048 || uri.contains('#') || uri.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(mismatch("The redirect_uri is not a valid absolute URI without a fragment."));
    }
    if client.redirect_uris.iter().any(|r| r == uri) && type_allows(client, uri).is_ok() {
        return Ok(());
    }
    type_allows(client, uri)?;
    if let Some(loopback) = Loopback::parse(uri) {
        if client.client_type == ClientType::Desktop {
            let registered_same_but_port =
                client.redirect_uris.iter().filter_map(|r| Loopback::parse(r)).any(|r| r.same_but_port(&loopback));
            if loopback.host != "localhost" || registered_same_but_port {
                return Ok(());
            }
        }
    }
    Err(mismatch("The redirect URI in the request does not match the ones authorized for the OAuth client."))
}

/// Whether the client type admits this kind of URI at all.
fn type_allows(client: &Client, uri: &str) -> Result<(), OAuthError> {
    let scheme = scheme_of(uri).ok_or_else(|| mismatch("The redirect_uri has no valid scheme."))?;
    let loopback = Loopback::parse(uri).is_some();
    match client.client_type {
        ClientType::Desktop => Ok(()),
        ClientType::Tv => Err(OAuthError::page(
            ErrorCode::InvalidRequest,
            "This client is a TV or Limited Input device: it signs in with the device flow (RFC 8628), not at the \
             authorization endpoint.",
        )),
        ClientType::Mobile | ClientType::UniversalDesktop if loopback => {
            Err(mismatch("The loopback redirect method is only supported for desktop app clients."))
        }
        ClientType::Mobile => Ok(()),
        ClientType::UniversalDesktop => {
            if scheme.len() > 39 {
                Err(mismatch("A custom URI scheme of a universal desktop platform client is at most 39 characters."))
            } else if !is_package_sid_uri(uri, scheme, client.details.package_sid.as_deref()) {
                Err(mismatch(
                    "The redirect URI of a universal desktop platform client is \
                     <platform_scheme>://<package_sid_lowercase>, with the client's own package SID.",
                ))
            } else {
                Ok(())
            }
        }
        ClientType::BrowserExtension => {
            if loopback {
                Err(mismatch("The loopback redirect method is only supported for desktop app clients."))
            } else if scheme != "https" {
                Err(OAuthError::page(
                    ErrorCode::InvalidRequest,
                    format!("{CUSTOM_SCHEME_UNSUPPORTED}. Browser extensions use the browser's identity API."),
                ))
            } else {
                Ok(())
            }
        }
    }
}

fn mismatch(text: &'static str) -> OAuthError {
    OAuthError::page(ErrorCode::RedirectUriMismatch, text)
}

/// An `http` loopback redirect URI, split into its parts.
#[derive(Debug, PartialEq, Eq)]
struct Loopback<'a> {
    host: &'a str,
    port: Option<u16>,
    rest: &'a str,
}

impl<'a> Loopback<'a> {
    /// Parses `http://127.0.0.1[:port][/path]`, `http://[::1]...` or `http://localhost...`, exactly as written:
    /// no other spelling of an address counts as loopback.
    fn parse(uri: &'a str) -> Option<Self> {
        let after = uri.strip_prefix("http://")?;
        let (host, tail) =
            ["127.0.0.1", "[::1]", "localhost"].into_iter().find_map(|h| after.strip_prefix(h).map(|t| (h, t)))?;
        let (port, rest) = match tail.strip_prefix(':') {
            Some(p) => {
                let end = p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len());
                let (digits, rest) = p.split_at(end);
                if digits.is_empty() || digits.starts_with('0') || digits.len() > 5 {
                    return None;
                }
                (Some(digits.parse::<u16>().ok()?), rest)
            }
            None => (None, tail),
        };
        (rest.is_empty() || rest.starts_with('/') || rest.starts_with('?')).then_some(Self { host, port, rest })
    }

    fn same_but_port(&self, other: &Loopback<'_>) -> bool {
        self.host == other.host && self.rest == other.rest
    }
}

/// Appends the authorization response parameters to the redirect URI's query.
pub fn with_params(uri: &str, params: &[(&str, &str)]) -> String {
    let query = serde_urlencoded_pairs(params);
    let sep = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{sep}{query}")
}

fn serde_urlencoded_pairs(params: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (k, v)) in params.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(k);
        out.push('=');
        for b in v.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
