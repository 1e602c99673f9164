//! OAuth clients (`docs/decisions.md`, "Clients"): the four client types and their records.

use crate::time::UnixTime;

/// The four client types (`docs/decisions.md`, "Clients").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientType {
    /// A phone or tablet app (bundle identifier, App Check).
    Mobile,
    /// A universal-desktop-platform app (store ID, package SID redirect).
    UniversalDesktop,
    /// A desktop app using loopback redirects.
    Desktop,
    /// A browser extension using the browser's identity API.
    BrowserExtension,
    /// A TV, console, camera, printer or command line without a browser: the device authorization grant
    /// (RFC 8628) only, with no redirect URI.
    Tv,
}

impl ClientType {
    /// Every type, in the order the console lists them.
    pub const ALL: [ClientType; 5] =
        [Self::Desktop, Self::Mobile, Self::UniversalDesktop, Self::BrowserExtension, Self::Tv];

    /// The type's name in the CLI, the store and the JSON API.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Mobile => "mobile",
            Self::UniversalDesktop => "universal-desktop",
            Self::Desktop => "desktop",
            Self::BrowserExtension => "browser-extension",
            Self::Tv => "tv",
        }
    }

    /// The type's name as people read it.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Mobile => "Mobile platform app",
            Self::UniversalDesktop => "Universal desktop platform app",
            Self::Desktop => "Desktop app",
            Self::BrowserExtension => "Browser extension",
            Self::Tv => "TVs and Limited Input devices",
        }
    }

    /// Parses the type's name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// The type-specific fields of a client; each applies to the types `docs/decisions.md` ("Clients") names.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ClientDetails {
    /// Mobile: the app's bundle identifier.
    pub bundle_id: Option<String>,
    /// Mobile: the app-store ID (digits).
    pub store_id: Option<String>,
    /// Mobile: the team ID (required when App Check is on).
    pub team_id: Option<String>,
    /// Mobile: whether App Check is switched on.
    pub app_check: bool,
    /// Universal desktop: the store ID (exactly 12 characters).
    pub uwp_store_id: Option<String>,
    /// Universal desktop: the package security identifier.
    pub package_sid: Option<String>,
    /// Browser extension: the extension's item ID.
    pub extension_item_id: Option<String>,
}

/// A client as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// The public identifier.
    pub client_id: String,
    /// The project the client belongs to.
    pub project_id: String,
    /// The name shown in the project's client list and on the consent page.
    pub name: String,
    /// The client type.
    pub client_type: ClientType,
    /// Authorized redirect URIs, compared as exact strings.
    pub redirect_uris: Vec<String>,
    /// The client's secrets (at most [`MAX_SECRETS`]), each stored as its hash.
    pub secrets: Vec<ClientSecret>,
    /// Type-specific fields.
    pub details: ClientDetails,
    /// When the client was created.
    pub created_at: UnixTime,
    /// When the client was deleted, if it was.
    pub deleted_at: Option<UnixTime>,
    /// When the client last got tokens (recorded at most once an hour), if ever.
    pub last_used_at: Option<UnixTime>,
    /// Mobile: the App Check state, with the change on its way.
    pub app_check: crate::app_check_setting::AppCheck,
    /// Browser extension: when owner verification last succeeded.
    pub ownership_verified_at: Option<UnixTime>,
    /// How the client registered itself, when it did (not made in the console).
    pub registration: Option<Registration>,
    /// Whether its project rotates its clients' refresh tokens (read with the client).
    pub project_rotates: bool,
}

/// How a client registered itself ([`crate::registration`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistrationKind {
    /// Dynamic client registration (RFC 7591) at `/register`.
    Dynamic,
    /// A client ID metadata document: its `client_id` is the URL of its metadata.
    Document,
}

impl RegistrationKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dynamic => "dynamic",
            Self::Document => "document",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Dynamic, Self::Document].into_iter().find(|k| k.as_str() == s)
    }
}

/// What a self-registered client's registration holds beyond the client's own fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// How it registered.
    pub kind: RegistrationKind,
    /// The SHA-256 of its registration access token (RFC 7592), for a dynamic registration.
    pub token_hash: Option<Vec<u8>>,
    /// The app's home page, as its metadata named it.
    pub client_uri: Option<String>,
    /// The app's logo, as its metadata named it (never shown: it is on a host latchkey does not vouch for).
    pub logo_uri: Option<String>,
}

/// Seconds in a day.
pub const DAY: i64 = 86_400;

/// How often `last_used_at` is written at most: a client getting tokens all day costs one write an hour.
pub const LAST_USED_GRANULARITY: i64 = 3600;

impl Client {
    /// Whether its refresh tokens rotate (those not bound by DPoP): it registered itself, or its project rotates
    /// its clients' tokens.
    pub fn rotates_refresh_tokens(&self) -> bool {
        self.registration.is_some() || self.project_rotates
    }

