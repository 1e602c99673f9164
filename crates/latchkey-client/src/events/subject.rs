//! Whom an event is about: the SET's `sub_id`, a Subject Identifier (RFC 9493).

use super::error::SetError;
use serde_json::Value;

/// The subject of a security event (the SET's `sub_id`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Subject {
    /// A user, by issuer and subject (`"format": "iss_sub"`): `sub` is the `sub` of the user's ID tokens.
    IssSub {
        /// The issuer.
        iss: String,
        /// The user's subject identifier at that issuer.
        sub: String,
    },
    /// A user, by email address (`"format": "email"`).
    Email {
        /// The address.
        email: String,
    },
    /// Something named by an opaque identifier (`"format": "opaque"`); latchkey names a stream this way in
    /// stream-level events (verification, stream-updated).
    Opaque {
        /// The identifier (the stream id for stream-level events).
        id: String,
    },
    /// Any other format, as sent.
    Other(Value),
}

impl Subject {
    /// Reads a subject identifier; a known format with missing members is malformed.
    pub(crate) fn from_json(sub_id: &Value) -> Result<Self, SetError> {
        let Some(object) = sub_id.as_object() else {
            return Err(SetError::InvalidRequest("sub_id is not a JSON object".into()));
        };
        let member = |name: &str| {
            object.get(name).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| {
                SetError::InvalidRequest(format!("the sub_id of format {} has no string {name}", format_of(sub_id)))
            })
        };
        Ok(match object.get("format").and_then(Value::as_str) {
            Some("iss_sub") => Self::IssSub { iss: member("iss")?, sub: member("sub")? },
            Some("email") => Self::Email { email: member("email")? },
            Some("opaque") => Self::Opaque { id: member("id")? },
            Some(_) => Self::Other(sub_id.clone()),
            None => return Err(SetError::InvalidRequest("sub_id has no format".into())),
        })
    }

    /// The user's `sub` at `issuer`, when the subject names a user that way.
    pub fn sub_at(&self, issuer: &str) -> Option<&str> {
        match self {
            Self::IssSub { iss, sub } if iss == issuer => Some(sub),
            _ => None,
        }
    }
}

/// The format's name, for messages.
fn format_of(sub_id: &Value) -> &str {
    sub_id.get("format").and_then(Value::as_str).unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_formats_latchkey_sends_are_typed_and_others_kept() {
        let user = Subject::from_json(&json!({"format": "iss_sub", "iss": "https://as", "sub": "u1"})).expect("ok");
        assert_eq!(user.sub_at("https://as"), Some("u1"));
        assert_eq!(user.sub_at("https://other"), None);
        assert_eq!(
            Subject::from_json(&json!({"format": "email", "email": "a@b.c"})),
            Ok(Subject::Email { email: "a@b.c".into() })
        );
        assert_eq!(
            Subject::from_json(&json!({"format": "opaque", "id": "s1"})),
            Ok(Subject::Opaque { id: "s1".into() })
        );
        let phone = json!({"format": "phone_number", "phone_number": "+1"});
        assert_eq!(Subject::from_json(&phone), Ok(Subject::Other(phone.clone())));
    }

    #[test]
    fn a_known_format_without_its_members_is_malformed() {
        for bad in [json!({"format": "iss_sub", "sub": "u1"}), json!({"email": "a@b.c"}), json!("u1")] {
            assert!(matches!(Subject::from_json(&bad), Err(SetError::InvalidRequest(_))), "{bad}");
        }
    }
}
