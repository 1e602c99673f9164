//! Security events for the apps people gave access to (OpenID Shared Signals Framework 1.0, its RISC and CAEP
//! profiles, RFC 8417): which events an account event causes, the claims of the Security Event Token (SET) that
//! carries each, and the retry schedule of their delivery. The store fans events out with [`set_events`] in the
//! unit of work of the change; the server signs [`SetClaims`] when it delivers.
//!
//! The settings of a stream (its delivery, its status, the events it asks for) are [`stream`]'s.

pub mod stream;

use crate::account::EventKind;
use crate::time::UnixTime;
use serde::Serialize;
use serde_json::{json, Value};

/// The event type identifiers latchkey sends.
pub use latchkey_proto::event_type as types;

/// The events a stream may ask for (`events_supported`); the framework's own (verification, stream-updated) are
/// always delivered.
pub const SUPPORTED: [&str; 8] = [
    types::SESSIONS_REVOKED,
    types::SESSION_REVOKED,
    types::CREDENTIAL_CHANGE,
    types::TOKEN_REVOKED,
    types::ACCOUNT_DISABLED,
    types::ACCOUNT_ENABLED,
    types::ACCOUNT_PURGED,
    types::ACCOUNT_CREDENTIAL_CHANGE_REQUIRED,
];

/// How the token-revoked event names the revoked token: its first characters, `lkr_` and the grant's id, which
/// every refresh token of the grant begins with (no secret: the random part follows).
pub const TOKEN_IDENTIFIER_ALG: &str = "prefix";

/// One event of a SET: its type and its payload.
#[derive(Debug, Clone, PartialEq)]
pub struct SetEvent {
    /// The event type identifier.
    pub event_type: &'static str,
    /// The event's claims.
    pub payload: Value,
}

impl SetEvent {
    fn new(event_type: &'static str, payload: Value) -> Self {
        Self { event_type, payload }
    }
}

/// The events an account event causes, one SET each, in the order they are sent. `revoked_prefix` is the
/// refresh-token prefix of the grant a [`EventKind::TokensRevoked`] reports (the store makes one such event per
/// revoked grant; `None` for a grant whose tokens have no prefix of their own, which then names every token of
/// the app for the account).
pub fn set_events(kind: EventKind, at: UnixTime, revoked_prefix: Option<&str>) -> Vec<SetEvent> {
    let sessions = || {
        [
            SetEvent::new(types::SESSIONS_REVOKED, json!({})),
            SetEvent::new(types::SESSION_REVOKED, json!({ "event_timestamp": at.0 })),
        ]
    };
    match kind {
        EventKind::AccountDisabled => vec![SetEvent::new(types::ACCOUNT_DISABLED, json!({}))],
        EventKind::AccountEnabled => vec![SetEvent::new(types::ACCOUNT_ENABLED, json!({}))],
        EventKind::AccountPurged => vec![SetEvent::new(types::ACCOUNT_PURGED, json!({}))],
        EventKind::CredentialChanged
        | EventKind::PasskeyAdded
        | EventKind::PasskeyRemoved
        | EventKind::TwoStepOn
        | EventKind::TwoStepOff
        | EventKind::RecoveryCodesRenewed
        | EventKind::RecoveryCodeUsed
        | EventKind::PasswordRemoved
        | EventKind::TwoStepReset => {
            let mut v: Vec<SetEvent> = credential_changes(kind)
                .iter()
                .map(|(credential, change, name)| {
                    let mut p =
                        json!({ "credential_type": credential, "change_type": change, "event_timestamp": at.0 });
                    if let Some(name) = name {
                        p["friendly_name"] = json!(name);
                    }
                    SetEvent::new(types::CREDENTIAL_CHANGE, p)
                })
                .collect();
            if ends_sessions(kind) {
                v.extend(sessions());
            }
            v
        }
        EventKind::SessionsRevoked => sessions().to_vec(),
        EventKind::TokensRevoked => vec![SetEvent::new(
            types::TOKEN_REVOKED,
            match revoked_prefix {
                Some(p) => json!({ "token_identifier_alg": TOKEN_IDENTIFIER_ALG, "token": p }),
                None => json!({}),
            },
        )],
        EventKind::CredentialChangeRequired => {
            vec![SetEvent::new(types::ACCOUNT_CREDENTIAL_CHANGE_REQUIRED, json!({}))]
        }
    }
}

