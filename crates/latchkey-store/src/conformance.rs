//! The store conformance suite: every backend runs these same checks, listed in [`CHECKS`]. The store's test harness
//! (`tests/backends`) runs each as a test of its own per backend, on a fresh store: `conformance::sqlite::<check>`,
//! and `conformance::postgres::<check>` on a real server.

mod accounts;
mod audit;
mod checks;
mod clients;
mod codes;
mod device_codes;
mod grant_counts;
mod members;
mod orgs;
mod passkeys;
mod registration;
mod resources;
mod rotation;
mod served;
mod service_accounts;
mod streams;
mod throttle;
mod together;
mod two_step;
pub use audit::a_revocation_and_its_audit_record_commit_together;
pub use checks::{Check, Run, CHECKS};
pub use grant_counts::grant_counts_bound_the_live_grants;

use crate::prelude::*;
use crate::records::*;
use crate::test_database::TestRandom;
use crate::StoreError;
use latchkey_core::access_token::GrantId;
use latchkey_core::account::AccountChange;
use latchkey_core::app_check::{AppCheck, AppCheckState, Category};
use latchkey_core::client::{Client, ClientDetails, ClientType};
use latchkey_core::pkce::ChallengeMethod;
use latchkey_core::scope::ScopeSet;
use latchkey_core::secret;
use latchkey_core::time::UnixTime;
use latchkey_core::token::{AuthCode, Grant};
use std::sync::Arc;

/// The time the checks run at.
pub const T0: UnixTime = UnixTime(1_700_000_000);

/// `n` random bytes in base64url, for test data that must be unique.
fn random_b64(n: usize) -> String {
    secret::random_b64(n, &TestRandom)
}

/// A project with a desktop client, and a user; returns (client_id, user_id).
pub async fn fixture(store: &dyn Store) -> (String, String) {
    let project = Project {
        id: random_b64(9),
        name: "p".into(),
        api_enabled: true,
        created_at: T0,
        time_based_access: false,
        org_id: None,
        audience: Default::default(),
        rotate_refresh_tokens: false,
        open_registration: false,
    };
    store.create_project(&project).await.expect("project");
    let client = Client {
        client_id: format!("c-{}", random_b64(9)),
        project_id: project.id.clone(),
        name: "App".into(),
        client_type: ClientType::Desktop,
        redirect_uris: vec!["http://localhost:1/cb".into()],
        secrets: vec![clients::initial_secret()],
        details: ClientDetails::default(),
        created_at: T0,
        deleted_at: None,
        last_used_at: None,
        app_check: Default::default(),
        ownership_verified_at: None,
        registration: None,
        project_rotates: false,
    };
    store.create_client(&client).await.expect("client");
    (client.client_id, another_user(store).await)
}

fn code(client_id: &str, user_id: &str) -> AuthCode {
    AuthCode {
        code_hash: random_b64(32).into_bytes(),
        client_id: client_id.into(),
        user_id: user_id.into(),
        redirect_uri: "http://127.0.0.1:1/".into(),
        scopes: ScopeSet(0b11),
        challenge: Some((ChallengeMethod::S256, "c".repeat(43))),
        nonce: Some("n".into()),
        auth_time: T0,
        expires_at: T0.plus(600),
        used: false,
        grant_lifetime: None,
    }
}

fn grant_for(code: &AuthCode, at: UnixTime) -> Grant {
    Grant {
        id: GrantId::generate(&TestRandom),
        client_id: code.client_id.clone(),
        user_id: code.user_id.clone(),
        scopes: code.scopes,
        refresh_hash: random_b64(32).into_bytes(),
        dpop_jkt: None,
        created_at: at,
        expires_at: None,
        revoked_at: None,
        code_hash: code.code_hash.clone(),
    }
}

/// Stores a code and redeems it into a grant.
pub async fn issue(store: &dyn Store, client_id: &str, user_id: &str, limits: GrantLimits) -> Grant {
    issue_scopes(store, client_id, user_id, limits, ScopeSet(0b11)).await
}