    /// Whether a request naming this client can only come from the client itself: App Check enforced at `now`
    /// (the platform attests the app). A loopback or custom-scheme redirect, or an issued secret, is no such proof
    /// for an installed app (RFC 8252 §8.5, §8.6); nor is an extension's verified ownership, since its redirect
    /// URIs may be any `https` address and are not tied to the extension's own.
    pub fn identity_assured(&self, now: UnixTime) -> bool {
        self.app_check.effective(now) == crate::app_check_setting::AppCheckState::Enforced
    }

    /// When the client was last used, or created when it never was: unused clients are measured from here.
    pub fn last_activity(&self) -> UnixTime {
        self.last_used_at.unwrap_or(self.created_at).max(self.created_at)
    }
}

/// Why a deleted client cannot be restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreRefusal {
    /// The client is not deleted.
    NotDeleted,
    /// The restore window (`restore_days` after deletion) has passed.
    WindowPassed {
        /// The window, in days.
        restore_days: i64,
    },
}

impl std::fmt::Display for RestoreRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotDeleted => f.write_str("the client is not deleted"),
            Self::WindowPassed { restore_days } => {
                write!(f, "the client was deleted more than {restore_days} days ago and can no longer be restored")
            }
        }
    }
}

/// Whether a client deleted at `deleted_at` may be restored at `now` (within `restore_days` of deletion).
pub fn check_restore(deleted_at: Option<UnixTime>, now: UnixTime, restore_days: i64) -> Result<(), RestoreRefusal> {
    match deleted_at {
        None => Err(RestoreRefusal::NotDeleted),
        Some(at) if now.0 - at.0 > restore_days * DAY => Err(RestoreRefusal::WindowPassed { restore_days }),
        Some(_) => Ok(()),
    }
}

/// Days without tokens after which a client that registered itself is deleted (restorably, as any unused client).
pub const REGISTERED_UNUSED_DAYS: i64 = 30;

/// The moment before which a client's last activity makes it unused at `now` (`unused_days` without tokens).
pub fn unused_cutoff(now: UnixTime, unused_days: i64) -> UnixTime {
    UnixTime(now.0 - unused_days * DAY)
}

/// The moment before which a deletion is final at `now`: such clients are purged with their grants.
pub fn purge_cutoff(now: UnixTime, restore_days: i64) -> UnixTime {
    UnixTime(now.0 - restore_days * DAY)
}

/// Checks an edit of `old` into `name`, `redirect_uris` and `d`: the rules of [`validate_fields`] for the
/// client's type (which never changes), and the bundle ID is frozen once App Check is used.
pub fn validate_update(old: &Client, name: &str, redirect_uris: &[String], d: &ClientDetails) -> Vec<FieldError> {
    let mut errors = validate_fields(old.client_type, name, redirect_uris, d);
    if old.client_type == ClientType::Mobile && old.details.app_check && d.bundle_id != old.details.bundle_id {
        errors.push(field_error("bundle_id", "The bundle ID is frozen once App Check is used."));
    }
    errors
}

/// A field of a client that breaks a rule, with the message shown next to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field's name (as in the CLI and the JSON API).
    pub field: &'static str,
    /// What is wrong, for a person.
    pub message: String,
}

fn field_error(field: &'static str, message: impl Into<String>) -> FieldError {
    FieldError { field, message: message.into() }
}

/// The message refusing a custom URI scheme to a browser extension, in the words developers know from the
/// best-known provider (which names Android and Chrome apps).
pub const CUSTOM_SCHEME_UNSUPPORTED: &str = "Custom URI scheme is not supported on Android or Chrome apps";

/// Whether `uri` (whose scheme is `scheme`) has the one shape of a universal desktop app's redirect URI,
/// `<platform_scheme>://<package_sid_lowercase>`, with the app's own package SID. Registration and the
/// authorization endpoint both ask here.
pub fn is_package_sid_uri(uri: &str, scheme: &str, package_sid: Option<&str>) -> bool {
    let authority = uri.strip_prefix(scheme).and_then(|rest| rest.strip_prefix("://"));
    package_sid.is_some_and(|sid| !sid.is_empty() && authority == Some(sid))
}

