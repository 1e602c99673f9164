//! TLS: the generated local certificate and the rustls server configuration.
//!
//! With no certificate configured, the server makes one for `localhost`, `127.0.0.1` and `::1`: a self-signed
//! leaf marked CA:FALSE with subject and authority key identifiers, so that the same `cert.pem` works as a trust
//! anchor for OpenSSL (strict X.509 mode included), Node and rustls/webpki clients.

use anyhow::{anyhow, Context};
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the certificate and key are, and whether they were just made.
#[derive(Debug, Clone)]
pub struct CertFiles {
    /// The PEM certificate.
    pub cert: PathBuf,
    /// The PEM private key.
    pub key: PathBuf,
    /// Whether this start generated them.
    pub generated: bool,
}

/// Makes `<dir>/cert.pem` and `<dir>/key.pem` unless they exist.
pub fn ensure_local_certificate(dir: &Path) -> anyhow::Result<CertFiles> {
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    if cert.exists() && key.exists() {
        return Ok(CertFiles { cert, key, generated: false });
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let (cert_pem, key_pem) = generate_local_certificate()?;
    latchkey_admin::data_dir::replace_private(&key, key_pem.as_bytes())
        .with_context(|| format!("writing {}", key.display()))?;
    std::fs::write(&cert, cert_pem).with_context(|| format!("writing {}", cert.display()))?;
    Ok(CertFiles { cert, key, generated: true })
}

/// A new self-signed certificate for the loopback names, as PEM (certificate, key).
pub fn generate_local_certificate() -> anyhow::Result<(String, String)> {
    let mut params = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()])?;
    params.distinguished_name.push(DnType::CommonName, "latchkey local server");
    params.distinguished_name.push(DnType::OrganizationName, "latchkey");
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::days(1);
    params.not_after = now + time::Duration::days(825);
    let key = KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// The rustls configuration for a certificate chain and key in PEM files, offering HTTP/2 and HTTP/1.1.
pub fn server_config(cert: &Path, key: &Path) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut open(cert)?)
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading certificates from {}", cert.display()))?;
    if certs.is_empty() {
        return Err(anyhow!("no certificate in {}", cert.display()));
    }
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut open(key)?)
        .with_context(|| format!("reading the key from {}", key.display()))?
        .ok_or_else(|| anyhow!("no private key in {}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("certificate and key do not match")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn open(path: &Path) -> anyhow::Result<std::io::BufReader<std::fs::File>> {
    Ok(std::io::BufReader::new(std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?))
}
