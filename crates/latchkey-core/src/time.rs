//! Time as the core sees it: seconds since the Unix epoch, always passed in.

/// Seconds since 1970-01-01T00:00:00Z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixTime(pub i64);

impl UnixTime {
    /// This instant plus `secs` seconds.
    pub const fn plus(self, secs: i64) -> Self {
        Self(self.0 + secs)
    }

    /// Seconds from `self` until `later`, or 0 when `later` has passed.
    pub fn until(self, later: UnixTime) -> u64 {
        u64::try_from(later.0 - self.0).unwrap_or(0)
    }
}

/// A source of the current time; the only one that reads the system clock is `latchkey_admin::clock`.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> UnixTime;
}
