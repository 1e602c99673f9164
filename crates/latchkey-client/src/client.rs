//! The OAuth client of an installed app: authorization request, code exchange, refresh, revocation.

use crate::clock::{Clock, SystemClock};
use crate::discovery::Discovery;
use crate::dpop::{code_jti, random_jti, DpopKey};
use crate::http::{HttpClient, HttpRequest, HttpResponse};
use crate::pkce::Pkce;
use crate::tokens::TokenSet;
use crate::Error;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use latchkey_proto::{ErrorResponse, TokenResponse};
use std::sync::{Arc, Mutex};

/// Who the app is, at which issuer.
#[derive(Clone, PartialEq, Eq)]
pub struct AppConfig {
    /// The issuer URL.
    pub issuer: String,
    /// The app's client id.
    pub client_id: String,
    /// The client secret, if the app was given one (never required by latchkey; installed apps cannot keep it).
    pub client_secret: Option<String>,
    /// The APIs (resource URIs, RFC 8707) the app wants its access tokens for; empty for the issuer's default.
    pub resources: Vec<String>,
}

impl std::fmt::Debug for AppConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppConfig")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("resources", &self.resources)
            .finish()
    }
}

impl AppConfig {
    /// An app with no client secret.
    pub fn new(issuer: &str, client_id: &str) -> Self {
        Self {
            issuer: issuer.trim_end_matches('/').to_owned(),
            client_id: client_id.to_owned(),
            client_secret: None,
            resources: Vec::new(),
        }
    }

    /// The same app asking for access tokens for the API `resource` too (its resource URI, such as
    /// `https://api.example.com/orders`): sent as a `resource` parameter (RFC 8707) on the authorization request.
    /// An app naming one API also names it on the code exchange and every refresh, as MCP clients do; an app
    /// naming several does not there, since the person may have declined all of one API's scopes, which would
    /// make each such token request `invalid_target`. Call it once per API.
    pub fn with_resource(mut self, resource: impl Into<String>) -> Self {
        self.resources.push(resource.into());
        self
    }
}

/// A started authorization request: open [`Authorization::url`] in the system browser, then exchange the
/// response.
#[derive(Debug)]
pub struct Authorization {
    url: String,
    state: String,
    pkce: Pkce,
    redirect_uri: String,
}

impl Authorization {
    /// The URL to open in the system browser.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The `state` the response must carry.
    pub fn state(&self) -> &str {
        &self.state
    }

    /// The redirect URI of the request.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// For apps that receive the redirect through their own custom URI scheme (or any other way): the
    /// response read from the redirect URL, with its `state` checked.
    pub fn finish(&self, redirect_url: &str) -> Result<AuthorizationResponse, Error> {
        let query = redirect_url.split_once('?').map(|(_, q)| q).unwrap_or("");
        let query = query.split('#').next().unwrap_or("");
        let response = AuthorizationResponse::from_query(query);
        match response.state.as_deref() {
            Some(s) if same_state(s, &self.state) => Ok(response),
            _ => Err(Error::StateMismatch),
        }
    }
}

/// The parameters of the authorization response.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AuthorizationResponse {
    /// The code, on success.
    pub code: Option<String>,
    /// The error code, on failure.
    pub error: Option<String>,
    /// The error's description.
    pub error_description: Option<String>,
    /// The `state`.
    pub state: Option<String>,
    /// The issuer (RFC 9207).
    pub iss: Option<String>,
}

impl std::fmt::Debug for AuthorizationResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationResponse")
            .field("code", &self.code.as_ref().map(|_| "<redacted>"))
            .field("error", &self.error)
            .field("state", &self.state)
            .field("iss", &self.iss)
            .finish()
    }
}

impl AuthorizationResponse {
    /// Reads the response from a query string.
    pub fn from_query(query: &str) -> Self {
        let mut r = Self::default();
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            let slot = match k.as_ref() {
                "code" => &mut r.code,
                "error" => &mut r.error,
                "error_description" => &mut r.error_description,
                "state" => &mut r.state,
                "iss" => &mut r.iss,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(v.into_owned());
            }
        }
        r
    }
}

/// Compares two `state` values in constant time.
pub(crate) fn same_state(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The app's OAuth client for one issuer.
pub struct OAuthClient {
    config: AppConfig,
    discovery: Discovery,
    http: Arc<dyn HttpClient>,
    /// The last `DPoP-Nonce` the token endpoint sent.
    nonce: Mutex<Option<String>>,
    /// The clock token expiry and DPoP proofs are read from.
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient").field("config", &self.config).field("issuer", &self.discovery.issuer).finish()
    }
}

/// Which token request is being made (they differ in error meaning and `jti` rule).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Grant<'a> {
    Code(&'a str),
    Refresh,
    Device,
}

