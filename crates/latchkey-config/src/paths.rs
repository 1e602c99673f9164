//! The paths of the protocol's endpoints.

/// The authorization endpoint's path.
pub const AUTHORIZE_PATH: &str = "/o/oauth2/v2/auth";
/// The token endpoint's path.
pub const TOKEN_PATH: &str = "/token";
/// The revocation endpoint's path.
pub const REVOKE_PATH: &str = "/revoke";
/// The device authorization endpoint's path (RFC 8628).
pub const DEVICE_CODE_PATH: &str = "/device/code";
/// The data API's base path: with the API's base URL, its resource identifier (RFC 8707, RFC 9728), without a
/// trailing slash.
pub const DATA_API_PATH: &str = "/video/v3";
/// Where a protected resource's metadata lives (RFC 9728 §3.1): this, then the resource's own path.
pub const PROTECTED_RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// The introspection endpoint's path (RFC 7662).
pub const INTROSPECT_PATH: &str = "/introspect";
/// The dynamic client registration endpoint's path (RFC 7591); a registration's own is this, then `/{client_id}`
/// (RFC 7592).
pub const REGISTER_PATH: &str = "/register";
/// The UserInfo endpoint's path.
pub const USERINFO_PATH: &str = "/v1/userinfo";
/// The debug App Check provider's path.
pub const APP_CHECK_DEBUG_PATH: &str = "/v1/appcheck/debug";
/// The JWKS path.
pub const JWKS_PATH: &str = "/oauth2/v3/certs";
/// The metrics' path (`crate::routes::metrics`).
pub const METRICS_PATH: &str = "/metrics";