/// [`issue`], granting `scopes`.
pub async fn issue_scopes(
    store: &dyn Store,
    client_id: &str,
    user_id: &str,
    limits: GrantLimits,
    scopes: ScopeSet,
) -> Grant {
    let c = AuthCode { scopes, ..code(client_id, user_id) };
    store.insert_code(&c).await.expect("code");
    let g = grant_for(&c, T0);
    assert_eq!(store.redeem_code(&g, limits, T0).await.expect("redeem"), Redeemed::Issued);
    g
}

async fn projects_and_clients(store: &dyn Store) {
    let (client_id, _) = fixture(store).await;
    let client = store.client(&client_id).await.expect("get").expect("exists");
    assert_eq!(client.redirect_uris, vec!["http://localhost:1/cb".to_string()]);
    assert!(store.project(&client.project_id).await.expect("project").expect("exists").api_enabled);
    assert!(store.set_api_enabled(&client.project_id, false).await.expect("toggle"));
    assert!(!store.project(&client.project_id).await.expect("p").expect("p").api_enabled);
    assert!(store.clients(Some(&client.project_id)).await.expect("list").iter().any(|c| c.client_id == client_id));
    assert!(store.delete_client(&client_id, T0.plus(5)).await.expect("delete"));
    assert!(!store.delete_client(&client_id, T0.plus(6)).await.expect("twice"));
    assert_eq!(store.client(&client_id).await.expect("get").expect("kept").deleted_at, Some(T0.plus(5)));
    assert!(store.client("no-such-client").await.expect("get").is_none());
}

async fn users_channels_and_sessions(store: &dyn Store) {
    let (_, user_id) = fixture(store).await;
    let user = store.user(&user_id).await.expect("get").expect("exists");
    let again = store.user_by_email(&user.email.to_uppercase()).await.expect("by email").expect("case-insensitive");
    assert_eq!(again.id, user_id);
    let dup = NewUser {
        id: random_b64(9),
        email: user.email.to_uppercase(),
        ..NewUser { id: String::new(), email: String::new(), name: None, password_hash: "x".into(), created_at: T0 }
    };
    let ch = Channel {
        id: random_b64(9),
        user_id: dup.id.clone(),
        title: "t".into(),
        description: String::new(),
        created_at: T0,
    };
    assert!(matches!(store.create_user(&dup, &ch).await, Err(StoreError::Conflict(_))));
    assert_eq!(store.channel_of(&user_id).await.expect("channel").expect("exists").user_id, user_id);

    let session = Session {
        token_hash: random_b64(32).into_bytes(),
        user_id: user_id.clone(),
        created_at: T0,
        expires_at: T0.plus(60),
        method: latchkey_core::sign_in::Method::TwoStep,
    };
    store.create_session(&session).await.expect("session");
    assert_eq!(store.session(&session.token_hash, T0.plus(59)).await.expect("get"), Some(session.clone()));
    assert_eq!(store.session(&session.token_hash, T0.plus(60)).await.expect("get"), None);
    assert_eq!(store.change_account(&user_id, &AccountChange::Disable, T0).await.expect("disable"), Some(1));
    assert_eq!(store.session(&session.token_hash, T0).await.expect("get"), None, "a disabled user has no session");
    store.delete_session(&session.token_hash).await.expect("delete");
    assert_eq!(store.change_account(&user_id, &AccountChange::Delete, T0).await.expect("delete user"), Some(1));
    assert!(store.user(&user_id).await.expect("get").is_none());
}

async fn a_code_redeems_once(store: &dyn Store) {
    let (client_id, user_id) = fixture(store).await;
    let c = code(&client_id, &user_id);
    store.insert_code(&c).await.expect("insert");
    assert_eq!(store.code(&c.code_hash).await.expect("get"), Some(c.clone()));
    let g = grant_for(&c, T0);
    assert_eq!(store.redeem_code(&g, GrantLimits::default(), T0).await.expect("1st"), Redeemed::Issued);
    assert!(store.code(&c.code_hash).await.expect("get").expect("kept").used);
    let g2 = grant_for(&c, T0);
    assert_eq!(store.redeem_code(&g2, GrantLimits::default(), T0).await.expect("2nd"), Redeemed::AlreadyUsed);
    assert!(store.grant(&g2.id).await.expect("get").is_none(), "nothing stored on reuse");
    let state = store.grant(&g.id).await.expect("get").expect("stored");
    assert_eq!(state.grant, g);
    assert!(store.legacy_grant_by_refresh(&g.refresh_hash).await.expect("get").is_none(), "found by id only");
    assert_eq!(store.revoke_grants_of_code(&c.code_hash, T0.plus(1)).await.expect("revoke"), 1);
    assert!(!store.grant(&g.id).await.expect("get").expect("kept").is_usable(T0.plus(1)));
}

