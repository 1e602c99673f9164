//! Codes at their redemption: what the store alone decides when the exchange checked the code's own sealed copy of
//! its record (`latchkey_core::auth_code`) without reading the store.

use super::{code, fixture, grant_for, issue, T0};
use crate::prelude::*;
use crate::{GrantLimits, Redeemed};
use latchkey_core::account::AccountChange;
use latchkey_core::scope::ScopeSet;
use latchkey_core::token::AuthCode;

/// Disabling an account expires its pending codes (a used one stays as it was), so that no redemption spends them.
pub(super) async fn a_disabled_accounts_pending_codes_are_not_redeemed(store: &dyn Store) {
    let (client_id, user_id) = fixture(store).await;
    let used = issue(store, &client_id, &user_id, GrantLimits::default()).await;
    let pending = code(&client_id, &user_id);
    store.insert_code(&pending).await.expect("code");
    assert_eq!(store.change_account(&user_id, &AccountChange::Disable, T0).await.expect("disable"), Some(1));
    let stored = store.code(&pending.code_hash).await.expect("get").expect("kept");
    assert!(stored.expires_at <= T0 && !stored.used, "expired, not used: {stored:?}");
    let grant = grant_for(&pending, T0);
    let redeemed = store.redeem_code(&grant, GrantLimits::default(), T0).await.expect("redeem");
    assert_eq!(redeemed, Redeemed::AlreadyUsed);
    assert!(store.grant(&grant.id).await.expect("get").is_none(), "nothing stored");
    let first = store.code(&used.code_hash).await.expect("get").expect("kept");
    assert!(first.used && first.expires_at > T0, "the used code untouched: {first:?}");
}

/// A redemption spends a code only with the scopes the store holds for it (narrowed since the code was issued:
/// a registered API's scope retired), on the quick path and at a refresh-token limit alike.
pub(super) async fn a_code_is_redeemed_only_with_the_scopes_the_store_holds(store: &dyn Store) {
    let (client_id, user_id) = fixture(store).await;
    for limits in [GrantLimits::default(), GrantLimits { per_client_user: 1, per_user: 1 }] {
        let c = AuthCode { scopes: ScopeSet(0b11), ..code(&client_id, &user_id) };
        store.insert_code(&c).await.expect("code");
        let wider = AuthCode { scopes: ScopeSet(0b111), ..c.clone() };
        let grant = grant_for(&wider, T0);
        let redeemed = store.redeem_code(&grant, limits, T0).await.expect("redeem");
        assert_eq!(redeemed, Redeemed::AlreadyUsed, "{limits:?}");
        assert!(store.grant(&grant.id).await.expect("get").is_none(), "nothing stored ({limits:?})");
        assert!(!store.code(&c.code_hash).await.expect("get").expect("kept").used);
        let grant = grant_for(&c, T0);
        assert_eq!(store.redeem_code(&grant, limits, T0).await.expect("redeem"), Redeemed::Issued, "{limits:?}");
    }
}