/// The CAEP `credential-change` events a change of sign-in methods causes: `credential_type`, `change_type`
/// and, where the type alone does not say which method, a `friendly_name`. An authenticator app and its recovery
/// codes are both the `app` credential (CAEP has no type of its own for recovery codes).
fn credential_changes(kind: EventKind) -> &'static [(&'static str, &'static str, Option<&'static str>)] {
    const APP: Option<&str> = Some("authenticator app");
    const CODES: Option<&str> = Some("recovery codes");
    match kind {
        EventKind::CredentialChanged => &[("password", "update", None)],
        EventKind::PasskeyAdded => &[("fido2-platform", "create", None)],
        EventKind::PasskeyRemoved => &[("fido2-platform", "revoke", None)],
        EventKind::TwoStepOn => &[("app", "create", APP)],
        EventKind::TwoStepOff => &[("app", "revoke", APP)],
        EventKind::RecoveryCodesRenewed | EventKind::RecoveryCodeUsed => &[("app", "update", CODES)],
        EventKind::PasswordRemoved => &[("password", "revoke", None)],
        EventKind::TwoStepReset => &[("app", "revoke", APP), ("fido2-platform", "revoke", None)],
        _ => &[],
    }
}

/// Whether a change of sign-in methods also ends sessions (and says so with the session events): a method taken
/// away, or a new password.
fn ends_sessions(kind: EventKind) -> bool {
    !matches!(
        kind,
        EventKind::PasskeyAdded | EventKind::TwoStepOn | EventKind::RecoveryCodesRenewed | EventKind::RecoveryCodeUsed
    )
}

/// The subject of a SET (RFC 9493), as the store keeps it for a delivery: the format and its one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectFormat {
    /// `{"format":"iss_sub","iss":<issuer>,"sub":<the user's sub>}`.
    IssSub,
    /// `{"format":"email","email":...}`.
    Email,
    /// `{"format":"opaque","id":<stream id>}`: the stream itself (verification, stream-updated).
    Opaque,
}

impl SubjectFormat {
    /// The format's name (RFC 9493).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::IssSub => "iss_sub",
            Self::Email => "email",
            Self::Opaque => "opaque",
        }
    }

    /// Parses a format's name.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::IssSub, Self::Email, Self::Opaque].into_iter().find(|f| f.as_str() == s)
    }

    /// The subject identifier of `value` in this format.
    pub fn sub_id(self, issuer: &str, value: &str) -> Value {
        match self {
            Self::IssSub => json!({ "format": "iss_sub", "iss": issuer, "sub": value }),
            Self::Email => json!({ "format": "email", "email": value }),
            Self::Opaque => json!({ "format": "opaque", "id": value }),
        }
    }
}

/// The claims of a SET (RFC 8417 §2.2, SSF §4): one event, the subject at the top level, no `exp`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetClaims {
    /// The issuer.
    pub iss: String,
    /// The receiving app's client id.
    pub aud: String,
    /// The SET's unique id, the same on every retry (receivers dedupe on it).
    pub jti: String,
    /// When the SET was made.
    pub iat: i64,
    /// The change it reports, shared by every SET that change caused.
    pub txn: String,
    /// The subject (RFC 9493).
    pub sub_id: Value,
    /// The one event: `{type: payload}`.
    pub events: serde_json::Map<String, Value>,
}

/// The first retry waits about this long; each next one up to twice as long.
const FIRST_RETRY_SECS: i64 = 2;
/// No retry waits longer.
const MAX_RETRY_SECS: i64 = 3600;