async fn concurrent_redemption_issues_one_grant(store: Arc<dyn Store>) {
    let (client_id, user_id) = fixture(&*store).await;
    let c = code(&client_id, &user_id);
    store.insert_code(&c).await.expect("insert");
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            let g = grant_for(&c, T0);
            tokio::spawn(async move { store.redeem_code(&g, GrantLimits::default(), T0).await })
        })
        .collect();
    let mut issued = 0;
    for t in tasks {
        if t.await.expect("join").expect("redeem") == Redeemed::Issued {
            issued += 1;
        }
    }
    assert_eq!(issued, 1);
}

async fn refresh_token_limits_invalidate_the_oldest(store: &dyn Store) {
    let (client_id, user_id) = fixture(store).await;
    let limits = GrantLimits { per_client_user: 2, per_user: 3 };
    let g1 = issue(store, &client_id, &user_id, limits).await;
    let g2 = issue(store, &client_id, &user_id, limits).await;
    let g3 = issue(store, &client_id, &user_id, limits).await;
    let usable = |g: Grant| async move { store.grant(&g.id).await.expect("get").expect("kept").is_usable(T0) };
    assert!(!usable(g1).await, "the oldest of the (client, user) set stops working");
    assert!(usable(g2.clone()).await && usable(g3.clone()).await);

    // Across clients: a second client of the same user, per-user limit 3.
    let other =
        Client { client_id: format!("c-{}", random_b64(9)), ..store.client(&client_id).await.expect("c").expect("c") };
    store.create_client(&other).await.expect("second client");
    let g4 = issue(store, &other.client_id, &user_id, limits).await;
    assert!(usable(g2.clone()).await, "three live grants for the user: still within the limit");
    let g5 = issue(store, &other.client_id, &user_id, limits).await;
    assert!(!usable(g2).await, "the user's oldest live grant goes when a fourth is issued");
    assert!(usable(g3).await && usable(g4).await && usable(g5).await);
}

async fn refresh_token_limits_hold_under_concurrent_issuance(store: Arc<dyn Store>) {
    let (client_id, user_id) = fixture(&*store).await;
    let limits = GrantLimits { per_client_user: 3, per_user: 3 };
    let tasks: Vec<_> = (0..12)
        .map(|_| {
            let (store, client_id, user_id) = (store.clone(), client_id.clone(), user_id.clone());
            tokio::spawn(async move { issue(&*store, &client_id, &user_id, limits).await })
        })
        .collect();
    let mut grants = Vec::new();
    for t in tasks {
        grants.push(t.await.expect("every issuance succeeds"));
    }
    let mut live = 0;
    for g in &grants {
        if store.grant(&g.id).await.expect("get").expect("kept").is_usable(T0) {
            live += 1;
        }
    }
    assert_eq!(live, 3, "exactly the limit survives twelve concurrent issuances");
}

async fn grant_state_follows_user_and_client(store: &dyn Store) {
    let (client_id, user_id) = fixture(store).await;
    let g = issue(store, &client_id, &user_id, GrantLimits::default()).await;
    assert!(store.grant(&g.id).await.expect("get").expect("g").is_usable(T0));
    store.change_account(&user_id, &AccountChange::Disable, T0).await.expect("disable");
    assert!(!store.grant(&g.id).await.expect("get").expect("g").is_usable(T0));
    store.change_account(&user_id, &AccountChange::Enable, T0).await.expect("enable");
    store.delete_client(&client_id, T0).await.expect("delete client");
    assert!(!store.grant(&g.id).await.expect("get").expect("g").is_usable(T0));
    assert!(store.revoke_grant(&g.id, T0).await.expect("revoke"));
    assert!(!store.revoke_grant(&g.id, T0).await.expect("revoke twice"));
    store.change_account(&user_id, &AccountChange::Delete, T0).await.expect("delete user");
    assert!(store.grant(&g.id).await.expect("get").is_none(), "a deleted user's grants go with them");
}

