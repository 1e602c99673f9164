//! Records the store keeps beyond the protocol's own (clients, codes and grants live in `latchkey-core`).

use latchkey_core::org::{AppAccess, Audience, Placement};
use latchkey_core::scope::ScopeSet;
use latchkey_core::time::UnixTime;
use latchkey_core::token::Grant;

/// A developer project: it owns clients and enables the data API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The project id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Whether the data API is enabled (needed for data scopes: `docs/decisions.md`, "The authorization request").
    pub api_enabled: bool,
    /// When it was created.
    pub created_at: UnixTime,
    /// Whether its clients' consent page offers time-based access (`docs/decisions.md`, "Time-based access").
    pub time_based_access: bool,
    /// The organisation it belongs to, if any.
    pub org_id: Option<String>,
    /// Who its clients serve.
    pub audience: Audience,
    /// Whether its clients' refresh tokens rotate on every refresh (those not bound by DPoP).
    pub rotate_refresh_tokens: bool,
    /// Whether apps may register themselves into it (RFC 7591); one project at most.
    pub open_registration: bool,
}

/// A project's on/off setting, switched by [`Clients::set_project_setting`](crate::Clients::set_project_setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectSetting {
    /// Its clients' consent page offers time-based access (grants already limited keep their end).
    TimeBasedAccess = 0,
    /// Its clients' refresh tokens not bound by DPoP rotate, from each one's next refresh.
    RotateRefreshTokens = 1,
    /// Apps may register themselves into it at `/register` (RFC 7591); one project at most, so switching it on
    /// while another project has it is a conflict.
    OpenRegistration = 2,
}

impl Project {
    /// Where the project stands, for [`latchkey_core::org::decide`].
    pub fn placement(&self) -> Placement<'_> {
        Placement { org_id: self.org_id.as_deref(), audience: self.audience, ..Placement::default() }
    }
}

/// An organisation with its policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Org {
    /// The organisation id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// When it was created.
    pub created_at: UnixTime,
    /// Its restricted data-API scopes.
    pub restricted: ScopeSet,
    /// The access of apps it has not listed.
    pub default_access: AppAccess,
    /// Whether the clients of its own projects are trusted.
    pub trust_internal: bool,
    /// Whether every app that registered itself is blocked for its members.
    pub block_self_registered: bool,
    /// Its sign-in policy for its members.
    pub sign_in: latchkey_core::sign_in::Policy,
}

/// A member of an organisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrgMember {
    /// The account.
    pub user_id: String,
    /// Its e-mail address.
    pub email: String,
    /// Whether it administers the organisation.
    pub admin: bool,
    /// How it joined: `admin` (added by an administrator or the operator) or `domain` (by its address).
    pub via: String,
    /// Whether the account is disabled.
    pub disabled: bool,
}

/// An app an organisation lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrgApp {
    /// The client.
    pub client_id: String,
    /// Its access, when listed with one (else the organisation's default applies).
    pub access: Option<AppAccess>,
    /// The scopes it is delegated for every member, if it is.
    pub delegated: Option<ScopeSet>,
}

/// A user to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUser {
    /// The user id.
    pub id: String,
    /// The e-mail address, unique regardless of case.
    pub email: String,
    /// The display name.
    pub name: Option<String>,
    /// The argon2id PHC string.
    pub password_hash: String,
    /// When the account was created.
    pub created_at: UnixTime,
}

/// A user account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The user id.
    pub id: String,
    /// The e-mail address.
    pub email: String,
    /// The display name.
    pub name: Option<String>,
    /// The argon2id PHC string.
    pub password_hash: String,
    /// When the account was created.
    pub created_at: UnixTime,
    /// When the account was disabled.
    pub disabled_at: Option<UnixTime>,
}

/// The user's channel on the video platform: every account has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// The channel id.
    pub id: String,
    /// The owner.
    pub user_id: String,
    /// The channel's title.
    pub title: String,
    /// Its description.
    pub description: String,
    /// When it was created.
    pub created_at: UnixTime,
}

/// A signed-in browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// SHA-256 of the session cookie's value.
    pub token_hash: Vec<u8>,
    /// The user.
    pub user_id: String,
    /// When the user signed in.
    pub created_at: UnixTime,
    /// When the session ends.
    pub expires_at: UnixTime,
    /// How the user signed in.
    pub method: latchkey_core::sign_in::Method,
}

/// The refresh-token limits (`docs/decisions.md`, "Refresh tokens"): issuing one more invalidates the oldest of the
/// set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrantLimits {
    /// Live refresh tokens per (client, user).
    pub per_client_user: u32,
    /// Live refresh tokens per user across all clients.
    pub per_user: u32,
}

impl Default for GrantLimits {
    fn default() -> Self {
        Self { per_client_user: 100, per_user: 1000 }
    }
}

