//! Why a SET was refused, as RFC 8935 §2.3 names it: the code and description a receiver answers with.

use crate::jose::JoseError;
use serde_json::json;

/// Why a Security Event Token was refused.
///
/// Answer a push (RFC 8935) with [`SetError::status`] (`400`, or `503` when the keys could not be fetched) and
/// [`SetError::response_body`] as JSON; report it in the next poll's `setErrs` (RFC 8936) with [`SetError::err`]
/// and [`SetError::description`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SetError {
    /// The SET is malformed: not a compact JWS, the wrong `typ`, no `jti`, not exactly one event...
    #[error("invalid_request: {0}")]
    InvalidRequest(String),
    /// The SET is signed with an unknown key, an algorithm that is not allowed, or the signature is wrong.
    #[error("invalid_key: {0}")]
    InvalidKey(String),
    /// The SET's `iss` is not the expected issuer.
    #[error("invalid_issuer: {0}")]
    InvalidIssuer(String),
    /// The SET's `aud` does not name this app.
    #[error("invalid_audience: {0}")]
    InvalidAudience(String),
    /// The transmitter could not be authenticated (for an app that checks an `Authorization` header on push).
    #[error("authentication_failed: {0}")]
    AuthenticationFailed(String),
    /// The transmitter is not allowed to send this SET here.
    #[error("access_denied: {0}")]
    AccessDenied(String),
    /// The SET names a key the receiver does not have and the issuer's JWKS could not be fetched: the SET may be
    /// valid, so a push is answered `503` for the transmitter to try again later. Its code is `invalid_key`.
    #[error("invalid_key: {0}")]
    KeysUnavailable(String),
}

impl SetError {
    /// The RFC 8935 error code: `invalid_request`, `invalid_key`, `invalid_issuer`, `invalid_audience`,
    /// `authentication_failed` or `access_denied`.
    pub fn err(&self) -> &'static str {
        match self {
            Self::InvalidRequest(_) => "invalid_request",
            Self::InvalidKey(_) | Self::KeysUnavailable(_) => "invalid_key",
            Self::InvalidIssuer(_) => "invalid_issuer",
            Self::InvalidAudience(_) => "invalid_audience",
            Self::AuthenticationFailed(_) => "authentication_failed",
            Self::AccessDenied(_) => "access_denied",
        }
    }

    /// A human-readable description of what is wrong.
    pub fn description(&self) -> String {
        match self {
            Self::InvalidRequest(d)
            | Self::InvalidKey(d)
            | Self::InvalidIssuer(d)
            | Self::InvalidAudience(d)
            | Self::AuthenticationFailed(d)
            | Self::AccessDenied(d)
            | Self::KeysUnavailable(d) => d.clone(),
        }
    }

    /// The HTTP status a push endpoint answers with: `400 Bad Request` (RFC 8935 §2.3), but
    /// `503 Service Unavailable` for [`SetError::KeysUnavailable`], which is the receiver's trouble, not the SET's.
    pub fn status(&self) -> u16 {
        match self {
            Self::KeysUnavailable(_) => 503,
            _ => 400,
        }
    }

    /// The error body of RFC 8935 §2.3: `{"err": ..., "description": ...}`.
    pub fn response_body(&self) -> serde_json::Value {
        json!({ "err": self.err(), "description": self.description() })
    }
}

impl From<JoseError> for SetError {
    /// A malformed JWS is an `invalid_request`; a refused algorithm, key or signature an `invalid_key`.
    fn from(e: JoseError) -> Self {
        match e {
            JoseError::Malformed(d) => Self::InvalidRequest(d),
            JoseError::Key(d) => Self::InvalidKey(d),
            JoseError::KeysUnavailable(d) => Self::KeysUnavailable(d),
        }
    }
}