async fn keys_are_kept_newest_first(store: &dyn Store) {
    let a = store.add_key(KeyKind::Mac, b"first", T0).await.expect("add");
    let b = store.add_key(KeyKind::Mac, b"second", T0).await.expect("add");
    let keys = store.keys(KeyKind::Mac).await.expect("keys");
    let pos = |id| keys.iter().position(|k| k.id == id).expect("listed");
    assert!(pos(b) < pos(a));
    assert!(store.retire_key(a, T0).await.expect("retire"));
    assert!(store.keys(KeyKind::Mac).await.expect("keys").iter().any(|k| k.id == a && k.retired_at == Some(T0)));
    assert!(store.keys(KeyKind::IdToken).await.expect("keys").iter().all(|k| k.id != a));
}

async fn a_key_secret_is_replaced_only_while_it_is_unchanged(store: &dyn Store) {
    let id = store.add_key(KeyKind::IdToken, b"plain", T0).await.expect("add");
    let secret_of = |keys: Vec<StoredKey>| keys.into_iter().find(|k| k.id == id).map(|k| k.secret);
    assert!(!store.replace_key_secret(id, b"other", b"sealed").await.expect("stale"), "refused: not the current");
    assert!(store.replace_key_secret(id, b"plain", b"sealed").await.expect("replace"));
    assert_eq!(secret_of(store.keys(KeyKind::IdToken).await.expect("keys")).as_deref(), Some(&b"sealed"[..]));
    assert!(!store.replace_key_secret(id, b"plain", b"again").await.expect("raced"), "a second writer loses");
    assert!(!store.replace_key_secret(u32::MAX, b"plain", b"x").await.expect("unknown"), "no such key");
    assert!(store.retire_key(id, T0).await.expect("retire"));
}

async fn single_use_values_are_recorded_once(store: Arc<dyn Store>) {
    let exp = T0.plus(60);
    let (a, b, c) = (single_use_value(exp), single_use_value(exp), single_use_value(exp));
    assert_eq!(store.record_once(&[(a.clone(), exp)], T0).await.expect("a"), None);
    assert_eq!(store.record_once(&[(a.clone(), exp)], T0.plus(1)).await.expect("a again"), Some(0));
    // All or none: b is not kept when a (second) is a replay.
    assert_eq!(store.record_once(&[(b.clone(), exp), (a.clone(), exp)], T0).await.expect("b,a"), Some(1));
    assert_eq!(store.record_once(&[(b.clone(), exp)], T0).await.expect("b"), None, "b was rolled back");
    // After its expiry, a value may be used again.
    assert_eq!(store.record_once(&[(a.clone(), exp)], T0.plus(60)).await.expect("a expired"), None);
    // A value that does not start with its expiry is refused.
    let unordered = random_b64(32).into_bytes();
    assert!(store.record_once(&[(unordered, exp)], T0).await.is_err());
    // Concurrent recordings of one value: exactly one wins.
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            let c = c.clone();
            tokio::spawn(async move { store.record_once(&[(c, exp)], T0).await })
        })
        .collect();
    let mut won = 0;
    for t in tasks {
        if t.await.expect("join").expect("record").is_none() {
            won += 1;
        }
    }
    assert_eq!(won, 1);
}

async fn expired_single_use_values_are_purged(store: &dyn Store) {
    let (early, late) = (T0.plus(10), T0.plus(100));
    let (gone, kept) = (single_use_value(early), single_use_value(late));
    assert_eq!(store.record_once(&[(gone.clone(), early), (kept.clone(), late)], T0).await.expect("record"), None);
    assert!(store.purge_expired(T0.plus(50)).await.expect("purge") >= 1);
    // Seen from before either expiry: the purged value is new again, the other is still a replay.
    assert_eq!(store.record_once(&[(gone, early)], T0).await.expect("gone"), None);
    assert_eq!(store.record_once(&[(kept, late)], T0).await.expect("kept"), Some(0));
}

/// A random single-use value expiring at `expires_at`, in the form [`Replay::record_once`](crate::Replay::record_once) takes.
pub fn single_use_value(expires_at: UnixTime) -> Vec<u8> {
    [&expires_at.0.to_be_bytes()[..], random_b64(32).as_bytes()].concat()
}

