//! Shared Signals streams: which SETs an account change queues and for whom, and their delivery (claims under a
//! lease, in order per subject, retries, polls, pause, disable, dead letters).

use super::{fixture, issue, issue_scopes, random_b64, T0};
use crate::prelude::*;
use crate::{DeliveryResult, DeliveryState, GrantLimits, StreamRecord};
use latchkey_core::account::AccountChange;
use latchkey_core::events::stream::{Status, POLL, PUSH};
use latchkey_core::events::{types, SubjectFormat};
use latchkey_core::refresh_token;
use latchkey_core::scope::{Scope, ScopeSet};
use latchkey_core::time::UnixTime;
use std::collections::HashSet;
use std::sync::Arc;

/// A push stream of `client_id`, every event, subjects by `iss_sub`.
fn stream_of(client_id: &str) -> StreamRecord {
    StreamRecord {
        method: PUSH.into(),
        endpoint_url: Some("https://receiver.example/events".into()),
        push_auth: Some(vec![1, 2, 3]),
        ..StreamRecord::new(random_b64(12), client_id.into(), T0)
    }
}

async fn event_types(store: &dyn Store, stream_id: &str) -> Vec<String> {
    let mut d = store.deliveries(stream_id, 100).await.expect("deliveries");
    d.reverse();
    d.into_iter().map(|d| d.event_type).collect()
}

/// A change queues the SETs it causes for the streams of the apps holding a grant of the account, and for no
/// other (an app whose access was removed hears of that, then of nothing more); a revoked grant is named by its
/// refresh-token prefix; a deletion is reported with the email captured.
pub(super) async fn account_changes_queue_sets_only_for_apps_with_access(store: &dyn Store) {
    let (client, user) = fixture(store).await;
    let (other_client, _) = fixture(store).await;
    let mine = stream_of(&client);
    let other = StreamRecord { subject_format: SubjectFormat::Email, ..stream_of(&other_client) };
    assert!(store.create_stream(&mine).await.expect("create"));
    assert!(!store.create_stream(&stream_of(&client)).await.expect("again"), "one stream per client");
    assert!(store.create_stream(&other).await.expect("create other"));
    let noted = AccountChange::OtherSessionsEnded { keep: None };
    store.change_account(&user, &AccountChange::Disable, T0).await.expect("disable");
    store.change_account(&user, &AccountChange::Enable, T0).await.expect("enable");
    assert!(event_types(store, &mine.stream_id).await.is_empty(), "no grant yet: no event");

    // A disabled account's code is redeemed by no exchange: the grant comes first, then the changes.
    let grant = issue(store, &client, &user, GrantLimits::default()).await;
    store.change_account(&user, &AccountChange::Disable, T0.plus(1)).await.expect("disable");
    store.change_account(&user, &AccountChange::Enable, T0.plus(1)).await.expect("enable");
    let password = AccountChange::PasswordChanged { password_hash: "$argon2id$n".into(), keep: None };
    store.change_account(&user, &password, T0.plus(2)).await.expect("password");
    let removed = AccountChange::AppAccessRemoved { client_id: client.clone() };
    store.change_account(&user, &removed, T0.plus(3)).await.expect("remove");
    store.change_account(&user, &noted, T0.plus(4)).await.expect("nothing to end: no event");
    assert_eq!(
        event_types(store, &mine.stream_id).await,
        [
            types::ACCOUNT_DISABLED,
            types::ACCOUNT_ENABLED,
            types::CREDENTIAL_CHANGE,
            types::SESSIONS_REVOKED,
            types::SESSION_REVOKED,
            types::TOKEN_REVOKED
        ]
    );
    let sets = store.deliveries(&mine.stream_id, 100).await.expect("deliveries");
    let token = sets.iter().find(|d| d.event_type == types::TOKEN_REVOKED).expect("token-revoked");
    let prefix = format!("{}{}", refresh_token::PREFIX, grant.id.encode());
    assert_eq!(token.payload, serde_json::json!({"token_identifier_alg": "prefix", "token": prefix}).to_string());
    assert!(sets.iter().all(|d| d.subject == user && d.subject_format == SubjectFormat::IssSub));
    let password_txns: HashSet<_> = sets.iter().filter(|d| d.created_at == T0.plus(2)).map(|d| &d.txn).collect();
    assert_eq!(password_txns.len(), 1, "the SETs of one change share its txn");
    assert!(event_types(store, &other.stream_id).await.is_empty(), "another app hears nothing");

    // The other app asked for the e-mail subject, and the account granted it the `email` scope.
    let with_email = ScopeSet(0b11 | Scope::Email.set().0);
    issue_scopes(store, &other_client, &user, GrantLimits::default(), with_email).await;
    let email = store.user(&user).await.expect("get").expect("user").email;
    store.change_account(&user, &AccountChange::Delete, T0.plus(5)).await.expect("delete");
    let purged = store.deliveries(&other.stream_id, 1).await.expect("deliveries").remove(0);
    assert_eq!((purged.event_type.as_str(), purged.subject.as_str()), (types::ACCOUNT_PURGED, email.as_str()));
    let last = event_types(store, &mine.stream_id).await.last().cloned();
    assert_eq!(last.as_deref(), Some(types::TOKEN_REVOKED), "access removed: the app hears no more of the account");
}

