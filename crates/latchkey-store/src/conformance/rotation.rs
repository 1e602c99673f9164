//! Refresh-token rotation: a token retired once, its reuse revoking the grant with its record and event, the
//! project's switch and DPoP deciding which grants rotate, and retired tokens forgotten after 30 days.

use super::{code, fixture, grant_for, issue, T0};
use crate::prelude::*;
use crate::{GrantLimits, ProjectSetting, Redeemed, RETIRED_KEPT};
use latchkey_core::account::EventKind;
use latchkey_core::secret;
use std::sync::Arc;

/// A rotation happens once per token, and only to a live grant; the retired token is known as such; its reuse
/// revokes the grant once, with an audit record and a token-revoked event; a project's switch decides which
/// grants rotate, never a DPoP-bound one; retired tokens are purged after 30 days.
pub(super) async fn a_rotation_retires_the_token_once_and_its_reuse_revokes_the_grant(store: &dyn Store) {
    let (client_id, user_id) = fixture(store).await;
    let project = store.client(&client_id).await.expect("client").expect("exists").project_id;
    let g = issue(store, &client_id, &user_id, GrantLimits::default()).await;
    let c = code(&client_id, &user_id);
    store.insert_code(&c).await.expect("code");
    let bound = grant_for(&c, T0);
    let bound = latchkey_core::token::Grant { dpop_jkt: Some("jkt".into()), ..bound };
    assert_eq!(store.redeem_code(&bound, GrantLimits::default(), T0).await.expect("redeem"), Redeemed::Issued);
    let cid = client_id.as_str();
    let rotates = |id| async move {
        let client = store.client(cid).await.expect("get").expect("client");
        store.grant(&id).await.expect("get").expect("grant").rotates(&client)
    };
    assert!(!rotates(g.id).await, "off by default");
    assert!(store.set_project_setting(&project, ProjectSetting::RotateRefreshTokens, true).await.expect("switch"));
    assert!(store.project(&project).await.expect("get").expect("p").rotate_refresh_tokens);
    assert!(rotates(g.id).await, "the project's switch");
    assert!(!rotates(bound.id).await, "a DPoP-bound token never rotates");

    let (old, new) = (g.refresh_hash.clone(), secret::hash("the successor"));
    assert_eq!(store.retired_refresh(&old).await.expect("retired"), None);
    assert!(store.rotate_refresh(&g.id, &old, &new, T0.plus(1)).await.expect("rotate"));
    assert_eq!(store.grant(&g.id).await.expect("get").expect("g").grant.refresh_hash, new);
    assert!(!store.rotate_refresh(&g.id, &old, &secret::hash("a second"), T0.plus(2)).await.expect("again"));
    assert_eq!(store.grant(&g.id).await.expect("get").expect("g").grant.refresh_hash, new, "the first one's stays");
    assert_eq!(store.retired_refresh(&old).await.expect("retired"), Some(T0.plus(1)));
    assert_eq!(store.retired_refresh(&new).await.expect("retired"), None, "the current token is not retired");

    assert!(store.revoke_reused(&g.id, T0.plus(3)).await.expect("revoke"));
    assert!(!store.grant(&g.id).await.expect("get").expect("g").is_usable(T0.plus(3)));
    assert!(!store.revoke_reused(&g.id, T0.plus(4)).await.expect("again"), "revoked once");
    let events = store.account_events(&user_id).await.expect("events");
    let revoked: Vec<_> = events.iter().map(|e| (e.kind, e.client_id.as_deref())).collect();
    assert_eq!(revoked, [(EventKind::TokensRevoked, Some(client_id.as_str()))], "one event, of the app");
    let audit = store.audit_records(&user_id).await.expect("audit");
    assert_eq!(audit.iter().filter(|r| r.action == "refresh_token_reused").count(), 1);
    let newer = secret::hash("after the revocation");
    assert!(!store.rotate_refresh(&g.id, &new, &newer, T0.plus(5)).await.expect("rotate"), "a revoked grant: none");

    store.purge_expired(T0.plus(1 + RETIRED_KEPT - 1)).await.expect("purge");
    assert!(store.retired_refresh(&old).await.expect("retired").is_some(), "kept 30 days");
    store.purge_expired(T0.plus(1 + RETIRED_KEPT)).await.expect("purge");
    assert_eq!(store.retired_refresh(&old).await.expect("retired"), None, "then forgotten");
}

/// Fifty rotations of one token at once: exactly one happens, and the grant holds its new token.
pub(super) async fn concurrent_rotations_of_one_token_rotate_it_once(store: Arc<dyn crate::seed::SeedStore>) {
    let (client_id, user_id) = fixture(&*store).await;
    let g = issue(&*store, &client_id, &user_id, GrantLimits::default()).await;
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let (store, id, old) = (store.clone(), g.id, g.refresh_hash.clone());
            let new = secret::hash(&format!("successor {i}"));
            tokio::spawn(async move { (store.rotate_refresh(&id, &old, &new, T0.plus(1)).await.expect("rotate"), new) })
        })
        .collect();
    let mut winners = Vec::new();
    for t in tasks {
        let (rotated, new) = t.await.expect("join");
        if rotated {
            winners.push(new);
        }
    }
    assert_eq!(winners.len(), 1, "one rotation of fifty");
    assert_eq!(store.grant(&g.id).await.expect("get").expect("g").grant.refresh_hash, winners[0]);
}
