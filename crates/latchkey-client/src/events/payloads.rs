//! The payloads of the events latchkey sends, typed. Optional members are `None` when absent; values outside
//! the sets the specifications list are kept in an `Other` variant rather than refused.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use serde::Deserialize;
use subtle::ConstantTimeEq;

/// CAEP session-revoked: one session of the user ended.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SessionRevoked {
    /// When the session was revoked (Unix seconds).
    #[serde(default)]
    pub event_timestamp: Option<i64>,
    /// Who caused it.
    #[serde(default)]
    pub initiating_entity: Option<InitiatingEntity>,
}

/// Who caused a CAEP event.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum InitiatingEntity {
    /// The user.
    User,
    /// An administrator.
    Admin,
    /// A policy of the transmitter.
    Policy,
    /// The transmitter's system itself.
    System,
    /// Another value, as sent.
    Other(String),
}

impl From<String> for InitiatingEntity {
    fn from(s: String) -> Self {
        match s.as_str() {
            "user" => Self::User,
            "admin" => Self::Admin,
            "policy" => Self::Policy,
            "system" => Self::System,
            _ => Self::Other(s),
        }
    }
}

/// CAEP credential-change: a credential of the user was created, changed or removed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CredentialChange {
    /// The kind of credential (`password`, `fido2-roaming`, ...).
    pub credential_type: String,
    /// What happened to it.
    pub change_type: ChangeType,
    /// When (Unix seconds).
    #[serde(default)]
    pub event_timestamp: Option<i64>,
    /// Which credential, where the type alone does not say (`authenticator app`, `recovery codes`).
    #[serde(default)]
    pub friendly_name: Option<String>,
}

/// What happened to a credential.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum ChangeType {
    /// A credential was added.
    Create,
    /// A credential was revoked.
    Revoke,
    /// A credential was changed (a new password).
    Update,
    /// A credential was removed.
    Delete,
    /// Another value, as sent.
    Other(String),
}

impl From<String> for ChangeType {
    fn from(s: String) -> Self {
        match s.as_str() {
            "create" => Self::Create,
            "revoke" => Self::Revoke,
            "update" => Self::Update,
            "delete" => Self::Delete,
            _ => Self::Other(s),
        }
    }
}

/// OAuth token-revoked: a refresh token of the app was revoked, or every token of the app for the user when
/// no token is named.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TokenRevoked {
    /// How the token is identified: `prefix` (latchkey's: the token's first characters, `lkr_` and its grant's
    /// id, shared by every refresh token of that grant) or `hash_base64_sha512_sha512`.
    #[serde(default)]
    pub token_identifier_alg: Option<String>,
    /// The token's identifier: its prefix, or base64 of SHA-512(SHA-512(token)).
    #[serde(default)]
    pub token: Option<String>,
}

impl TokenRevoked {
    /// The identifier algorithm latchkey uses: the token's prefix.
    pub const PREFIX_ALG: &'static str = "prefix";
    /// The identifier algorithm of a hashed token.
    pub const HASH_ALG: &'static str = "hash_base64_sha512_sha512";

    /// Whether the event names no token, and so revokes every token of the app for the subject.
    pub fn covers_all_tokens(&self) -> bool {
        self.token.is_none()
    }

    /// Whether the event names `refresh_token`: the token begins with the event's `token` (`prefix`, at least
    /// 16 characters), or its SHA-512(SHA-512(token)) equals it (`hash_base64_sha512_sha512`), compared in
    /// constant time. False when the event names no token (see [`TokenRevoked::covers_all_tokens`]) or another
    /// identifier algorithm.
    pub fn token_matches(&self, refresh_token: &str) -> bool {
        let Some(named) = self.token.as_deref() else {
            return false;
        };
        match self.token_identifier_alg.as_deref() {
            Some(Self::PREFIX_ALG) => {
                return named.len() >= 16
                    && refresh_token.len() >= named.len()
                    && bool::from(refresh_token.as_bytes()[..named.len()].ct_eq(named.as_bytes()));
            }
            Some(Self::HASH_ALG) | None => {}
            Some(_) => return false,
        }
        let Some(named) = [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD]
            .iter()
            .find_map(|engine| engine.decode(named).ok())
        else {
            return false;
        };
        let once = ring::digest::digest(&ring::digest::SHA512, refresh_token.as_bytes());
        let twice = ring::digest::digest(&ring::digest::SHA512, once.as_ref());
        bool::from(twice.as_ref().ct_eq(&named))
    }

