//! Authorization server metadata (RFC 8414) and its OpenID Connect Discovery superset.

use serde::{Deserialize, Serialize};

/// The metadata document served at `/.well-known/oauth-authorization-server` and
/// `/.well-known/openid-configuration`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerMetadata {
    /// The issuer identifier: the public URL, exactly.
    pub issuer: String,
    /// The authorization endpoint.
    pub authorization_endpoint: String,
    /// The token endpoint.
    pub token_endpoint: String,
    /// The revocation endpoint (RFC 7009).
    pub revocation_endpoint: String,
    /// The introspection endpoint (RFC 7662, RFC 8414 §2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introspection_endpoint: Option<String>,
    /// Client authentication methods at the introspection endpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub introspection_endpoint_auth_methods_supported: Vec<String>,
    /// Algorithms that sign introspection answers (RFC 9701 §6).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub introspection_signing_alg_values_supported: Vec<String>,
    /// The device authorization endpoint (RFC 8628 §4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_authorization_endpoint: Option<String>,
    /// The dynamic client registration endpoint (RFC 7591 §3), while a project collects self-registered apps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// Whether a `client_id` may be the URL of a client ID metadata document.
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// The OpenID Connect UserInfo endpoint.
    pub userinfo_endpoint: String,
    /// Where the id_token signing keys are published.
    pub jwks_uri: String,
    /// Supported `response_type` values.
    pub response_types_supported: Vec<String>,
    /// Supported `response_mode` values.
    pub response_modes_supported: Vec<String>,
    /// Supported grant types.
    pub grant_types_supported: Vec<String>,
    /// Supported PKCE methods.
    pub code_challenge_methods_supported: Vec<String>,
    /// Every scope the server knows.
    pub scopes_supported: Vec<String>,
    /// The resource identifiers of the protected resources any client may ask tokens for (RFC 9728 §4), each a
    /// value of RFC 8707's `resource`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected_resources: Vec<String>,
    /// Client authentication methods at the token endpoint.
    pub token_endpoint_auth_methods_supported: Vec<String>,
    /// Client authentication methods at the revocation endpoint.
    pub revocation_endpoint_auth_methods_supported: Vec<String>,
    /// OpenID Connect subject identifier types.
    pub subject_types_supported: Vec<String>,
    /// Algorithms used to sign id_tokens.
    pub id_token_signing_alg_values_supported: Vec<String>,
    /// Claims that may appear in id_tokens and userinfo.
    pub claims_supported: Vec<String>,
    /// DPoP proof algorithms (RFC 9449 §5.1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dpop_signing_alg_values_supported: Vec<String>,
    /// Whether the authorization response carries `iss` (RFC 9207).
    pub authorization_response_iss_parameter_supported: bool,
}