/// A stream that asks for the e-mail subject gets the address only of accounts that granted its app the `email`
/// scope; of the others, `iss_sub`.
pub(super) async fn an_email_subject_needs_the_email_scope(store: &dyn Store) {
    let (client, user) = fixture(store).await;
    let stream = StreamRecord { subject_format: SubjectFormat::Email, ..stream_of(&client) };
    assert!(store.create_stream(&stream).await.expect("create"));
    let grant = issue(store, &client, &user, GrantLimits::default()).await;
    let password = AccountChange::PasswordChanged { password_hash: "$argon2id$n".into(), keep: None };
    store.change_account(&user, &password, T0.plus(1)).await.expect("password");
    let sets = store.deliveries(&stream.stream_id, 100).await.expect("deliveries");
    assert!(!sets.is_empty());
    assert!(sets.iter().all(|d| d.subject_format == SubjectFormat::IssSub && d.subject == user), "no address");
    store.revoke_grant(&grant.id, T0.plus(2)).await.expect("revoke");
    issue_scopes(store, &client, &user, GrantLimits::default(), ScopeSet(0b1 | Scope::Email.set().0)).await;
    store.change_account(&user, &password, T0.plus(3)).await.expect("password");
    let email = store.user(&user).await.expect("get").expect("user").email;
    let sets = store.deliveries(&stream.stream_id, 100).await.expect("deliveries");
    let later: Vec<_> = sets.iter().filter(|d| d.created_at == T0.plus(3)).collect();
    assert!(!later.is_empty());
    assert!(later.iter().all(|d| d.subject_format == SubjectFormat::Email && d.subject == email), "{later:?}");
}

