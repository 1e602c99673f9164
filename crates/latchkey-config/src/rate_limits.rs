//! The `[rate_limits]` settings: how many requests the token and revocation endpoints take (`docs/security.md`).

use serde::{Deserialize, Serialize};

/// Request rates allowed on `/token` and `/revoke`, each a number of requests a minute (0 turns the limit off).
/// A limit admits a burst of its whole minute at once, then one request every `60 / limit` seconds. In TOML, the
/// `[rate_limits]` table; from the environment, `LATCHKEY_RATE_LIMITS_<NAME>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitsConfig {
    /// Requests a minute from one client address (an IPv6 address counts by its /64). Default 600.
    pub token_per_address: u32,
    /// Requests a minute naming one client id, from anywhere. Default 60000.
    pub token_per_client: u32,
    /// Requests a minute with a developer's console API keys (all their keys together), to the console's JSON API
    /// and the Shared Signals endpoints (polls included). Default 600.
    pub api_per_key: u32,
    /// Dynamic client registrations an hour from one client address (`POST /register`). Default 10.
    pub register_per_address: u32,
}

impl Default for RateLimitsConfig {
    fn default() -> Self {
        Self { token_per_address: 600, token_per_client: 60_000, api_per_key: 600, register_per_address: 10 }
    }
}

impl RateLimitsConfig {
    /// The environment variables' prefix.
    pub const ENV_PREFIX: &'static str = "LATCHKEY_RATE_LIMITS_";

    /// No limit at all (tests that send many requests from one loopback address).
    pub const OFF: Self = Self { token_per_address: 0, token_per_client: 0, api_per_key: 0, register_per_address: 0 };
}
