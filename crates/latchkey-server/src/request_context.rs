//! What the router's one middleware knows of the request in flight, for the handlers and the error pages under it:
//! the request id that a refusal's log line and its page both show, and the grant type a token request turned out
//! to be (its latency is timed by grant type). A task-local value, set around the handler's future: nothing is
//! allocated per request, and code outside a request sees none.

use ring::rand::{SecureRandom, SystemRandom};
use std::cell::Cell;
use std::fmt;
use std::future::Future;
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

/// The request in flight.
pub struct InFlight {
    id: RequestId,
    grant: Cell<Option<u8>>,
}

tokio::task_local! {
    static CURRENT: InFlight;
}

/// Runs `handler` as the request `id`; returns its output and the grant type it noted ([`note_grant`]).
pub async fn run<F: Future>(id: RequestId, handler: F) -> (F::Output, Option<u8>) {
    CURRENT
        .scope(InFlight { id, grant: Cell::new(None) }, async move {
            let output = handler.await;
            (output, CURRENT.with(|c| c.grant.get()))
        })
        .await
}

/// The id of the request in flight, if any.
pub fn id() -> Option<RequestId> {
    CURRENT.try_with(|c| c.id).ok()
}

/// Notes the grant type of the token request in flight (an index of `crate::metrics::grant_index`).
pub fn note_grant(index: u8) {
    let _ = CURRENT.try_with(|c| c.grant.set(Some(index)));
}
