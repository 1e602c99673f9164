//! Content owners, service accounts and their keys: channels linked once and only when both exist, identifiers
//! unique, at most ten keys (one at a time under concurrency), disabling and deleting, owner grants.

use super::{another_user, fixture, random_b64, T0};
use crate::prelude::*;
use crate::{ContentOwner, ServiceAccount, ServiceAccountKey, MAX_KEYS};
use latchkey_core::service_account::PublicKey;
use std::sync::Arc;

fn account(project_id: &str) -> ServiceAccount {
    let name = random_b64(6).to_lowercase();
    ServiceAccount {
        id: random_b64(9),
        email: format!("sa-{name}@{project_id}.iam.latchkey.dev"),
        project_id: project_id.into(),
        display_name: "Uploader".into(),
        created_at: T0,
        disabled_at: None,
    }
}

fn key_of(account_id: &str) -> ServiceAccountKey {
    ServiceAccountKey {
        id: random_b64(12),
        account_id: account_id.into(),
        public_key: PublicKey::Rs256 { n: vec![9; 256], e: vec![1, 0, 1] },
        created_at: T0,
        disabled_at: None,
    }
}

async fn project_of(store: &dyn Store) -> String {
    let (client_id, _) = fixture(store).await;
    store.client(&client_id).await.expect("client").expect("exists").project_id
}

/// An owner manages the channels linked to it; a service account may act for the owners that granted it.
pub(super) async fn content_owners_manage_linked_channels_and_grant_service_accounts(store: &dyn Store) {
    let owner = ContentOwner { id: random_b64(9), name: "Label".into(), created_at: T0 };
    store.create_content_owner(&owner).await.expect("owner");
    assert_eq!(store.content_owner(&owner.id).await.expect("get"), Some(owner.clone()));
    let (a, b) = (another_user(store).await, another_user(store).await);
    let channel_of = |u: String| async move { store.channel_of(&u).await.expect("channel").expect("exists").id };
    let (ca, cb) = (channel_of(a).await, channel_of(b).await);
    assert!(store.link_channel(&owner.id, &ca, T0).await.expect("link"));
    assert!(store.link_channel(&owner.id, &cb, T0).await.expect("link"));
    assert!(!store.link_channel(&owner.id, &ca, T0).await.expect("again"), "linked already");
    assert!(!store.link_channel(&owner.id, "UCnope", T0).await.expect("no channel"));
    assert!(!store.link_channel("no-owner", &ca, T0).await.expect("no owner"));
    let mut expected = vec![ca.clone(), cb.clone()];
    expected.sort();
    let ids = |cs: Vec<crate::Channel>| cs.into_iter().map(|c| c.id).collect::<Vec<_>>();
    assert_eq!(ids(store.owner_channels(&owner.id).await.expect("channels")), expected);
    assert!(store.unlink_channel(&owner.id, &cb).await.expect("unlink"));
    assert_eq!(ids(store.owner_channels(&owner.id).await.expect("channels")), vec![ca]);

    let project = project_of(store).await;
    let sa = account(&project);
    assert!(store.create_service_account(&sa).await.expect("account"));
    assert!(!store.create_service_account(&ServiceAccount { id: random_b64(9), ..sa.clone() }).await.expect("dup"));
    assert!(!store.may_act_for(&sa.id, &owner.id).await.expect("may"), "not before the owner grants it");
    assert!(store.grant_content_owner(&owner.id, &sa.id, T0).await.expect("grant"));
    assert!(store.may_act_for(&sa.id, &owner.id).await.expect("may"));
    assert!(!store.grant_content_owner("no-owner", &sa.id, T0).await.expect("grant"));
    assert!(!store.may_act_for(&sa.id, "no-owner").await.expect("may"));
    let emails = |v: Vec<ServiceAccount>| v.into_iter().map(|a| a.email).collect::<Vec<_>>();
    assert_eq!(emails(store.content_owner_accounts(&owner.id).await.expect("accounts")), vec![sa.email.clone()]);
    assert!(store.revoke_content_owner(&owner.id, &sa.id).await.expect("revoke"));
    assert!(!store.revoke_content_owner(&owner.id, &sa.id).await.expect("again"), "revoked already");
    assert!(!store.may_act_for(&sa.id, &owner.id).await.expect("may"), "not after the owner revoked it");

    // Administrators decide the grants: added once, only when both exist.
    let admin = another_user(store).await;
    assert!(!store.is_content_owner_admin(&owner.id, &admin).await.expect("admin"));
    assert!(store.add_content_owner_admin(&owner.id, &admin, T0).await.expect("add"));
    assert!(!store.add_content_owner_admin(&owner.id, &admin, T0).await.expect("again"));
    assert!(!store.add_content_owner_admin(&owner.id, "no-user", T0).await.expect("no user"));
    assert!(store.is_content_owner_admin(&owner.id, &admin).await.expect("admin"));
    let email = store.user(&admin).await.expect("user").expect("exists").email;
    assert_eq!(store.content_owner_admins(&owner.id).await.expect("admins"), vec![email]);
}

