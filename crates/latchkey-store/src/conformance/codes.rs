//! Codes at their redemption: what the store alone decides when the exchange checked the code's own sealed copy of
//! its record (`latchkey_core::auth_code`) without reading the store: its user enabled, its scopes as stored.

use super::{code, fixture, grant_for, issue, T0};
use crate::prelude::*;
use crate::{GrantLimits, Redeemed};
use latchkey_core::account::AccountChange;
use latchkey_core::scope::ScopeSet;
use latchkey_core::token::AuthCode;

/// No redemption spends a code of a disabled account, pending before it was disabled or stored after (a consent
/// that raced the disabling), on the quick path and at a refresh-token limit alike; enabled again, it may.
pub(super) async fn a_disabled_accounts_codes_are_not_redeemed(store: &dyn Store) {
    let (client_id, user_id) = fixture(store).await;
    issue(store, &client_id, &user_id, GrantLimits::default()).await;
    let before = code(&client_id, &user_id);
    store.insert_code(&before).await.expect("code");
    assert_eq!(store.change_account(&user_id, &AccountChange::Disable, T0).await.expect("disable"), Some(1));
    let after = code(&client_id, &user_id);
    store.insert_code(&after).await.expect("code");
    for limits in [GrantLimits::default(), GrantLimits { per_client_user: 1, per_user: 1 }] {
        for c in [&before, &after] {
            let grant = grant_for(c, T0);
            let redeemed = store.redeem_code(&grant, limits, T0).await.expect("redeem");
            assert_eq!(redeemed, Redeemed::AlreadyUsed, "{limits:?}");
            assert!(store.grant(&grant.id).await.expect("get").is_none(), "nothing stored ({limits:?})");
            assert!(!store.code(&c.code_hash).await.expect("get").expect("kept").used);
        }
    }
    assert_eq!(store.change_account(&user_id, &AccountChange::Enable, T0).await.expect("enable"), Some(1));
    let grant = grant_for(&after, T0);
    assert_eq!(store.redeem_code(&grant, GrantLimits::default(), T0).await.expect("redeem"), Redeemed::Issued);
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
