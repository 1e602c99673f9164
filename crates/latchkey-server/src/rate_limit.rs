//! Rate limits on the token and revocation endpoints: per client address and per client id (`[rate_limits]`).
//!
//! Each limit is the generic cell rate algorithm (GCRA, a token bucket kept as one timestamp: the "theoretical
//! arrival time" of the next request) over a fixed table of atomic slots. A key (an address, a client id) is
//! hashed (foldhash, with a seed chosen at random when the server starts) to one slot in each of two rows, and is judged
//! by the lower of its two slots (a count-min sketch): keys that share a slot only ever make each other look
//! busier, so a collision can refuse too early but never admits too much (requests of one key arriving in the
//! same instant aside: the check and the update are two steps), and an innocent key is held back only if both its
//! slots are shared with busy keys. An admitted request moves each slot only up to the key's own new arrival time
//! (the conservative update), so no slot runs further ahead than one burst from now, however many keys share it.
//! No lock, no allocation, no growth with the number of keys: two atomic operations per limit and request. Each
//! instance counts alone; behind a load balancer of N instances a key gets up to N times its limit.

use crate::config::RateLimitsConfig;
use foldhash::fast::RandomState;
use std::hash::{BuildHasher, Hash};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Slots per row (a power of two): 2 rows of 8 bytes each, 128 KiB per limit.
const SLOTS: usize = 8192;
const NANOS_PER_MINUTE: u64 = 60_000_000_000;
const NANOS_PER_HOUR: u64 = 60 * NANOS_PER_MINUTE;

/// The limits of the token and revocation endpoints.
pub struct RateLimits {
    per_address: Option<Limit>,
    per_client: Option<Limit>,
    per_api_key: Option<Limit>,
    registrations_per_address: Option<Limit>,
}

/// A request refused by a limit: when it may be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// Whole seconds until a request would be admitted (at least 1), for `Retry-After`.
    pub retry_after_secs: u64,
    /// Which limit refused.
    pub by: Subject,
}

/// What a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// Requests from one client address.
    Address,
    /// Requests naming one client id.
    Client,
    /// Requests with one console API key.
    ApiKey,
}

impl RateLimits {
    /// The limits a configuration sets (a rate of 0 is no limit).
    pub fn new(config: &RateLimitsConfig) -> Self {
        Self {
            per_address: Limit::per_minute(config.token_per_address),
            per_client: Limit::per_minute(config.token_per_client),
            per_api_key: Limit::per_minute(config.api_per_key),
            registrations_per_address: Limit::per_period(config.register_per_address, NANOS_PER_HOUR),
        }
    }

    /// Admits one more request with a console API key of the developer `user_id` (their keys share one limit), or
    /// refuses it.
    pub fn admit_api_key(&self, user_id: &str) -> Result<(), Refused> {
        let Some(limit) = &self.per_api_key else { return Ok(()) };
        limit.admit(("api-key", user_id)).map_err(|wait| refused(wait, Subject::ApiKey))
    }

    /// Admits one more request from `addr`, or refuses it.
    pub fn admit_address(&self, addr: IpAddr) -> Result<(), Refused> {
        let Some(limit) = &self.per_address else { return Ok(()) };
        limit.admit(address_key(addr)).map_err(|wait| refused(wait, Subject::Address))
    }

    /// Admits one more dynamic client registration from `addr` (an hourly limit), or refuses it.
    pub fn admit_registration(&self, addr: IpAddr) -> Result<(), Refused> {
        let Some(limit) = &self.registrations_per_address else { return Ok(()) };
        limit.admit(address_key(addr)).map_err(|wait| refused(wait, Subject::Address))
    }

    /// Admits one more request naming `client_id`, or refuses it.
    pub fn admit_client(&self, client_id: &str) -> Result<(), Refused> {
        let Some(limit) = &self.per_client else { return Ok(()) };
        limit.admit(client_id).map_err(|wait| refused(wait, Subject::Client))
    }
}

fn refused(wait: Duration, by: Subject) -> Refused {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    Refused { retry_after_secs: secs.max(1), by }
}

/// What an address counts as: an IPv4 address alone (also written IPv4-mapped); an IPv6 address by its /64, the
/// block one host or one home is given.
fn address_key(addr: IpAddr) -> u128 {
    match addr {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => u128::from(u32::from(v4)),
            None => u128::from(v6) & !u128::from(u64::MAX),
        },
    }
}

/// An address as the limits count it: an IPv4 address (also written IPv4-mapped), or an IPv6 address's /64.
pub fn address_group_ip(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(address_key(addr))),
        },
        IpAddr::V4(_) => addr,
    }
}

/// [`address_group_ip`] written out: an IPv6 group with its `/64`.
pub fn address_group(addr: IpAddr) -> String {
    match address_group_ip(addr) {
        IpAddr::V6(v6) => format!("{v6}/64"),
        v4 => v4.to_string(),
    }
}

/// One limit: a sustained rate with a burst of one period's worth (a minute, or an hour).
struct Limit {
    /// Nanoseconds between two requests at the sustained rate.
    interval: u64,
    /// How far ahead of now a key's theoretical arrival time may run: the burst.
    burst: u64,
    /// Two rows of theoretical arrival times, in nanoseconds since `epoch`.
    slots: Box<[AtomicU64]>,
    epoch: Instant,
    hasher: RandomState,
}

impl Limit {
    fn per_minute(rate: u32) -> Option<Self> {
        Self::per_period(rate, NANOS_PER_MINUTE)
    }

