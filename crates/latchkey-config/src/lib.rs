//! Configuration: one documented struct, read from a TOML file, `LATCHKEY_*` environment variables and flags
//! (in that order of precedence, flags last), validated at start-up. `docs/configuration.md` lists every field.
//! With it, the public URLs the server serves ([`Urls`]), the endpoints' paths ([`paths`]) and the opening of the
//! store it names ([`open_store`]): what the server and the admin commands share, in a crate below the server so
//! that the admin commands need nothing of HTTP.

mod client_metadata;
mod connections;
mod events;
mod metrics;
pub mod paths;
mod rate_limits;
mod store;

pub use client_metadata::ClientMetadataConfig;
pub use connections::ConnectionsConfig;
pub use events::EventsConfig;
pub use metrics::MetricsConfig;
pub use rate_limits::RateLimitsConfig;
pub use store::{open_store, prepare_data_dir};

use latchkey_admin::secrets::{SecretSource, SecretsError, MIN_SECRET_LEN};
use latchkey_admin::Lifecycle;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Everything an operator can set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where the SQLite database, the system secret and the generated TLS certificate live, readable by the
    /// server's account only (0700). Default `./latchkey-data`.
    pub data_dir: PathBuf,
    /// The HTTPS listener. Default `127.0.0.1:8443`.
    pub listen: SocketAddr,
    /// The database; default `sqlite://<data_dir>/latchkey.db`. `postgres://...` selects PostgreSQL.
    pub database_url: Option<String>,
    /// PostgreSQL: connections per instance. Default 16.
    pub database_max_connections: u32,
    /// PostgreSQL: seconds a request waits for a connection before answering 503. Default 3.
    pub database_acquire_timeout: u64,
    /// PostgreSQL: connections per instance that one-row reads and DPoP's replay records share, pipelined. Default 2.
    pub database_shared_connections: u32,
    /// PEM certificate chain; with `tls_key`. Default: a generated self-signed certificate in `<data_dir>/tls`.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `tls_cert`.
    pub tls_key: Option<PathBuf>,
    /// The public base URL, which is also the issuer. Default `https://localhost:8443` on the default listener
    /// (passkeys need a host name, and the generated certificate names `localhost`), else `https://<listen>`
    /// (`https://localhost:<port>` for an unspecified address).
    pub public_url: Option<String>,
    /// Base URL of the authorization endpoint, when it is served under another name. Default `public_url`.
    pub auth_url: Option<String>,
    /// Base URL of the token and revocation endpoints. Default `public_url`.
    pub token_url: Option<String>,
    /// Base URL of the data API. Default `public_url`.
    pub api_base_url: Option<String>,
    /// The prefix of the data-API scope identifiers. Default `https://latchkey.dev`.
    pub scope_base: String,
    /// Access-token lifetime in seconds (`expires_in`). Default 3600.
    pub access_token_lifetime: i64,
    /// The lifetime of a JWT access token (an API that asked for JWTs verifies them offline, so revoking its grant
    /// does not stop one before it expires), in seconds, at most `access_token_lifetime`. Default 300.
    pub jwt_access_token_lifetime: i64,
    /// Seconds after a refresh-token rotation during which the retired token gets the same new token again
    /// instead of revoking the grant (a response lost on its way); 0 for none.
    pub refresh_rotation_grace: i64,
    /// Authorization-code lifetime in seconds. Default 600.
    pub code_lifetime: i64,
    /// Browser session lifetime in seconds. Default 43200 (12 hours).
    pub session_lifetime: i64,
    /// Accounts one browser may be signed in to at once (the session cookie holds 44 characters per account).
    /// Default 10.
    pub max_accounts_per_browser: usize,
    /// Seconds between the batched writes of the day each grant was last used (at most one write per grant per
    /// hour per instance, never on the request path). Default 60.
    pub last_used_flush_secs: u64,
    /// E-mail addresses of the accounts whose console API keys may act as the operator on user accounts
    /// (disable, enable, delete, their apps): a TOML array, or comma-separated in `LATCHKEY_OPERATORS`. Default
    /// none.
    #[serde(deserialize_with = "list_or_joined")]
    pub operators: Vec<String>,
    /// Refuse authorization requests without PKCE (RFC 9700). Default true.
    pub require_pkce: bool,
    /// Live refresh tokens per (client, user). Default 100.
    pub refresh_tokens_per_client_user: u32,
    /// Live refresh tokens per user across all clients. Default 1000.
    pub refresh_tokens_per_user: u32,
    /// Password checks allowed per (e-mail, address) within `login_failure_window`; an address (an IPv6 /64)
    /// may have 20 times as many across all e-mails. Default 5.
    pub login_max_failures: u32,
    /// Password checks allowed per account within `login_failure_window`, whatever the addresses. Default 20.
    pub login_account_max_failures: u32,
    /// The window of the sign-in throttle, in seconds; a window that reached its limit is followed by one twice as
    /// long, up to a day. Default 900.
    pub login_failure_window: i64,
    /// Log format: `text` or `json`. Default `text`.
    pub log_format: String,
    /// Seconds a DPoP proof's `iat` may lie in the past. Default 60.
    pub dpop_max_age: i64,
    /// Seconds a DPoP proof's `iat` may lie in the future (clock skew). Default 5.
    pub dpop_max_future: i64,
    /// Lifetime of a DPoP server nonce in seconds. Default 300.
    pub dpop_nonce_lifetime: i64,
    /// Lifetime of a device code and its user code (RFC 8628 `expires_in`), in seconds. Default 1800.
    pub device_code_lifetime: i64,
    /// The seconds a device waits between polls (RFC 8628 `interval`). Default 5.
    pub device_poll_interval: i64,
    /// The code-hash rule (`docs/decisions.md`, "DPoP"), strictly: a code-exchange proof's `jti` must be
    /// Base64url(SHA-256(code)). Default false:
    /// a proof with another unique `jti` is accepted together with a valid server nonce (RFC 9449 clients).
    pub dpop_strict_code_jti: bool,
    /// Days without tokens after which a client is deleted automatically (restorably). Default 180.
    pub client_unused_days: i64,
    /// Days a deleted client can be restored; afterwards it is purged with its grants. Default 30.
    pub client_restore_days: i64,
    /// Seconds before an App Check change (enable, enforce, unenforce, disable) takes effect. Default 900.
    pub app_check_propagation_secs: i64,
    /// An external App Check provider: a JWKS file of the keys that sign its tokens (ES256 or RS256).
    pub app_check_jwks_file: Option<PathBuf>,
    /// An external App Check provider: the HTTPS URL of its JWKS, fetched at start-up, every
    /// `app_check_jwks_refresh_secs`, and again (at most every 30 s) when a token names a key id it lacks.
    pub app_check_jwks_url: Option<String>,
    /// Extra PEM trust anchors for fetching `app_check_jwks_url` (beside the system's roots).
    pub app_check_jwks_ca_file: Option<PathBuf>,
    /// Seconds between scheduled fetches of `app_check_jwks_url`. Default 3600.
    pub app_check_jwks_refresh_secs: u64,
    /// The external App Check provider's `iss`; required with `app_check_jwks_file` or `app_check_jwks_url`.
    pub app_check_issuer: Option<String>,
    /// The system secrets that encrypt the stored signing and MAC keys, first the one that encrypts (a TOML array,
    /// or comma-separated in `LATCHKEY_SECRETS_SYSTEM`). Default: the file `secrets_system_file`.
    pub secrets_system: Option<SecretList>,
    /// A file of system secrets, one a line. Default `<data_dir>/system-secret`, made (0600) on first start.
    pub secrets_system_file: Option<PathBuf>,
    /// Days after which each kind of signing key is replaced by a new one (the old one verifies for a week more);
    /// 0: only on command (`latchkey admin keys rotate`). Default 90.
    pub key_rotation_days: i64,
    /// The security event transmitter (`[events]`).
    pub events: EventsConfig,
    /// The token and revocation endpoints' rate limits (`[rate_limits]`).
    pub rate_limits: RateLimitsConfig,
    /// Client ID metadata documents (`[client_metadata]`).
    pub client_metadata: ClientMetadataConfig,
    /// The listener's timeouts and connection caps (`[connections]`).
    pub connections: ConnectionsConfig,
    /// Who may read `/metrics` (`[metrics]`).
    pub metrics: MetricsConfig,
}

