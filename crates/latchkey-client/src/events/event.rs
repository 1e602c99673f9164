//! The event a SET carries, typed by its event type URI; unknown types are handed over as they came.

use super::error::SetError;
use super::payloads::{AccountDisabled, CredentialChange, SessionRevoked, StreamUpdated, TokenRevoked, Verification};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The event type URIs latchkey sends (the keys of a SET's `events`).
pub use latchkey_proto::event_type;

/// A security event, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// Every session of the user was revoked: sign the user out of the app everywhere.
    SessionsRevoked,
    /// One session of the user was revoked.
    SessionRevoked(SessionRevoked),
    /// A credential of the user changed (a new password).
    CredentialChange(CredentialChange),
    /// A refresh token of the app was revoked, or all of them for the user: forget the tokens it covers.
    TokenRevoked(TokenRevoked),
    /// The account was disabled.
    AccountDisabled(AccountDisabled),
    /// The account was enabled again.
    AccountEnabled,
    /// The account was deleted: delete what the app keeps about the user.
    AccountPurged,
    /// The user must change a credential before going on.
    AccountCredentialChangeRequired,
    /// A verification event of the stream (nothing to do but accept it).
    Verification(Verification),
    /// The stream's status changed.
    StreamUpdated(StreamUpdated),
    /// An event type this SDK does not know, with its payload as sent.
    Other {
        /// The event type URI.
        event_type: String,
        /// The payload (a JSON object).
        payload: Value,
    },
}

impl Event {
    /// The event of type `uri` with `payload`; the payload of a known type must have its shape.
    pub(crate) fn from_json(uri: &str, payload: &Value) -> Result<Self, SetError> {
        use event_type as t;
        if !payload.is_object() {
            return Err(SetError::InvalidRequest(format!("the payload of {uri} is not a JSON object")));
        }
        Ok(match uri {
            t::SESSIONS_REVOKED => Self::SessionsRevoked,
            t::SESSION_REVOKED => Self::SessionRevoked(typed(uri, payload)?),
            t::CREDENTIAL_CHANGE => Self::CredentialChange(typed(uri, payload)?),
            t::TOKEN_REVOKED => Self::TokenRevoked(typed(uri, payload)?),
            t::ACCOUNT_DISABLED => Self::AccountDisabled(typed(uri, payload)?),
            t::ACCOUNT_ENABLED => Self::AccountEnabled,
            t::ACCOUNT_PURGED => Self::AccountPurged,
            t::ACCOUNT_CREDENTIAL_CHANGE_REQUIRED => Self::AccountCredentialChangeRequired,
            t::VERIFICATION => Self::Verification(typed(uri, payload)?),
            t::STREAM_UPDATED => Self::StreamUpdated(typed(uri, payload)?),
            _ => Self::Other { event_type: uri.to_owned(), payload: payload.clone() },
        })
    }

    /// The event type URI.
    pub fn event_type(&self) -> &str {
        use event_type as t;
        match self {
            Self::SessionsRevoked => t::SESSIONS_REVOKED,
            Self::SessionRevoked(_) => t::SESSION_REVOKED,
            Self::CredentialChange(_) => t::CREDENTIAL_CHANGE,
            Self::TokenRevoked(_) => t::TOKEN_REVOKED,
            Self::AccountDisabled(_) => t::ACCOUNT_DISABLED,
            Self::AccountEnabled => t::ACCOUNT_ENABLED,
            Self::AccountPurged => t::ACCOUNT_PURGED,
            Self::AccountCredentialChangeRequired => t::ACCOUNT_CREDENTIAL_CHANGE_REQUIRED,
            Self::Verification(_) => t::VERIFICATION,
            Self::StreamUpdated(_) => t::STREAM_UPDATED,
            Self::Other { event_type, .. } => event_type,
        }
    }
}

/// A known event's payload, read.
fn typed<T: DeserializeOwned>(event_type: &str, payload: &Value) -> Result<T, SetError> {
    T::deserialize(payload).map_err(|e| SetError::InvalidRequest(format!("the payload of {event_type}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::payloads::{ChangeType, DisabledReason, InitiatingEntity, StreamStatus};
    use serde_json::json;

    #[test]
    fn every_event_latchkey_sends_is_typed_and_names_its_type() {
        let cases = [
            (event_type::SESSIONS_REVOKED, json!({}), Event::SessionsRevoked),
            (
                event_type::SESSION_REVOKED,
                json!({"event_timestamp": 5, "initiating_entity": "admin"}),
                Event::SessionRevoked(SessionRevoked {
                    event_timestamp: Some(5),
                    initiating_entity: Some(InitiatingEntity::Admin),
                }),
            ),
            (
                event_type::CREDENTIAL_CHANGE,
                json!({"credential_type": "password", "change_type": "update", "event_timestamp": 7}),
                Event::CredentialChange(CredentialChange {
                    credential_type: "password".into(),
                    change_type: ChangeType::Update,
                    event_timestamp: Some(7),
                    friendly_name: None,
                }),
            ),
            (
                event_type::TOKEN_REVOKED,
                json!({}),
                Event::TokenRevoked(TokenRevoked { token_identifier_alg: None, token: None }),
            ),
            (
                event_type::ACCOUNT_DISABLED,
                json!({"reason": "hijacking"}),
                Event::AccountDisabled(AccountDisabled { reason: Some(DisabledReason::Hijacking) }),
            ),
            (event_type::ACCOUNT_ENABLED, json!({}), Event::AccountEnabled),
            (event_type::ACCOUNT_PURGED, json!({}), Event::AccountPurged),
            (event_type::ACCOUNT_CREDENTIAL_CHANGE_REQUIRED, json!({}), Event::AccountCredentialChangeRequired),
            (event_type::VERIFICATION, json!({}), Event::Verification(Verification { state: None })),
            (
                event_type::STREAM_UPDATED,
                json!({"status": "paused", "reason": "maintenance"}),
                Event::StreamUpdated(StreamUpdated {
                    status: StreamStatus::Paused,
                    reason: Some("maintenance".into()),
                }),
            ),
        ];
        for (uri, payload, expected) in cases {
            let event = Event::from_json(uri, &payload).expect(uri);
            assert_eq!(event, expected);
            assert_eq!(event.event_type(), uri);
        }
    }

    #[test]
    fn unknown_types_are_handed_over_and_bad_payloads_refused() {
        let uri = "https://example.com/event-type/new";
        let event = Event::from_json(uri, &json!({"a": 1})).expect("other");
        assert_eq!(event, Event::Other { event_type: uri.into(), payload: json!({"a": 1}) });
        assert_eq!(event.event_type(), uri);
        assert!(Event::from_json(event_type::SESSIONS_REVOKED, &json!([])).is_err());
        assert!(Event::from_json(event_type::STREAM_UPDATED, &json!({})).is_err());
        assert!(Event::from_json(event_type::SESSION_REVOKED, &json!({"event_timestamp": "soon"})).is_err());
    }
}
