//! The HTTP client for the server's own requests (an App Check provider's JWKS, pushes to event receivers):
//! rustls with the system's roots and an operator's extra trust anchors, no redirects followed, bounded time.

use std::path::Path;
use std::time::Duration;

/// A client trusting the system's roots and the PEM certificates in `ca_file`, that gives up after `timeout`
/// and follows no redirect (a redirect could send a request where the operator did not mean it to go). With
/// `https_only`, plain `http://` URLs are refused.
pub fn client(
    ca_file: Option<&Path>,
    https_only: bool,
    timeout: Duration,
    purpose: &str,
) -> anyhow::Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .https_only(https_only)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(5).min(timeout))
        .timeout(timeout)
        .user_agent(format!("latchkey/{} ({purpose})", env!("CARGO_PKG_VERSION")));
    if let Some(path) = ca_file {
        let pem = std::fs::read(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        for cert in reqwest::Certificate::from_pem_bundle(&pem)? {
            builder = builder.add_root_certificate(cert);
        }
    }
    Ok(builder.build()?)
}
