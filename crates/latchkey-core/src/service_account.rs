//! Service accounts of content owners: their identifiers and the RFC 7523 JWT bearer grant's assertion
//! (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`), checked here without I/O: the server finds the
//! account and its key by the assertion's `iss` and `kid`, then hands them over.
//!
//! The rules (`docs/decisions.md`, "Service accounts"): RS256 or ES256, `exp - iat` at most 3600 s, 60 s of clock skew
//! either way, `aud` the token endpoint, a `scope`, single use within the assertion's lifetime (`jti`, or the assertion
//! itself when it has none). The error descriptions are those developers search for (the best-known provider's).

mod assertion;

pub use assertion::{Assertion, AssertionClaims, PublicKey};

use crate::error::OAuthError;
use crate::time::UnixTime;
use latchkey_proto::ErrorCode;

/// The grant type of RFC 7523 §2.1.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The longest an assertion may live (`exp - iat`).
pub const MAX_LIFETIME_SECS: i64 = 3600;
/// The clock skew tolerated on `iat` and `exp`.
pub const CLOCK_SKEW_SECS: i64 = 60;
/// The audience the best-known provider's own libraries write into every assertion, whatever the key file's
/// `token_uri` (google-auth's `service_account.Credentials`). It is accepted beside the token endpoint, so that those
/// libraries work unmodified: an assertion still names a latchkey service account (`iss`) and is signed by its key,
/// so one made for that provider cannot pass here.
pub const PROVIDER_TOKEN_AUDIENCE: &str = "https://oauth2.googleapis.com/token";
/// The longest assertion read (a 4096-bit RSA signature and generous claims fit many times over).
pub const MAX_ASSERTION_BYTES: usize = 8192;

/// The identifier of a service account: `NAME@PROJECT_ID.iam.HOST`, where `HOST` is the host of the deployment's
/// scope base (`latchkey.dev` by default).
pub fn email(name: &str, project_id: &str, host: &str) -> String {
    format!("{name}@{}.iam.{host}", project_id.to_ascii_lowercase())
}

/// Checks a service account's name: 6 to 30 characters, lower-case letters, digits and hyphens, starting with a
/// letter and not ending with a hyphen (the best-known provider's rule, so that identifiers look alike).
pub fn check_name(name: &str) -> Result<(), &'static str> {
    let ok = (6..=30).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name.as_bytes()[0].is_ascii_lowercase()
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err("a service account's name has 6 to 30 characters: lower-case letters, digits and hyphens, starting with a letter and not ending with a hyphen")
    }
}

/// A service account's key with what decides whether it may be used, as the store reads it: by the grant (found
/// by the assertion's `kid`) and by the data API (named by the access token) alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceKeyState {
    /// The key's id.
    pub key_id: String,
    /// Its public half.
    pub public_key: PublicKey,
    /// When the key was disabled, if it is.
    pub key_disabled_at: Option<UnixTime>,
    /// The account's id.
    pub account_id: String,
    /// The account's identifier (the assertions' `iss`).
    pub email: String,
    /// When the account was disabled, if it is.
    pub account_disabled_at: Option<UnixTime>,
    /// Whether the account's project has the data API enabled.
    pub api_enabled: bool,
}

impl ServiceKeyState {
    /// Whether tokens of this key work: the key and its account are enabled (a deleted one is not found at all).
    pub fn is_usable(&self) -> bool {
        self.key_disabled_at.is_none() && self.account_disabled_at.is_none()
    }
}

/// The errors of the JWT bearer grant, each with its code and the description developers search for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantRefusal {
    /// Not a compact JWS with JSON header and claims.
    Malformed,
    /// `alg` is not RS256 or ES256 (`none` and HMAC are refused), or does not match the key.
    Algorithm,
    /// No `kid`, or no live key of the account has it.
    KeyNotFound,
    /// The signature does not verify with the account's key.
    Signature,
    /// `iat`/`exp` missing, in the future, expired, or more than an hour apart.
    Lifetime,
    /// `aud` is not the token endpoint.
    Audience,
    /// `iss` names no service account, or a deleted one.
    UnknownAccount,
    /// The service account is disabled.
    DisabledAccount,
    /// The assertion (its `jti`) was used already.
    Replayed,
    /// `sub` names someone else, and the account has no delegation.
    Delegation,
    /// No `scope`, or one the data API does not know.
    Scope,
}

impl GrantRefusal {
    /// The RFC 6749 error (RFC 7523 §3.1: `invalid_grant` for an assertion that is not valid).
    pub fn error(self) -> OAuthError {
        let (code, description) = match self {
            Self::Malformed => (ErrorCode::InvalidGrant, "Invalid JWT: the assertion is not a signed JWT (header.claims.signature, base64url, JSON)."),
            Self::Algorithm => (ErrorCode::InvalidGrant, "Invalid JWT: alg must be RS256 or ES256, the algorithm of the service account's key."),
            Self::KeyNotFound => (ErrorCode::InvalidGrant, "Invalid JWT Signature: no live key of this service account has the assertion's kid (private_key_id)."),
            Self::Signature => (ErrorCode::InvalidGrant, "Invalid JWT Signature."),
            Self::Lifetime => (ErrorCode::InvalidGrant, "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."),
            Self::Audience => (ErrorCode::InvalidGrant, "Invalid JWT: Failed audience check. The aud claim must be the token endpoint (the key file's token_uri)."),
            Self::UnknownAccount => (ErrorCode::InvalidGrant, "Invalid grant: account not found."),
            Self::DisabledAccount => (ErrorCode::InvalidGrant, "Invalid grant: the service account is disabled."),
            Self::Replayed => (ErrorCode::InvalidGrant, "Invalid JWT: the assertion was used already; make a new one (a new jti) for each token request."),
            Self::Delegation => (ErrorCode::UnauthorizedClient, "Client is unauthorized to retrieve access tokens using this method, or client not authorized for any of the scopes requested: sub names another account and this service account has no delegation."),
            Self::Scope => (ErrorCode::InvalidScope, "Invalid scope: the assertion needs a scope claim of data-API scopes, space-separated."),
        };
        OAuthError::new(code, description)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_follow_the_providers_shape() {
        assert_eq!(email("uploader-01", "Proj42", "latchkey.dev"), "uploader-01@proj42.iam.latchkey.dev");
        assert!(check_name("uploader-01").is_ok());
        for bad in ["short", "Upper-case", "1starts-with-digit", "ends-with-", "has_underscore", &"x".repeat(31)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_refusal_is_invalid_grant_but_scope_and_delegation() {
        use GrantRefusal::*;
        for r in [
            Malformed,
            Algorithm,
            KeyNotFound,
            Signature,
            Lifetime,
            Audience,
            UnknownAccount,
            DisabledAccount,
            Replayed,
        ] {
            assert_eq!(r.error().code, ErrorCode::InvalidGrant, "{r:?}");
        }
        assert_eq!(Scope.error().code, ErrorCode::InvalidScope);
        assert_eq!(Delegation.error().code, ErrorCode::UnauthorizedClient);
        assert!(Signature.error().description.contains("Invalid JWT Signature"));
    }
}
