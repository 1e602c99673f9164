//! The `[client_metadata]` settings: client ID metadata documents, whose `client_id` is the URL of the app's
//! metadata, fetched by latchkey ([clients.md](../../../docs/clients.md)).

use serde::{Deserialize, Serialize};

/// In TOML, the `[client_metadata]` table; from the environment, `LATCHKEY_CLIENT_METADATA_<NAME>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientMetadataConfig {
    /// Whether a `client_id` that is an `https` URL is fetched as the app's metadata document. Default on.
    pub enabled: bool,
    /// Hosts whose documents are refused (exact names, compared without case): a list, or comma-separated.
    #[serde(deserialize_with = "crate::list_or_joined")]
    pub blocked_hosts: Vec<String>,
    /// Document URLs refused (exactly as the `client_id` writes them): a list, or comma-separated.
    #[serde(deserialize_with = "crate::list_or_joined")]
    pub blocked_urls: Vec<String>,
    /// For tests only: also fetch `http://127.0.0.1:<port>/...` documents. Default off.
    pub allow_insecure_loopback: bool,
}

impl Default for ClientMetadataConfig {
    fn default() -> Self {
        Self { enabled: true, blocked_hosts: Vec::new(), blocked_urls: Vec::new(), allow_insecure_loopback: false }
    }
}

impl ClientMetadataConfig {
    /// The environment variables' prefix.
    pub const ENV_PREFIX: &'static str = "LATCHKEY_CLIENT_METADATA_";

    /// Whether the operator refused the document at `url` (of host `host`).
    pub fn blocks(&self, url: &str, host: &str) -> bool {
        self.blocked_urls.iter().any(|u| u == url) || self.blocked_hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }
}
