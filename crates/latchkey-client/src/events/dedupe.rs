//! The `jti`s already received, so that a SET delivered twice (a push retried after a lost answer, a poll
//! answered before the acknowledgment arrived) is handled once. The set is bounded: the oldest are forgotten
//! first.

use std::collections::{HashSet, VecDeque};

/// The last `capacity` distinct `jti`s seen.
#[derive(Debug)]
pub(crate) struct SeenJtis {
    capacity: usize,
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl SeenJtis {
    /// An empty set remembering at most `capacity` `jti`s (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self { capacity, set: HashSet::new(), order: VecDeque::new() }
    }

    /// Records `jti`; false when it was already there.
    pub(crate) fn insert(&mut self, jti: &str) -> bool {
        if self.set.contains(jti) {
            return false;
        }
        while self.order.len() >= self.capacity {
            if let Some(oldest) = self.order.pop_front() {
                self.set.remove(&oldest);
            }
        }
        self.set.insert(jti.to_owned());
        self.order.push_back(jti.to_owned());
        true
    }

    /// Forgets `jti`, so that its next delivery is handled again.
    pub(crate) fn remove(&mut self, jti: &str) {
        if self.set.remove(jti) {
            self.order.retain(|j| j != jti);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_jtis_are_forgotten_first() {
        let mut seen = SeenJtis::new(2);
        assert!(seen.insert("a") && seen.insert("b"));
        assert!(!seen.insert("a"));
        assert!(seen.insert("c"), "c pushes a out");
        assert!(seen.insert("a"), "a was forgotten");
        assert!(!seen.insert("c"));
        seen.remove("c");
        assert!(seen.insert("c"));
    }
}