/// System secrets given in the configuration: never printed (`Debug` shows only how many).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct SecretList(Vec<String>);

impl SecretList {
    /// A list of secrets, first the one that encrypts.
    pub fn new(secrets: Vec<String>) -> Self {
        Self(secrets)
    }

    /// The secrets themselves, to derive keys from.
    pub fn expose(&self) -> &[String] {
        &self.0
    }
}

impl std::fmt::Debug for SecretList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretList({} redacted)", self.0.len())
    }
}

impl Serialize for SecretList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SecretList {
    /// A list of strings, or one string of comma-separated secrets (what an environment variable holds).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        list_or_joined(deserializer).map(Self)
    }
}

/// A list of strings, or one string of comma-separated values (what an environment variable holds); blanks go.
pub(crate) fn list_or_joined<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        List(Vec<String>),
        Joined(String),
    }
    let list = match Form::deserialize(deserializer)? {
        Form::List(list) => list,
        Form::Joined(joined) => joined.split(',').map(str::to_owned).collect(),
    };
    Ok(list.iter().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect())
}

/// The listener's default address: `127.0.0.1:8443`, served as `https://localhost:8443`.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 8443);

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("latchkey-data"),
            listen: DEFAULT_LISTEN,
            database_url: None,
            database_max_connections: 16,
            database_acquire_timeout: 3,
            database_shared_connections: 2,
            tls_cert: None,
            tls_key: None,
            public_url: None,
            auth_url: None,
            token_url: None,
            api_base_url: None,
            scope_base: "https://latchkey.dev".into(),
            access_token_lifetime: 3600,
            jwt_access_token_lifetime: 300,
            refresh_rotation_grace: 0,
            code_lifetime: 600,
            session_lifetime: 43_200,
            max_accounts_per_browser: 10,
            last_used_flush_secs: 60,
            operators: Vec::new(),
            require_pkce: true,
            refresh_tokens_per_client_user: 100,
            refresh_tokens_per_user: 1000,
            login_max_failures: 5,
            login_account_max_failures: 20,
            login_failure_window: 900,
            log_format: "text".into(),
            dpop_max_age: 60,
            dpop_max_future: 5,
            dpop_nonce_lifetime: 300,
            device_code_lifetime: 1800,
            device_poll_interval: 5,
            dpop_strict_code_jti: false,
            client_unused_days: 180,
            client_restore_days: 30,
            app_check_propagation_secs: 900,
            app_check_jwks_file: None,
            app_check_jwks_url: None,
            app_check_jwks_ca_file: None,
            app_check_jwks_refresh_secs: 3600,
            app_check_issuer: None,
            secrets_system: None,
            secrets_system_file: None,
            key_rotation_days: 90,
            events: EventsConfig::default(),
            rate_limits: RateLimitsConfig::default(),
            client_metadata: ClientMetadataConfig::default(),
            connections: ConnectionsConfig::default(),
            metrics: MetricsConfig::default(),
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("configuration: {0}")]
pub struct ConfigError(pub String);

