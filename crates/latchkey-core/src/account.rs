//! What happens to a person's account, decided once: the changes a person or an operator makes (disable,
//! enable, delete, a new password, other sessions ended, an app's access removed) and the domain event each one
//! causes. The store writes a change and its event in one unit of work, so that the cross-account protection
//! events (RISC / Shared Signals) that report them are never lost and never report what did not happen.

use crate::time::UnixTime;

/// A change to an account. Each variant causes exactly one [`EventKind`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountChange {
    /// The account may no longer sign in; its sessions end and its grants stop working.
    Disable,
    /// A disabled account may sign in again (its old sessions stay ended).
    Enable,
    /// The account is deleted, with its channel, sessions and grants.
    Delete,
    /// A new password (its argon2id PHC string); every session but `keep` ends.
    PasswordChanged {
        /// The new password's hash.
        password_hash: String,
        /// The hash of the session that changed it, which stays signed in.
        keep: Option<Vec<u8>>,
    },
    /// Every session of the account but `keep` ends.
    OtherSessionsEnded {
        /// The hash of the session that asked, which stays signed in.
        keep: Option<Vec<u8>>,
    },
    /// Every grant of one client for the account is revoked (the account page's "Remove access").
    AppAccessRemoved {
        /// The client.
        client_id: String,
    },
    /// An operator judged the password compromised: every session ends, and the apps are told that the account
    /// must change its password.
    CredentialChangeRequired,
    /// A passkey was added to the account.
    PasskeyAdded {
        /// The passkey (its `user_id` is the account's).
        passkey: crate::passkey::PasskeyRecord,
    },
    /// A passkey was removed from the account; every session but `keep` ends.
    PasskeyRemoved {
        /// The passkey's credential id.
        credential_id: String,
        /// The hash of the session that removed it, which stays signed in.
        keep: Option<Vec<u8>>,
    },
    /// 2-step verification is turned on: an authenticator app's secret (sealed under the system secrets) and a
    /// first set of recovery codes (their hashes). Nothing changes when it is on already.
    TwoStepOn {
        /// The TOTP secret, sealed.
        secret: Vec<u8>,
        /// The recovery codes' hashes.
        recovery_codes: Vec<Vec<u8>>,
    },
    /// 2-step verification is turned off (the app's secret and the recovery codes go); every session but `keep`
    /// ends.
    TwoStepOff {
        /// The hash of the session that turned it off, which stays signed in.
        keep: Option<Vec<u8>>,
    },
    /// A new set of recovery codes replaces the old one (only while 2-step verification is on).
    RecoveryCodesRenewed {
        /// The new codes' hashes.
        recovery_codes: Vec<Vec<u8>>,
    },
    /// A recovery code signed someone in: it is used up. Nothing changes for a code used already or unknown.
    RecoveryCodeUsed {
        /// The code's hash.
        code_hash: Vec<u8>,
    },
    /// The account stops having a password ("passkey only"); allowed only while it has a passkey. 2-step
    /// verification goes with it (it guards password sign-ins), and every session but `keep` ends.
    PasswordRemoved {
        /// The hash of the session that removed it, which stays signed in.
        keep: Option<Vec<u8>>,
    },
    /// An operator resets a locked-out person's second steps: the authenticator app, the recovery codes and the
    /// passkeys go, and every session ends. They sign in with their password and enrol again.
    TwoStepReset,
}

impl AccountChange {
    /// The event the change causes.
    pub fn event(&self) -> EventKind {
        match self {
            Self::Disable => EventKind::AccountDisabled,
            Self::Enable => EventKind::AccountEnabled,
            Self::Delete => EventKind::AccountPurged,
            Self::PasswordChanged { .. } => EventKind::CredentialChanged,
            Self::OtherSessionsEnded { .. } => EventKind::SessionsRevoked,
            Self::AppAccessRemoved { .. } => EventKind::TokensRevoked,
            Self::CredentialChangeRequired => EventKind::CredentialChangeRequired,
            Self::PasskeyAdded { .. } => EventKind::PasskeyAdded,
            Self::PasskeyRemoved { .. } => EventKind::PasskeyRemoved,
            Self::TwoStepOn { .. } => EventKind::TwoStepOn,
            Self::TwoStepOff { .. } => EventKind::TwoStepOff,
            Self::RecoveryCodesRenewed { .. } => EventKind::RecoveryCodesRenewed,
            Self::RecoveryCodeUsed { .. } => EventKind::RecoveryCodeUsed,
            Self::PasswordRemoved { .. } => EventKind::PasswordRemoved,
            Self::TwoStepReset => EventKind::TwoStepReset,
        }
    }

    /// The client the change concerns, when it concerns one.
    pub fn client_id(&self) -> Option<&str> {
        match self {
            Self::AppAccessRemoved { client_id } => Some(client_id),
            _ => None,
        }
    }
}

