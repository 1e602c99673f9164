//! The issuer's metadata (RFC 8414, OpenID Connect Discovery 1.0): where the endpoints are.

use crate::http::{HttpClient, HttpRequest};
use crate::Error;
use serde::Deserialize;

/// The parts of the metadata an installed app uses. Unknown members are ignored, so any standard server works.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Discovery {
    /// The issuer; must equal the URL it was discovered from.
    pub issuer: String,
    /// The authorization endpoint.
    pub authorization_endpoint: String,
    /// The token endpoint.
    pub token_endpoint: String,
    /// The revocation endpoint (RFC 7009), if the server has one.
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
    /// The device authorization endpoint (RFC 8628), when the server has one.
    #[serde(default)]
    pub device_authorization_endpoint: Option<String>,
    /// The UserInfo endpoint, if any.
    #[serde(default)]
    pub userinfo_endpoint: Option<String>,
    /// PKCE methods the server supports.
    #[serde(default)]
    pub code_challenge_methods_supported: Vec<String>,
    /// DPoP algorithms the server supports (RFC 9449 §5.1).
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Vec<String>,
    /// Whether the authorization response carries `iss` (RFC 9207).
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
}

impl Discovery {
    /// Fetches `<issuer>/.well-known/openid-configuration`, falling back to
    /// `/.well-known/oauth-authorization-server`, and checks that `issuer` matches exactly.
    pub async fn fetch(http: &dyn HttpClient, issuer: &str) -> Result<Self, Error> {
        let issuer = issuer.trim_end_matches('/');
        let mut last = None;
        for path in ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"] {
            let request = HttpRequest {
                method: "GET",
                url: format!("{issuer}{path}"),
                headers: vec![("accept".into(), "application/json".into())],
                body: Vec::new(),
            };
            let response = http.send(request).await?;
            if response.status != 200 {
                last = Some(format!("{path}: HTTP {}", response.status));
                continue;
            }
            let found: Discovery = serde_json::from_slice(&response.body)
                .map_err(|e| Error::Protocol(format!("metadata at {path}: {e}")))?;
            if found.issuer != issuer {
                return Err(Error::Protocol(format!(
                    "the metadata names issuer {} but was fetched from {issuer}",
                    found.issuer
                )));
            }
            return Ok(found);
        }
        Err(Error::Protocol(format!("no metadata at {issuer}: {}", last.unwrap_or_default())))
    }

    /// Whether the server takes ES256 DPoP proofs.
    pub fn supports_dpop(&self) -> bool {
        self.dpop_signing_alg_values_supported.iter().any(|a| a == "ES256")
    }
}