impl OAuthClient {
    /// A client for `config.issuer`, discovering its endpoints.
    pub async fn discover(config: AppConfig, http: Arc<dyn HttpClient>) -> Result<Self, Error> {
        let discovery = Discovery::fetch(&*http, &config.issuer).await?;
        Ok(Self::new(config, discovery, http))
    }

    /// A client with known metadata.
    pub fn new(config: AppConfig, discovery: Discovery, http: Arc<dyn HttpClient>) -> Self {
        Self { config, discovery, http, nonce: Mutex::new(None), clock: Arc::new(SystemClock) }
    }

    /// The same client reading time from `clock` instead of the system clock.
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Self { clock, ..self }
    }

    /// The current time in Unix seconds, from the client's clock.
    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    /// The issuer's metadata.
    pub fn discovery(&self) -> &Discovery {
        &self.discovery
    }

    /// The app's configuration.
    pub fn config(&self) -> &AppConfig {
        &self.config
    }

    /// Starts an authorization request for `scopes` with a fresh PKCE verifier and `state`.
    pub fn authorize(&self, redirect_uri: &str, scopes: &[&str]) -> Result<Authorization, Error> {
        let pkce = Pkce::generate();
        let mut state = [0u8; 24];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut state);
        let state = URL_SAFE_NO_PAD.encode(state);
        let mut url = url::Url::parse(&self.discovery.authorization_endpoint)
            .map_err(|e| Error::Protocol(format!("authorization_endpoint: {e}")))?;
        url.query_pairs_mut()
            .append_pair("client_id", &self.config.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("response_type", "code")
            .append_pair("scope", &scopes.join(" "))
            .append_pair("code_challenge", pkce.challenge())
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state);
        for resource in &self.config.resources {
            url.query_pairs_mut().append_pair("resource", resource);
        }
        Ok(Authorization { url: url.into(), state, pkce, redirect_uri: redirect_uri.to_owned() })
    }

    /// Exchanges the authorization response for tokens. With a DPoP key, the refresh token is bound to it.
    pub async fn exchange(
        &self,
        authorization: Authorization,
        response: &AuthorizationResponse,
        dpop: Option<&DpopKey>,
    ) -> Result<TokenSet, Error> {
        match response.state.as_deref() {
            Some(s) if same_state(s, &authorization.state) => {}
            _ => return Err(Error::StateMismatch),
        }
        match (&response.iss, self.discovery.authorization_response_iss_parameter_supported) {
            (Some(iss), _) if *iss != self.discovery.issuer => return Err(Error::IssuerMismatch(iss.clone())),
            (None, true) => return Err(Error::IssuerMismatch("(missing)".into())),
            _ => {}
        }
        if let Some(error) = &response.error {
            return Err(Error::from_oauth(error, response.error_description.as_deref().unwrap_or(""), false));
        }
        let code = response.code.as_deref().ok_or_else(|| Error::Protocol("no code in the response".into()))?;
        let form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", authorization.redirect_uri.as_str()),
            ("code_verifier", authorization.pkce.verifier()),
        ];
        let body = self.token_request(self.with_resources(form), dpop, Grant::Code(code)).await?;
        Ok(self.token_set(body, None, dpop))
    }

    /// Refreshes: a new access token for the stored grant. `invalid_grant` becomes [`Error::SignInAgain`].
    pub async fn refresh(&self, tokens: &TokenSet, dpop: Option<&DpopKey>) -> Result<TokenSet, Error> {
        let refresh_token = tokens.refresh_token.as_deref().ok_or(Error::SignInAgain("no refresh token".into()))?;
        let form = vec![("grant_type", "refresh_token"), ("refresh_token", refresh_token)];
        let body = self.token_request(self.with_resources(form), dpop, Grant::Refresh).await?;
        Ok(self.token_set(body, Some(tokens), dpop))
    }

    /// Revokes a token (RFC 7009); on latchkey this revokes the whole grant.
    pub async fn revoke(&self, token: &str) -> Result<(), Error> {
        let endpoint = self
            .discovery
            .revocation_endpoint
            .as_deref()
            .ok_or_else(|| Error::Protocol("the server has no revocation endpoint".into()))?;
        let form = vec![("token", token)];
        let response = self.post(endpoint, self.with_client(form), Vec::new()).await?;
        if response.status == 200 {
            Ok(())
        } else {
            Err(oauth_error(&response, false))
        }
    }

    /// A token request with DPoP: a fresh proof each time, the cached nonce, one retry on `use_dpop_nonce`.
    async fn token_request(
        &self,
        form: Vec<(&str, &str)>,
        dpop: Option<&DpopKey>,
        grant: Grant<'_>,
    ) -> Result<TokenResponse, Error> {
        let endpoint = &self.discovery.token_endpoint;
        let form = self.with_client(form);
        let mut retried = false;
        loop {
            let mut headers = Vec::new();
            if let Some(key) = dpop {
                let nonce = self.cached_nonce();
                // latchkey's rule for a code exchange (docs/decisions.md, "DPoP"): jti = Base64url(SHA-256(code)),
                // needing no nonce. After a use_dpop_nonce answer, a fresh jti with the nonce (RFC 9449's generic
                // rule).
                let jti = match grant {
                    Grant::Code(code) if !retried => code_jti(code),
                    _ => random_jti(),
                };
                headers.push(("dpop".to_owned(), key.proof("POST", endpoint, &jti, nonce.as_deref(), self.now())?));
            }
            let response = self.post(endpoint, form.clone(), headers).await?;
            if let Some(n) = response.header("dpop-nonce") {
                self.remember_nonce(n);
            }
            if response.status == 200 {
                return serde_json::from_slice(&response.body)
                    .map_err(|e| Error::Protocol(format!("token response: {e}")));
            }
            let error = oauth_error(&response, grant == Grant::Refresh);
            let nonce_error = matches!(&error, Error::OAuth { code, .. } if code == "use_dpop_nonce");
            if nonce_error && dpop.is_some() && !retried && response.header("dpop-nonce").is_some() {
                retried = true;
                continue;
            }
            return Err(error);
        }
    }

    /// The form with the `resource` parameter of the one API the app asks tokens for (RFC 8707 §2.2), if it names
    /// exactly one ([`AppConfig::with_resource`]).
    fn with_resources<'a>(&'a self, mut form: Vec<(&'a str, &'a str)>) -> Vec<(&'a str, &'a str)> {
        if let [one] = self.config.resources.as_slice() {
            form.push(("resource", one.as_str()));
        }
        form
    }

    fn with_client<'a>(&'a self, mut form: Vec<(&'a str, &'a str)>) -> Vec<(&'a str, &'a str)> {
        form.push(("client_id", &self.config.client_id));
        if let Some(secret) = &self.config.client_secret {
            form.push(("client_secret", secret));
        }
        form
    }

    async fn post(
        &self,
        url: &str,
        form: Vec<(&str, &str)>,
        mut headers: Vec<(String, String)>,
    ) -> Result<HttpResponse, Error> {
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        headers.push(("content-type".into(), "application/x-www-form-urlencoded".into()));
        headers.push(("accept".into(), "application/json".into()));
        self.http.send(HttpRequest { method: "POST", url: url.to_owned(), headers, body: body.into_bytes() }).await
    }

    fn cached_nonce(&self) -> Option<String> {
        self.nonce.lock().map(|n| n.clone()).unwrap_or(None)
    }

    fn remember_nonce(&self, nonce: &str) {
        if let Ok(mut n) = self.nonce.lock() {
            *n = Some(nonce.to_owned());
        }
    }

    fn token_set(&self, body: TokenResponse, previous: Option<&TokenSet>, dpop: Option<&DpopKey>) -> TokenSet {
        let now = self.now();
        let expires_in = i64::try_from(body.expires_in).unwrap_or(i64::MAX / 2);
        TokenSet {
            issuer: self.discovery.issuer.clone(),
            client_id: self.config.client_id.clone(),
            access_token: body.access_token,
            expires_at: now.saturating_add(expires_in),
            refresh_token: body.refresh_token.or_else(|| previous.and_then(|p| p.refresh_token.clone())),
            refresh_expires_at: body
                .refresh_token_expires_in
                .map(|s| now.saturating_add(i64::try_from(s).unwrap_or(i64::MAX / 2)))
                .or_else(|| previous.and_then(|p| p.refresh_expires_at)),
            scope: body.scope,
            id_token: body.id_token.or_else(|| previous.and_then(|p| p.id_token.clone())),
            dpop_jkt: match previous {
                Some(p) => p.dpop_jkt.clone(),
                None => dpop.map(|k| k.thumbprint().to_owned()),
            },
        }
    }
}

/// The OAuth error in a response (or a protocol error when it has none).
pub(crate) fn oauth_error(response: &HttpResponse, on_refresh: bool) -> Error {
    match serde_json::from_slice::<ErrorResponse>(&response.body) {
        Ok(e) => Error::from_oauth(&e.error, e.error_description.as_deref().unwrap_or(""), on_refresh),
        Err(_) => Error::Protocol(format!("HTTP {} without an OAuth error body", response.status)),
    }
}

/// The system clock's time, for tests that compare with expiries a real client computed.
#[cfg(test)]
pub(crate) fn unix_now() -> i64 {
    SystemClock.now()
}

mod device;

pub use device::{DeviceAuthorization, DevicePoll, DEVICE_GRANT};

#[cfg(test)]
mod tests;
