//! Password hashing: argon2id with the crate's default parameters (19 MiB, 2 passes, 1 lane, as OWASP
//! recommends), run off the async threads and at most one per core at a time ([`Gate`]).

use argon2::password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
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

/// Admits password verifications to the blocking pool, at most one per core at a time, with at most
/// [`WAITING_PER_PERMIT`] waiting per core: past that a verification is refused at once ([`Busy`]).
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
    pool: Arc<Mutex<Pool>>,
    /// Verifications that may be pending (waiting or running) at once.
    most_pending: usize,
}

/// Verifications that may wait per permit. A verification takes 20 to 50 ms of a core, so the last one admitted
/// waits about a second; each waiting one holds a connection and its password.
pub const WAITING_PER_PERMIT: usize = 32;

/// The gate's queue is full: the verification was not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

/// The gate's memory arrays, and the verifications waiting or running (which may still need them).
#[derive(Default)]
struct Pool {
    arrays: Vec<Vec<Block>>,
    pending: usize,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Gate({} free)", self.permits.available_permits())
    }
}

impl Gate {
    /// A gate admitting `concurrency` hashes at a time (at least one).
    pub fn new(concurrency: usize) -> Self {
        Self::with_queue(concurrency, concurrency.max(1) * WAITING_PER_PERMIT)
    }

    /// A gate admitting `concurrency` hashes at a time, with at most `waiting` more waiting.
    pub fn with_queue(concurrency: usize, waiting: usize) -> Self {
        let permits = concurrency.max(1);
        Self { permits: Arc::new(Semaphore::new(permits)), pool: Arc::default(), most_pending: permits + waiting }
    }

    /// A gate sized to the cores this process may run on.
    pub fn per_core() -> Self {
        Self::new(std::thread::available_parallelism().map_or(1, usize::from))
    }

    /// [`verify`] on the blocking pool, once a permit is free, in one of the gate's memory arrays; [`Busy`] at once
    /// when the queue is full.
    pub async fn verify(&self, password: String, phc: Option<String>) -> Result<bool, Busy> {
        let pending = Pending::enter(&self.pool, self.most_pending).ok_or(Busy)?;
        let Ok(permit) = Arc::clone(&self.permits).acquire_owned().await else { return Ok(false) };
        // The permit and the count go with the hash: a request given up while it runs does not let another array
        // be taken out meanwhile, nor the arrays be freed under it.
        tokio::task::spawn_blocking(move || {
            let mut memory = pending.take();
            let ok = verify_in(&password, phc.as_deref(), &mut memory);
            pending.give_back(memory);
            drop(permit);
            ok
        })
        .await
        .map_err(|_| Busy)
    }

    /// The memory arrays kept for the next verification.
    #[cfg(test)]
    fn kept(&self) -> usize {
        lock(&self.pool).arrays.len()
    }
}

/// The pool, even if a thread panicked while holding it (its state is a list and a count, never half-changed).
fn lock(pool: &Mutex<Pool>) -> std::sync::MutexGuard<'_, Pool> {
    pool.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A verification from its arrival until it is answered or given up, counted in the pool; the last one to leave
/// frees the arrays. Count and arrays change under one lock, so no array outlives the last verification.
struct Pending(Arc<Mutex<Pool>>);

impl Pending {
    /// Counts a verification in, unless `most` are already pending.
    fn enter(pool: &Arc<Mutex<Pool>>, most: usize) -> Option<Self> {
        let mut p = lock(pool);
        if p.pending >= most {
            return None;
        }
        p.pending += 1;
        Some(Self(Arc::clone(pool)))
    }

    /// A kept array, or a new (empty) one that the hash grows. At most one per permit is ever taken out.
    fn take(&self) -> Vec<Block> {
        lock(&self.0).arrays.pop().unwrap_or_default()
    }

    fn give_back(&self, memory: Vec<Block>) {
        lock(&self.0).arrays.push(memory);
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut pool = lock(&self.0);
        pool.pending = pool.pending.saturating_sub(1);
        if pool.pending == 0 {
            pool.arrays.clear();
        }
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
        assert_eq!(gate.verify("correct horse".into(), Some(h.clone())).await, Ok(true));
        assert_eq!(gate.verify("wrong".into(), Some(h)).await, Ok(false));
        assert_eq!(gate.verify("correct horse".into(), None).await, Ok(false));
        assert_eq!(gate.kept(), 0, "no array is kept once no verification is pending");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_burst_ends_with_no_array_kept() {
        let h = super::hash("correct horse").unwrap();
        let gate = super::Gate::new(2);
        let burst: Vec<_> = (0..4)
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
        assert_eq!(answers, [Ok(true), Ok(false), Ok(true), Ok(true)]);
        assert_eq!(gate.kept(), 0, "the burst's last verification freed the arrays");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn past_its_queue_the_gate_refuses_at_once_and_runs_no_hash() {
        let h = super::hash("correct horse").unwrap();
        let gate = super::Gate::with_queue(1, 2);
        let burst: Vec<_> = (0..12)
            .map(|_| {
                let (gate, h) = (gate.clone(), h.clone());
                tokio::spawn(async move { gate.verify("correct horse".into(), Some(h)).await })
            })
            .collect();
        let mut answers = Vec::new();
        for verification in burst {
            answers.push(verification.await.expect("answered"));
        }
        let run = answers.iter().filter(|a| **a == Ok(true)).count();
        let busy = answers.iter().filter(|a| **a == Err(super::Busy)).count();
        assert_eq!(run + busy, 12, "{answers:?}");
        assert!((1..=3).contains(&run), "one running and two waiting at most at any time: {answers:?}");
        assert!(busy >= 9, "{answers:?}");
        assert_eq!(gate.verify("correct horse".into(), Some(h)).await, Ok(true), "the queue drained");
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