    /// Whether the event revokes `refresh_token`: it names it, or names no token at all.
    pub fn revokes(&self, refresh_token: &str) -> bool {
        self.covers_all_tokens() || self.token_matches(refresh_token)
    }
}

/// RISC account-disabled: the account cannot be used until it is enabled again.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AccountDisabled {
    /// Why, when said.
    #[serde(default)]
    pub reason: Option<DisabledReason>,
}

/// Why an account was disabled.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum DisabledReason {
    /// The account was taken over.
    Hijacking,
    /// The account is one of many created in bulk (abuse).
    BulkAccount,
    /// Another value, as sent.
    Other(String),
}

impl From<String> for DisabledReason {
    fn from(s: String) -> Self {
        match s.as_str() {
            "hijacking" => Self::Hijacking,
            "bulk-account" => Self::BulkAccount,
            _ => Self::Other(s),
        }
    }
}

/// SSF verification: the transmitter checks that the stream delivers (the receiver has nothing to do but
/// accept it, and may compare `state` with the one it asked for).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Verification {
    /// The `state` the receiver passed when it asked for the verification, if any.
    #[serde(default)]
    pub state: Option<String>,
}

/// SSF stream-updated: the transmitter changed the stream's status.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct StreamUpdated {
    /// The new status.
    pub status: StreamStatus,
    /// Why, when said.
    #[serde(default)]
    pub reason: Option<String>,
}

/// A stream's status.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum StreamStatus {
    /// Events are delivered.
    Enabled,
    /// Events are kept for later delivery.
    Paused,
    /// Events are dropped.
    Disabled,
    /// Another value, as sent.
    Other(String),
}

impl From<String> for StreamStatus {
    fn from(s: String) -> Self {
        match s.as_str() {
            "enabled" => Self::Enabled,
            "paused" => Self::Paused,
            "disabled" => Self::Disabled,
            _ => Self::Other(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// base64(SHA-512(SHA-512("lkr_example-refresh-token"))), computed with `openssl dgst -sha512 -binary`.
    const EXAMPLE_HASH: &str =
        "eebH879BhTp5VcDKxe35F6H+CliYkDbfXSQa/OeJnzjevDxTnrCtCdweXw7/OaKvQyzweBaoMrsHb0L7jK4FhA==";

    #[test]
    fn token_matches_compares_the_double_sha512() {
        let named = |token: Option<&str>| TokenRevoked {
            token_identifier_alg: Some(TokenRevoked::HASH_ALG.into()),
            token: token.map(str::to_owned),
        };
        let event = named(Some(EXAMPLE_HASH));
        assert!(event.token_matches("lkr_example-refresh-token"));
        assert!(event.revokes("lkr_example-refresh-token"));
        assert!(!event.token_matches("lkr_example-refresh-tokeN"));
        assert!(!event.revokes("another"));
        let unpadded = named(Some(EXAMPLE_HASH.trim_end_matches('=')));
        assert!(unpadded.token_matches("lkr_example-refresh-token"));
        assert!(!named(Some("not base64!")).token_matches("x"));
        let other_alg = TokenRevoked { token_identifier_alg: Some("plain".into()), ..event };
        assert!(!other_alg.token_matches("lkr_example-refresh-token"));
        let all = TokenRevoked { token_identifier_alg: None, token: None };
        assert!(all.covers_all_tokens() && !all.token_matches("x") && all.revokes("x"));
    }

    #[test]
    fn token_matches_compares_latchkeys_prefix() {
        let prefix = "lkr_AAAAAAAAAAAAAAAAAAAAAA";
        let event = TokenRevoked { token_identifier_alg: Some("prefix".into()), token: Some(prefix.into()) };
        assert!(event.token_matches(&format!("{prefix}secretpart")));
        assert!(!event.token_matches("lkr_AAAAAAAAAAAAAAAAAAAAAB-secretpart"));
        assert!(!event.token_matches("lkr_"), "shorter than the prefix");
        let short = TokenRevoked { token_identifier_alg: Some("prefix".into()), token: Some("lkr_".into()) };
        assert!(!short.token_matches("lkr_anything"), "too short a prefix names no token");
    }

    #[test]
    fn values_outside_the_lists_are_kept() {
        let p: StreamUpdated = serde_json::from_str(r#"{"status":"archived"}"#).expect("payload");
        assert_eq!(p.status, StreamStatus::Other("archived".into()));
        let p: AccountDisabled = serde_json::from_str(r#"{"reason":"bulk-account"}"#).expect("payload");
        assert_eq!(p.reason, Some(DisabledReason::BulkAccount));
    }
}
