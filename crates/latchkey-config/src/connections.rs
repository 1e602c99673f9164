//! The `[connections]` settings: how long a client may take at each step of a connection, and how many
//! connections the listener holds (`docs/security.md`, "Connections").

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Timeouts and caps of the HTTPS listener. In TOML, the `[connections]` table; from the environment,
/// `LATCHKEY_CONNECTIONS_<NAME>`. Every timeout is in seconds and at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConnectionsConfig {
    /// The TLS handshake, from the first byte. Default 10.
    pub handshake_timeout_secs: u64,
    /// From the end of the handshake to the first request: the HTTP version's detection, the HTTP/2 preface and
    /// settings, the first request's head. Default 10.
    pub first_request_timeout_secs: u64,
    /// An HTTP/1.1 request's head, from the moment the connection waits for it: so also how long an idle
    /// keep-alive connection stays open. Default 10.
    pub header_read_timeout_secs: u64,
    /// An HTTP/2 connection with no request in flight. Default 60.
    pub idle_timeout_secs: u64,
    /// A request, from its head until its answer (a slow body included): past it the answer is 408 in the
    /// endpoint's format. Default 30.
    pub request_timeout_secs: u64,
    /// Open connections in all; past it the listener accepts no more until one closes. Default 16384.
    pub max_connections: usize,
    /// Open connections from one address (an IPv4 address or an IPv6 /64); past it a new one is closed at once.
    /// Default 256.
    pub max_connections_per_address: usize,
}

impl Default for ConnectionsConfig {
    fn default() -> Self {
        Self {
            handshake_timeout_secs: 10,
            first_request_timeout_secs: 10,
            header_read_timeout_secs: 10,
            idle_timeout_secs: 60,
            request_timeout_secs: 30,
            max_connections: 16_384,
            max_connections_per_address: 256,
        }
    }
}

impl ConnectionsConfig {
    /// The environment variables' prefix.
    pub const ENV_PREFIX: &'static str = "LATCHKEY_CONNECTIONS_";

    /// Refuses a setting of zero.
    pub fn validate(&self) -> Result<(), String> {
        let timeouts = [
            self.handshake_timeout_secs,
            self.first_request_timeout_secs,
            self.header_read_timeout_secs,
            self.idle_timeout_secs,
            self.request_timeout_secs,
        ];
        if timeouts.contains(&0) || self.max_connections == 0 || self.max_connections_per_address == 0 {
            return Err("every [connections] setting is at least 1".into());
        }
        Ok(())
    }

    /// The TLS handshake's limit.
    pub fn handshake(&self) -> Duration {
        Duration::from_secs(self.handshake_timeout_secs)
    }

    /// The first request's limit.
    pub fn first_request(&self) -> Duration {
        Duration::from_secs(self.first_request_timeout_secs)
    }

    /// An HTTP/1.1 head's limit.
    pub fn header_read(&self) -> Duration {
        Duration::from_secs(self.header_read_timeout_secs)
    }

    /// An idle HTTP/2 connection's limit.
    pub fn idle(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }

    /// A request's limit.
    pub fn request(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs)
    }
}
