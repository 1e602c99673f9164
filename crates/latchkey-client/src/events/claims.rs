//! A SET's claims (RFC 8417 §2.2), checked: from the expected issuer, for this app, with a `jti`, an `iat` and
//! exactly one event about a subject.

use super::error::SetError;
use super::event::Event;
use super::subject::Subject;
use crate::jose::claims::{audiences, numeric_date};
use serde_json::{Map, Value};

/// A security event received and verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityEvent {
    /// The SET's unique id: what a receiver running on several instances deduplicates by in its own store, and
    /// what a poll acknowledges.
    pub jti: String,
    /// When the SET was issued (Unix seconds).
    pub iat: i64,
    /// The transaction id shared by the events one change caused (a password reset revokes sessions and
    /// tokens under one `txn`), if given.
    pub txn: Option<String>,
    /// Whom the event is about.
    pub subject: Subject,
    /// What happened.
    pub event: Event,
}

/// The outcome of a SET that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
    /// A SET not seen before: act on it.
    Event(SecurityEvent),
    /// A SET whose `jti` was received already (a retried delivery): accept it again and do nothing.
    Duplicate {
        /// The SET's `jti`.
        jti: String,
    },
}

impl Received {
    /// The SET's `jti`.
    pub fn jti(&self) -> &str {
        match self {
            Self::Event(e) => &e.jti,
            Self::Duplicate { jti } => jti,
        }
    }
}

/// Reads and checks the claims of a SET whose signature verified.
pub(crate) fn validate(payload: &[u8], issuer: &str, client_id: &str) -> Result<SecurityEvent, SetError> {
    let claims: Map<String, Value> = serde_json::from_slice(payload)
        .map_err(|e| SetError::InvalidRequest(format!("the SET's claims are not a JSON object: {e}")))?;
    match claims.get("iss") {
        Some(Value::String(iss)) if iss == issuer => {}
        Some(Value::String(iss)) => {
            return Err(SetError::InvalidIssuer(format!("the SET is issued by {iss}, not {issuer}")));
        }
        _ => return Err(SetError::InvalidIssuer("the SET has no string iss".into())),
    }
    let auds = audiences(claims.get("aud")).ok_or_else(|| SetError::InvalidAudience("the SET has no aud".into()))?;
    if !auds.iter().any(|a| a == client_id) {
        return Err(SetError::InvalidAudience(format!("the SET's aud does not name {client_id}")));
    }
    let jti = match claims.get("jti") {
        Some(Value::String(jti)) if !jti.is_empty() => jti.clone(),
        _ => return Err(SetError::InvalidRequest("the SET has no jti".into())),
    };
    let iat =
        numeric_date(claims.get("iat")).ok_or_else(|| SetError::InvalidRequest("the SET has no numeric iat".into()))?;
    let txn = match claims.get("txn") {
        None | Some(Value::Null) => None,
        Some(Value::String(txn)) => Some(txn.clone()),
        Some(_) => return Err(SetError::InvalidRequest("the SET's txn is not a string".into())),
    };
    let event = the_one_event(claims.get("events"))?;
    let subject = Subject::from_json(
        claims.get("sub_id").ok_or_else(|| SetError::InvalidRequest("the SET has no sub_id".into()))?,
    )?;
    Ok(SecurityEvent { jti, iat, txn, subject, event })
}

/// The single event of `events` (latchkey puts one event in each SET, as the Shared Signals profile asks).
fn the_one_event(events: Option<&Value>) -> Result<Event, SetError> {
    let Some(Value::Object(events)) = events else {
        return Err(SetError::InvalidRequest("the SET has no events object".into()));
    };
    let mut members = events.iter();
    match (members.next(), members.next()) {
        (Some((event_type, payload)), None) => Event::from_json(event_type, payload),
        (None, _) => Err(SetError::InvalidRequest("the SET's events object is empty".into())),
        (Some(_), Some(_)) => {
            Err(SetError::InvalidRequest(format!("the SET carries {} events; exactly one is expected", events.len())))
        }
    }
}
