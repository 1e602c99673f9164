//! The outside world the protocol core takes as arguments: the system clock and the operating system's
//! randomness. The server and the binary pass these; tests pass their own.

use latchkey_core::secret::Random;
use latchkey_core::time::{Clock, UnixTime};
use ring::rand::{SecureRandom, SystemRandom};
use std::sync::LazyLock;

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)]
    fn now(&self) -> UnixTime {
        let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        UnixTime(i64::try_from(secs).unwrap_or(i64::MAX))
    }
}

/// The operating system's randomness: the one source of random bytes in the server and the binary.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsRandom;

/// *ring*'s handle on the operating system's generator, for [`Random::ring`] to lend.
static SYSTEM: LazyLock<SystemRandom> = LazyLock::new(SystemRandom::new);

impl Random for OsRandom {
    fn fill(&self, buf: &mut [u8]) {
        // The operating system's generator does not fail once the process runs.
        if SystemRandom::new().fill(buf).is_err() {
            panic!("the operating system's random number generator failed");
        }
    }

    fn ring(&self) -> &dyn SecureRandom {
        &*SYSTEM
    }
}
