//! The introspection answers kept in memory, by the SHA-256 of their token, each until its own time, and
//! bounded: when full, the expired answers go first, then those that would expire soonest.

use super::Introspection;
use std::collections::{BTreeSet, HashMap};

/// What an answer is kept under: the SHA-256 of the token, never the token.
pub(crate) type CacheKey = [u8; 32];

/// The key of `token`'s answer.
pub(crate) fn cache_key(token: &str) -> CacheKey {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut key = [0; 32];
    key.copy_from_slice(digest.as_ref());
    key
}

/// One answer and until when it may be served (Unix seconds, exclusive).
struct Entry {
    answer: Introspection,
    until: i64,
}

/// At most `max_entries` answers.
pub(crate) struct IntrospectionCache {
    max_entries: usize,
    entries: HashMap<CacheKey, Entry>,
    /// The same keys, ordered by when their answer stops being served.
    by_until: BTreeSet<(i64, CacheKey)>,
}

impl IntrospectionCache {
    /// An empty cache of at most `max_entries` answers (zero keeps none).
    pub(crate) fn new(max_entries: usize) -> Self {
        Self { max_entries, entries: HashMap::new(), by_until: BTreeSet::new() }
    }

    /// The answer kept under `key`, if its time and the token's `exp` have not passed at `now`; an answer whose
    /// time has passed is dropped.
    pub(crate) fn get(&mut self, key: &CacheKey, now: i64) -> Option<Introspection> {
        let entry = self.entries.get(key)?;
        if now < entry.until && entry.answer.exp.is_none_or(|exp| now < exp) {
            return Some(entry.answer.clone());
        }
        self.remove(key);
        None
    }

    /// Keeps `answer` under `key` until `until`, unless that is not after `now`.
    pub(crate) fn insert(&mut self, key: CacheKey, answer: Introspection, until: i64, now: i64) {
        if self.max_entries == 0 || until <= now {
            return;
        }
        self.remove(&key);
        while let Some(&(first_until, first)) = self.by_until.first() {
            if first_until > now && self.entries.len() < self.max_entries {
                break;
            }
            self.remove(&first);
        }
        self.by_until.insert((until, key));
        self.entries.insert(key, Entry { answer, until });
    }

    /// Drops the answer kept under `key`.
    fn remove(&mut self, key: &CacheKey) {
        if let Some(entry) = self.entries.remove(key) {
            self.by_until.remove(&(entry.until, *key));
        }
    }

    /// The keys held.
    #[cfg(test)]
    pub(crate) fn keys(&self) -> Vec<CacheKey> {
        self.entries.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn active(exp: i64) -> Introspection {
        Introspection { active: true, exp: Some(exp), ..Introspection::default() }
    }

    #[test]
    fn when_full_the_expired_then_the_soonest_to_expire_go_first() {
        let mut cache = IntrospectionCache::new(2);
        let (a, b, c, d) = (cache_key("a"), cache_key("b"), cache_key("c"), cache_key("d"));
        cache.insert(a, active(2000), 1010, 1000);
        cache.insert(b, active(2000), 1050, 1000);
        cache.insert(c, active(2000), 1030, 1000);
        assert!(cache.get(&a, 1001).is_none(), "the soonest to expire went");
        assert!(cache.get(&b, 1001).is_some() && cache.get(&c, 1001).is_some());
        cache.insert(d, active(2000), 1100, 1040);
        assert!(cache.get(&c, 1040).is_none(), "the expired one went");
        assert!(cache.get(&b, 1040).is_some() && cache.get(&d, 1040).is_some());
        assert_eq!(cache.entries.len(), cache.by_until.len());
    }

    #[test]
    fn an_answer_is_served_before_its_time_and_the_tokens_exp_only() {
        let mut cache = IntrospectionCache::new(10);
        let key = cache_key("t");
        cache.insert(key, active(1020), 1060, 1000);
        assert!(cache.get(&key, 1019).is_some());
        assert!(cache.get(&key, 1020).is_none(), "the token expired");
        assert!(cache.entries.is_empty() && cache.by_until.is_empty(), "and was dropped");
        cache.insert(key, active(1020), 1000, 1000);
        assert!(cache.get(&key, 1000).is_none(), "an answer already out of time is not kept");
        let mut none = IntrospectionCache::new(0);
        none.insert(key, active(2000), 1060, 1000);
        assert!(none.get(&key, 1000).is_none(), "a cache of no entries keeps nothing");
    }
}