/// How long to wait before attempt `attempts + 1` of a delivery that failed `attempts` times: exponential backoff
/// with full jitter (a uniform share `jitter` in `0..=u32::MAX` of the bound), at least one second, the bound
/// capped at an hour.
pub fn retry_delay(attempts: u32, jitter: u32) -> i64 {
    let bound = FIRST_RETRY_SECS.saturating_mul(1_i64 << attempts.min(20)).min(MAX_RETRY_SECS);
    (bound * i64::from(jitter) / i64::from(u32::MAX)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_account_event_causes_supported_events_and_a_password_change_ends_sessions() {
        for kind in EventKind::ALL {
            let events = set_events(kind, UnixTime(10), Some("lkr_x"));
            assert!(!events.is_empty());
            assert!(events.iter().all(|e| SUPPORTED.contains(&e.event_type)), "{kind:?}");
        }
        let types: Vec<_> =
            set_events(EventKind::CredentialChanged, UnixTime(10), None).into_iter().map(|e| e.event_type).collect();
        assert_eq!(types, [types::CREDENTIAL_CHANGE, types::SESSIONS_REVOKED, types::SESSION_REVOKED]);
    }

    #[test]
    fn a_passkey_added_or_removed_is_a_fido2_credential_change_and_a_removal_ends_sessions() {
        let added = set_events(EventKind::PasskeyAdded, UnixTime(10), None);
        assert_eq!(added.len(), 1);
        assert_eq!(
            added[0].payload,
            json!({"credential_type": "fido2-platform", "change_type": "create", "event_timestamp": 10})
        );
        let removed = set_events(EventKind::PasskeyRemoved, UnixTime(11), None);
        let types: Vec<_> = removed.iter().map(|e| e.event_type).collect();
        assert_eq!(types, [types::CREDENTIAL_CHANGE, types::SESSIONS_REVOKED, types::SESSION_REVOKED]);
        assert_eq!(removed[0].payload["change_type"], "revoke");
    }

    #[test]
    fn a_revoked_token_is_named_by_its_prefix_or_not_at_all() {
        let named = &set_events(EventKind::TokensRevoked, UnixTime(1), Some("lkr_abc"))[0].payload;
        assert_eq!(named, &json!({"token_identifier_alg": "prefix", "token": "lkr_abc"}));
        assert_eq!(set_events(EventKind::TokensRevoked, UnixTime(1), None)[0].payload, json!({}));
    }

    #[test]
    fn second_steps_are_app_credential_changes_and_taking_one_away_ends_sessions() {
        let on = set_events(EventKind::TwoStepOn, UnixTime(5), None);
        assert_eq!(
            on.iter().map(|e| &e.payload).collect::<Vec<_>>(),
            [&json!({"credential_type": "app", "change_type": "create", "event_timestamp": 5,
                     "friendly_name": "authenticator app"})]
        );
        let used = set_events(EventKind::RecoveryCodeUsed, UnixTime(5), None);
        assert_eq!((used.len(), &used[0].payload["friendly_name"]), (1, &json!("recovery codes")));
        let reset = set_events(EventKind::TwoStepReset, UnixTime(5), None);
        let types: Vec<_> = reset.iter().map(|e| e.event_type).collect();
        assert_eq!(
            types,
            [types::CREDENTIAL_CHANGE, types::CREDENTIAL_CHANGE, types::SESSIONS_REVOKED, types::SESSION_REVOKED]
        );
        assert_eq!(reset[1].payload["credential_type"], "fido2-platform");
        for kind in [EventKind::TwoStepOff, EventKind::PasswordRemoved] {
            let events = set_events(kind, UnixTime(5), None);
            assert_eq!(events[0].payload["change_type"], "revoke", "{kind:?}");
            assert_eq!(events.len(), 3, "{kind:?} ends sessions");
        }
    }

    #[test]
    fn subjects_have_the_rfc_9493_forms() {
        assert_eq!(
            SubjectFormat::IssSub.sub_id("https://i", "u1"),
            json!({"format": "iss_sub", "iss": "https://i", "sub": "u1"})
        );
        assert_eq!(SubjectFormat::Email.sub_id("https://i", "a@b.c"), json!({"format": "email", "email": "a@b.c"}));
        for f in [SubjectFormat::IssSub, SubjectFormat::Email, SubjectFormat::Opaque] {
            assert_eq!(SubjectFormat::parse(f.as_str()), Some(f));
        }
    }

    #[test]
    fn retries_back_off_exponentially_with_full_jitter_up_to_an_hour() {
        assert_eq!(retry_delay(0, u32::MAX), 2);
        assert_eq!(retry_delay(3, u32::MAX), 16);
        assert_eq!(retry_delay(40, u32::MAX), 3600);
        assert_eq!(retry_delay(5, 0), 1, "never sooner than a second");
        assert_eq!(retry_delay(10, u32::MAX / 2), 1023);
    }
}