/// An account is found by identifier or id, disabled and enabled, deleted with its keys; a key is found by id,
/// disabled, deleted; an eleventh key is refused.
pub(super) async fn service_accounts_hold_at_most_ten_public_keys(store: &dyn Store) {
    let project = project_of(store).await;
    let sa = account(&project);
    store.create_service_account(&sa).await.expect("account");
    assert_eq!(store.service_account(&sa.email).await.expect("get"), Some(sa.clone()));
    assert_eq!(store.service_account(&sa.id).await.expect("get"), Some(sa.clone()));
    assert_eq!(store.service_accounts(&project).await.expect("list"), vec![sa.clone()]);
    assert!(store.set_service_account_disabled(&sa.id, Some(T0.plus(1))).await.expect("disable"));
    assert_eq!(store.service_account(&sa.id).await.expect("get").expect("sa").disabled_at, Some(T0.plus(1)));
    assert!(store.set_service_account_disabled(&sa.id, None).await.expect("enable"));

    let first = key_of(&sa.id);
    assert!(store.add_service_account_key(&first).await.expect("key"));
    assert_eq!(store.service_account_key(&first.id).await.expect("get"), Some(first.clone()));
    for _ in 1..MAX_KEYS {
        assert!(store.add_service_account_key(&key_of(&sa.id)).await.expect("key"));
    }
    assert!(!store.add_service_account_key(&key_of(&sa.id)).await.expect("eleventh"), "at most ten");
    assert!(store.set_key_disabled(&first.id, Some(T0.plus(2))).await.expect("disable"));
    assert_eq!(store.service_account_key(&first.id).await.expect("get").expect("k").disabled_at, Some(T0.plus(2)));
    assert!(store.delete_service_account_key(&first.id).await.expect("delete"));
    assert!(store.add_service_account_key(&key_of(&sa.id)).await.expect("key"), "room again after a deletion");
    assert!(store.delete_service_account(&sa.id).await.expect("delete"));
    assert!(store.service_account_keys(&sa.id).await.expect("keys").is_empty(), "its keys went with it");
    assert_eq!(store.service_account(&sa.email).await.expect("get"), None);
}

/// Keys added at once never take an account past ten.
pub(super) async fn concurrent_key_additions_stop_at_ten(store: Arc<dyn crate::seed::SeedStore>) {
    let project = project_of(&*store).await;
    let sa = account(&project);
    store.create_service_account(&sa).await.expect("account");
    let adds: Vec<_> = (0..16)
        .map(|_| {
            let (store, key) = (store.clone(), key_of(&sa.id));
            tokio::spawn(async move { store.add_service_account_key(&key).await.expect("add") })
        })
        .collect();
    let mut added = 0;
    for a in adds {
        added += i64::from(a.await.expect("join"));
    }
    assert_eq!(added, MAX_KEYS);
    assert_eq!(store.service_account_keys(&sa.id).await.expect("keys").len() as i64, MAX_KEYS);
}
