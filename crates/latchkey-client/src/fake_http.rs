//! A scripted [`HttpClient`] for unit tests: answers from a queue and records every request.

use crate::discovery::Discovery;
use crate::http::{HttpClient, HttpRequest, HttpResponse};
use crate::Error;
use async_trait::async_trait;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The issuer of the fake server.
pub(crate) const ISSUER: &str = "https://as.example";

/// Answers requests in order from a queue; a request beyond the queue is a transport error.
pub(crate) struct FakeHttp {
    answers: Mutex<VecDeque<HttpResponse>>,
    requests: Mutex<Vec<HttpRequest>>,
    delay: Duration,
}

impl FakeHttp {
    /// A server answering with `answers`, in order.
    pub(crate) fn new(answers: Vec<HttpResponse>) -> Arc<Self> {
        Self::slow(answers, Duration::ZERO)
    }

    /// The same, taking `delay` to answer each request.
    pub(crate) fn slow(answers: Vec<HttpResponse>, delay: Duration) -> Arc<Self> {
        Arc::new(Self { answers: Mutex::new(answers.into()), requests: Mutex::new(Vec::new()), delay })
    }

    /// The requests received so far.
    pub(crate) fn requests(&self) -> Vec<HttpRequest> {
        self.requests.lock().expect("lock").clone()
    }
}

#[async_trait]
impl HttpClient for FakeHttp {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, Error> {
        self.requests.lock().expect("lock").push(request);
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let next = self.answers.lock().expect("lock").pop_front();
        next.ok_or_else(|| Error::Transport("the fake server has no more answers".into()))
    }
}

/// A JSON answer.
pub(crate) fn json(status: u16, body: serde_json::Value) -> HttpResponse {
    HttpResponse {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
    }
}

/// A JSON answer with a `DPoP-Nonce` header.
pub(crate) fn with_nonce(mut response: HttpResponse, nonce: &str) -> HttpResponse {
    response.headers.push(("dpop-nonce".into(), nonce.into()));
    response
}

/// A token response.
pub(crate) fn token_answer(access: &str, refresh: Option<&str>, scope: &str, expires_in: u64) -> HttpResponse {
    let mut body = serde_json::json!({
        "access_token": access, "expires_in": expires_in, "scope": scope, "token_type": "Bearer",
    });
    if let Some(r) = refresh {
        body["refresh_token"] = r.into();
    }
    json(200, body)
}

/// An OAuth error answer.
pub(crate) fn oauth_error(status: u16, error: &str) -> HttpResponse {
    json(status, serde_json::json!({ "error": error, "error_description": format!("test: {error}") }))
}

/// The fake server's metadata document.
pub(crate) fn metadata(iss_parameter_supported: bool) -> serde_json::Value {
    serde_json::json!({
        "issuer": ISSUER,
        "authorization_endpoint": format!("{ISSUER}/authorize"),
        "token_endpoint": format!("{ISSUER}/token"),
        "revocation_endpoint": format!("{ISSUER}/revoke"),
        "device_authorization_endpoint": format!("{ISSUER}/device/code"),
        "code_challenge_methods_supported": ["S256"],
        "dpop_signing_alg_values_supported": ["ES256"],
        "authorization_response_iss_parameter_supported": iss_parameter_supported,
    })
}

/// The fake server's metadata, read.
pub(crate) fn discovery(iss_parameter_supported: bool) -> Discovery {
    serde_json::from_value(metadata(iss_parameter_supported)).expect("metadata")
}

/// The form of a request's body.
pub(crate) fn form(request: &HttpRequest) -> HashMap<String, String> {
    url::form_urlencoded::parse(&request.body).into_owned().collect()
}

/// Every value of a form parameter of a request's body, in order (for repeated parameters).
pub(crate) fn form_values(request: &HttpRequest, name: &str) -> Vec<String> {
    url::form_urlencoded::parse(&request.body).filter(|(k, _)| k == name).map(|(_, v)| v.into_owned()).collect()
}

/// A request header's value.
pub(crate) fn header<'a>(request: &'a HttpRequest, name: &str) -> Option<&'a str> {
    request.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

/// The claims of a DPoP proof (unverified).
pub(crate) fn proof_claims(proof: &str) -> serde_json::Value {
    use base64::Engine;
    let payload = proof.split('.').nth(1).expect("a JWS payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON claims")
}