/// The kinds of domain event, named after the RISC and CAEP event types that report them
/// ([`crate::events::set_events`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// The account was disabled.
    AccountDisabled,
    /// The account was enabled again.
    AccountEnabled,
    /// The account was deleted.
    AccountPurged,
    /// The account's password changed.
    CredentialChanged,
    /// The account's browser sessions were ended.
    SessionsRevoked,
    /// One app's tokens for the account were revoked.
    TokensRevoked,
    /// The account must change its password.
    CredentialChangeRequired,
    /// A passkey was added to the account.
    PasskeyAdded,
    /// A passkey was removed from the account (and its other sessions ended).
    PasskeyRemoved,
    /// 2-step verification was turned on.
    TwoStepOn,
    /// 2-step verification was turned off (and the account's other sessions ended).
    TwoStepOff,
    /// The account's recovery codes were replaced.
    RecoveryCodesRenewed,
    /// A recovery code was used.
    RecoveryCodeUsed,
    /// The account's password was removed: it signs in with passkeys only (its other sessions ended).
    PasswordRemoved,
    /// An operator removed the account's second steps and passkeys (and its sessions ended).
    TwoStepReset,
}

impl EventKind {
    /// Every kind.
    pub const ALL: [EventKind; 15] = [
        Self::AccountDisabled,
        Self::AccountEnabled,
        Self::AccountPurged,
        Self::CredentialChanged,
        Self::SessionsRevoked,
        Self::TokensRevoked,
        Self::CredentialChangeRequired,
        Self::PasskeyAdded,
        Self::PasskeyRemoved,
        Self::TwoStepOn,
        Self::TwoStepOff,
        Self::RecoveryCodesRenewed,
        Self::RecoveryCodeUsed,
        Self::PasswordRemoved,
        Self::TwoStepReset,
    ];

    /// The kind's name in the store.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AccountDisabled => "account_disabled",
            Self::AccountEnabled => "account_enabled",
            Self::AccountPurged => "account_purged",
            Self::CredentialChanged => "credential_changed",
            Self::SessionsRevoked => "sessions_revoked",
            Self::TokensRevoked => "tokens_revoked",
            Self::CredentialChangeRequired => "credential_change_required",
            Self::PasskeyAdded => "passkey_added",
            Self::PasskeyRemoved => "passkey_removed",
            Self::TwoStepOn => "two_step_on",
            Self::TwoStepOff => "two_step_off",
            Self::RecoveryCodesRenewed => "recovery_codes_renewed",
            Self::RecoveryCodeUsed => "recovery_code_used",
            Self::PasswordRemoved => "password_removed",
            Self::TwoStepReset => "two_step_reset",
        }
    }

    /// Parses the kind's name in the store.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// A domain event as the store keeps it (the outbox that the event transmitter reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountEvent {
    /// Its place in the outbox.
    pub id: i64,
    /// When the change happened.
    pub at: UnixTime,
    /// What happened.
    pub kind: EventKind,
    /// The account.
    pub user_id: String,
    /// The client, for [`EventKind::TokensRevoked`].
    pub client_id: Option<String>,
}

/// The periods a person may choose on the consent page when the project offers time-based access
/// (`docs/decisions.md`, "Time-based access"), in seconds; 0 is "until I remove it".
pub const ACCESS_PERIODS: [(i64, &str); 5] =
    [(0, "Until I remove it"), (3600, "1 hour"), (86_400, "1 day"), (604_800, "1 week"), (2_592_000, "30 days")];

/// A period the consent page did not offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the access period chosen is not one this app offers")]
pub struct PeriodNotOffered;

/// The grant lifetime of a period chosen on the consent page: `Ok(None)` for "until I remove it", an error for a
/// period not offered (or any limit at all when the project does not offer time-based access).
pub fn access_period(chosen: Option<&str>, offered: bool) -> Result<Option<i64>, PeriodNotOffered> {
    let secs = match chosen {
        None | Some("") => return Ok(None),
        Some(v) => v.parse::<i64>().map_err(|_| PeriodNotOffered)?,
    };
    match secs {
        0 => Ok(None),
        s if offered && ACCESS_PERIODS.iter().any(|(p, _)| *p == s) => Ok(Some(s)),
        _ => Err(PeriodNotOffered),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_offered_periods_are_accepted() {
        assert_eq!(access_period(None, true), Ok(None));
        assert_eq!(access_period(Some("0"), false), Ok(None));
        assert_eq!(access_period(Some("3600"), true), Ok(Some(3600)));
        assert_eq!(access_period(Some("2592000"), true), Ok(Some(2_592_000)));
        assert_eq!(
            access_period(Some("3600"), false),
            Err(PeriodNotOffered),
            "no limit when the project does not offer it"
        );
        assert_eq!(access_period(Some("60"), true), Err(PeriodNotOffered));
        assert_eq!(access_period(Some("-3600"), true), Err(PeriodNotOffered));
        assert_eq!(access_period(Some("1h"), true), Err(PeriodNotOffered));
    }

    #[test]
    fn every_kind_reads_back_from_its_name() {
        for k in EventKind::ALL {
            assert_eq!(EventKind::parse(k.as_str()), Some(k));
        }
    }
}