/// A code's redemption: the grant to store, under the limits, at `now`.
#[derive(Debug)]
pub(crate) struct Redemption {
    /// The grant; its `code_hash` names the code.
    pub(crate) grant: Grant,
    /// The refresh-token limits.
    pub(crate) limits: GrantLimits,
    /// The time of the redemption.
    pub(crate) now: UnixTime,
}

/// The outcome of redeeming a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redeemed {
    /// The grant is stored.
    Issued,
    /// The code was not spent: used already, expired (or expired early by an organisation's change), its account
    /// disabled, or its scopes narrowed since; nothing was stored.
    AlreadyUsed,
}

/// A grant with what decides whether it may still be used; its usability is decided in the core.
pub use latchkey_core::token::GrantState;

/// What a stored key is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// HMAC key for access tokens and CSRF tokens.
    Mac,
    /// ES256 key (PKCS#8) for id_tokens.
    IdToken,
    /// RS256 key (PKCS#8) for security event tokens, made when the first stream is.
    Event,
    /// Not a key of the `keys` table: a push receiver's `Authorization` header, which the server encrypts under
    /// the system secrets with this kind's name bound to it.
    PushAuthorization,
    /// Not a key of the `keys` table: an account's authenticator-app (TOTP) secret, with its account's id, which
    /// the server encrypts under the system secrets with this kind's name bound to it.
    TotpSecret,
}

impl KeyKind {
    /// The kind's name in the store.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Mac => "mac",
            Self::IdToken => "id_token",
            Self::Event => "event",
            Self::PushAuthorization => "push_authorization",
            Self::TotpSecret => "totp_secret",
        }
    }

    /// The kinds the `keys` table holds.
    pub const STORED: [KeyKind; 3] = [Self::Mac, Self::IdToken, Self::Event];
}

/// A stored key.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredKey {
    /// The key id.
    pub id: u32,
    /// The key material.
    pub secret: Vec<u8>,
    /// When it was made.
    pub created_at: UnixTime,
    /// When it was retired.
    pub retired_at: Option<UnixTime>,
}

impl std::fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoredKey({}, created {:?}, retired {:?})", self.id, self.created_at, self.retired_at)
    }
}

/// A count of App Check token requests: one client, one hour, one category.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppCheckCount {
    /// The start of the hour.
    pub hour: UnixTime,
    /// The category.
    pub category: latchkey_core::app_check::Category,
    /// How many requests.
    pub count: u64,
}

/// Who publishes an extension-store listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Publisher {
    /// One developer, by e-mail address.
    Individual(String),
    /// A group publisher with its (synchronized) member list.
    Group {
        /// The group's name.
        name: String,
        /// The members' e-mail addresses.
        members: Vec<String>,
    },
}

/// A listing of the extension store's developer dashboard, as the built-in directory keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The extension's item ID.
    pub item_id: String,
    /// Its publisher.
    pub publisher: Publisher,
    /// When it was registered.
    pub created_at: UnixTime,
}

/// A developer's role in a project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProjectRole {
    /// Manages the project, its clients and its members; a project keeps at least one.
    Owner,
    /// Manages the project and its clients, not its members.
    Editor,
}

impl ProjectRole {
    /// The role's name in the store, the CLI and the JSON API.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Editor => "editor",
        }
    }

    /// Parses the role's name.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Owner, Self::Editor].into_iter().find(|r| r.as_str() == s)
    }
}

/// A developer's membership of a project, to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectMember {
    /// The project.
    pub project_id: String,
    /// The developer (a user account).
    pub user_id: String,
    /// The role.
    pub role: ProjectRole,
    /// When the membership began.
    pub added_at: UnixTime,
}

/// A member of a project as listed, with the account's e-mail address and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The user id.
    pub user_id: String,
    /// The e-mail address.
    pub email: String,
    /// The display name.
    pub name: Option<String>,
    /// The role.
    pub role: ProjectRole,
    /// When the membership began.
    pub added_at: UnixTime,
}

/// The outcome of removing a member or changing a member's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberChange {
    /// Done.
    Done,
    /// The user is not a member of the project (or there is no such project).
    NotMember,
    /// Refused: the project would be left without an owner.
    LastOwner,
}

/// A developer's key for the console's JSON API. The key itself is `lk_<id>_<secret>`; only the SHA-256 of
/// the whole key is kept.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// The key's public id (lower-case letters and digits).
    pub id: String,
    /// The developer it acts for.
    pub user_id: String,
    /// A name to recognise it by.
    pub name: String,
    /// SHA-256 of the whole key.
    pub secret_hash: Vec<u8>,
    /// When it was created.
    pub created_at: UnixTime,
    /// When it was last used (recorded at most once an hour), if ever.
    pub last_used_at: Option<UnixTime>,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKey({}, user {}, {:?})", self.id, self.user_id, self.name)
    }
}
