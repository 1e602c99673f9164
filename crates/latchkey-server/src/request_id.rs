//! A request's id: made by the router's one middleware for every request, written in a refusal's log line, its
//! `X-Request-Id` header and, on an error page, the page itself (the middleware renders the page's id in:
//! [`crate::views::with_request_id`]). A request answered as asked costs one atomic increment for it.

use ring::rand::{SecureRandom, SystemRandom};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;

/// A request's id: 16 hexadecimal digits, unique within the process and, from a random start, across instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestId(u64);

impl RequestId {
    /// The next request's id.
    pub fn next() -> Self {
        static START: LazyLock<u64> = LazyLock::new(|| {
            let mut bytes = [0; 8];
            // Without the system's randomness, ids still differ within the process (they start at 0).
            let _ = SystemRandom::new().fill(&mut bytes);
            u64::from_le_bytes(bytes)
        });
        static COUNT: AtomicU64 = AtomicU64::new(0);
        Self(START.wrapping_add(COUNT.fetch_add(1, Ordering::Relaxed)))
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}
