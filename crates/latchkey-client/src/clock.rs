//! The time the SDK reads: Unix seconds from a [`Clock`], the system's unless the app passes its own (tests pass
//! one they move by hand, so that expiry is tested without waiting).

/// A source of the current time in Unix seconds.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        #[allow(clippy::disallowed_methods)]
        let now = std::time::SystemTime::now();
        now.duration_since(std::time::UNIX_EPOCH).map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)).unwrap_or(0)
    }
}

/// A clock the tests move by hand.
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct ManualClock(std::sync::atomic::AtomicI64);

#[cfg(test)]
impl ManualClock {
    /// A clock reading `now`.
    pub(crate) fn at(now: i64) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self(std::sync::atomic::AtomicI64::new(now)))
    }

    /// Moves the clock `seconds` on.
    pub(crate) fn advance(&self, seconds: i64) {
        self.0.fetch_add(seconds, std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(test)]
impl Clock for ManualClock {
    fn now(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}
