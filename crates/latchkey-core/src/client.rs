//! OAuth clients (the spec's "OAuth client (credential)"): the four client types and their records.

use crate::time::UnixTime;

/// The four client types of the spec.
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
}

impl ClientType {
    /// Every type, in the order the console lists them.
    pub const ALL: [ClientType; 4] = [Self::Desktop, Self::Mobile, Self::UniversalDesktop, Self::BrowserExtension];

    /// The type's name in the CLI, the store and the JSON API.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Mobile => "mobile",
            Self::UniversalDesktop => "universal-desktop",
            Self::Desktop => "desktop",
            Self::BrowserExtension => "browser-extension",
        }
    }

    /// The type's name as people read it.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Mobile => "Mobile platform app",
            Self::UniversalDesktop => "Universal desktop platform app",
            Self::Desktop => "Desktop app",
            Self::BrowserExtension => "Browser extension",
        }
    }

    /// Parses the type's name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// The type-specific fields of a client; each applies to the types the spec names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
    /// SHA-256 of the client secret.
    pub secret_hash: Vec<u8>,
    /// Type-specific fields.
    pub details: ClientDetails,
    /// When the client was created.
    pub created_at: UnixTime,
    /// When the client was deleted, if it was.
    pub deleted_at: Option<UnixTime>,
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

/// Checks the fields of a client of `kind` against the spec's rules; every broken rule is reported.
pub fn validate_fields(kind: ClientType, name: &str, redirect_uris: &[String], d: &ClientDetails) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = name.trim();
    if name.is_empty() {
        errors.push(field_error("name", "Enter a client name."));
    } else if name.chars().count() > 100 {
        errors.push(field_error("name", "A client name is at most 100 characters."));
    }
    for uri in redirect_uris {
        if crate::redirect::scheme_of(uri).is_none() || uri.contains('#') || uri.chars().any(char::is_whitespace) {
            errors.push(field_error("redirect_uri", format!("Not an absolute URI without a fragment: {uri}")));
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
        ClientType::Desktop => {}
    }
    errors
}
