//! PKCE (RFC 7636): challenge methods, the verifier's rules, and the check at code exchange.

use crate::OAuthError;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use subtle::ConstantTimeEq;

/// How the challenge was derived from the verifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeMethod {
    /// `BASE64URL(SHA256(verifier))`, the recommended method.
    S256,
    /// The challenge is the verifier itself.
    Plain,
}

impl ChallengeMethod {
    /// Parses `code_challenge_method`; absent means `plain` (RFC 7636 §4.3).
    pub fn parse(value: Option<&str>) -> Result<Self, OAuthError> {
        match value {
            None | Some("plain") => Ok(Self::Plain),
            Some("S256") => Ok(Self::S256),
            Some(_) => {
                Err(OAuthError::invalid_request("Unsupported code_challenge_method: use S256 (recommended) or plain."))
            }
        }
    }

    /// The method's name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::S256 => "S256",
            Self::Plain => "plain",
        }
    }
}

/// Whether `s` is 43 to 128 characters of `A-Z a-z 0-9 - . _ ~` (RFC 7636 §4.1).
pub fn is_valid_verifier(s: &str) -> bool {
    (43..=128).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Checks a `code_challenge` for its method: an S256 challenge is 43 base64url characters; a plain one
/// follows the verifier's rules. A bad challenge is `invalid_grant` (`docs/decisions.md`, "PKCE").
pub fn check_challenge(method: ChallengeMethod, challenge: &str) -> Result<(), OAuthError> {
    let ok = match method {
        ChallengeMethod::S256 => {
            challenge.len() == 43 && URL_SAFE_NO_PAD.decode(challenge).map(|d| d.len() == 32).unwrap_or(false)
        }
        ChallengeMethod::Plain => is_valid_verifier(challenge),
    };
    if ok {
        Ok(())
    } else {
        Err(OAuthError::invalid_grant(match method {
            ChallengeMethod::S256 => "Invalid code_challenge: an S256 challenge is 43 base64url characters.",
            ChallengeMethod::Plain => {
                "Invalid code_challenge: a plain challenge is 43 to 128 characters of A-Z a-z 0-9 - . _ ~."
            }
        }))
    }
}

/// The S256 challenge of a verifier.
pub fn s256_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()))
}

/// Checks the `code_verifier` of a code exchange against the stored challenge, in constant time.
pub fn verify(method: ChallengeMethod, challenge: &str, verifier: &str) -> Result<(), OAuthError> {
    if !is_valid_verifier(verifier) {
        return Err(OAuthError::invalid_request("Invalid code_verifier: 43 to 128 characters of A-Z a-z 0-9 - . _ ~."));
    }
    let derived = match method {
        ChallengeMethod::S256 => s256_challenge(verifier),
        ChallengeMethod::Plain => verifier.to_owned(),
    };
    if bool::from(derived.as_bytes().ct_eq(challenge.as_bytes())) {
        Ok(())
    } else {
        Err(OAuthError::invalid_grant("Invalid code verifier."))
    }
}

#[cfg(test)]
mod tests;
