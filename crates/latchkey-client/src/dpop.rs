//! DPoP on the device (RFC 9449): an ES256 key that never leaves it, and a fresh proof per token request.
//!
//! The key sits behind [`KeyStore`], so an app can keep it in hardware-backed storage (secure enclave, TPM, an
//! OS keychain); [`FileKeyStore`] keeps it in a 0600 file.

use crate::storage::{read_optional, remove, write_private};
use crate::Error;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::json;
use std::path::PathBuf;

/// Where the device's DPoP key is kept (PKCS#8 DER).
pub trait KeyStore: Send + Sync {
    /// The stored key, if any.
    fn load(&self) -> Result<Option<Vec<u8>>, Error>;
    /// Stores a new key.
    fn save(&self, pkcs8: &[u8]) -> Result<(), Error>;
    /// Forgets the key.
    fn clear(&self) -> Result<(), Error>;
}

/// A key file with mode 0600.
#[derive(Debug, Clone)]
pub struct FileKeyStore {
    path: PathBuf,
}

impl FileKeyStore {
    /// A key store at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }
}

impl KeyStore for FileKeyStore {
    fn load(&self) -> Result<Option<Vec<u8>>, Error> {
        read_optional(&self.path)
    }

    fn save(&self, pkcs8: &[u8]) -> Result<(), Error> {
        write_private(&self.path, pkcs8)
    }

    fn clear(&self) -> Result<(), Error> {
        remove(&self.path)
    }
}

/// The device's DPoP key.
pub struct DpopKey {
    pair: EcdsaKeyPair,
    jwk: serde_json::Value,
    thumbprint: String,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DpopKey({})", self.thumbprint)
    }
}

impl DpopKey {
    /// The stored key, or a new one that is stored first.
    pub fn load_or_create(store: &dyn KeyStore) -> Result<Self, Error> {
        if let Some(der) = store.load()? {
            return Self::from_pkcs8(&der);
        }
        let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .map_err(|_| Error::Storage("cannot generate a P-256 key".into()))?;
        store.save(der.as_ref())?;
        Self::from_pkcs8(der.as_ref())
    }

    /// A key from PKCS#8 DER.
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, Error> {
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &SystemRandom::new())
            .map_err(|_| Error::Storage("the stored DPoP key is not a P-256 key".into()))?;
        let point = pair.public_key().as_ref();
        if point.len() != 65 {
            return Err(Error::Storage("unexpected public key form".into()));
        }
        let (x, y) = (URL_SAFE_NO_PAD.encode(&point[1..33]), URL_SAFE_NO_PAD.encode(&point[33..]));
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
        let thumbprint = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes()));
        let jwk = json!({ "kty": "EC", "crv": "P-256", "x": x, "y": y });
        Ok(Self { pair, jwk, thumbprint })
    }

    /// The key's RFC 7638 thumbprint (what a bound token is bound to).
    pub fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// A proof for `method` at `url`, with `jti` and the server's last nonce.
    pub fn proof(&self, method: &str, url: &str, jti: &str, nonce: Option<&str>, now: i64) -> Result<String, Error> {
        let header = json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk });
        let mut claims = json!({ "jti": jti, "htm": method, "htu": url, "iat": now });
        if let Some(n) = nonce {
            claims["nonce"] = n.into();
        }
        let encode = |v: &serde_json::Value| URL_SAFE_NO_PAD.encode(v.to_string());
        let mut jws = format!("{}.{}", encode(&header), encode(&claims));
        let signature = self
            .pair
            .sign(&SystemRandom::new(), jws.as_bytes())
            .map_err(|_| Error::Storage("signing the DPoP proof failed".into()))?;
        jws.push('.');
        URL_SAFE_NO_PAD.encode_string(signature.as_ref(), &mut jws);
        Ok(jws)
    }
}

/// Base64url(SHA-256(code)): the `jti` of a code-exchange proof that needs no nonce (`docs/decisions.md`, "DPoP").
pub(crate) fn code_jti(code: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, code.as_bytes()))
}

/// A unique `jti` for other requests.
pub(crate) fn random_jti() -> String {
    let mut b = [0u8; 18];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut b);
    URL_SAFE_NO_PAD.encode(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_created_once_then_loaded_from_its_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FileKeyStore::new(dir.path().join("dpop.key"));
        let a = DpopKey::load_or_create(&store).expect("create");
        let b = DpopKey::load_or_create(&store).expect("load");
        assert_eq!(a.thumbprint(), b.thumbprint());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("dpop.key")).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        store.clear().expect("clear");
        assert_ne!(DpopKey::load_or_create(&store).expect("new").thumbprint(), a.thumbprint());
    }

    #[test]
    fn a_proof_carries_the_public_key_the_claims_and_a_raw_signature() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = DpopKey::load_or_create(&FileKeyStore::new(dir.path().join("k"))).expect("key");
        let p = key.proof("POST", "https://as/token", "j1", Some("n1"), 1000).expect("proof");
        let parts: Vec<&str> = p.split('.').collect();
        let header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).expect("b64")).expect("json");
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).expect("b64")).expect("json");
        assert_eq!(header["typ"], "dpop+jwt");
        assert!(header["jwk"].get("d").is_none(), "no private member");
        assert_eq!(
            (claims["jti"].as_str(), claims["nonce"].as_str(), claims["iat"].as_i64()),
            (Some("j1"), Some("n1"), Some(1000))
        );
        assert_eq!(URL_SAFE_NO_PAD.decode(parts[2]).expect("b64").len(), 64);
    }
}
