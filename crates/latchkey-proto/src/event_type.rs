//! The event type URIs of the security events latchkey sends (OpenID Shared Signals Framework 1.0 and its RISC and
//! CAEP profiles, and the OAuth event types): the keys of a Security Event Token's `events`, shared by the
//! transmitter and the SDK's receiver.

/// RISC: every session of the user was revoked (sign-out everywhere, password reset).
pub const SESSIONS_REVOKED: &str = "https://schemas.openid.net/secevent/risc/event-type/sessions-revoked";
/// CAEP: one session of the user was revoked.
pub const SESSION_REVOKED: &str = "https://schemas.openid.net/secevent/caep/event-type/session-revoked";
/// CAEP: a credential of the user changed.
pub const CREDENTIAL_CHANGE: &str = "https://schemas.openid.net/secevent/caep/event-type/credential-change";
/// OAuth: a token of the app was revoked.
pub const TOKEN_REVOKED: &str = "https://schemas.openid.net/secevent/oauth/event-type/token-revoked";
/// RISC: the account was disabled.
pub const ACCOUNT_DISABLED: &str = "https://schemas.openid.net/secevent/risc/event-type/account-disabled";
/// RISC: the account was enabled again.
pub const ACCOUNT_ENABLED: &str = "https://schemas.openid.net/secevent/risc/event-type/account-enabled";
/// RISC: the account was deleted.
pub const ACCOUNT_PURGED: &str = "https://schemas.openid.net/secevent/risc/event-type/account-purged";
/// RISC: the user must change a credential before going on.
pub const ACCOUNT_CREDENTIAL_CHANGE_REQUIRED: &str =
    "https://schemas.openid.net/secevent/risc/event-type/account-credential-change-required";
/// SSF: a verification of the stream.
pub const VERIFICATION: &str = "https://schemas.openid.net/secevent/ssf/event-type/verification";
/// SSF: the stream's status changed.
pub const STREAM_UPDATED: &str = "https://schemas.openid.net/secevent/ssf/event-type/stream-updated";