/// Why a client of `kind` cannot register `uri` (whose scheme is `scheme`), following the redirect methods of
/// `docs/decisions.md` ("Clients"): loopback for desktop apps only, `<scheme>://<package_sid_lowercase>` with at most
/// 39 characters of scheme for universal desktop apps, the browser's identity API (an `https` redirect) for extensions,
/// and no out-of-band flow.
fn redirect_refusal(kind: ClientType, scheme: &str, uri: &str, d: &ClientDetails) -> Option<&'static str> {
    let loopback = ["http://127.0.0.1", "http://[::1]", "http://localhost"].iter().any(|p| uri.starts_with(p));
    if scheme.eq_ignore_ascii_case("urn") && uri.starts_with("urn:ietf:wg:oauth:2.0:oob") {
        return Some("The out-of-band (OOB) flow is deprecated and not supported");
    }
    match kind {
        ClientType::Desktop => None,
        _ if loopback => Some("Loopback redirects are only for desktop app clients"),
        ClientType::UniversalDesktop if scheme.len() > 39 => {
            Some("The custom URI scheme of a universal desktop app is at most 39 characters")
        }
        ClientType::UniversalDesktop if !is_package_sid_uri(uri, scheme, d.package_sid.as_deref()) => Some(
            "A universal desktop app's redirect URI is <platform_scheme>://<package_sid_lowercase>, with the app's own \
             package SID (enter it above)",
        ),
        ClientType::BrowserExtension if !scheme.eq_ignore_ascii_case("https") => Some(
            "Custom URI scheme is not supported on Android or Chrome apps: browser extensions use the browser's \
             identity API (an https redirect)",
        ),
        _ => None,
    }
}

/// Checks the fields of a client of `kind` against its type's rules (`docs/decisions.md`, "Clients"); every
/// broken rule is reported.
pub fn validate_fields(kind: ClientType, name: &str, redirect_uris: &[String], d: &ClientDetails) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = name.trim();
    if name.is_empty() {
        errors.push(field_error("name", "Enter a client name."));
    } else if name.chars().count() > 100 {
        errors.push(field_error("name", "A client name is at most 100 characters."));
    }
    if kind == ClientType::Tv && !redirect_uris.is_empty() {
        let why = "TVs and Limited Input devices have no redirect URIs: they sign in with the device flow.";
        errors.push(field_error("redirect_uri", why));
    }
    for uri in redirect_uris.iter().filter(|_| kind != ClientType::Tv) {
        match scheme_of(uri) {
            Some(_) if uri.contains('#') || uri.chars().any(char::is_whitespace) => {
                errors.push(field_error("redirect_uri", format!("Not an absolute URI without a fragment: {uri}")));
            }
            Some(scheme) => {
                if let Some(message) = redirect_refusal(kind, scheme, uri, d) {
                    errors.push(field_error("redirect_uri", format!("{message}: {uri}")));
                }
            }
            None => errors.push(field_error("redirect_uri", format!("Not an absolute URI without a fragment: {uri}"))),
        }
    }
    let present = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.trim().is_empty());
    match kind {
        ClientType::Mobile => {
            if !present(&d.bundle_id) {
                errors.push(field_error("bundle_id", "A mobile-platform client needs its app's bundle ID."));
            }
            if let Some(s) = d.store_id.as_deref().filter(|s| !s.is_empty()) {
                if !s.bytes().all(|b| b.is_ascii_digit()) {
                    errors.push(field_error(
                        "store_id",
                        "The store ID is digits only (the last part of the app-store URL).",
                    ));
                }
            }
            if d.app_check {
                if !present(&d.team_id) {
                    errors.push(field_error("team_id", "A team ID is required when App Check is enabled."));
                }
                if d.bundle_id.as_deref().is_some_and(|b| b.contains('*')) {
                    errors
                        .push(field_error("bundle_id", "The bundle ID must not contain * when App Check is enabled."));
                }
            }
        }
        ClientType::UniversalDesktop => {
            match d.uwp_store_id.as_deref() {
                Some(s) if s.chars().count() == 12 => {}
                _ => errors.push(field_error(
                    "uwp_store_id",
                    "The store ID of a universal desktop app is exactly 12 characters.",
                )),
            }
            if let Some(sid) = d.package_sid.as_deref() {
                if sid != sid.to_lowercase() || sid.is_empty() {
                    errors.push(field_error("package_sid", "The package SID is written in lower case."));
                }
            }
        }
        ClientType::BrowserExtension => {
            if !present(&d.extension_item_id) {
                errors.push(field_error(
                    "extension_item_id",
                    "A browser-extension client needs the extension's item ID.",
                ));
            }
        }
        ClientType::Desktop | ClientType::Tv => {}
    }
    errors
}

/// The scheme of an absolute URI (RFC 3986 §3.1), lower-cased comparison left to callers.
pub fn scheme_of(uri: &str) -> Option<&str> {
    let (scheme, _) = uri.split_once(':')?;
    let mut bytes = scheme.bytes();
    let first_ok = bytes.next().is_some_and(|b| b.is_ascii_alphabetic());
    (first_ok && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))).then_some(scheme)
}

mod secrets;

pub use secrets::{accepts, change_secrets, ClientSecret, SecretChange, SecretRefusal, MAX_SECRETS};

#[cfg(test)]
mod tests;