    fn per_period(rate: u32, period: u64) -> Option<Self> {
        let interval = period / u64::from(rate).max(1);
        (rate > 0).then(|| Self {
            interval,
            burst: period,
            slots: (0..2 * SLOTS).map(|_| AtomicU64::new(0)).collect(),
            epoch: Instant::now(),
            hasher: RandomState::default(),
        })
    }

    fn admit(&self, key: impl Hash) -> Result<(), Duration> {
        let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.admit_at(key, now)
    }

    /// GCRA: the request is admitted when the key's next arrival time, one interval after the later of its
    /// arrival time and now, lies no further ahead than the burst; then both slots move up to that time.
    fn admit_at(&self, key: impl Hash, now: u64) -> Result<(), Duration> {
        let hash = self.hasher.hash_one(key);
        let mask = (SLOTS - 1) as u64;
        let rows = [&self.slots[(hash & mask) as usize], &self.slots[SLOTS + ((hash >> 32) & mask) as usize]];
        let arrival = rows[0].load(Ordering::Relaxed).min(rows[1].load(Ordering::Relaxed)).max(now);
        let next = arrival.saturating_add(self.interval);
        let ahead = next - now;
        if ahead > self.burst {
            return Err(Duration::from_nanos(ahead - self.burst));
        }
        for slot in rows {
            slot.fetch_max(next, Ordering::Relaxed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    #[test]
    fn a_key_gets_its_burst_then_the_sustained_rate_and_is_told_when_to_come_back() {
        let limit = Limit::per_minute(60).unwrap();
        for i in 0..60 {
            assert_eq!(limit.admit_at("app", 0), Ok(()), "request {i} of the burst");
        }
        assert_eq!(limit.admit_at("app", 0), Err(Duration::from_secs(1)));
        assert_eq!(limit.admit_at("app", SECOND / 2), Err(Duration::from_millis(500)));
        assert_eq!(limit.admit_at("app", SECOND), Ok(()), "one a second after the burst");
        assert!(limit.admit_at("app", SECOND).is_err());
        assert_eq!(limit.admit_at("other", SECOND), Ok(()), "another key has its own budget");
        for i in 0..60 {
            assert_eq!(limit.admit_at("app", 120 * SECOND), Ok(()), "a quiet minute restores the burst ({i})");
        }
    }

    #[test]
    fn refusals_round_up_to_whole_seconds_and_name_their_limit() {
        let config =
            RateLimitsConfig { token_per_address: 1, token_per_client: 1, api_per_key: 1, register_per_address: 2 };
        let limits = RateLimits::new(&config);
        let addr: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(limits.admit_address(addr), Ok(()));
        let refused = limits.admit_address(addr).unwrap_err();
        assert_eq!(refused.by, Subject::Address);
        assert!((59..=60).contains(&refused.retry_after_secs), "{refused:?}");
        assert_eq!(limits.admit_client("app"), Ok(()));
        assert_eq!(limits.admit_client("app").unwrap_err().by, Subject::Client);
        assert_eq!(limits.admit_api_key("k1"), Ok(()));
        assert_eq!(limits.admit_api_key("k1").unwrap_err().by, Subject::ApiKey);
        assert_eq!(limits.admit_api_key("k2"), Ok(()), "each key counts alone");
        assert!(limits.admit_registration(addr).is_ok() && limits.admit_registration(addr).is_ok(), "a burst of 2");
        let refused = limits.admit_registration(addr).unwrap_err();
        assert!((1799..=1800).contains(&refused.retry_after_secs), "then one each half hour: {refused:?}");
        let off = RateLimits::new(&RateLimitsConfig::OFF);
        assert!((0..1000).all(|_| off.admit_address(addr).is_ok() && off.admit_client("app").is_ok()));
    }

    #[test]
    fn an_ipv6_host_counts_by_its_64_and_a_mapped_ipv4_address_as_itself() {
        let key = |s: &str| address_key(s.parse().unwrap());
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:192.0.2.1"), key("192.0.2.1"));
        assert_ne!(key("192.0.2.1"), key("192.0.2.2"));
        let group = |s: &str| address_group(s.parse().unwrap());
        assert_eq!(group("2001:db8:1:2:ffff::9"), "2001:db8:1:2::/64");
        assert_eq!(group("::ffff:192.0.2.1"), "192.0.2.1");
        assert_eq!(group("192.0.2.1"), "192.0.2.1");
    }

    #[test]
    fn many_busy_keys_seldom_hold_back_a_quiet_one() {
        let limit = Limit::per_minute(10).unwrap();
        for busy in 0..500u32 {
            while limit.admit_at(busy, 0).is_ok() {}
        }
        let held = (10_000..20_000u32).filter(|quiet| limit.admit_at(quiet, 0).is_err()).count();
        // Each row is about 6% busy: both of a quiet key's slots are busy for about 0.4% of keys.
        assert!(held < 150, "{held} of 10000 quiet keys held back");
    }

    #[test]
    fn a_slot_shared_by_many_keys_never_runs_more_than_a_burst_ahead() {
        let limit = Limit::per_minute(60).unwrap();
        for key in 0..200_000u32 {
            let _ = limit.admit_at(key, 0);
        }
        let furthest = limit.slots.iter().map(|s| s.load(Ordering::Relaxed)).max().unwrap();
        assert!(furthest <= NANOS_PER_MINUTE, "{furthest}");
        assert_eq!(limit.admit_at("late", 2 * NANOS_PER_MINUTE), Ok(()), "a minute later every key is admitted");
    }
}
