//! The `[events]` settings: how security events reach the apps' receivers (`docs/events.md`).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The settings of the security event transmitter. In TOML, the `[events]` table; from the environment,
/// `LATCHKEY_EVENTS_<NAME>` (for example `LATCHKEY_EVENTS_ALLOW_INSECURE_LOOPBACK_PUSH=true`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EventsConfig {
    /// Accept `http://` push URLs to a loopback address (tests and local development only). Default false.
    pub allow_insecure_loopback_push: bool,
    /// Extra PEM trust anchors for push receivers (beside the system's roots).
    pub push_ca_file: Option<PathBuf>,
    /// Seconds an event may wait for delivery (a receiver down, a paused stream, a poll receiver that does not
    /// poll) before it is dead-lettered. Default 86400 (24 hours, `docs/decisions.md`, "Security events").
    pub max_age_secs: i64,
    /// Seconds a push may take before it counts as failed and is retried. Default 10.
    pub push_timeout_secs: u64,
    /// Milliseconds between the delivery worker's looks for due events. Default 1000.
    pub worker_interval_ms: u64,
    /// Seconds between two verification requests of one stream (`min_verification_interval`). Default 30.
    pub min_verification_interval: i64,
}

impl Default for EventsConfig {
    fn default() -> Self {
        Self {
            allow_insecure_loopback_push: false,
            push_ca_file: None,
            max_age_secs: 86_400,
            push_timeout_secs: 10,
            worker_interval_ms: 1000,
            min_verification_interval: 30,
        }
    }
}

impl EventsConfig {
    /// The environment variables' prefix.
    pub const ENV_PREFIX: &'static str = "LATCHKEY_EVENTS_";

    /// Checks the values that can be wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_age_secs <= 0 || self.push_timeout_secs == 0 || self.worker_interval_ms == 0 {
            return Err("events.max_age_secs, push_timeout_secs and worker_interval_ms must be positive".into());
        }
        if self.push_timeout_secs > 600 || self.max_age_secs > 90 * 86_400 {
            return Err("events.push_timeout_secs is at most 600 and max_age_secs at most 90 days".into());
        }
        if !(0..=86_400).contains(&self.min_verification_interval) {
            return Err("events.min_verification_interval is between 0 and 86400".into());
        }
        Ok(())
    }
}
