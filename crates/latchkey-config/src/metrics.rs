//! The `[metrics]` settings: who may read `/metrics` (`docs/operations.md#metrics-and-alerts`).

use super::SecretList;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The bearer tokens a scraper may send to `/metrics`; with none, `/metrics` is off (404). In TOML, the
/// `[metrics]` table; from the environment, `LATCHKEY_METRICS_<NAME>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsConfig {
    /// The tokens (a list, or comma-separated): more than one while the scrapers move to a new one.
    pub token: Option<SecretList>,
    /// A file holding the tokens, one a line (Prometheus's `credentials_file` can read the same file). Read at
    /// each scrape, so that a new token takes effect without a restart.
    pub token_file: Option<PathBuf>,
}

/// The fewest characters a metrics token has.
pub const MIN_TOKEN_LEN: usize = 16;

impl MetricsConfig {
    /// The environment variables' prefix.
    pub const ENV_PREFIX: &'static str = "LATCHKEY_METRICS_";

    /// Checks the values that can be wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.token.is_some() && self.token_file.is_some() {
            return Err("[metrics]: set token or token_file, not both".into());
        }
        if let Some(tokens) = &self.token {
            if tokens.expose().is_empty() || tokens.expose().iter().any(|t| t.chars().count() < MIN_TOKEN_LEN) {
                return Err(format!("[metrics] token: each token has at least {MIN_TOKEN_LEN} characters"));
            }
        }
        Ok(())
    }

    /// Whether `/metrics` is served at all.
    pub fn enabled(&self) -> bool {
        self.token.is_some() || self.token_file.is_some()
    }

    /// The tokens in force now (the file's lines of at least [`MIN_TOKEN_LEN`] characters, or the configured ones).
    pub fn tokens(&self) -> std::io::Result<Vec<String>> {
        if let Some(path) = &self.token_file {
            let text = std::fs::read_to_string(path)?;
            return Ok(text
                .lines()
                .map(str::trim)
                .filter(|t| t.chars().count() >= MIN_TOKEN_LEN)
                .map(str::to_owned)
                .collect());
        }
        Ok(self.token.as_ref().map(|t| t.expose().to_vec()).unwrap_or_default())
    }
}
