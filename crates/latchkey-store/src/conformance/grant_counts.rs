//! The count of unrevoked grants behind the refresh-token limits (`grant_counts`): an upper bound of the live
//! grants, made exact whenever it sends an issuance to the limits' enforcement. Each backend's own test reads the
//! counts with its own SQL and runs this one scenario.

use super::{fixture, issue};
use crate::prelude::*;
use crate::GrantLimits;
use latchkey_core::account::AccountChange;
use latchkey_core::time::UnixTime;
use std::future::Future;

/// Issues and revokes grants under a limit of 3 per client and user, checking after each step `counted()`: the sum
/// of the stored counts and the number of unrevoked grants.
pub async fn grant_counts_bound_the_live_grants<F, Fut>(store: &dyn Store, counted: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = (i64, i64)>,
{
    let (client_id, user_id) = fixture(store).await;
    let limits = GrantLimits { per_client_user: 3, per_user: 100 };
    let mut grants = Vec::new();
    for _ in 0..5 {
        grants.push(issue(store, &client_id, &user_id, limits).await);
    }
    assert_eq!(counted().await, (3, 3), "the limit revoked the two oldest, and the count was made exact");
    store.revoke_grant(&grants[4].id, UnixTime(1)).await.expect("revoke");
    store.revoke_grants_of_code(&grants[3].code_hash, UnixTime(1)).await.expect("revoke");
    assert_eq!(counted().await, (3, 1), "a revocation leaves the count an upper bound");
    grants.push(issue(store, &client_id, &user_id, limits).await);
    assert_eq!(counted().await, (2, 2), "over the limit by the count alone: nothing revoked, the exact count written");
    grants.push(issue(store, &client_id, &user_id, limits).await);
    assert_eq!(counted().await, (3, 3), "under the limit, issuance only raises it");
    let oldest = &grants[2].id;
    let revoked = store.grant(oldest).await.expect("get").expect("kept").grant.revoked_at;
    assert_eq!(revoked, None, "the oldest live grant stays");
    issue(store, &client_id, &user_id, limits).await;
    assert_eq!(counted().await, (3, 3), "over the limit, the oldest goes and the count is exact");
    assert!(store.grant(oldest).await.expect("get").expect("kept").grant.revoked_at.is_some());
    store.change_account(&user_id, &AccountChange::Delete, UnixTime(1)).await.expect("delete");
    assert_eq!(counted().await, (0, 0), "a deleted user's counts go with their grants");
}
