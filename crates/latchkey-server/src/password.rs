//! Password hashing: argon2id with the crate's default parameters (19 MiB, 2 passes, 1 lane, as OWASP
//! recommends), run off the async threads and at most one per core at a time ([`Gate`]).

use argon2::password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// A hash of a password that matches nothing, verified for unknown accounts so that timing does not tell
/// whether an address has an account.
const DUMMY: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$3P2wUSCxsKsXSt2aeb/WzHqSsydl6cQ3Dgxs1TaMoVk";

/// Hashes a password into a PHC string.
pub fn hash(password: &str) -> Result<String, argon2::password_hash::Error> {
    let salt = SaltString::generate(&mut OsRng);
    Ok(Argon2::default().hash_password(password.as_bytes(), &salt)?.to_string())
}

/// Verifies a password against a PHC string (or against nothing, when `phc` is `None`).
pub fn verify(password: &str, phc: Option<&str>) -> bool {
    let target = phc.unwrap_or(DUMMY);
    let Ok(parsed) = PasswordHash::new(target) else { return false };
    let ok = Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok();
    ok && phc.is_some()
}

/// Admits password verifications to the blocking pool, at most one per core at a time.
///
/// A burst of sign-ins then queues here instead of running dozens of hashes at once: the async threads keep
/// serving (the hash never runs on them), the hashes finish in arrival order at the machine's hash rate, and
/// memory stays bounded at one argon2 block array (19 MiB) per core instead of one per waiting sign-in.
#[derive(Clone, Debug)]
pub struct Gate {
    permits: Arc<Semaphore>,
}

impl Gate {
    /// A gate admitting `concurrency` hashes at a time (at least one).
    pub fn new(concurrency: usize) -> Self {
        Self { permits: Arc::new(Semaphore::new(concurrency.max(1))) }
    }

    /// A gate sized to the cores this process may run on.
    pub fn per_core() -> Self {
        Self::new(std::thread::available_parallelism().map_or(1, usize::from))
    }

    /// [`verify`] on the blocking pool, once a permit is free.
    pub async fn verify(&self, password: String, phc: Option<String>) -> bool {
        let Ok(_permit) = self.permits.acquire().await else { return false };
        tokio::task::spawn_blocking(move || verify(&password, phc.as_deref())).await.unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_hash_verifies_its_password_only() {
        let h = super::hash("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(super::verify("correct horse", Some(&h)));
        assert!(!super::verify("wrong", Some(&h)));
        assert!(!super::verify("correct horse", None));
    }

    #[tokio::test]
    async fn the_gate_verifies_like_verify() {
        let h = super::hash("correct horse").unwrap();
        let gate = super::Gate::new(1);
        assert!(gate.verify("correct horse".into(), Some(h.clone())).await);
        assert!(!gate.verify("wrong".into(), Some(h)).await);
        assert!(!gate.verify("correct horse".into(), None).await);
    }
}