async fn client_lifecycle(store: &dyn Store) {
    let (a, _) = fixture(store).await;
    // Edits keep the type, secret and times.
    let mut edited = store.client(&a).await.expect("get").expect("a");
    edited.name = "Renamed".into();
    edited.redirect_uris = vec!["http://localhost:2/cb".into()];
    edited.details.extension_item_id = Some("item".into());
    assert!(store.update_client(&edited).await.expect("update"));
    assert_eq!(store.client(&a).await.expect("get").expect("a"), edited);
    let missing = Client { client_id: "no-such-client".into(), ..edited.clone() };
    assert!(!store.update_client(&missing).await.expect("update missing"));

    // last_used_at is written at most once an hour.
    assert!(store.touch_client(&a, T0.plus(10)).await.expect("touch"));
    assert!(!store.touch_client(&a, T0.plus(100)).await.expect("touch again"));
    assert_eq!(store.client(&a).await.expect("get").expect("a").last_used_at, Some(T0.plus(10)));
    assert!(store.touch_client(&a, T0.plus(3610)).await.expect("an hour later"));
    assert_eq!(store.client(&a).await.expect("get").expect("a").last_used_at, Some(T0.plus(3610)));

    // Restoring: only a client deleted since the given moment.
    let deleted = T0.plus(5000);
    assert!(store.delete_client(&a, deleted).await.expect("delete"));
    assert!(!store.restore_client(&a, deleted.plus(1)).await.expect("too late"));
    assert!(store.restore_client(&a, deleted).await.expect("restore"));
    assert_eq!(store.client(&a).await.expect("get").expect("a").deleted_at, None);
    assert!(!store.restore_client(&a, deleted).await.expect("not deleted"));

    // Unused clients (measured from last use, else creation) are deleted, restorably; then purged with grants.
    let (b, user) = fixture(store).await;
    let g = issue(store, &b, &user, GrantLimits::default()).await;
    let now = T0.plus(200 * 86_400);
    assert!(store.delete_unused_clients(T0.plus(100), T0.plus(100), now).await.expect("unused") >= 1);
    assert_eq!(store.client(&b).await.expect("get").expect("b").deleted_at, Some(now));
    assert_eq!(store.client(&a).await.expect("get").expect("a").deleted_at, None, "a was used after the cutoff");
    store.purge_deleted_clients(now).await.expect("purge before now");
    assert!(store.client(&b).await.expect("get").is_some(), "deleted at now: not before now");
    assert!(store.purge_deleted_clients(now.plus(1)).await.expect("purge") >= 1);
    assert!(store.client(&b).await.expect("get").is_none());
    assert!(store.grant(&g.id).await.expect("grant").is_none(), "a purged client's grants go with it");
    assert!(store.client(&a).await.expect("get").is_some());
}

async fn app_check_and_ownership(store: &dyn Store) {
    let (a, _) = fixture(store).await;
    let mut c = store.client(&a).await.expect("get").expect("a");
    assert_eq!(c.app_check, AppCheck::default());
    c.app_check = AppCheck { state: AppCheckState::Enabled, pending: Some((AppCheckState::Enforced, T0.plus(900))) };
    c.details.app_check = true;
    assert!(store.update_client(&c).await.expect("update"));
    assert_eq!(store.client(&a).await.expect("get").expect("a"), c);

    assert_eq!(store.app_check_debug_secret(&a).await.expect("none yet"), None);
    assert!(store.set_app_check_debug_secret(&a, Some(&[1, 2, 3])).await.expect("set"));
    assert_eq!(store.app_check_debug_secret(&a).await.expect("get"), Some(vec![1, 2, 3]));
    assert!(store.set_app_check_debug_secret(&a, None).await.expect("clear"));
    assert_eq!(store.app_check_debug_secret(&a).await.expect("cleared"), None);
    assert!(!store.set_app_check_debug_secret("no-such-client", None).await.expect("missing"));

    let h0 = UnixTime(T0.0 - T0.0 % 3600);
    let h1 = h0.plus(3600);
    for (hour, category) in [
        (h0, Category::Verified),
        (h0, Category::Verified),
        (h0, Category::UnverifiedInvalid),
        (h1, Category::UnverifiedOutdatedClient),
    ] {
        store.count_app_check(&a, hour, category).await.expect("count");
    }
    let all = store.app_check_metrics(&a, h0).await.expect("metrics");
    let flat: Vec<_> = all.iter().map(|m| (m.hour, m.category, m.count)).collect();
    assert_eq!(
        flat,
        [
            (h0, Category::UnverifiedInvalid, 1),
            (h0, Category::Verified, 2),
            (h1, Category::UnverifiedOutdatedClient, 1)
        ]
    );
    assert_eq!(store.app_check_metrics(&a, h1).await.expect("since").len(), 1);

    assert_eq!(store.client(&a).await.expect("get").expect("a").ownership_verified_at, None);
    assert!(store.set_ownership_verified(&a, T0.plus(7)).await.expect("verified"));
    assert_eq!(store.client(&a).await.expect("get").expect("a").ownership_verified_at, Some(T0.plus(7)));
}

