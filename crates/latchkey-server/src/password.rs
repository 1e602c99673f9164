//! Password hashing: argon2id with the crate's default parameters (19 MiB, 2 passes, 1 lane, as OWASP
//! recommends), run off the async threads and at most one per core at a time ([`Gate`]).

use argon2::password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use subtle::ConstantTimeEq;
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

/// [`verify`] with the caller's argon2 memory (grown when a hash asks for more): the same answer, without
/// allocating 19 MiB per verification.
pub fn verify_in(password: &str, phc: Option<&str>, memory: &mut Vec<Block>) -> bool {
    let target = phc.unwrap_or(DUMMY);
    let Ok(parsed) = PasswordHash::new(target) else { return false };
    let (Ok(algorithm), Ok(params)) = (Algorithm::try_from(parsed.algorithm), Params::try_from(&parsed)) else {
        return false;
    };
    let Ok(version) = parsed.version.map_or(Ok(Version::V0x13), Version::try_from) else { return false };
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else { return false };
    let mut salt_bytes = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else { return false };
    let blocks = params.block_count();
    if memory.len() < blocks {
        memory.resize(blocks, Block::default());
    }
    let mut out = vec![0u8; expected.len()];
    let hashed = Argon2::new(algorithm, version, params)
        .hash_password_into_with_memory(password.as_bytes(), salt, &mut out, &mut memory[..blocks])
        .is_ok();
    hashed && bool::from(out.as_slice().ct_eq(expected.as_bytes())) && phc.is_some()
}

/// Admits password verifications to the blocking pool, at most one per core at a time.
///
/// A burst of sign-ins then queues here instead of running dozens of hashes at once: the async threads keep
/// serving (the hash never runs on them), the hashes finish in arrival order at the machine's hash rate, and
/// memory stays bounded at one argon2 block array (19 MiB) per core instead of one per waiting sign-in. During
/// a burst the arrays are reused from one sign-in to the next (no 19 MiB allocation each); once no sign-in is
/// waiting or running they are freed, so that an idle server holds none of them (the allocator gives memory of
/// that size back to the system).
#[derive(Clone)]
pub struct Gate {
    permits: Arc<Semaphore>,
    memory: Arc<Mutex<Vec<Vec<Block>>>>,
    /// Verifications waiting for a permit or running.
    pending: Arc<AtomicUsize>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Gate({} free)", self.permits.available_permits())
    }
}

impl Gate {
    /// A gate admitting `concurrency` hashes at a time (at least one).
    pub fn new(concurrency: usize) -> Self {
        Self { permits: Arc::new(Semaphore::new(concurrency.max(1))), memory: Arc::default(), pending: Arc::default() }
    }

    /// A gate sized to the cores this process may run on.
    pub fn per_core() -> Self {
        Self::new(std::thread::available_parallelism().map_or(1, usize::from))
    }

    /// [`verify`] on the blocking pool, once a permit is free, in one of the gate's memory arrays.
    pub async fn verify(&self, password: String, phc: Option<String>) -> bool {
        let _pending = Pending::enter(&self.pending);
        let Ok(_permit) = self.permits.acquire().await else { return false };
        let (arrays, pending) = (Arc::clone(&self.memory), Arc::clone(&self.pending));
        tokio::task::spawn_blocking(move || {
            // At most one array per permit is ever taken out, so the pool never holds more than that.
            let mut memory = arrays.lock().ok().and_then(|mut a| a.pop()).unwrap_or_default();
            let ok = verify_in(&password, phc.as_deref(), &mut memory);
            // The last of a burst frees the arrays (the one counted as pending is this verification itself). One
            // that arrives meanwhile allocates its own.
            if let Ok(mut a) = arrays.lock() {
                if pending.load(Ordering::Acquire) > 1 {
                    a.push(memory);
                } else {
                    a.clear();
                }
            }
            ok
        })
        .await
        .unwrap_or(false)
    }

    /// The memory arrays kept for the next verification.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.memory.lock().map_or(0, |a| a.len())
    }
}

/// Counts a verification from its arrival until it is answered (or given up), in [`Gate::pending`].
struct Pending<'a>(&'a AtomicUsize);

impl<'a> Pending<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count)
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
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
        assert_eq!(gate.kept(), 0, "no array is kept once no verification is pending");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_burst_ends_with_no_array_kept() {
        let h = super::hash("correct horse").unwrap();
        let gate = super::Gate::new(1);
        let burst: Vec<_> = (0..3)
            .map(|i| {
                let (gate, h) = (gate.clone(), h.clone());
                tokio::spawn(async move {
                    gate.verify(if i == 1 { "wrong" } else { "correct horse" }.into(), Some(h)).await
                })
            })
            .collect();
        let mut answers = Vec::new();
        for verification in burst {
            answers.push(verification.await.expect("verified"));
        }
        assert_eq!(answers, [true, false, true]);
        assert_eq!(gate.kept(), 0, "the burst's last verification freed the array");
    }

    #[test]
    fn verifying_in_given_memory_agrees_with_verify() {
        let h = super::hash("correct horse").unwrap();
        let mut memory = Vec::new();
        assert!(super::verify_in("correct horse", Some(&h), &mut memory));
        assert!(!super::verify_in("wrong", Some(&h), &mut memory));
        assert!(!super::verify_in("correct horse", None, &mut memory));
        assert!(!super::verify_in("correct horse", Some("not a hash"), &mut memory));
        assert_eq!(memory.len(), 19 * 1024, "19 MiB of 1 KiB blocks, kept for the next one");
    }
}
