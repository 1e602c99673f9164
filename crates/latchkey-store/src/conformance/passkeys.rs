//! Passkeys: added and removed with their events, found by credential id, noted when used; ceremonies taken once,
//! before they expire.

use super::{another_user, random_b64, T0};
use crate::prelude::*;
use crate::{Ceremony, Session};
use latchkey_core::account::{AccountChange, EventKind};
use latchkey_core::passkey::PasskeyRecord;

fn passkey(user_id: &str, name: &str) -> PasskeyRecord {
    PasskeyRecord {
        credential_id: random_b64(16),
        user_id: user_id.into(),
        name: name.into(),
        credential: format!("{{\"cred\":\"{name}\"}}"),
        created_at: T0,
        last_used_at: None,
    }
}

/// A passkey added is the account's alone and found by its credential id; adding its credential id again changes
/// nothing; a use updates its credential and last use; removing it takes only the owner's, ends the account's
/// other sessions, and each change that happened has its event; deleting the account takes its passkeys.
pub(super) async fn passkeys_are_added_used_and_removed_with_their_events(store: &dyn Store) {
    let (alice, bob) = (another_user(store).await, another_user(store).await);
    let laptop = passkey(&alice, "Laptop");
    let added = AccountChange::PasskeyAdded { passkey: laptop.clone() };
    assert_eq!(store.change_account(&alice, &added, T0).await.expect("add"), Some(1));
    let phone = PasskeyRecord { created_at: T0.plus(1), ..passkey(&alice, "Phone") };
    store
        .change_account(&alice, &AccountChange::PasskeyAdded { passkey: phone.clone() }, T0.plus(1))
        .await
        .expect("add");
    let stolen = AccountChange::PasskeyAdded { passkey: PasskeyRecord { user_id: bob.clone(), ..laptop.clone() } };
    assert_eq!(store.change_account(&bob, &stolen, T0).await.expect("add again"), Some(0), "an id already held");
    assert_eq!(store.passkey(&laptop.credential_id).await.expect("find"), Some(laptop.clone()));
    let names: Vec<String> = store.passkeys_of(&alice).await.expect("list").into_iter().map(|k| k.name).collect();
    assert_eq!(names, ["Laptop", "Phone"]);
    assert!(store.passkeys_of(&bob).await.expect("list").is_empty());

    assert!(store.passkey_used(&laptop.credential_id, "{\"counter\":2}", T0.plus(60)).await.expect("use"));
    let used = store.passkey(&laptop.credential_id).await.expect("find").expect("there");
    assert_eq!((used.credential.as_str(), used.last_used_at), ("{\"counter\":2}", Some(T0.plus(60))));
    assert!(!store.passkey_used("no-such-credential", "{}", T0).await.expect("use"), "an unknown passkey");

    for tag in [1, 2] {
        let s = Session {
            token_hash: vec![tag; 32],
            user_id: alice.clone(),
            created_at: T0,
            expires_at: T0.plus(3600),
            method: Default::default(),
        };
        store.create_session(&s).await.expect("session");
    }
    let keep = Some(vec![1; 32]);
    let by_bob = AccountChange::PasskeyRemoved { credential_id: laptop.credential_id.clone(), keep: None };
    assert_eq!(store.change_account(&bob, &by_bob, T0).await.expect("remove"), Some(0), "not bob's passkey");
    assert!(store.session(&[2; 32], T0).await.expect("get").is_some(), "nothing removed, nothing ended");
    let removed = AccountChange::PasskeyRemoved { credential_id: laptop.credential_id.clone(), keep };
    assert_eq!(store.change_account(&alice, &removed, T0.plus(2)).await.expect("remove"), Some(1));
    assert_eq!(store.passkey(&laptop.credential_id).await.expect("find"), None);
    assert!(store.session(&[1; 32], T0).await.expect("get").is_some(), "the asking session stays");
    assert!(store.session(&[2; 32], T0).await.expect("get").is_none(), "the other session ended");
    let kinds: Vec<EventKind> = store.account_events(&alice).await.expect("events").iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [EventKind::PasskeyAdded, EventKind::PasskeyAdded, EventKind::PasskeyRemoved]);
    assert!(store.account_events(&bob).await.expect("events").is_empty(), "bob's attempts changed nothing");

    store.change_account(&alice, &AccountChange::Delete, T0.plus(3)).await.expect("delete");
    assert_eq!(store.passkey(&phone.credential_id).await.expect("find"), None, "gone with the account");
}

/// A ceremony is taken once; one taken after it expires is gone and gives nothing; an unknown one gives nothing.
pub(super) async fn ceremonies_are_taken_once_before_they_expire(store: &dyn Store) {
    let user = another_user(store).await;
    let registering = Ceremony { user_id: Some(user), sealed: vec![7; 40] };
    store.put_ceremony(&[1; 32], &registering, T0.plus(300)).await.expect("put");
    let signing_in = Ceremony { user_id: None, sealed: vec![8; 40] };
    store.put_ceremony(&[2; 32], &signing_in, T0.plus(300)).await.expect("put");
    assert_eq!(store.take_ceremony(&[1; 32], T0.plus(299)).await.expect("take"), Some(registering));
    assert_eq!(store.take_ceremony(&[1; 32], T0.plus(299)).await.expect("take again"), None, "single use");
    assert_eq!(store.take_ceremony(&[2; 32], T0.plus(300)).await.expect("take late"), None, "expired");
    store.put_ceremony(&[2; 32], &signing_in, T0.plus(900)).await.expect("the expired one was removed");
    assert_eq!(store.take_ceremony(&[3; 32], T0).await.expect("take unknown"), None);
    store.put_ceremony(&[4; 32], &signing_in, T0.plus(10)).await.expect("put");
    store.purge_expired(T0.plus(10)).await.expect("purge");
    assert_eq!(store.take_ceremony(&[4; 32], T0).await.expect("take purged"), None, "purged once expired");
}
