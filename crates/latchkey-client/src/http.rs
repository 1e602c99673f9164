//! The injected HTTP transport (as oauth2-rs does): the SDK builds requests and reads responses; an app may
//! bring its own client (a platform HTTP stack, a proxy-aware one), or use [`ReqwestHttp`].

use crate::Error;
use async_trait::async_trait;

/// An HTTP request the SDK sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The absolute URL.
    pub url: String,
    /// Header names and values.
    pub headers: Vec<(String, String)>,
    /// The body (form-encoded for token requests).
    pub body: Vec<u8>,
}

/// An HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Sends one request. Implementations must not follow redirects.
#[async_trait]
pub trait HttpClient: Send + Sync {
    /// Sends the request and returns the response, whatever its status.
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, Error>;
}

/// The default transport: reqwest with rustls, the system's trust store plus an optional extra CA file.
#[cfg(feature = "reqwest")]
#[derive(Debug, Clone)]
pub struct ReqwestHttp {
    client: reqwest::Client,
}

#[cfg(feature = "reqwest")]
impl ReqwestHttp {
    /// A client trusting the system roots and, when given, the PEM certificates in `ca_file` (for a server with
    /// a self-signed certificate, such as `latchkey-data/tls/cert.pem`).
    pub fn with_ca_file(ca_file: Option<&std::path::Path>) -> Result<Self, Error> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .user_agent(concat!("latchkey-client/", env!("CARGO_PKG_VERSION")));
        if let Some(path) = ca_file {
            let pem = std::fs::read(path).map_err(|e| Error::Storage(format!("{}: {e}", path.display())))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| Error::Storage(format!("{}: {e}", path.display())))?;
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let client = builder.build().map_err(|e| Error::Transport(e.to_string()))?;
        Ok(Self { client })
    }

    /// Wraps a reqwest client the app configured itself (redirects must be off).
    pub fn from_client(client: reqwest::Client) -> Self {
        Self { client }
    }
}

#[cfg(feature = "reqwest")]
#[async_trait]
impl HttpClient for ReqwestHttp {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, Error> {
        let method = if request.method == "POST" { reqwest::Method::POST } else { reqwest::Method::GET };
        let mut builder = self.client.request(method, &request.url);
        for (k, v) in &request.headers {
            builder = builder.header(k, v);
        }
        if !request.body.is_empty() {
            builder = builder.body(request.body);
        }
        let response = builder.send().await.map_err(|e| Error::Transport(transport_text(&e)))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let body = response.bytes().await.map_err(|e| Error::Transport(e.to_string()))?.to_vec();
        Ok(HttpResponse { status, headers, body })
    }
}

/// The error with its causes, so a TLS failure says why.
#[cfg(feature = "reqwest")]
fn transport_text(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
