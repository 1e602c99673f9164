//! The one error type of the protocol core.

use latchkey_proto::ErrorCode;
use std::borrow::Cow;

/// A protocol error: a code from the RFCs or one of latchkey's own (`docs/decisions.md`, "Errors") and a
/// description for the developer.
///
/// Only `code` and `description` reach the client; `redirectable` tells the authorization endpoint whether
/// the error may travel back to the redirect URI or must be shown to the user on an error page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {description}")]
pub struct OAuthError {
    /// The error code.
    pub code: ErrorCode,
    /// Text for the developer; never contains a secret.
    pub description: Cow<'static, str>,
    /// Whether the authorization endpoint may send this error to the redirect URI.
    pub redirectable: bool,
}

impl OAuthError {
    /// An error that may be sent to the redirect URI (or in a JSON body).
    pub fn new(code: ErrorCode, description: impl Into<Cow<'static, str>>) -> Self {
        Self { code, description: description.into(), redirectable: true }
    }

    /// An error that must be shown to the user and never redirected: the client or redirect URI is untrusted.
    pub fn page(code: ErrorCode, description: impl Into<Cow<'static, str>>) -> Self {
        Self { code, description: description.into(), redirectable: false }
    }

    /// `invalid_request` with a description.
    pub fn invalid_request(description: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::InvalidRequest, description)
    }

    /// `invalid_grant` with a description.
    pub fn invalid_grant(description: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::InvalidGrant, description)
    }
}
