//! Password hashing: argon2id with the crate's default parameters (19 MiB, 2 passes, 1 lane, as OWASP
//! recommends), run off the async threads.

use argon2::password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;

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

/// [`verify`] on the blocking pool.
pub async fn verify_blocking(password: String, phc: Option<String>) -> bool {
    tokio::task::spawn_blocking(move || verify(&password, phc.as_deref())).await.unwrap_or(false)
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
}
