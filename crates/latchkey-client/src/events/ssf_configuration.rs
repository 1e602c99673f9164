//! The transmitter's metadata (OpenID Shared Signals Framework §7): where its keys are, at
//! `{issuer}/.well-known/ssf-configuration`.

use crate::http::{HttpClient, HttpRequest};
use crate::Error;
use serde::Deserialize;

/// The parts of a Shared Signals transmitter's configuration a receiver uses; unknown members are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SsfConfiguration {
    /// The issuer of the SETs; must equal the URL the configuration was fetched from.
    pub issuer: String,
    /// Where the keys that sign the SETs are.
    pub jwks_uri: String,
    /// The delivery methods the transmitter supports (push, RFC 8935; poll, RFC 8936).
    #[serde(default)]
    pub delivery_methods_supported: Vec<String>,
    /// The endpoint that creates and reads streams, if any.
    #[serde(default)]
    pub configuration_endpoint: Option<String>,
}

impl SsfConfiguration {
    /// Fetches `{issuer}/.well-known/ssf-configuration` and checks that its `issuer` matches exactly.
    pub async fn fetch(http: &dyn HttpClient, issuer: &str) -> Result<Self, Error> {
        let issuer = issuer.trim_end_matches('/');
        let url = format!("{issuer}/.well-known/ssf-configuration");
        let request = HttpRequest {
            method: "GET",
            url: url.clone(),
            headers: vec![("accept".into(), "application/json".into())],
            body: Vec::new(),
        };
        let response = http.send(request).await?;
        if response.status != 200 {
            return Err(Error::Protocol(format!("{url}: HTTP {}", response.status)));
        }
        let found: Self = serde_json::from_slice(&response.body).map_err(|e| Error::Protocol(format!("{url}: {e}")))?;
        if found.issuer != issuer {
            return Err(Error::Protocol(format!(
                "the SSF configuration names issuer {} but was fetched from {issuer}",
                found.issuer
            )));
        }
        Ok(found)
    }
}