/// The worker's claims: due push deliveries only, the oldest pending one per subject, leased; a retry waits for
/// its time; a delivered one lets the next through; pausing holds all but stream-updated, disabling drops; old
/// pending ones are dead-lettered.
pub(super) async fn deliveries_are_claimed_in_order_under_a_lease(store: &dyn Store) {
    let (client, user) = fixture(store).await;
    let s = stream_of(&client);
    store.create_stream(&s).await.expect("create");
    issue(store, &client, &user, GrantLimits::default()).await;
    let password = AccountChange::PasswordChanged { password_hash: "$argon2id$n".into(), keep: None };
    store.change_account(&user, &password, T0).await.expect("password");
    let t = T0.plus(1);
    assert!(store.pending_deliveries(t).await.expect("due"), "due");
    let first = store.claim_deliveries(t, t.plus(30), 10).await.expect("claim");
    assert_eq!(first.len(), 1, "one at a time per subject");
    assert_eq!((first[0].event_type.as_str(), first[0].attempts), (types::CREDENTIAL_CHANGE, 1));
    assert!(store.claim_deliveries(t, t.plus(30), 10).await.expect("claim").is_empty(), "leased");
    assert!(!store.pending_deliveries(t).await.expect("due"), "the leased one is not due, the rest wait behind it");
    let retry = DeliveryResult::Retry { error: "503".into(), retry_at: t.plus(5) };
    store.finish_delivery(first[0].id, t.plus(30), &retry, t).await.expect("retry");
    assert!(store.claim_deliveries(t.plus(4), t.plus(34), 10).await.expect("claim").is_empty(), "not yet due");
    let again = store.claim_deliveries(t.plus(5), t.plus(35), 10).await.expect("claim");
    assert_eq!((again[0].id, again[0].attempts), (first[0].id, 2));
    store.finish_delivery(again[0].id, t.plus(35), &DeliveryResult::Delivered, t.plus(5)).await.expect("delivered");
    let next = store.claim_deliveries(t.plus(5), t.plus(35), 10).await.expect("claim");
    assert_eq!(next[0].event_type, types::SESSIONS_REVOKED);
    let refused = DeliveryResult::Refused("invalid_key".into());
    store.finish_delivery(next[0].id, t.plus(35), &refused, t.plus(5)).await.expect("no");

    let paused = StreamRecord { status: Status::Paused, reason: Some("maintenance".into()), ..s.clone() };
    assert!(store.update_stream(&paused, t.plus(6)).await.expect("pause"));
    let held = store.claim_deliveries(t.plus(6), t.plus(36), 10).await.expect("claim");
    assert_eq!(held.len(), 1, "only the stream-updated event flows while paused");
    assert_eq!((held[0].event_type.as_str(), held[0].subject.as_str()), (types::STREAM_UPDATED, s.stream_id.as_str()));
    assert_eq!(held[0].payload, r#"{"reason":"maintenance","status":"paused"}"#);
    store.finish_delivery(held[0].id, t.plus(36), &DeliveryResult::Delivered, t.plus(6)).await.expect("delivered");

    assert_eq!(store.dead_letter(t.plus(7), T0.plus(1)).await.expect("dead"), 1, "the held one made at T0");
    let states: Vec<_> = store.deliveries(&s.stream_id, 10).await.expect("all").iter().map(|d| d.state).collect();
    let expected = [DeliveryState::Delivered, DeliveryState::Dead, DeliveryState::Failed, DeliveryState::Delivered];
    assert_eq!(states, expected);
    let disabled = StreamRecord { status: Status::Disabled, reason: None, ..s.clone() };
    store.update_stream(&disabled, t.plus(8)).await.expect("disable");
    let counts = store.delivery_counts().await.expect("counts");
    assert!(counts.contains(&(DeliveryState::Dead, 1)), "{counts:?}");
    store.change_account(&user, &AccountChange::Disable, t.plus(9)).await.expect("disable account");
    let latest = store.deliveries(&s.stream_id, 1).await.expect("latest").remove(0);
    assert_eq!(latest.event_type, types::STREAM_UPDATED, "a disabled stream queues nothing more");
}

/// Another client of `client_id`'s project, with a push stream; its id.
async fn sibling_stream(store: &dyn Store, client_id: &str) -> (String, StreamRecord) {
    let mut c = store.client(client_id).await.expect("get").expect("client");
    c.client_id = format!("c-{}", random_b64(9));
    store.create_client(&c).await.expect("client");
    let s = stream_of(&c.client_id);
    assert!(store.create_stream(&s).await.expect("stream"));
    (c.client_id, s)
}

/// Claims take turns: each project's first due delivery before any project's second, however many streams and
/// subjects a project has and however old its deliveries are; a delivery given back is due again at its time, its
/// attempt not counted.
pub(super) async fn claims_take_turns_by_project_and_released_ones_come_back(store: &dyn Store) {
    let (busy, user) = fixture(store).await;
    let (other_user, busy_streams) = (super::another_user(store).await, {
        let mut streams = Vec::new();
        for _ in 0..3 {
            let (client, s) = sibling_stream(store, &busy).await;
            issue(store, &client, &user, GrantLimits::default()).await;
            streams.push(s);
        }
        streams
    });
    for s in &busy_streams {
        let client = s.client_id.clone();
        issue(store, &client, &other_user, GrantLimits::default()).await;
    }
    let password = AccountChange::PasswordChanged { password_hash: "$argon2id$n".into(), keep: None };
    store.change_account(&user, &password, T0).await.expect("password");
    store.change_account(&other_user, &password, T0).await.expect("password");
    // The quiet project's one event comes last of all.
    let (quiet, quiet_user) = fixture(store).await;
    let quiet_stream = stream_of(&quiet);
    assert!(store.create_stream(&quiet_stream).await.expect("stream"));
    issue(store, &quiet, &quiet_user, GrantLimits::default()).await;
    store.change_account(&quiet_user, &password, T0.plus(1)).await.expect("password");
    let t = T0.plus(2);
    let two = store.claim_deliveries(t, t.plus(30), 2).await.expect("claim");
    let streams: HashSet<&str> = two.iter().map(|d| d.stream_id.as_str()).collect();
    assert!(streams.contains(quiet_stream.stream_id.as_str()), "the quiet project's turn comes second: {two:?}");
    // Given back, the busy project's delivery is due again at its time, its attempt not counted.
    let busy_one = two.iter().find(|d| d.stream_id != quiet_stream.stream_id).expect("busy");
    store.release_deliveries(&[(busy_one.id, t.plus(10))], t.plus(30)).await.expect("release");
    let rest = store.claim_deliveries(t.plus(9), t.plus(39), 100).await.expect("claim");
    assert!(rest.iter().all(|d| d.id != busy_one.id), "not due before its time");
    assert_eq!(rest.len(), 5, "every other stream and subject's oldest: {rest:?}");
    let back = store.claim_deliveries(t.plus(10), t.plus(40), 100).await.expect("claim");
    assert_eq!(back.iter().map(|d| (d.id, d.attempts)).collect::<Vec<_>>(), vec![(busy_one.id, 1)]);
}

/// A poll returns the pending SETs of its stream only, acknowledges by jti, records errors as final, and says
/// whether more wait; a verification request is limited to one per interval.
pub(super) async fn polls_acknowledge_and_verification_is_rate_limited(store: &dyn Store) {
    let (client, user) = fixture(store).await;
    let s = StreamRecord { method: POLL.into(), endpoint_url: None, push_auth: None, ..stream_of(&client) };
    store.create_stream(&s).await.expect("create");
    issue(store, &client, &user, GrantLimits::default()).await;
    let password = AccountChange::PasswordChanged { password_hash: "$argon2id$n".into(), keep: None };
    store.change_account(&user, &password, T0).await.expect("password");
    assert!(store.claim_deliveries(T0, T0.plus(30), 10).await.expect("claim").is_empty(), "poll streams are polled");
    assert!(!store.pending_deliveries(T0).await.expect("due"), "nothing for the push worker");
    let (sets, more) = store.poll_deliveries(&s.stream_id, &[], &[], 2, T0).await.expect("poll");
    assert_eq!((sets.len(), more), (2, true));
    let errors = [(sets[1].id, "invalid_key".to_owned())];
    let (rest, more) = store.poll_deliveries(&s.stream_id, &[sets[0].id], &errors, 10, T0).await.expect("poll");
    assert_eq!((rest.len(), more), (1, false));
    assert_eq!(store.pollable(&s.stream_id, 10).await.expect("read"), (rest.clone(), false), "the same, read only");
    assert!(store.pollable(&s.stream_id, 0).await.expect("read").1, "more than none are waiting");
    assert_eq!(rest[0].event_type, types::SESSION_REVOKED);
    let (other, _) = fixture(store).await;
    let foreign = stream_of(&other);
    store.create_stream(&foreign).await.expect("create");
    store.poll_deliveries(&foreign.stream_id, &[rest[0].id], &[], 10, T0).await.expect("foreign ack");
    assert_eq!(store.poll_deliveries(&s.stream_id, &[], &[], 10, T0).await.expect("poll").0, rest, "untouched");

    assert_eq!(store.request_verification(&s.stream_id, Some("st"), T0, 30).await.expect("verify"), Ok(()));
    let too_soon = store.request_verification(&s.stream_id, None, T0.plus(10), 30).await.expect("verify");
    assert_eq!(too_soon, Err(crate::VerifyRefused::TooSoon(20)));
    let none = store.request_verification("no-such-stream", None, T0, 30).await.expect("verify");
    assert_eq!(none, Err(crate::VerifyRefused::NoStream));
    let last = store.deliveries(&s.stream_id, 1).await.expect("latest").remove(0);
    assert_eq!((last.event_type.as_str(), last.payload.as_str()), (types::VERIFICATION, r#"{"state":"st"}"#));
    assert!(store.delete_stream(&s.stream_id).await.expect("delete"));
    assert!(store.deliveries(&s.stream_id, 10).await.expect("gone").is_empty());
}

/// A push that outlived its lease, while another instance claimed the SET again, neither retries nor gives back
/// that instance's lease (a third would send the SET once more); its delivery is recorded all the same.
pub(super) async fn a_push_past_its_lease_leaves_the_next_lease_alone(store: &dyn Store) {
    let (client, user) = fixture(store).await;
    let stream = stream_of(&client);
    store.create_stream(&stream).await.expect("create");
    issue(store, &client, &user, GrantLimits::default()).await;
    store.change_account(&user, &AccountChange::Disable, T0).await.expect("disable");
    let (t, later) = (T0.plus(1), T0.plus(32));
    let first = store.claim_deliveries(t, t.plus(30), 10).await.expect("claim");
    assert_eq!(first.len(), 1);
    let again = store.claim_deliveries(later, later.plus(30), 10).await.expect("claim after the lease ran out");
    assert_eq!(again.iter().map(|d| d.id).collect::<Vec<_>>(), [first[0].id], "taken over");
    let retry = DeliveryResult::Retry { error: "timeout".into(), retry_at: later };
    store.finish_delivery(first[0].id, t.plus(30), &retry, later).await.expect("late retry");
    store.release_deliveries(&[(first[0].id, later)], t.plus(30)).await.expect("late release");
    assert!(store.claim_deliveries(later, later.plus(30), 10).await.expect("claim").is_empty(), "still leased");
    store.finish_delivery(first[0].id, t.plus(30), &DeliveryResult::Delivered, later).await.expect("delivered");
    let states: Vec<_> = store.deliveries(&stream.stream_id, 10).await.expect("all").iter().map(|d| d.state).collect();
    assert_eq!(states, [DeliveryState::Delivered]);
}

/// Workers claiming and delivering at once never lease the same delivery twice.
pub(super) async fn concurrent_claims_never_share_a_delivery(store: Arc<dyn crate::seed::SeedStore>) {
    let mut subjects = Vec::new();
    let (client, _) = fixture(&*store).await;
    store.create_stream(&stream_of(&client)).await.expect("create");
    for _ in 0..32 {
        let user = super::another_user(&*store).await;
        issue(&*store, &client, &user, GrantLimits::default()).await;
        store.change_account(&user, &AccountChange::Disable, T0).await.expect("disable");
        subjects.push(user);
    }
    // Each worker delivers what it leased at once, as an instance does: a claim racing a finished delivery
    // (its lease given back with the outcome) must not take it again.
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                let now = UnixTime(T0.0 + 1);
                loop {
                    let claimed = store.claim_deliveries(now, now.plus(60), 2).await.expect("claim");
                    if claimed.is_empty() {
                        return got;
                    }
                    for d in claimed {
                        store
                            .finish_delivery(d.id, now.plus(60), &DeliveryResult::Delivered, now)
                            .await
                            .expect("finish");
                        got.push(d);
                    }
                }
            })
        })
        .collect();
    let mut ids = HashSet::new();
    for w in workers {
        for d in w.await.expect("worker") {
            assert!(ids.insert(d.id), "delivery {} leased twice", d.id);
        }
    }
    assert_eq!(ids.len(), subjects.len(), "every due delivery leased once");
}

/// Where the engine announces new deliveries (PostgreSQL), a delivery made is announced with its stream's id, so
/// that a long poll waiting for that stream wakes; where it does not (SQLite), there are no notices to listen to.
pub(super) async fn new_deliveries_are_announced_where_the_engine_can(store: &dyn Store) {
    // (That PostgreSQL has them is a test of its own, in the backends' tests.)
    let Some(mut notices) = store.delivery_notices().await.expect("listen") else { return };
    let (client, _) = fixture(store).await;
    let stream = StreamRecord { method: POLL.into(), endpoint_url: None, push_auth: None, ..stream_of(&client) };
    assert!(store.create_stream(&stream).await.expect("create"));
    store.request_verification(&stream.stream_id, Some("s"), T0, 0).await.expect("verify").expect("queued");
    let heard = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while let Some(notice) = notices.recv().await {
            if notice == crate::notices::Notice::Stream(stream.stream_id.clone()) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(heard, Ok(true), "the new delivery was announced with its stream's id");
}
