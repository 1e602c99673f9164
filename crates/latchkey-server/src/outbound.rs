//! The HTTP clients for the server's own requests (an App Check provider's JWKS, pushes to event receivers, client ID
//! metadata documents):
//! rustls with the system's roots and an operator's extra trust anchors, no redirects followed, bounded time.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// An `https://`-only client trusting the system's roots and the PEM certificates in `ca_file`, that gives up
/// after `timeout` and follows no redirect (a redirect could send a request where the operator did not mean it
/// to go).
pub fn client(ca_file: Option<&Path>, timeout: Duration, purpose: &str) -> anyhow::Result<reqwest::Client> {
    Ok(builder(ca_file, true, timeout, purpose)?.build()?)
}

/// The push receivers' client: [`client`]'s rules (but `http://` to a loopback receiver, which the push URL check
/// allows only with the operator's setting), and names resolved only to addresses latchkey may push to
/// (`latchkey_core::events::stream::may_receive`): a receiver's host name that resolves to a private network is
/// refused when the connection is made, not only an IP literal when the stream is set. It never goes through a proxy
/// (`HTTPS_PROXY` in the environment is ignored): a proxy would resolve the receiver's name itself, past that check.
pub fn push_client(ca_file: Option<&Path>, timeout: Duration, allow_loopback: bool) -> anyhow::Result<reqwest::Client> {
    public_client(ca_file, timeout, allow_loopback, "security events")
}

/// [`push_client`]'s rules for any request to an address someone else chose (a client ID metadata document's),
/// named by `purpose` in the user agent.
pub fn public_client(
    ca_file: Option<&Path>,
    timeout: Duration,
    allow_loopback: bool,
    purpose: &str,
) -> anyhow::Result<reqwest::Client> {
    let resolver = Arc::new(PublicOnly { allow_loopback });
    Ok(builder(ca_file, false, timeout, purpose)?.no_proxy().dns_resolver(resolver).build()?)
}

/// What the resolver's refusal says, for the callers that tell it apart.
pub const NOT_PUBLIC: &str = "resolves to no address latchkey may";

/// A resolver that keeps only the addresses a push may go to.
struct PublicOnly {
    allow_loopback: bool,
}

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_loopback = self.allow_loopback;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found
                .into_iter()
                .filter(|a| latchkey_core::events::stream::may_receive(a.ip(), allow_loopback))
                .collect();
            if allowed.is_empty() {
                let e = std::io::Error::other(format!("{host} {NOT_PUBLIC} connect to"));
                return Err(Box::new(e) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

fn builder(
    ca_file: Option<&Path>,
    https_only: bool,
    timeout: Duration,
    purpose: &str,
) -> anyhow::Result<reqwest::ClientBuilder> {
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
    Ok(builder)
}
