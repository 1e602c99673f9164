//! OAuth error codes (RFC 6749 §4.1.2.1, §5.2; RFC 7009 §2.2.1; RFC 9449 §8) and latchkey's own codes
//! (`docs/decisions.md`, "Errors").

use std::fmt;

/// An error code as it appears in `error=` of a redirect or in the JSON error body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The request is missing a required parameter, includes an invalid parameter value, includes a parameter
    /// more than once, or is otherwise malformed (RFC 6749 §4.1.2.1, §5.2).
    InvalidRequest,
    /// Client authentication failed: unknown client, no client authentication included, or unsupported
    /// authentication method (RFC 6749 §5.2).
    InvalidClient,
    /// The provided authorization grant or refresh token is invalid, expired, revoked, does not match the
    /// redirection URI used in the authorization request, or was issued to another client (RFC 6749 §5.2).
    InvalidGrant,
    /// The client is not authorized to request an authorization code or use this grant type (RFC 6749 §5.2).
    UnauthorizedClient,
    /// The authorization grant type is not supported by the authorization server (RFC 6749 §5.2).
    UnsupportedGrantType,
    /// The authorization server does not support obtaining an authorization code using this method
    /// (RFC 6749 §4.1.2.1).
    UnsupportedResponseType,
    /// The requested scope is invalid, unknown, or malformed (RFC 6749 §4.1.2.1).
    InvalidScope,
    /// The resource owner or authorization server denied the request (RFC 6749 §4.1.2.1).
    AccessDenied,
    /// The authorization server encountered an unexpected condition (RFC 6749 §4.1.2.1).
    ServerError,
    /// The authorization server is temporarily unable to handle the request (RFC 6749 §4.1.2.1).
    TemporarilyUnavailable,
    /// The token presented to a protected resource is expired, revoked or malformed (RFC 6750 §3.1).
    InvalidToken,
    /// The request requires higher privileges than provided by the access token (RFC 6750 §3.1).
    InsufficientScope,
    /// The revocation endpoint does not support revocation of this token type (RFC 7009 §2.2.1).
    UnsupportedTokenType,
    /// The DPoP proof is invalid (RFC 9449 §5): mismatching `htm`/`htu`, expired `iat`, reused `jti`, or a bad
    /// signature.
    InvalidDpopProof,
    /// The authorization server requires a DPoP nonce; the response carries a `DPoP-Nonce` header (RFC 9449 §8).
    UseDpopNonce,
    /// The redirect URI does not match an authorized redirect URI of the client, is invalid for the client
    /// type, or refers to the deprecated out-of-band flow (a user-facing error page).
    RedirectUriMismatch,
    /// The OAuth client was deleted; it can be restored within 30 days (a user-facing error page).
    DeletedClient,
    /// The page is shown in a forbidden embedded user agent (a user-facing error page).
    DisallowedUseragent,
    /// The client belongs to a project limited to the accounts of one organisation (a user-facing error page).
    OrgInternal,
    /// An administrator's policy prevents the account from authorizing a requested scope for this client.
    AdminPolicyEnforced,
    /// `prompt=none` was sent but the user must sign in (OpenID Connect Core §3.1.2.6).
    LoginRequired,
    /// `prompt=none` was sent but the user must consent (OpenID Connect Core §3.1.2.6).
    ConsentRequired,
    /// `prompt=none` was sent but the browser is signed in to several accounts and the request names none
    /// (OpenID Connect Core §3.1.2.6).
    AccountSelectionRequired,
    /// The person has not yet decided on the device's request: poll again after the interval (RFC 8628 §3.5).
    AuthorizationPending,
    /// The device polls too often: the interval grew by 5 seconds (RFC 8628 §3.5).
    SlowDown,
    /// The device code expired: start again (RFC 8628 §3.5).
    ExpiredToken,
    /// The requested resource is invalid, unknown, malformed, or not one of the grant's (RFC 8707 §2).
    InvalidTarget,
    /// A redirect URI of a client's registration is not allowed (RFC 7591 §3.2.2).
    InvalidRedirectUri,
    /// A field of a client's registration is invalid, or not allowed for a client that registers itself
    /// (RFC 7591 §3.2.2).
    InvalidClientMetadata,
}

