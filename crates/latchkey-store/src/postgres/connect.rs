//! The database URL, TLS to the server, and the pool of connections.
//!
//! The URL is libpq's: `postgres://user[:password]@host[:port][,host2[:port2]...]/db?param=value...`. Several hosts
//! with `target_session_attrs=read-write` make the driver try them in turn and keep the first that accepts writes,
//! which is how instances find a new primary after a failover (`docs/failover.md`). `sslmode` is libpq's:
//! `disable`; `prefer` (the default: TLS when the server offers it) and `require` (TLS always), neither of which
//! checks the server's certificate, as libpq does not; `verify-ca` and `verify-full`, which check it against
//! `sslrootcert` (a PEM file; without it, the WebPKI roots) and the host name (`verify-ca` checks the name too:
//! rustls has no mode that trusts a certificate for any name).
//!
//! The pool hands out a connection without a round trip: it checks only that the connection's task has not
//! ended (a server gone or a connection broken ends it). A statement that finds the server unusable (going away,
//! read-only after a failover) throws its connection away instead ([`super::PgEngine`]).

use crate::{PoolSettings, StoreError, StoreResult};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres_rustls::MakeRustlsConnect;

/// A database URL taken apart: the driver's settings, and how to check the server's certificate.
#[derive(Clone)]
pub(crate) struct Target {
    /// The driver's settings.
    pub(crate) config: tokio_postgres::Config,
    /// TLS as the URL asks for it.
    pub(crate) tls: MakeRustlsConnect,
}

/// Parses `url` (see the module's doc).
pub(crate) fn target(url: &str, acquire_timeout: Duration) -> StoreResult<Target> {
    let bad = |e: &dyn std::fmt::Display| StoreError::Other(format!("bad PostgreSQL URL: {e}"));
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut verify = false;
    let mut root_cert = None;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=').unwrap_or((pair, "")) {
            ("sslmode", "verify-ca" | "verify-full") => {
                verify = true;
                kept.push("sslmode=require".to_owned());
            }
            ("sslrootcert", path) => root_cert = Some(percent_decode(path)),
            _ => kept.push(pair.to_owned()),
        }
    }
    let rebuilt = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
    let mut config = tokio_postgres::Config::from_str(&rebuilt).map_err(|e| bad(&e))?;
    if config.get_application_name().is_none() {
        config.application_name("latchkey");
    }
    if config.get_connect_timeout().is_none() {
        // Each host is tried in turn within the pool's wait for a connection: a first host that is down (not
        // refusing, silent) must leave time for the next.
        let hosts = u32::try_from(config.get_hosts().len().max(1)).unwrap_or(u32::MAX);
        config.connect_timeout((acquire_timeout / hosts).max(Duration::from_millis(500)));
    }
    // A server that vanished without closing the connection (a machine down, a network cut) is noticed: idle, by
    // keepalives; with a statement in flight (a shared connection always has one under load), when what was sent
    // goes unacknowledged for 30 s instead of the kernel's quarter of an hour of retransmissions.
    config.keepalives_idle(Duration::from_secs(30));
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(Duration::from_secs(30));
    }
    let tls = if verify { verified(root_cert.as_deref())? } else { unverified() };
    Ok(Target { config, tls: MakeRustlsConnect::new(tls) })
}

/// A pool of connections to `target`.
pub(crate) fn pool(target: Target, settings: PoolSettings) -> StoreResult<Pool> {
    let manager =
        Manager::from_config(target.config, target.tls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(manager)
        .max_size(settings.max_connections.max(1) as usize)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(settings.acquire_timeout))
        .create_timeout(Some(settings.acquire_timeout))
        .recycle_timeout(Some(settings.acquire_timeout))
        .build()
        .map_err(|e| StoreError::Other(format!("the PostgreSQL pool: {e}")))
}

/// One connection of its own to `url` (not pooled), driven by a task until the client is dropped: for
/// administration and tests.
pub async fn connect_one(url: &str) -> StoreResult<tokio_postgres::Client> {
    let target = target(url, Duration::from_secs(5))?;
    Ok(open(&target).await.map_err(super::errors::map_err)?.0)
}

/// A connection to `target` outside the pool, and the task that drives it until the client is dropped.
pub(crate) async fn open(
    target: &Target,
) -> Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>), tokio_postgres::Error> {
    let (client, connection) = target.config.connect(target.tls.clone()).await?;
    let task = tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "a PostgreSQL connection ended");
        }
    });
    Ok((client, task))
}

/// `%XX` escapes decoded (a path in a URL's query).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// TLS that checks the server's certificate against `root_cert` (PEM), else the WebPKI roots.
fn verified(root_cert: Option<&str>) -> StoreResult<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    match root_cert {
        Some(path) => {
            let pem = std::fs::read(path).map_err(|e| StoreError::Other(format!("sslrootcert {path}: {e}")))?;
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                let cert = cert.map_err(|e| StoreError::Other(format!("sslrootcert {path}: {e}")))?;
                roots.add(cert).map_err(|e| StoreError::Other(format!("sslrootcert {path}: {e}")))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Other(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// TLS that encrypts without checking who the server is: libpq's `prefer` and `require`.
fn unverified() -> rustls::ClientConfig {
    let provider = provider();
    let verifier = Arc::new(AnyServer(provider.clone()));
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth()
}

/// Accepts any certificate, still checking that the server holds its key (the handshake's signatures).
#[derive(Debug)]
struct AnyServer(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::target;
    use std::time::Duration;
    use tokio_postgres::config::{Host, SslMode, TargetSessionAttrs};

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn several_hosts_and_the_writable_one_are_taken_from_a_libpq_url() {
        let t = target("postgres://u@127.0.0.1:5001,db2:5002/latchkey?target_session_attrs=read-write", SECOND)
            .expect("parses");
        assert_eq!(t.config.get_hosts(), [Host::Tcp("127.0.0.1".into()), Host::Tcp("db2".into())]);
        assert_eq!(t.config.get_ports(), [5001, 5002]);
        assert_eq!(t.config.get_dbname(), Some("latchkey"));
        assert_eq!(t.config.get_target_session_attrs(), TargetSessionAttrs::ReadWrite);
        assert_eq!(t.config.get_application_name(), Some("latchkey"));
        assert_eq!(t.config.get_connect_timeout(), Some(&Duration::from_millis(500)), "half the wait each");
    }

    #[test]
    fn verify_full_requires_tls_and_a_missing_root_certificate_is_an_error() {
        assert!(target("postgres://u@h/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem", SECOND).is_err());
        let t = target("postgres://u@h/db?sslmode=verify-full", SECOND).expect("WebPKI roots");
        assert_eq!(t.config.get_ssl_mode(), SslMode::Require);
        assert!(target("postgres://u@h/db?sslmode=sometimes", SECOND).is_err());
    }
}