/// The field names, which are also the TOML keys; `LATCHKEY_<NAME>` sets each from the environment.
pub const FIELDS: [&str; 45] = [
    "data_dir",
    "listen",
    "database_url",
    "database_max_connections",
    "database_acquire_timeout",
    "database_shared_connections",
    "tls_cert",
    "tls_key",
    "public_url",
    "auth_url",
    "token_url",
    "api_base_url",
    "scope_base",
    "access_token_lifetime",
    "jwt_access_token_lifetime",
    "refresh_rotation_grace",
    "code_lifetime",
    "session_lifetime",
    "max_accounts_per_browser",
    "last_used_flush_secs",
    "operators",
    "require_pkce",
    "refresh_tokens_per_client_user",
    "refresh_tokens_per_user",
    "login_max_failures",
    "login_account_max_failures",
    "login_failure_window",
    "log_format",
    "dpop_max_age",
    "dpop_max_future",
    "dpop_nonce_lifetime",
    "device_code_lifetime",
    "device_poll_interval",
    "dpop_strict_code_jti",
    "client_unused_days",
    "client_restore_days",
    "app_check_propagation_secs",
    "app_check_jwks_file",
    "app_check_jwks_url",
    "app_check_jwks_ca_file",
    "app_check_jwks_refresh_secs",
    "app_check_issuer",
    "secrets_system",
    "secrets_system_file",
    "key_rotation_days",
];

