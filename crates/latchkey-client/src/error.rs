//! The SDK's errors, typed so that an app can react to each.

/// What can go wrong on the app's side of the flow.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The grant is gone (revoked, expired, invalidated by a limit, or the account disabled): the user must sign
    /// in again. This is what `invalid_grant` on refresh means.
    #[error("sign in again: {0}")]
    SignInAgain(String),
    /// The user declined at the consent screen (`access_denied`).
    #[error("the user did not allow access")]
    AccessDenied,
    /// The server answered with an OAuth error.
    #[error("{code}: {description}")]
    OAuth {
        /// The error code (`invalid_request`, `invalid_dpop_proof`, ...).
        code: String,
        /// The server's description.
        description: String,
    },
    /// The redirect's `state` did not match the request's: possibly a forged response.
    #[error("the authorization response's state does not match the request")]
    StateMismatch,
    /// The redirect came from another issuer than the one asked (RFC 9207 mix-up defence).
    #[error("the authorization response comes from another issuer: {0}")]
    IssuerMismatch(String),
    /// No authorization response arrived in time.
    #[error("no authorization response arrived within {0} seconds")]
    Timeout(u64),
    /// Nothing is stored: the app has not signed in.
    #[error("not signed in")]
    NotSignedIn,
    /// The network or the server's TLS failed.
    #[error("transport: {0}")]
    Transport(String),
    /// The server's answer could not be read.
    #[error("unexpected response: {0}")]
    Protocol(String),
    /// An access token presented to the app's own API is not valid there: malformed, not signed by the issuer,
    /// expired, or issued by another issuer or for another API. The API answers `401 Unauthorized` with
    /// `WWW-Authenticate: Bearer error="invalid_token"` (RFC 6750 §3.1). The description never holds the token.
    #[error("invalid_token: {0}")]
    InvalidToken(String),
    /// Local storage (keys, tokens) failed.
    #[error("storage: {0}")]
    Storage(String),
}

impl Error {
    /// The error for an OAuth error body; `invalid_grant` means the user must sign in again.
    pub(crate) fn from_oauth(code: &str, description: &str, on_refresh: bool) -> Self {
        match code {
            "invalid_grant" if on_refresh => Self::SignInAgain(description.to_owned()),
            "access_denied" => Self::AccessDenied,
            _ => Self::OAuth { code: code.to_owned(), description: description.to_owned() },
        }
    }
}
