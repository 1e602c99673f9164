//! The token endpoint's success body (RFC 6749 §5.1, with `refresh_token_expires_in` and `id_token`) and error body
//! (§5.2).

use serde::{Deserialize, Serialize};

/// A successful token response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenResponse {
    /// The access token, sent to authorize API requests.
    pub access_token: String,
    /// Remaining lifetime of the access token in seconds.
    pub expires_in: u64,
    /// Signed identity information, only when an identity scope was granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
    /// The refresh token: always on code exchange, never on refresh (tokens are not rotated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Remaining lifetime of the refresh token, only for a time-limited grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token_expires_in: Option<u64>,
    /// Space-separated, case-sensitive list of the granted scopes.
    pub scope: String,
    /// Always `Bearer`, also when DPoP is used.
    pub token_type: String,
}

/// The RFC 6749 §5.2 error body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorResponse {
    /// The error code.
    pub error: String,
    /// Human-readable text for the developer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_description: Option<String>,
}
