//! Keys at rest: the access-token MAC keys and the id_token signing keys are stored encrypted (AES-256-GCM from
//! `ring`) under a *system secret* that lives outside the database, as Ory Hydra keeps its JWKs.
//!
//! Several system secrets may be in force: the first encrypts, every one decrypts, so that a rotation never leaves
//! a key unreadable. A stored key is one blob:
//!
//! ```text
//! "lksealed" | version (1 byte, 1 = AES-256-GCM) | fingerprint (8 bytes) | nonce (12 bytes) | ciphertext | tag (16)
//! ```
//!
//! The fingerprint names the system secret that encrypted the blob (it is derived from the secret by HKDF and
//! reveals nothing of it). The associated data is the header (magic, version, fingerprint) and the key's kind, so
//! a blob cannot pass for another kind's key or another version. The key id is not bound: the store assigns it
//! after the blob is made. A blob without the magic is a key stored in the clear by an earlier version; it is
//! read as it is and encrypted at the next start ([`crate::keys`]).

mod source;

pub use source::{SecretFile, SecretSource, DEFAULT_FILE};

use crate::clock::OsRandom;
use latchkey_core::secret::{Random, Secret};
use latchkey_store::KeyKind;
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::hkdf;
use std::fmt;
use std::path::PathBuf;

/// The shortest system secret accepted, in characters (the configuration checks it too).
/// The shortest system secret, in characters.
pub const MIN_SECRET_LEN: usize = 32;
/// What every encrypted blob starts with.
const MAGIC: &[u8; 8] = b"lksealed";
/// Format version 1: AES-256-GCM under a key derived by HKDF-SHA256 from the system secret.
const VERSION_1: u8 = 1;
const FINGERPRINT_LEN: usize = 8;
const HEADER_LEN: usize = MAGIC.len() + 1 + FINGERPRINT_LEN;
const HKDF_SALT: &[u8] = b"latchkey system secret";
const INFO_KEY: &[u8] = b"latchkey key encryption v1";
const INFO_FINGERPRINT: &[u8] = b"latchkey secret fingerprint v1";

/// Why a system secret or a stored key cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretsError {
    /// A configured secret is too short to be a key.
    #[error("a system secret must be at least {MIN_SECRET_LEN} characters long")]
    TooShort,
    /// The configuration or the file names no secret.
    #[error("no system secret is configured ({0})")]
    Empty(String),
    /// The secret file does not exist.
    #[error(
        "the system secret file {0} is missing: the keys in the database are encrypted under it, so restore it \
         from a backup (or set secrets_system / secrets_system_file to the secret the other instances use)"
    )]
    MissingFile(PathBuf),
    /// A blob was encrypted under a secret that is not in force.
    #[error(
        "encrypted under system secret {0}, which is not configured here (every instance needs the same \
         secrets_system or secrets_system_file)"
    )]
    UnknownSecret(Fingerprint),
    /// The blob does not decrypt: it was altered, cut short, or stored as another kind.
    #[error("does not decrypt under system secret {0}: the stored blob was altered")]
    Undecryptable(Fingerprint),
    /// A blob that starts like an encrypted one but is cut short.
    #[error("the stored blob is cut short")]
    Truncated,
    /// A blob of a format this version does not know.
    #[error("encrypted in format version {0}, which this version of latchkey does not know")]
    UnknownVersion(u8),
    /// The secret file cannot be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// The cryptographic library refused (it does not happen with valid lengths).
    #[error("encryption failed")]
    Crypto,
}

impl From<SecretsError> for latchkey_store::StoreError {
    fn from(e: SecretsError) -> Self {
        Self::Other(format!("system secrets: {e}"))
    }
}

/// The name of a system secret: 8 bytes derived from it by HKDF, shown in hexadecimal.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; FINGERPRINT_LEN]);

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// One system secret, ready to encrypt and decrypt; the secret itself is not kept.
pub struct SystemSecret {
    key: LessSafeKey,
    fingerprint: Fingerprint,
}

impl fmt::Debug for SystemSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SystemSecret({})", self.fingerprint)
    }
}

/// The length of a fingerprint, as HKDF output.
struct FingerprintLen;

impl hkdf::KeyType for FingerprintLen {
    fn len(&self) -> usize {
        FINGERPRINT_LEN
    }
}

impl SystemSecret {
    /// Derives the encryption key and the fingerprint of a secret of at least [`MIN_SECRET_LEN`] characters.
    pub fn new(secret: &str) -> Result<Self, SecretsError> {
        if secret.chars().count() < MIN_SECRET_LEN {
            return Err(SecretsError::TooShort);
        }
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, HKDF_SALT).extract(secret.as_bytes());
        let okm = prk.expand(&[INFO_KEY], &aead::AES_256_GCM).map_err(|_| SecretsError::Crypto)?;
        let key = LessSafeKey::new(UnboundKey::from(okm));
        let mut fingerprint = [0; FINGERPRINT_LEN];
        prk.expand(&[INFO_FINGERPRINT], FingerprintLen)
            .and_then(|okm| okm.fill(&mut fingerprint))
            .map_err(|_| SecretsError::Crypto)?;
        Ok(Self { key, fingerprint: Fingerprint(fingerprint) })
    }

    /// A new random secret (32 bytes, base64url), as written to the secret file.
    pub fn generate() -> Secret {
        Secret::generate("", &OsRandom)
    }

    /// The secret's fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }
}

