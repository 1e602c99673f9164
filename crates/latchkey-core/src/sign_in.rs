//! How a person signs in, decided once: the methods a session may come from, the second step a password sign-in
//! needs (an authenticator app's code, a recovery code, or a passkey), and what an organisation's sign-in policy
//! ("2-step verification required", "passkeys only") asks of its members, at sign-in and at the authorization
//! endpoint.
//!
//! The TOTP arithmetic itself (RFC 6238) is the server's, through a TOTP crate; here are the rules around it:
//! which time steps a code may match, and recovery codes' form.

/// How a session signed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// A password alone.
    #[default]
    Password,
    /// A password and a second step (an authenticator app's code, a recovery code, or a passkey).
    TwoStep,
    /// A passkey, which verified its user: both steps at once.
    Passkey,
}

impl Method {
    /// Every method.
    pub const ALL: [Method; 3] = [Self::Password, Self::TwoStep, Self::Passkey];

    /// The method's name in the store.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Password => "password",
            Self::TwoStep => "two_step",
            Self::Passkey => "passkey",
        }
    }

    /// Parses the method's name in the store.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// An organisation's sign-in policy for its members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    /// A member's password sign-in needs a second step.
    pub require_two_step: bool,
    /// A member signs in with a passkey only; it wins over `require_two_step`.
    pub passkeys_only: bool,
}

/// What an account has besides its password.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Factors {
    /// Whether it has a password at all (an account may be "passkey only").
    pub password: bool,
    /// Whether 2-step verification (an authenticator app, with recovery codes) is on.
    pub totp: bool,
    /// Whether it has a passkey.
    pub passkeys: bool,
}

/// What follows a correct password.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterPassword {
    /// The session starts.
    SignedIn,
    /// The second-step page: a code (when `totp`), or a passkey.
    SecondStep {
        /// Whether the page takes a code (the account has an authenticator app).
        totp: bool,
    },
    /// The organisation requires 2-step verification and the account has no second step: enrolment first.
    Enrol,
    /// The organisation allows passkeys only: no session.
    PasskeysOnly,
}

/// What follows a correct password for an account with `factors` under `policy`.
pub fn after_password(factors: Factors, policy: Policy) -> AfterPassword {
    if policy.passkeys_only {
        return AfterPassword::PasskeysOnly;
    }
    if factors.totp {
        return AfterPassword::SecondStep { totp: true };
    }
    if !policy.require_two_step {
        return AfterPassword::SignedIn;
    }
    if factors.passkeys {
        AfterPassword::SecondStep { totp: false }
    } else {
        AfterPassword::Enrol
    }
}

/// Whether a session signed in by `method` satisfies `policy`, at the authorization endpoint (a session may
/// predate its organisation's policy).
pub fn satisfies(method: Method, policy: Policy) -> bool {
    match method {
        Method::Passkey => true,
        Method::TwoStep => !policy.passkeys_only,
        Method::Password => !policy.passkeys_only && !policy.require_two_step,
    }
}

/// The length of a TOTP time step, in seconds (RFC 6238's default, which every authenticator app uses).
pub const TOTP_STEP: i64 = 30;

/// The number of digits of a TOTP code.
pub const TOTP_DIGITS: usize = 6;

/// The length of a TOTP secret, in bytes (160 bits, RFC 4226 §4's recommendation).
pub const TOTP_SECRET_LEN: usize = 20;

/// How long an enrolment (its secret, shown as a QR code) may wait for its confirming code.
pub const ENROLMENT_LIFETIME: i64 = 600;

/// How long the second-step page may wait after a correct password.
pub const SECOND_STEP_LIFETIME: i64 = 300;

/// The time step of `now` (Unix seconds).
pub const fn totp_step(now: i64) -> i64 {
    now.div_euclid(TOTP_STEP)
}

/// The steps a code typed at `now` may match, the current first: its own and one either side (a clock a little
/// off, a code typed as it changed).
pub const fn candidate_steps(now: i64) -> [i64; 3] {
    let s = totp_step(now);
    [s, s - 1, s + 1]
}

/// A code as typed, when it could be a TOTP code: six digits once spaces are dropped.
pub fn totp_code(typed: &str) -> Option<String> {
    let code: String = typed.chars().filter(|c| !c.is_whitespace()).collect();
    (code.len() == TOTP_DIGITS && code.bytes().all(|b| b.is_ascii_digit())).then_some(code)
}

/// How many recovery codes an account gets at a time.
pub const RECOVERY_CODES: usize = 10;

/// The characters of a recovery code: Crockford's base32 in lower case (no i, l, o or u, which people confuse).
pub const RECOVERY_ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// The characters of a recovery code, before its dashes: 16 of 32 kinds, 80 bits.
pub const RECOVERY_CODE_CHARS: usize = 16;

/// A recovery code as it is shown: four groups of four, `abcd-efgh-jkmn-pqrs`.
pub fn format_recovery_code(chars: &str) -> String {
    let groups: Vec<String> = chars.as_bytes().chunks(4).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
    groups.join("-")
}

/// A recovery code as typed, normalised: case, spaces and dashes do not matter. `None` when it cannot be one.
pub fn recovery_code(typed: &str) -> Option<String> {
    let code: String =
        typed.chars().filter(|c| !c.is_whitespace() && *c != '-').map(|c| c.to_ascii_lowercase()).collect();
    (code.len() == RECOVERY_CODE_CHARS && code.bytes().all(|b| RECOVERY_ALPHABET.contains(&b))).then_some(code)
}

/// The hash a recovery code is stored under: SHA-256 of the account and the normalised code (80 random bits, so
/// a fast hash is enough; the account in it keeps one account's list from matching another's).
pub fn recovery_code_hash(user_id: &str, normalised: &str) -> Vec<u8> {
    let input = format!("latchkey-recovery:{user_id}:{normalised}");
    crate::secret::hash(&input)
}

#[cfg(test)]
mod tests;
