//! Accounts: their changes with their events, the apps with access, last-use days, the time-based access switch.

use super::{another_user, fixture, issue, T0};
use crate::prelude::*;
use crate::{GrantLimits, ProjectSetting, Session};
use latchkey_core::account::{AccountChange, EventKind};
use latchkey_core::time::UnixTime;

fn session(user_id: &str, tag: u8) -> Session {
    Session {
        token_hash: vec![tag; 32],
        user_id: user_id.into(),
        created_at: T0,
        expires_at: T0.plus(3600),
        method: Default::default(),
    }
}

async fn kinds(store: &dyn Store, user_id: &str) -> Vec<EventKind> {
    store.account_events(user_id).await.expect("events").iter().map(|e| e.kind).collect()
}

/// Each change touches what it names, records exactly one event when it changed something and none when it did
/// not, and a change of an unknown user is `None`.
pub(super) async fn account_changes_record_one_event_each(store: &dyn Store) {
    let (_, user_id) = fixture(store).await;
    for tag in [1, 2, 3] {
        store.create_session(&session(&user_id, tag)).await.expect("session");
    }
    let keep = Some(vec![1; 32]);
    let ended = store.change_account(&user_id, &AccountChange::OtherSessionsEnded { keep: keep.clone() }, T0).await;
    assert_eq!(ended.expect("end others"), Some(2), "two other sessions ended");
    assert!(store.session(&[1; 32], T0).await.expect("get").is_some(), "the asking session stays");
    assert!(store.session(&[2; 32], T0).await.expect("get").is_none());
    let again = store.change_account(&user_id, &AccountChange::OtherSessionsEnded { keep: keep.clone() }, T0).await;
    assert_eq!(again.expect("end others again"), Some(0), "nothing left to end: no event");

    let new_password = AccountChange::PasswordChanged { password_hash: "$argon2id$new".into(), keep: None };
    assert_eq!(store.change_account(&user_id, &new_password, T0).await.expect("password"), Some(1));
    assert_eq!(store.user(&user_id).await.expect("get").expect("user").password_hash, "$argon2id$new");
    assert!(store.session(&[1; 32], T0).await.expect("get").is_none(), "keeping none ends every session");

    store.create_session(&session(&user_id, 4)).await.expect("session");
    assert_eq!(store.change_account(&user_id, &AccountChange::Disable, T0.plus(1)).await.expect("disable"), Some(1));
    assert_eq!(store.user(&user_id).await.expect("get").expect("user").disabled_at, Some(T0.plus(1)));
    store.change_account(&user_id, &AccountChange::Enable, T0.plus(2)).await.expect("enable");
    assert!(store.session(&[4; 32], T0).await.expect("get").is_none(), "disabling ended the session for good");
    assert_eq!(store.change_account(&user_id, &AccountChange::Enable, T0).await.expect("enable again"), Some(0));

    assert_eq!(
        kinds(store, &user_id).await,
        vec![
            EventKind::SessionsRevoked,
            EventKind::CredentialChanged,
            EventKind::AccountDisabled,
            EventKind::AccountEnabled
        ]
    );
    assert_eq!(store.change_account(&user_id, &AccountChange::Delete, T0).await.expect("delete"), Some(1));
    assert_eq!(kinds(store, &user_id).await.last(), Some(&EventKind::AccountPurged), "the event outlives the user");
    assert_eq!(store.change_account(&user_id, &AccountChange::Disable, T0).await.expect("unknown"), None);
    assert_eq!(store.change_account("no-such-user", &AccountChange::Delete, T0).await.expect("unknown"), None);
}

/// Removing an app's access revokes every grant of that client for that user, and nothing else; its event names
/// the client; a client with no grant changes nothing.
pub(super) async fn removing_an_apps_access_revokes_its_grants_and_only_those(store: &dyn Store) {
    let (client_id, user_id) = fixture(store).await;
    let (other_client, _) = fixture(store).await;
    let stranger = another_user(store).await;
    let limits = GrantLimits::default();
    let mine = [issue(store, &client_id, &user_id, limits).await, issue(store, &client_id, &user_id, limits).await];
    let other_app = issue(store, &other_client, &user_id, limits).await;
    let strangers = issue(store, &client_id, &stranger, limits).await;
    let live = store.live_grants(&user_id, T0).await.expect("live");
    assert_eq!(live.len(), 3);
    assert_eq!(live.iter().filter(|g| g.client_id == client_id).count(), 2);
    assert!(live.iter().all(|g| g.client_name == "App" && g.project_name == "p" && g.created_at == T0));

    let remove = AccountChange::AppAccessRemoved { client_id: client_id.clone() };
    assert_eq!(store.change_account(&user_id, &remove, T0.plus(9)).await.expect("remove"), Some(2));
    for g in &mine {
        assert_eq!(store.grant(&g.id).await.expect("get").expect("g").grant.revoked_at, Some(T0.plus(9)));
    }
    assert!(store.grant(&other_app.id).await.expect("get").expect("g").is_usable(T0), "another app keeps access");
    assert!(store.grant(&strangers.id).await.expect("get").expect("g").is_usable(T0), "another user keeps theirs");
    let live = store.live_grants(&user_id, T0).await.expect("live");
    assert_eq!(live.iter().map(|g| g.client_id.as_str()).collect::<Vec<_>>(), vec![other_client.as_str()]);
    let events = store.account_events(&user_id).await.expect("events");
    assert_eq!(events.len(), 1);
    assert_eq!((events[0].kind, events[0].client_id.as_deref()), (EventKind::TokensRevoked, Some(client_id.as_str())));
    let audit = store.audit_records(&user_id).await.expect("audit");
    assert_eq!(audit.iter().filter(|r| r.action == "app_access_removed").count(), 2, "one record per grant");

    assert_eq!(store.change_account(&user_id, &remove, T0.plus(10)).await.expect("again"), Some(0));
    assert_eq!(store.account_events(&user_id).await.expect("events").len(), 1, "nothing removed, no event");
}

/// Ended grants are not live; a last-use day only moves forward; the time-based access switch is kept.
pub(super) async fn last_use_days_move_forward_and_ended_grants_are_not_live(store: &dyn Store) {
    let (client_id, user_id) = fixture(store).await;
    let g = issue(store, &client_id, &user_id, GrantLimits::default()).await;
    let day = |d: i64| UnixTime(T0.0 - T0.0.rem_euclid(86_400) + d * 86_400);
    store.record_last_used(&[(g.id, day(2))]).await.expect("record");
    store.record_last_used(&[(g.id, day(1))]).await.expect("record an older day");
    store.record_last_used(&[]).await.expect("nothing to record");
    let live = store.live_grants(&user_id, T0).await.expect("live");
    assert_eq!(live[0].last_used_at, Some(day(2)), "the later day stays");
    assert_eq!(live[0].expires_at, None);
    store.delete_client(&client_id, T0).await.expect("delete client");
    assert!(store.live_grants(&user_id, T0).await.expect("live").is_empty(), "a deleted client's grants are not shown");

    let project = store.client(&client_id).await.expect("client").expect("kept while restorable").project_id;
    assert!(!store.project(&project).await.expect("get").expect("p").time_based_access, "off by default");
    assert!(store.set_project_setting(&project, ProjectSetting::TimeBasedAccess, true).await.expect("switch"));
    assert!(store.project(&project).await.expect("get").expect("p").time_based_access);
    assert!(!store
        .set_project_setting("no-such-project", ProjectSetting::TimeBasedAccess, true)
        .await
        .expect("switch"));
}