/// Key material decrypted from the store; never printed, never copied by accident.
pub struct KeyMaterial(Vec<u8>);

impl KeyMaterial {
    /// The bytes, for the key constructors.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for KeyMaterial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyMaterial(<redacted>)")
    }
}

/// How a stored key was protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// In the clear, as earlier versions stored keys.
    Plaintext,
    /// Encrypted under the first system secret.
    Current,
    /// Encrypted under another configured secret, to be re-encrypted under the first.
    Older(Fingerprint),
}

/// A stored key, opened.
#[derive(Debug)]
pub struct Opened {
    /// The key material.
    pub material: KeyMaterial,
    /// How it was stored.
    pub protection: Protection,
}

/// The system secrets in force: the first encrypts, every one decrypts.
#[derive(Debug)]
pub struct SystemSecrets(Vec<SystemSecret>);

impl SystemSecrets {
    /// The secrets, first the one that encrypts; `origin` names where they came from, for the error when there
    /// are none.
    pub fn parse<'a>(secrets: impl IntoIterator<Item = &'a str>, origin: &str) -> Result<Self, SecretsError> {
        let list = secrets.into_iter().map(SystemSecret::new).collect::<Result<Vec<_>, _>>()?;
        if list.is_empty() {
            return Err(SecretsError::Empty(origin.to_owned()));
        }
        Ok(Self(list))
    }

    /// The fingerprint of the secret that encrypts.
    pub fn current(&self) -> Fingerprint {
        self.0[0].fingerprint
    }

    /// The fingerprints of every secret in force, first the one that encrypts.
    pub fn fingerprints(&self) -> Vec<Fingerprint> {
        self.0.iter().map(|s| s.fingerprint).collect()
    }

    /// Encrypts a key of `kind` under the first secret, with a fresh random nonce.
    pub fn seal(&self, kind: KeyKind, material: &[u8]) -> Result<Vec<u8>, SecretsError> {
        let secret = &self.0[0];
        let mut blob = Vec::with_capacity(HEADER_LEN + aead::NONCE_LEN + material.len() + aead::MAX_TAG_LEN);
        blob.extend_from_slice(MAGIC);
        blob.push(VERSION_1);
        blob.extend_from_slice(&secret.fingerprint.0);
        let mut nonce = [0u8; aead::NONCE_LEN];
        OsRandom.fill(&mut nonce);
        blob.extend_from_slice(&nonce);
        let mut sealed = material.to_vec();
        secret
            .key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), associated_data(&blob, kind), &mut sealed)
            .map_err(|_| SecretsError::Crypto)?;
        blob.extend_from_slice(&sealed);
        Ok(blob)
    }

    /// Decrypts a stored key of `kind`; a blob without the magic is a key stored in the clear and is returned as
    /// it is.
    pub fn open(&self, kind: KeyKind, stored: &[u8]) -> Result<Opened, SecretsError> {
        let Some(fingerprint) = sealed_by(stored)? else {
            return Ok(Opened { material: KeyMaterial(stored.to_vec()), protection: Protection::Plaintext });
        };
        let (position, secret) = self
            .0
            .iter()
            .enumerate()
            .find(|(_, s)| s.fingerprint == fingerprint)
            .ok_or(SecretsError::UnknownSecret(fingerprint))?;
        let body = &stored[HEADER_LEN..];
        let undecryptable = || SecretsError::Undecryptable(fingerprint);
        let nonce = body.get(..aead::NONCE_LEN).ok_or_else(undecryptable)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| undecryptable())?;
        let mut buffer = body[aead::NONCE_LEN..].to_vec();
        let material =
            secret.key.open_in_place(nonce, associated_data(stored, kind), &mut buffer).map_err(|_| undecryptable())?;
        let protection = if position == 0 { Protection::Current } else { Protection::Older(fingerprint) };
        Ok(Opened { material: KeyMaterial(material.to_vec()), protection })
    }
}

/// The fingerprint of the secret a stored blob was encrypted under, or `None` for a key stored in the clear.
pub fn sealed_by(stored: &[u8]) -> Result<Option<Fingerprint>, SecretsError> {
    let Some(rest) = stored.strip_prefix(MAGIC) else { return Ok(None) };
    match rest.first() {
        Some(&VERSION_1) => {}
        Some(&other) => return Err(SecretsError::UnknownVersion(other)),
        None => return Err(SecretsError::Truncated),
    }
    let fingerprint = rest.get(1..=FINGERPRINT_LEN).and_then(|f| f.try_into().ok()).ok_or(SecretsError::Truncated)?;
    Ok(Some(Fingerprint(fingerprint)))
}

/// What the tag covers besides the key: the blob's header and the key's kind.
fn associated_data(blob: &[u8], kind: KeyKind) -> Aad<Vec<u8>> {
    let mut aad = blob[..HEADER_LEN].to_vec();
    aad.extend_from_slice(kind.as_str().as_bytes());
    Aad::from(aad)
}

#[cfg(test)]
mod tests;