/// The nested tables, with the prefix of the environment variables that set their fields.
const TABLES: [(&str, &str); 5] = [
    (ClientMetadataConfig::ENV_PREFIX, "client_metadata"),
    (ConnectionsConfig::ENV_PREFIX, "connections"),
    (EventsConfig::ENV_PREFIX, "events"),
    (MetricsConfig::ENV_PREFIX, "metrics"),
    (RateLimitsConfig::ENV_PREFIX, "rate_limits"),
];

impl Config {
    /// Where the system secrets come from: `secrets_system`, else `secrets_system_file`, else the default file in
    /// `data_dir`.
    pub fn secret_source(&self) -> Result<SecretSource, SecretsError> {
        SecretSource::from_settings(
            self.secrets_system.as_ref().map(SecretList::expose),
            self.secrets_system_file.as_deref(),
            &self.data_dir,
        )
    }

    /// The client-lifecycle settings.
    pub fn client_lifecycle(&self) -> Lifecycle {
        Lifecycle { unused_days: self.client_unused_days, restore_days: self.client_restore_days }
    }

    /// Builds the configuration: the TOML `file` (if any), then `LATCHKEY_*` variables from `env`, then
    /// `overrides` (the command line's flags), each later source winning.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        overrides: toml::Table,
    ) -> Result<Self, ConfigError> {
        let mut table = match file {
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
                text.parse::<toml::Table>().map_err(|e| ConfigError(format!("{}: {e}", path.display())))?
            }
            None => toml::Table::new(),
        };
        for (name, value) in env {
            let Some(field) = name.strip_prefix("LATCHKEY_").map(str::to_lowercase) else { continue };
            if FIELDS.contains(&field.as_str()) {
                table.insert(field, env_value(&value));
                continue;
            }
            let nested = TABLES.iter().find_map(|(prefix, t)| Some((*t, name.strip_prefix(prefix)?)));
            if let Some((name, setting)) = nested {
                let entry = table.entry(name).or_insert_with(|| toml::Value::Table(toml::Table::new()));
                if let toml::Value::Table(entry) = entry {
                    entry.insert(setting.to_lowercase(), env_value(&value));
                }
            }
        }
        table.extend(overrides);
        let config: Config = table.try_into().map_err(|e: toml::de::Error| ConfigError(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Reads a TOML file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
        toml::from_str(&text).map_err(|e| ConfigError(format!("{}: {e}", path.display())))
    }

    /// The database URL in force.
    pub fn database_url(&self) -> String {
        self.database_url.clone().unwrap_or_else(|| format!("sqlite://{}", self.data_dir.join("latchkey.db").display()))
    }

    /// The SQLite database file, when the store is SQLite (`sqlite://PATH`, query parameters aside).
    pub fn sqlite_path(&self) -> Option<PathBuf> {
        let url = self.database_url();
        let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
        rest.split('?').next().filter(|p| !p.is_empty()).map(PathBuf::from)
    }

    /// The connection-pool settings (PostgreSQL).
    pub fn pool_settings(&self) -> latchkey_store::PoolSettings {
        latchkey_store::PoolSettings {
            max_connections: self.database_max_connections,
            acquire_timeout: std::time::Duration::from_secs(self.database_acquire_timeout),
            shared_connections: self.database_shared_connections,
        }
    }

    /// Checks the values that can be wrong.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.events.validate().map_err(ConfigError)?;
        self.metrics.validate().map_err(ConfigError)?;
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err(ConfigError("tls_cert and tls_key go together".into()));
        }
        for (name, url) in [
            ("public_url", &self.public_url),
            ("auth_url", &self.auth_url),
            ("token_url", &self.token_url),
            ("api_base_url", &self.api_base_url),
        ] {
            if let Some(u) = url {
                if !u.starts_with("https://") || u.ends_with('/') {
                    return Err(ConfigError(format!("{name} must be an https:// URL without a trailing slash: {u}")));
                }
            }
        }
        let positive = [
            ("access_token_lifetime", self.access_token_lifetime),
            ("jwt_access_token_lifetime", self.jwt_access_token_lifetime),
            ("code_lifetime", self.code_lifetime),
            ("session_lifetime", self.session_lifetime),
            ("login_failure_window", self.login_failure_window),
            ("dpop_nonce_lifetime", self.dpop_nonce_lifetime),
            ("device_code_lifetime", self.device_code_lifetime),
            ("device_poll_interval", self.device_poll_interval),
            ("client_unused_days", self.client_unused_days),
            ("client_restore_days", self.client_restore_days),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v <= 0) {
            return Err(ConfigError(format!("{name} must be positive")));
        }
        self.connections.validate().map_err(ConfigError)?;
        if self.login_max_failures == 0 || self.login_account_max_failures == 0 {
            return Err(ConfigError("login_max_failures and login_account_max_failures must be at least 1".into()));
        }
        if self.login_failure_window > latchkey_store::LONGEST_LOGIN_WINDOW {
            return Err(ConfigError("login_failure_window is at most 86400 seconds (a day)".into()));
        }
        if self.access_token_lifetime > MAX_ACCESS_TOKEN_LIFETIME {
            return Err(ConfigError(format!(
                "access_token_lifetime is at most {MAX_ACCESS_TOKEN_LIFETIME} seconds (6 days): a rotated key verifies \
                 tokens for 7 days, and other instances may sign with it for a minute after the rotation"
            )));
        }
        if !(0..=300).contains(&self.refresh_rotation_grace) {
            return Err(ConfigError("refresh_rotation_grace is between 0 (none) and 300 seconds".into()));
        }
        if !(0..=3650).contains(&self.key_rotation_days) {
            return Err(ConfigError("key_rotation_days is between 0 (off) and 3650".into()));
        }
        if !(1..=20).contains(&self.max_accounts_per_browser) {
            return Err(ConfigError("max_accounts_per_browser must be between 1 and 20 (the cookie's size)".into()));
        }
        if self.last_used_flush_secs == 0 {
            return Err(ConfigError("last_used_flush_secs must be positive".into()));
        }
        if self.refresh_tokens_per_client_user == 0 || self.refresh_tokens_per_user == 0 {
            return Err(ConfigError("refresh-token limits must be at least 1".into()));
        }
        if self.database_max_connections == 0
            || self.database_acquire_timeout == 0
            || self.database_shared_connections == 0
        {
            return Err(ConfigError(
                "database_max_connections, database_acquire_timeout and database_shared_connections must be positive"
                    .into(),
            ));
        }
        if self.database_url.as_deref().is_some_and(|u| latchkey_store::backend_of(u).is_none()) {
            return Err(ConfigError("database_url must start with sqlite:// or postgres://".into()));
        }
        if self.dpop_max_age < 0 || self.dpop_max_future < 0 {
            return Err(ConfigError("dpop_max_age and dpop_max_future must not be negative".into()));
        }
        if self.app_check_propagation_secs < 0 {
            return Err(ConfigError("app_check_propagation_secs must not be negative".into()));
        }
        if self.app_check_jwks_file.is_some() && self.app_check_jwks_url.is_some() {
            return Err(ConfigError("set app_check_jwks_file or app_check_jwks_url, not both".into()));
        }
        if (self.app_check_jwks_file.is_some() || self.app_check_jwks_url.is_some()) != self.app_check_issuer.is_some()
        {
            return Err(ConfigError(
                "app_check_issuer goes together with app_check_jwks_file or app_check_jwks_url".into(),
            ));
        }
        if self.app_check_jwks_url.as_deref().is_some_and(|u| !u.starts_with("https://")) {
            return Err(ConfigError("app_check_jwks_url must be an https:// URL".into()));
        }
        if self.app_check_jwks_refresh_secs < 60 {
            return Err(ConfigError("app_check_jwks_refresh_secs must be at least 60".into()));
        }
        if self.secrets_system.is_some() && self.secrets_system_file.is_some() {
            return Err(ConfigError("set secrets_system or secrets_system_file, not both".into()));
        }
        if let Some(list) = &self.secrets_system {
            let min = MIN_SECRET_LEN;
            if list.expose().is_empty() || list.expose().iter().any(|s| s.chars().count() < min) {
                return Err(ConfigError(format!("secrets_system: each secret has at least {min} characters")));
            }
        }
        if !matches!(self.log_format.as_str(), "text" | "json") {
            return Err(ConfigError("log_format is text or json".into()));
        }
        Ok(())
    }
}

