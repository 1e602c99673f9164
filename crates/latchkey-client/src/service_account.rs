//! A content owner's server-side tool: [`ServiceAccountCredentials`] loads a service account's key
//! file and keeps a valid access token, exchanging a fresh signed assertion (RFC 7523 §2.1) at the file's
//! `token_uri` when the cached token is about to expire. However many tasks ask at once, one request is in flight;
//! the others wait for it and share its token.

use crate::client::oauth_error;
use crate::clock::{Clock, SystemClock};
use crate::http::{HttpClient, HttpRequest};
use crate::Error;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use latchkey_proto::key_file::{KeyFile, SERVICE_ACCOUNT};
use latchkey_proto::TokenResponse;
use ring::signature::{RsaKeyPair, RSA_PKCS1_SHA256};
use std::sync::Arc;

/// The grant type of RFC 7523 §2.1.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// How long each assertion lives: the most latchkey accepts.
const ASSERTION_LIFETIME: i64 = 3600;
/// A cached token is replaced this many seconds before it expires.
const MARGIN: i64 = 60;

/// A service account's credentials: its key file's private key and the scopes its tokens carry.
pub struct ServiceAccountCredentials {
    email: String,
    key_id: String,
    token_uri: String,
    key: RsaKeyPair,
    scope: String,
    http: Arc<dyn HttpClient>,
    clock: Arc<dyn Clock>,
    cached: tokio::sync::Mutex<Option<(String, i64)>>,
}

impl std::fmt::Debug for ServiceAccountCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountCredentials").field("email", &self.email).finish_non_exhaustive()
    }
}

impl ServiceAccountCredentials {
    /// Reads a key file (`latchkey admin service-account key create --out FILE`) for tokens with `scopes`.
    pub fn from_file(path: &std::path::Path, scopes: &[&str], http: Arc<dyn HttpClient>) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Storage(format!("{}: {e}", path.display())))?;
        Self::from_json(&text, scopes, http)
    }

    /// The same from the key file's JSON text.
    pub fn from_json(json: &str, scopes: &[&str], http: Arc<dyn HttpClient>) -> Result<Self, Error> {
        let file: KeyFile = serde_json::from_str(json).map_err(|e| Error::Storage(format!("key file: {e}")))?;
        if file.kind != SERVICE_ACCOUNT {
            return Err(Error::Storage(format!("key file: type is {:?}, not {SERVICE_ACCOUNT:?}", file.kind)));
        }
        let body: String = file.private_key.lines().filter(|l| !l.starts_with("-----")).collect();
        let der =
            STANDARD.decode(body.trim()).map_err(|_| Error::Storage("key file: private_key is not PEM".into()))?;
        let key = RsaKeyPair::from_pkcs8(&der)
            .map_err(|_| Error::Storage("key file: private_key is not an RSA PKCS#8 key".into()))?;
        Ok(Self {
            email: file.client_email,
            key_id: file.private_key_id,
            token_uri: file.token_uri,
            key,
            scope: scopes.join(" "),
            http,
            clock: Arc::new(SystemClock),
            cached: tokio::sync::Mutex::new(None),
        })
    }

    /// The same, reading time from `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The service account's identifier.
    pub fn email(&self) -> &str {
        &self.email
    }

    /// A valid access token: the cached one while it has more than a minute left, else a new one. Concurrent
    /// callers wait for the one exchange in flight.
    pub async fn access_token(&self) -> Result<String, Error> {
        let mut cached = self.cached.lock().await;
        let now = self.clock.now();
        if let Some((token, expires_at)) = cached.as_ref() {
            if now < expires_at - MARGIN {
                return Ok(token.clone());
            }
        }
        let assertion = self.assertion(now)?;
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs([("grant_type", JWT_BEARER), ("assertion", &assertion)])
            .finish();
        let headers = vec![
            ("content-type".to_owned(), "application/x-www-form-urlencoded".to_owned()),
            ("accept".to_owned(), "application/json".to_owned()),
        ];
        let request = HttpRequest { method: "POST", url: self.token_uri.clone(), headers, body: body.into_bytes() };
        let response = self.http.send(request).await?;
        if response.status != 200 {
            return Err(oauth_error(&response, false));
        }
        let token: TokenResponse =
            serde_json::from_slice(&response.body).map_err(|e| Error::Protocol(format!("token response: {e}")))?;
        let expires_at = now.saturating_add(i64::try_from(token.expires_in).unwrap_or(ASSERTION_LIFETIME));
        *cached = Some((token.access_token.clone(), expires_at));
        Ok(token.access_token)
    }

    /// Forgets the cached token (after the data API refused it), so the next call exchanges a new assertion.
    pub async fn forget(&self) {
        *self.cached.lock().await = None;
    }

    /// A fresh assertion: RS256 under the key file's `private_key_id`, for the token endpoint, an hour long, with
    /// a random `jti` (latchkey accepts each once).
    fn assertion(&self, now: i64) -> Result<String, Error> {
        let mut jti = [0u8; 16];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut jti);
        let header = serde_json::json!({ "alg": "RS256", "typ": "JWT", "kid": self.key_id });
        let claims = serde_json::json!({
            "iss": self.email,
            "scope": self.scope,
            "aud": self.token_uri,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME,
            "jti": URL_SAFE_NO_PAD.encode(jti),
        });
        let mut out = URL_SAFE_NO_PAD.encode(header.to_string());
        out.push('.');
        URL_SAFE_NO_PAD.encode_string(claims.to_string(), &mut out);
        let mut signature = vec![0u8; self.key.public().modulus_len()];
        self.key
            .sign(&RSA_PKCS1_SHA256, &ring::rand::SystemRandom::new(), out.as_bytes(), &mut signature)
            .map_err(|_| Error::Protocol("signing the assertion failed".into()))?;
        out.push('.');
        URL_SAFE_NO_PAD.encode_string(signature, &mut out);
        Ok(out)
    }
}
