//! The device authorization grant (RFC 8628), for apps with no browser or a poor keyboard (a TV, a console, a
//! command line over SSH): ask for the codes, show the person the user code and where to type it, then poll the
//! token endpoint at the interval (5 s more after each `slow_down`) until the person decides.

use super::{oauth_error, Grant, OAuthClient};
use crate::dpop::DpopKey;
use crate::error::Error;
use crate::tokens::TokenSet;
use serde::Deserialize;
use std::time::Duration;

/// The device grant's `grant_type`.
pub const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// A device authorization (RFC 8628 §3.2): what to show the person, and what to poll with.
#[derive(Clone, Deserialize)]
pub struct DeviceAuthorization {
    device_code: String,
    /// The code the person types (`BCDF-GHJK`).
    pub user_code: String,
    /// Where the person types it.
    pub verification_uri: String,
    /// The same address with the code in it (for a QR code or a link): the person still confirms it.
    #[serde(default)]
    pub verification_uri_complete: Option<String>,
    /// Seconds before the codes expire.
    pub expires_in: u64,
    /// Seconds to wait between polls.
    #[serde(default = "default_interval")]
    pub interval: u64,
}

impl std::fmt::Debug for DeviceAuthorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceAuthorization")
            .field("user_code", &self.user_code)
            .field("verification_uri", &self.verification_uri)
            .field("expires_in", &self.expires_in)
            .finish_non_exhaustive()
    }
}

const fn default_interval() -> u64 {
    5
}

/// What one poll found.
#[derive(Debug)]
pub enum DevicePoll {
    /// The person allowed: the tokens.
    Tokens(Box<TokenSet>),
    /// Not yet decided: poll again after the interval.
    Pending,
    /// Polling too fast: poll again after the interval plus 5 seconds, from now on.
    SlowDown,
}

impl OAuthClient {
    /// Asks for a device's codes for `scopes` (RFC 8628 §3.1).
    pub async fn device_authorization(&self, scopes: &[&str]) -> Result<DeviceAuthorization, Error> {
        let endpoint = self
            .discovery
            .device_authorization_endpoint
            .as_deref()
            .ok_or_else(|| Error::Protocol("the server has no device authorization endpoint".into()))?;
        let scope = scopes.join(" ");
        let response = self.post(endpoint, self.with_client(vec![("scope", &scope)]), Vec::new()).await?;
        if response.status != 200 {
            return Err(oauth_error(&response, false));
        }
        serde_json::from_slice(&response.body).map_err(|e| Error::Protocol(format!("device authorization: {e}")))
    }

    /// Polls once (RFC 8628 §3.4). With a DPoP key, the refresh token is bound to it.
    pub async fn poll_device(&self, auth: &DeviceAuthorization, dpop: Option<&DpopKey>) -> Result<DevicePoll, Error> {
        let form = vec![("grant_type", DEVICE_GRANT), ("device_code", auth.device_code.as_str())];
        match self.token_request(form, dpop, Grant::Device).await {
            Ok(body) => Ok(DevicePoll::Tokens(Box::new(self.token_set(body, None, dpop)))),
            Err(Error::OAuth { code, .. }) if code == "authorization_pending" => Ok(DevicePoll::Pending),
            Err(Error::OAuth { code, .. }) if code == "slow_down" => Ok(DevicePoll::SlowDown),
            Err(e) => Err(e),
        }
    }

    /// Polls at the interval until the person decides or the codes expire: the tokens, or the refusal
    /// (`access_denied`, `expired_token`).
    pub async fn wait_for_device(&self, auth: &DeviceAuthorization, dpop: Option<&DpopKey>) -> Result<TokenSet, Error> {
        let mut interval = auth.interval.max(1);
        loop {
            tokio::time::sleep(Duration::from_secs(interval)).await;
            match self.poll_device(auth, dpop).await? {
                DevicePoll::Tokens(tokens) => return Ok(*tokens),
                DevicePoll::Pending => {}
                DevicePoll::SlowDown => interval += 5,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::AppConfig;
    use crate::fake_http::{self, form, json, oauth_error, token_answer, FakeHttp, ISSUER};

    #[tokio::test]
    async fn the_codes_then_pending_slow_down_and_the_tokens() {
        let codes = json(
            200,
            serde_json::json!({"device_code": "lkd_x", "user_code": "BCDF-GHJK", "verification_uri": "https://as.example/device",
                               "verification_uri_complete": "https://as.example/device?user_code=BCDF-GHJK",
                               "expires_in": 1800, "interval": 5}),
        );
        let http = FakeHttp::new(vec![
            codes,
            oauth_error(400, "authorization_pending"),
            oauth_error(400, "slow_down"),
            token_answer("lka_1", Some("lkr_1"), "s", 3600),
            oauth_error(400, "access_denied"),
        ]);
        let client = OAuthClient::new(AppConfig::new(ISSUER, "lkapp-tv"), fake_http::discovery(true), http.clone());
        let auth = client.device_authorization(&["s", "t"]).await.expect("codes");
        assert_eq!((auth.user_code.as_str(), auth.interval), ("BCDF-GHJK", 5));
        assert!(!format!("{auth:?}").contains("lkd_x"), "the device code is never printed");
        assert!(matches!(client.poll_device(&auth, None).await, Ok(DevicePoll::Pending)));
        assert!(matches!(client.poll_device(&auth, None).await, Ok(DevicePoll::SlowDown)));
        match client.poll_device(&auth, None).await {
            Ok(DevicePoll::Tokens(t)) => assert_eq!(t.refresh_token.as_deref(), Some("lkr_1")),
            other => panic!("tokens, not {other:?}"),
        }
        assert!(matches!(client.poll_device(&auth, None).await, Err(Error::AccessDenied)), "declined");
        let sent = http.requests();
        assert_eq!(sent[0].url, "https://as.example/device/code");
        assert_eq!(form(&sent[0])["scope"], "s t");
        assert_eq!(form(&sent[1])["grant_type"], DEVICE_GRANT);
        assert_eq!(form(&sent[1])["device_code"], "lkd_x");
        assert_eq!(form(&sent[1])["client_id"], "lkapp-tv");
    }
}
