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