/// The longest `access_token_lifetime`: a day less than a retired key verifies ([`latchkey_admin::keys::RETIRED_VERIFIES_FOR`]).
pub const MAX_ACCESS_TOKEN_LIFETIME: i64 = latchkey_admin::keys::RETIRED_VERIFIES_FOR - 86_400;

/// An environment variable's value as TOML: a number or boolean when it reads as one, else a string.
fn env_value(raw: &str) -> toml::Value {
    if let Ok(i) = raw.parse::<i64>() {
        return toml::Value::Integer(i);
    }
    match raw {
        "true" => toml::Value::Boolean(true),
        "false" => toml::Value::Boolean(false),
        _ => toml::Value::String(raw.to_owned()),
    }
}

/// The public URLs, once the listener's address is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Urls {
    /// The issuer.
    pub issuer: String,
    /// Base of the authorization endpoint.
    pub auth: String,
    /// Base of the token and revocation endpoints.
    pub token: String,
    /// The token endpoint's full URL (what a DPoP proof's `htu` names), made once.
    pub token_endpoint: String,
    /// Base of the data API.
    pub api: String,
}

impl Urls {
    /// The URLs of `config` for a listener bound to `bound`.
    pub fn new(config: &Config, bound: SocketAddr) -> Self {
        let issuer = config.public_url.clone().unwrap_or_else(|| {
            if bound.ip().is_unspecified() || bound == DEFAULT_LISTEN {
                format!("https://localhost:{}", bound.port())
            } else {
                format!("https://{bound}")
            }
        });
        let or_issuer = |u: &Option<String>| u.clone().unwrap_or_else(|| issuer.clone());
        let token = or_issuer(&config.token_url);
        Self {
            auth: or_issuer(&config.auth_url),
            token_endpoint: format!("{token}{}", crate::paths::TOKEN_PATH),
            token,
            api: or_issuer(&config.api_base_url),
            issuer,
        }
    }

