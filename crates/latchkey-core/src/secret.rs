//! Secrets: generation, hashing for storage, and constant-time comparison.
//!
//! Codes, refresh tokens, session tokens and client secrets are 256-bit random values. Only their SHA-256
//! travels to the store; a lookup by hash is safe because the attacker cannot choose a preimage.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use std::fmt;
use subtle::ConstantTimeEq;

/// A secret value that is never printed and never copied by accident.
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(s: String) -> Self {
        Self(s)
    }

    /// A fresh random secret: `prefix` followed by 32 bytes from `random` in base64url (unreserved characters
    /// only).
    pub fn generate(prefix: &str, random: &dyn Random) -> Self {
        let mut bytes = [0u8; 32];
        random.fill(&mut bytes);
        let mut s = String::with_capacity(prefix.len() + 43);
        s.push_str(prefix);
        URL_SAFE_NO_PAD.encode_string(bytes, &mut s);
        Self(s)
    }

    /// The secret itself, for the one place it is sent.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Takes the secret out, for the response that carries it.
    pub fn into_inner(self) -> String {
        self.0
    }

    /// The SHA-256 of the secret, as stored.
    pub fn hash(&self) -> Vec<u8> {
        hash(&self.0)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// A source of random bytes. Everything in this crate that needs randomness takes it from the caller (the server
/// and the binary pass the operating system's, `latchkey_admin::clock::OsRandom`), so that the rules here read
/// no randomness of their own and tests can pass a source they control.
pub trait Random: Send + Sync {
    /// Fills `buf` with random bytes.
    fn fill(&self, buf: &mut [u8]);

    /// The source as *ring* takes it, for ECDSA key generation, loading and signing ([`crate::jws`]). *ring*
    /// accepts randomness only through its `SecureRandom` trait, which is sealed: no type outside *ring* can
    /// implement it, so bytes from [`Random::fill`] cannot be handed to it, and the one implementation there is,
    /// *ring*'s `SystemRandom`, is what a source returns here. The core never makes one itself.
    fn ring(&self) -> &dyn ring::rand::SecureRandom;
}

/// `n` bytes from `random`, in base64url without padding.
pub fn random_b64(n: usize, random: &dyn Random) -> String {
    URL_SAFE_NO_PAD.encode(random_bytes(n, random))
}

/// `n` bytes from `random`.
pub fn random_bytes(n: usize, random: &dyn Random) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    random.fill(&mut buf);
    buf
}

/// The SHA-256 of a secret as stored.
pub fn hash(secret: &str) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, secret.as_bytes()).as_ref().to_vec()
}

/// Whether `presented` hashes to `stored_hash`, compared in constant time.
pub fn matches_hash(presented: &str, stored_hash: &[u8]) -> bool {
    bool::from(hash(presented).as_slice().ct_eq(stored_hash))
}

/// Constant-time equality of two byte strings.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    bool::from(a.ct_eq(b))
}

#[cfg(test)]
pub(crate) use tests::Counter;

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter posing as randomness, for tests: every call gives different bytes, the same in every run.
    /// *ring*'s ECDSA still takes the operating system's ([`Random::ring`]).
    #[derive(Debug)]
    pub(crate) struct Counter(std::sync::atomic::AtomicU64, ring::rand::SystemRandom);

    impl Default for Counter {
        fn default() -> Self {
            Self(std::sync::atomic::AtomicU64::new(0), ring::rand::SystemRandom::new())
        }
    }

    impl Random for Counter {
        fn fill(&self, buf: &mut [u8]) {
            let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed).to_be_bytes();
            for (i, b) in buf.iter_mut().enumerate() {
                *b = n[i % 8] ^ (i as u8);
            }
        }

        fn ring(&self) -> &dyn ring::rand::SecureRandom {
            &self.1
        }
    }

    #[test]
    fn generated_secrets_are_unreserved_unique_and_redacted() {
        let rng = Counter::default();
        let a = Secret::generate("lks_", &rng);
        let b = Secret::generate("lks_", &rng);
        assert_ne!(a.expose(), b.expose());
        assert!(a.expose().bytes().all(|c| c.is_ascii_alphanumeric() || b"-._~".contains(&c)));
        assert_eq!(a.expose().len(), 4 + 43);
        assert_eq!(
            a.expose(),
            "lks_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",
            "the source's first 32 bytes, 0 to 31"
        );
        assert_eq!(format!("{a:?}"), "Secret(<redacted>)");
    }

    #[test]
    fn hashes_match_only_their_secret() {
        let s = Secret::generate("x", &Counter::default());
        assert!(matches_hash(s.expose(), &s.hash()));
        assert!(!matches_hash("other", &s.hash()));
    }
}
