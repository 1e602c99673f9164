//! The device authorization grant (RFC 8628) for TVs and Limited Input devices: the user code a person types, and
//! what a poll of the token endpoint answers, decided once.
//!
//! A device asks for a device code and a user code (`POST /device/code`); the person types the user code at
//! `/device` on a phone or computer, signs in and consents; the device polls the token endpoint with its device
//! code. When the person allows, the server stores an authorization code under the device code's hash, so that the
//! poll that finds it issues exactly what a code exchange issues, once.

use crate::scope::ScopeSet;
use crate::secret::Random;
use crate::time::UnixTime;

/// The device grant's `grant_type`.
pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// The redirect URI recorded in the authorization code of an approved device code: no browser is redirected, and
/// no authorization-code exchange can name it.
pub const REDIRECT_URI: &str = GRANT_TYPE;

/// The letters of a user code: consonants only, none that read alike (RFC 8628 §6.1), so that no word is spelled.
pub const USER_CODE_ALPHABET: &[u8; 20] = b"BCDFGHJKLMNPQRSTVWXZ";

/// The letters of a user code (20^8, about 34 bits; a guesser gets 5 wrong tries a minute).
pub const USER_CODE_LEN: usize = 8;

/// How much longer a device waits after polling too soon (RFC 8628 §3.5).
pub const SLOW_DOWN_STEP: i64 = 5;

/// Where a device code stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// The person has not decided yet.
    Pending,
    /// The person allowed: an authorization code waits under the device code's hash.
    Approved,
    /// The person declined.
    Denied,
}

impl State {
    /// The state's name in the store.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
        }
    }

    /// Parses the state's name in the store.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Pending, Self::Approved, Self::Denied].into_iter().find(|v| v.as_str() == s)
    }
}

/// A device code as the store keeps it: hashes only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCode {
    /// SHA-256 of the device code.
    pub device_code_hash: Vec<u8>,
    /// SHA-256 of the user code, normalised.
    pub user_code_hash: Vec<u8>,
    /// The client (a TV and Limited Input device client).
    pub client_id: String,
    /// The scopes it asked for.
    pub scopes: ScopeSet,
    /// When it was made.
    pub created_at: UnixTime,
    /// When it stops working.
    pub expires_at: UnixTime,
    /// The seconds a device must wait between polls (grown by each poll that came too soon).
    pub interval: i64,
    /// Where it stands.
    pub state: State,
}

/// What a poll found, after the store noted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Poll {
    /// The client the device code was issued to.
    pub client_id: String,
    /// Where it stands.
    pub state: State,
    /// When it stops working.
    pub expires_at: UnixTime,
    /// Whether this poll came sooner than the interval after the previous one (the interval then grew).
    pub too_soon: bool,
}

/// What a poll of the token endpoint answers (RFC 8628 §3.5), before any token is issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `authorization_pending`: ask again after the interval.
    Pending,
    /// `slow_down`: ask less often (the interval grew by 5 s).
    SlowDown,
    /// `access_denied`: the person declined.
    Denied,
    /// `expired_token`: the device code expired.
    Expired,
    /// The person allowed: issue the tokens.
    Issue,
}

/// What a poll answers at `now`: expiry first, then the person's decision, then the pace.
pub fn answer(poll: &Poll, now: UnixTime) -> Answer {
    if now >= poll.expires_at {
        return Answer::Expired;
    }
    match poll.state {
        State::Denied => Answer::Denied,
        State::Approved => Answer::Issue,
        State::Pending if poll.too_soon => Answer::SlowDown,
        State::Pending => Answer::Pending,
    }
}

/// A new user code, normalised (8 letters of [`USER_CODE_ALPHABET`], uniform: bytes past the last whole multiple
/// of 20 are drawn again).
pub fn new_user_code(random: &dyn Random) -> String {
    let mut code = String::with_capacity(USER_CODE_LEN);
    while code.len() < USER_CODE_LEN {
        for b in crate::secret::random_bytes(USER_CODE_LEN, random) {
            if b < 240 && code.len() < USER_CODE_LEN {
                code.push(char::from(USER_CODE_ALPHABET[usize::from(b % 20)]));
            }
        }
    }
    code
}

/// A user code as shown: `XXXX-XXXX`.
pub fn format_user_code(normalised: &str) -> String {
    let (a, b) = normalised.split_at(normalised.len().min(USER_CODE_LEN / 2));
    format!("{a}-{b}")
}

/// A user code as typed, normalised: case, spaces and the hyphen do not matter. `None` when it cannot be one.
pub fn user_code(typed: &str) -> Option<String> {
    let code: String =
        typed.chars().filter(|c| !c.is_whitespace() && *c != '-').map(|c| c.to_ascii_uppercase()).collect();
    (code.len() == USER_CODE_LEN && code.bytes().all(|b| USER_CODE_ALPHABET.contains(&b))).then_some(code)
}

/// The hash a user code is stored and found under.
pub fn user_code_hash(normalised: &str) -> Vec<u8> {
    crate::secret::hash(&format!("latchkey-user-code:{normalised}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_codes_are_eight_consonants_typed_any_way() {
        let code = new_user_code(&crate::secret::Counter::default());
        assert_eq!(code.len(), 8);
        assert!(code.bytes().all(|b| USER_CODE_ALPHABET.contains(&b)), "{code}");
        let shown = format_user_code(&code);
        assert_eq!(shown.len(), 9);
        assert_eq!(user_code(&shown.to_lowercase().replace('-', " ")), Some(code.clone()));
        assert_eq!(user_code("BCDF-GHJ"), None);
        assert_eq!(user_code("BCDF-GHJA"), None, "a vowel is no letter of a code");
        assert_ne!(user_code_hash("BCDFGHJK"), user_code_hash("BCDFGHJL"));
    }

    #[test]
    fn a_poll_answers_expiry_then_the_decision_then_the_pace() {
        let poll = |state, too_soon| Poll { client_id: "c".into(), state, expires_at: UnixTime(100), too_soon };
        assert_eq!(answer(&poll(State::Pending, false), UnixTime(99)), Answer::Pending);
        assert_eq!(answer(&poll(State::Pending, true), UnixTime(99)), Answer::SlowDown);
        assert_eq!(answer(&poll(State::Denied, true), UnixTime(99)), Answer::Denied);
        assert_eq!(answer(&poll(State::Approved, true), UnixTime(99)), Answer::Issue, "a decision is not held back");
        assert_eq!(answer(&poll(State::Approved, false), UnixTime(100)), Answer::Expired);
    }
}