    /// The data API's resource identifier (RFC 8707): its base URL and path, without a trailing slash.
    pub fn data_api_resource(&self) -> String {
        format!("{}{}", self.api, crate::paths::DATA_API_PATH)
    }

    /// Where the data API's protected resource metadata is served (RFC 9728 §3.1).
    pub fn data_api_metadata(&self) -> String {
        format!("{}{}{}", self.api, crate::paths::PROTECTED_RESOURCE_METADATA_PATH, crate::paths::DATA_API_PATH)
    }

    /// The URLs a running server recorded in the store.
    pub fn from_served(served: &latchkey_store::ServedUrls) -> Self {
        Self {
            issuer: served.issuer.clone(),
            auth: served.auth.clone(),
            token_endpoint: format!("{}{}", served.token, crate::paths::TOKEN_PATH),
            token: served.token.clone(),
            api: served.api.clone(),
        }
    }

    /// What a server records in the store at start, at `now`.
    pub fn to_served(&self, now: latchkey_core::time::UnixTime) -> latchkey_store::ServedUrls {
        latchkey_store::ServedUrls {
            issuer: self.issuer.clone(),
            auth: self.auth.clone(),
            token: self.token.clone(),
            api: self.api.clone(),
            recorded_at: now,
        }
    }
}

#[cfg(test)]
mod tests;
