//! Sign-in throttling and the single-use values that a replay may present under another expiry.

use super::{random_b64, T0};
use crate::prelude::*;
use crate::{LoginCount, LoginWindows};
use latchkey_core::time::UnixTime;
use std::sync::Arc;

const WINDOWS: LoginWindows = LoginWindows { base: 900, longest: 86_400 };

/// One attempt under `key` (limit 5); its count.
async fn attempt(store: &dyn Store, key: &str, at: UnixTime) -> u32 {
    attempt_until(store, key, at).await.count
}

async fn attempt_until(store: &dyn Store, key: &str, at: UnixTime) -> LoginCount {
    let counted = store.record_login_attempts(&[(key, 5)], at, WINDOWS).await.expect("counted");
    assert_eq!(counted.len(), 1);
    counted[0]
}

pub(super) async fn login_failures_count_in_a_window(store: &dyn Store) {
    let key = format!("k-{}", random_b64(6));
    assert_eq!(attempt(store, &key, T0).await, 1);
    assert_eq!(attempt(store, &key, T0.plus(10)).await, 2);
    assert_eq!(store.login_failures(&key, T0.plus(20)).await.expect("n"), 2);
    assert_eq!(store.login_failures(&key, T0.plus(901)).await.expect("n"), 0);
    assert_eq!(attempt(store, &key, T0.plus(901)).await, 1, "a new window");
    store.clear_login_failures(&key).await.expect("clear");
    assert_eq!(store.login_failures(&key, T0.plus(902)).await.expect("n"), 0);
}

pub(super) async fn a_window_that_reached_its_limit_is_followed_by_a_longer_one(store: &dyn Store) {
    let key = format!("k-{}", random_b64(6));
    let other = format!("k-{}", random_b64(6));
    // Two keys counted in one write, each with its own limit.
    let both = store.record_login_attempts(&[(&key, 5), (&other, 100)], T0, WINDOWS).await.expect("counted");
    assert_eq!(both, vec![LoginCount { count: 1, until: T0.plus(900) }; 2]);
    for n in 2..=7 {
        assert_eq!(attempt_until(store, &key, T0.plus(n)).await, LoginCount { count: n as u32, until: T0.plus(900) });
    }
    // The window reached its limit: the next lasts 1,800 s, then 3,600 s.
    assert_eq!(attempt_until(store, &key, T0.plus(900)).await, LoginCount { count: 1, until: T0.plus(2_700) });
    for n in 1..5 {
        attempt(store, &key, T0.plus(900 + n)).await;
    }
    assert_eq!(attempt_until(store, &key, T0.plus(2_700)).await, LoginCount { count: 1, until: T0.plus(6_300) });
    // A window under its limit is followed by the base one.
    assert_eq!(attempt_until(store, &key, T0.plus(6_300)).await, LoginCount { count: 1, until: T0.plus(7_200) });
    // An attempt taken back no longer counts, and a count never goes below zero.
    store.forgive_login_attempts(&[&key, &key]).await.expect("forgiven");
    assert_eq!(store.login_failures(&key, T0.plus(6_301)).await.expect("n"), 0);
    assert_eq!(attempt(store, &key, T0.plus(6_302)).await, 1);
    // A key left alone for a window after its window ended starts again from the base.
    let quiet = format!("k-{}", random_b64(6));
    for n in 0..5 {
        attempt(store, &quiet, T0.plus(n)).await;
    }
    assert_eq!(attempt_until(store, &quiet, T0.plus(1_800)).await, LoginCount { count: 1, until: T0.plus(2_700) });
    // The longest window is the cap.
    let capped = LoginWindows { base: 900, longest: 1_000 };
    let long = format!("k-{}", random_b64(6));
    for n in 0..5 {
        store.record_login_attempts(&[(&long, 5)], T0.plus(n), capped).await.expect("counted");
    }
    let next = store.record_login_attempts(&[(&long, 5)], T0.plus(900), capped).await.expect("counted");
    assert_eq!(next[0], LoginCount { count: 1, until: T0.plus(1_900) });
}

pub(super) async fn concurrent_attempts_each_take_their_own_number(store: Arc<dyn crate::seed::SeedStore>) {
    let key = format!("k-{}", random_b64(6));
    let tasks: Vec<_> = (0..40)
        .map(|_| {
            let (store, key) = (Arc::clone(&store), key.clone());
            tokio::spawn(async move { attempt(&*store, &key, T0).await })
        })
        .collect();
    let mut numbers = Vec::new();
    for t in tasks {
        numbers.push(t.await.expect("task"));
    }
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=40).collect::<Vec<u32>>(), "no two attempts read the same count");
}

pub(super) async fn a_jti_is_single_use_whatever_expiry_it_comes_with(store: &dyn Store) {
    let key = latchkey_core::dpop::untimed_key(&format!("jti:{}", random_b64(9)));
    assert_eq!(store.record_once(&[(key.clone(), T0.plus(60))], T0).await.expect("first"), None);
    // The same value with a later expiry (a proof with another iat) is a replay while the first lives.
    assert_eq!(store.record_once(&[(key.clone(), T0.plus(120))], T0.plus(30)).await.expect("again"), Some(0));
    store.purge_expired(T0.plus(59)).await.expect("purge");
    assert_eq!(store.record_once(&[(key.clone(), T0.plus(120))], T0.plus(59)).await.expect("live"), Some(0));
    // Once the first expiry passed, the value is purged and may be recorded again.
    assert!(store.purge_expired(T0.plus(61)).await.expect("purge") >= 1);
    assert_eq!(store.record_once(&[(key, T0.plus(130))], T0.plus(61)).await.expect("after"), None);
}