impl ErrorCode {
    /// The code as written on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::InvalidClient => "invalid_client",
            Self::InvalidGrant => "invalid_grant",
            Self::UnauthorizedClient => "unauthorized_client",
            Self::UnsupportedGrantType => "unsupported_grant_type",
            Self::UnsupportedResponseType => "unsupported_response_type",
            Self::InvalidScope => "invalid_scope",
            Self::AccessDenied => "access_denied",
            Self::ServerError => "server_error",
            Self::TemporarilyUnavailable => "temporarily_unavailable",
            Self::InvalidToken => "invalid_token",
            Self::InsufficientScope => "insufficient_scope",
            Self::UnsupportedTokenType => "unsupported_token_type",
            Self::InvalidDpopProof => "invalid_dpop_proof",
            Self::UseDpopNonce => "use_dpop_nonce",
            Self::RedirectUriMismatch => "redirect_uri_mismatch",
            Self::DeletedClient => "deleted_client",
            Self::DisallowedUseragent => "disallowed_useragent",
            Self::OrgInternal => "org_internal",
            Self::AdminPolicyEnforced => "admin_policy_enforced",
            Self::LoginRequired => "login_required",
            Self::ConsentRequired => "consent_required",
            Self::AccountSelectionRequired => "account_selection_required",
            Self::AuthorizationPending => "authorization_pending",
            Self::SlowDown => "slow_down",
            Self::ExpiredToken => "expired_token",
            Self::InvalidTarget => "invalid_target",
            Self::InvalidRedirectUri => "invalid_redirect_uri",
            Self::InvalidClientMetadata => "invalid_client_metadata",
        }
    }

    /// Parses a code from the wire; `None` for a code this crate does not know.
    pub fn parse(s: &str) -> Option<Self> {
        const ALL: [ErrorCode; 29] = [
            ErrorCode::InvalidRequest,
            ErrorCode::InvalidClient,
            ErrorCode::InvalidGrant,
            ErrorCode::UnauthorizedClient,
            ErrorCode::UnsupportedGrantType,
            ErrorCode::UnsupportedResponseType,
            ErrorCode::InvalidScope,
            ErrorCode::AccessDenied,
            ErrorCode::ServerError,
            ErrorCode::TemporarilyUnavailable,
            ErrorCode::InvalidToken,
            ErrorCode::InsufficientScope,
            ErrorCode::UnsupportedTokenType,
            ErrorCode::InvalidDpopProof,
            ErrorCode::UseDpopNonce,
            ErrorCode::RedirectUriMismatch,
            ErrorCode::DeletedClient,
            ErrorCode::DisallowedUseragent,
            ErrorCode::OrgInternal,
            ErrorCode::AdminPolicyEnforced,
            ErrorCode::LoginRequired,
            ErrorCode::ConsentRequired,
            ErrorCode::AccountSelectionRequired,
            ErrorCode::AuthorizationPending,
            ErrorCode::SlowDown,
            ErrorCode::ExpiredToken,
            ErrorCode::InvalidTarget,
            ErrorCode::InvalidRedirectUri,
            ErrorCode::InvalidClientMetadata,
        ];
        ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn every_code_parses_back_to_itself() {
        for code in [
            ErrorCode::InvalidDpopProof,
            ErrorCode::UseDpopNonce,
            ErrorCode::AccountSelectionRequired,
            ErrorCode::SlowDown,
            ErrorCode::InvalidTarget,
        ] {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
        }
        assert_eq!(ErrorCode::parse("nope"), None);
    }
}
