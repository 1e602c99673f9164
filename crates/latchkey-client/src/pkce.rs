//! PKCE (RFC 7636): a fresh high-entropy verifier per request, and its S256 challenge.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::Rng;

/// The characters a verifier may use (RFC 7636 §4.1).
const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";

/// A verifier and its S256 challenge.
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    verifier: String,
    challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pkce {{ verifier: <redacted>, challenge: {} }}", self.challenge)
    }
}

impl Pkce {
    /// A fresh pair: a 64-character verifier drawn from the whole allowed set (about 380 bits).
    pub fn generate() -> Self {
        let mut rng = rand::rngs::OsRng;
        let verifier: String = (0..64).map(|_| char::from(CHARSET[rng.gen_range(0..CHARSET.len())])).collect();
        Self::from_verifier(verifier)
    }

    /// The pair for a given verifier.
    pub fn from_verifier(verifier: String) -> Self {
        let challenge = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()));
        Self { verifier, challenge }
    }

    /// The verifier, sent once at the code exchange.
    pub fn verifier(&self) -> &str {
        &self.verifier
    }

    /// The S256 challenge, sent on the authorization request.
    pub fn challenge(&self) -> &str {
        &self.challenge
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b_vector() {
        let p = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        assert_eq!(p.challenge(), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }

    #[test]
    fn verifiers_are_fresh_within_length_and_of_the_allowed_set() {
        let a = Pkce::generate();
        let b = Pkce::generate();
        assert_ne!(a.verifier(), b.verifier());
        for p in [&a, &b] {
            assert!((43..=128).contains(&p.verifier().len()));
            assert!(p.verifier().bytes().all(|c| CHARSET.contains(&c)));
            assert_eq!(p.challenge().len(), 43);
        }
        assert!(!format!("{a:?}").contains(a.verifier()), "the verifier never reaches a log");
    }
}
