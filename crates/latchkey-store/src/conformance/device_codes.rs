//! Device codes (RFC 8628): stored as hashes, a user code held once, decided once while pending and unexpired
//! (approved together with its authorization code), and each poll's pace counted once (a poll too soon grows the
//! interval for good).

use super::{fixture, random_b64, T0};
use crate::prelude::*;
use crate::StoreError;
use latchkey_core::device::{DeviceCode, State};
use latchkey_core::scope::ScopeSet;
use latchkey_core::token::AuthCode;

fn device_code(client_id: &str) -> DeviceCode {
    DeviceCode {
        device_code_hash: random_b64(32).into_bytes(),
        user_code_hash: random_b64(32).into_bytes(),
        client_id: client_id.into(),
        scopes: ScopeSet(0b11),
        created_at: T0,
        expires_at: T0.plus(1800),
        interval: 5,
        state: State::Pending,
    }
}

/// A device code is found by its user code; a poll notes its pace; the decision is taken once.
pub(super) async fn device_codes_are_polled_at_their_pace_and_decided_once(store: &dyn Store) {
    let (client_id, user_id) = fixture(store).await;
    let project = store.client(&client_id).await.expect("client").expect("there").project_id;
    let code = device_code(&client_id);
    store.insert_device_code(&code).await.expect("insert");
    let same_user_code = DeviceCode { device_code_hash: random_b64(32).into_bytes(), ..code.clone() };
    assert!(matches!(store.insert_device_code(&same_user_code).await, Err(StoreError::Conflict(_))));
    assert_eq!(store.device_code_by_user_code(&code.user_code_hash).await.expect("find"), Some(code.clone()));

    let poll = |at| store.poll_device_code(&code.device_code_hash, &client_id, T0.plus(at));
    let first = poll(10).await.expect("poll").expect("known");
    assert_eq!((first.state, first.too_soon, first.client_id.as_str()), (State::Pending, false, client_id.as_str()));
    assert!(poll(12).await.expect("poll").expect("known").too_soon, "2 s after the previous poll");
    let found = store.device_code_by_user_code(&code.user_code_hash).await.expect("find").expect("there");
    assert_eq!(found.interval, 10, "the interval grew by 5 s");
    assert!(poll(20).await.expect("poll").expect("known").too_soon, "8 s is too soon under the grown interval");
    assert!(!poll(35).await.expect("poll").expect("known").too_soon, "15 s later is at the pace");
    assert_eq!(store.poll_device_code(b"unknown", &client_id, T0).await.expect("poll"), None);
    let other = store.poll_device_code(&code.device_code_hash, "another-client", T0.plus(36)).await.expect("poll");
    assert_eq!(other, None, "another client's poll finds nothing");
    assert!(
        !poll(50).await.expect("poll").expect("known").too_soon,
        "it noted nothing: 14 s after it would be too soon"
    );

    let approval = |c: &DeviceCode| AuthCode {
        code_hash: c.device_code_hash.clone(),
        redirect_uri: latchkey_core::device::REDIRECT_URI.into(),
        challenge: None,
        nonce: None,
        expires_at: c.expires_at,
        ..super::code(&client_id, &user_id)
    };
    let approve = |c: &DeviceCode, at| {
        let (hash, code, project) = (c.user_code_hash.clone(), approval(c), project.clone());
        async move { store.approve_device_code(&hash, &code, &project, T0.plus(at)).await }
    };
    assert_eq!(approve(&code, 40).await.expect("approve"), Ok(true));
    let stored = store.code(&code.device_code_hash).await.expect("code").expect("stored with the approval");
    assert_eq!(stored.redirect_uri, latchkey_core::device::REDIRECT_URI);
    assert!(!store.deny_device_code(&code.user_code_hash, T0.plus(41)).await.expect("deny"), "decided once");
    assert_eq!(approve(&code, 41).await.expect("approve"), Ok(false), "approved once, and no second code");
    let approved = poll(36).await.expect("poll").expect("known");
    assert_eq!((approved.state, approved.too_soon), (State::Approved, false), "an approved code has no pace");

    let late = device_code(&client_id);
    store.insert_device_code(&late).await.expect("insert");
    assert_eq!(approve(&late, 1800).await.expect("approve"), Ok(false), "expired");
    assert_eq!(store.code(&late.device_code_hash).await.expect("code"), None, "nothing stored for it");
    let denied = device_code(&client_id);
    store.insert_device_code(&denied).await.expect("insert");
    assert!(store.deny_device_code(&denied.user_code_hash, T0.plus(50)).await.expect("deny"));
    assert_eq!(approve(&denied, 51).await.expect("approve"), Ok(false), "a declined code stays declined");
    store.purge_expired(T0.plus(1800 + 86399)).await.expect("purge");
    assert!(store.device_code_by_user_code(&late.user_code_hash).await.expect("find").is_some(), "kept a day");
    store.purge_expired(T0.plus(1800 + 86400)).await.expect("purge");
    assert_eq!(store.device_code_by_user_code(&late.user_code_hash).await.expect("find"), None, "purged");
}