async fn listings_are_kept_by_item_id(store: &dyn Store) {
    let item = format!("item-{}", random_b64(9));
    assert_eq!(store.listing(&item).await.expect("none"), None);
    let mut l =
        Listing { item_id: item.clone(), publisher: Publisher::Individual("dev@example.com".into()), created_at: T0 };
    store.put_listing(&l).await.expect("put");
    assert_eq!(store.listing(&item).await.expect("get"), Some(l.clone()));
    l.publisher =
        Publisher::Group { name: "Team".into(), members: vec!["a@example.com".into(), "b@example.com".into()] };
    store.put_listing(&l).await.expect("replace");
    assert_eq!(store.listing(&item).await.expect("get"), Some(l));
    assert!(store.delete_listing(&item).await.expect("delete"));
    assert!(!store.delete_listing(&item).await.expect("twice"));
    assert_eq!(store.listing(&item).await.expect("gone"), None);
}

/// A user (with channel) for the membership checks; returns the id.
async fn another_user(store: &dyn Store) -> String {
    user_at(store, "example.com").await
}

/// A new user with an address at `domain`; returns its id.
async fn user_at(store: &dyn Store, domain: &str) -> String {
    let id = random_b64(9);
    let user = NewUser {
        id: id.clone(),
        email: format!("{}@{domain}", random_b64(6).to_lowercase()),
        name: Some("U".into()),
        password_hash: "$argon2id$x".into(),
        created_at: T0,
    };
    let channel = Channel {
        id: format!("UC{}", random_b64(9)),
        user_id: id.clone(),
        title: "U".into(),
        description: String::new(),
        created_at: T0,
    };
    store.create_user(&user, &channel).await.expect("user");
    id
}

async fn seeded_users_and_grants_are_stored_as_they_are(store: &dyn crate::seed::SeedStore) {
    let (client_id, _) = fixture(store).await;
    let users: Vec<(NewUser, Channel)> = (0..3)
        .map(|_| {
            let id = random_b64(9);
            let user = NewUser {
                id: id.clone(),
                email: format!("{}@seed.invalid", random_b64(9).to_lowercase()),
                name: None,
                password_hash: "!".into(),
                created_at: T0,
            };
            let channel = Channel {
                id: format!("UC{}", random_b64(9)),
                user_id: id,
                title: "seed".into(),
                description: String::new(),
                created_at: T0,
            };
            (user, channel)
        })
        .collect();
    let grants: Vec<Grant> = (0..6)
        .map(|i| {
            let c = code(&client_id, &users[i % 3].0.id);
            Grant { revoked_at: (i == 5).then_some(T0), ..grant_for(&c, T0) }
        })
        .collect();
    store.seed(&users, &grants).await.expect("seed");
    for g in &grants {
        let found = store.grant(&g.id).await.expect("get").expect("seeded");
        assert_eq!(&found.grant, g);
    }
    assert!(store.channel_of(&users[2].0.id).await.expect("channel").is_some());
    // All or none: a batch with a taken user id stores nothing.
    let again = vec![users[0].clone()];
    let more = grant_for(&code(&client_id, &users[0].0.id), T0);
    assert!(store.seed(&again, std::slice::from_ref(&more)).await.is_err());
    assert!(store.grant(&more.id).await.expect("get").is_none());
}
