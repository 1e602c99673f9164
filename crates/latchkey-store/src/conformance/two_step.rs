//! 2-step verification: turned on once with its recovery codes, each code used once, a TOTP step counted once,
//! turned off; passkey-only accounts; an operator's reset; each change with its event.

use super::{another_user, random_b64, T0};
use crate::prelude::*;
use crate::Session;
use latchkey_core::account::{AccountChange, EventKind};
use latchkey_core::passkey::PasskeyRecord;

fn codes(tag: u8) -> Vec<Vec<u8>> {
    (0..10).map(|i| vec![tag, i]).collect()
}

async fn sessions(store: &dyn Store, user: &str, tags: &[u8]) {
    for tag in tags {
        let s = Session {
            token_hash: vec![*tag; 32],
            user_id: user.into(),
            created_at: T0,
            expires_at: T0.plus(3600),
            method: Default::default(),
        };
        store.create_session(&s).await.expect("session");
    }
}

async fn kinds(store: &dyn Store, user: &str) -> Vec<EventKind> {
    store.account_events(user).await.expect("events").iter().map(|e| e.kind).collect()
}

/// Turning on stores the sealed secret and ten codes, once; a step counts once and never an earlier one; a code
/// is used once, and not after new codes replace it; turning off removes both and ends the other sessions.
pub(super) async fn two_step_verification_is_turned_on_used_and_off_with_its_events(store: &dyn Store) {
    let user = another_user(store).await;
    let on = AccountChange::TwoStepOn { secret: vec![9; 48], recovery_codes: codes(1) };
    assert_eq!(store.change_account(&user, &on, T0).await.expect("on"), Some(11));
    assert_eq!(store.change_account(&user, &on, T0).await.expect("on again"), Some(0), "on already");
    let totp = store.totp_of(&user).await.expect("read").expect("on");
    assert_eq!((totp.secret, totp.created_at, totp.last_used_at), (vec![9; 48], T0, None));
    assert!(store.totp_step_used(&user, 100, T0.plus(5)).await.expect("step"));
    assert!(!store.totp_step_used(&user, 100, T0.plus(6)).await.expect("step"), "the same step twice");
    assert!(!store.totp_step_used(&user, 99, T0.plus(6)).await.expect("step"), "an earlier step");
    assert!(store.totp_step_used(&user, 101, T0.plus(35)).await.expect("step"));
    assert_eq!(store.totp_of(&user).await.expect("read").expect("on").last_used_at, Some(T0.plus(35)));

    let first = AccountChange::RecoveryCodeUsed { code_hash: vec![1, 3] };
    assert_eq!(store.change_account(&user, &first, T0.plus(40)).await.expect("use"), Some(1));
    assert_eq!(store.change_account(&user, &first, T0.plus(41)).await.expect("use again"), Some(0), "used once");
    let unknown = AccountChange::RecoveryCodeUsed { code_hash: vec![7, 7] };
    assert_eq!(store.change_account(&user, &unknown, T0).await.expect("use"), Some(0));
    let counted = store.recovery_codes_of(&user).await.expect("count");
    assert_eq!((counted.unused, counted.created_at, counted.last_used_at), (9, Some(T0), Some(T0.plus(40))));
    let renewed = AccountChange::RecoveryCodesRenewed { recovery_codes: codes(2) };
    assert_eq!(store.change_account(&user, &renewed, T0.plus(50)).await.expect("renew"), Some(10));
    assert_eq!(store.recovery_codes_of(&user).await.expect("count").unused, 10);
    let old = AccountChange::RecoveryCodeUsed { code_hash: vec![1, 4] };
    assert_eq!(store.change_account(&user, &old, T0.plus(51)).await.expect("use"), Some(0), "the old set is void");

    sessions(store, &user, &[1, 2]).await;
    let off = AccountChange::TwoStepOff { keep: Some(vec![1; 32]) };
    assert_eq!(store.change_account(&user, &off, T0.plus(60)).await.expect("off"), Some(11));
    assert_eq!(store.totp_of(&user).await.expect("read"), None);
    assert_eq!(store.recovery_codes_of(&user).await.expect("count").unused, 0);
    assert!(store.session(&[1; 32], T0).await.expect("get").is_some(), "the asking session stays");
    assert!(store.session(&[2; 32], T0).await.expect("get").is_none(), "the other session ended");
    assert_eq!(store.change_account(&user, &off, T0).await.expect("off again"), Some(0));
    let renew_off = AccountChange::RecoveryCodesRenewed { recovery_codes: codes(3) };
    assert_eq!(store.change_account(&user, &renew_off, T0).await.expect("renew"), Some(0), "no codes while off");
    use EventKind::*;
    assert_eq!(kinds(store, &user).await, [TwoStepOn, RecoveryCodeUsed, RecoveryCodesRenewed, TwoStepOff]);
}

/// Every sealed secret is listed for re-encryption, and replaced only while it is the one read.
pub(super) async fn totp_secrets_are_reencrypted_only_as_read(store: &dyn Store) {
    let user = another_user(store).await;
    let on = AccountChange::TwoStepOn { secret: vec![5; 48], recovery_codes: codes(1) };
    store.change_account(&user, &on, T0).await.expect("on");
    assert!(store.totp_secrets().await.expect("list").contains(&(user.clone(), vec![5; 48])));
    assert!(!store.replace_totp_secret(&user, &[4; 48], &[6; 48]).await.expect("replace"), "changed meanwhile");
    assert!(store.replace_totp_secret(&user, &[5; 48], &[6; 48]).await.expect("replace"));
    assert_eq!(store.totp_of(&user).await.expect("read").expect("on").secret, vec![6; 48]);
}

/// An account loses its password only while it has a passkey, and then keeps its last passkey; an operator's
/// reset removes the second steps and passkeys and ends every session.
pub(super) async fn passkey_only_accounts_keep_a_way_in_and_a_reset_removes_second_steps(store: &dyn Store) {
    let user = another_user(store).await;
    let no_password = AccountChange::PasswordRemoved { keep: None };
    assert_eq!(store.change_account(&user, &no_password, T0).await.expect("remove"), Some(0), "no passkey yet");
    let key = PasskeyRecord {
        credential_id: random_b64(16),
        user_id: user.clone(),
        name: "Laptop".into(),
        credential: "{}".into(),
        created_at: T0,
        last_used_at: None,
    };
    store.change_account(&user, &AccountChange::PasskeyAdded { passkey: key.clone() }, T0).await.expect("add");
    let on = AccountChange::TwoStepOn { secret: vec![9; 48], recovery_codes: codes(1) };
    store.change_account(&user, &on, T0).await.expect("on");
    assert_eq!(store.change_account(&user, &no_password, T0).await.expect("remove"), Some(1));
    assert_eq!(store.user(&user).await.expect("read").expect("user").password_hash, "");
    assert_eq!(store.totp_of(&user).await.expect("read"), None, "2-step verification guards passwords: it goes");
    let last = AccountChange::PasskeyRemoved { credential_id: key.credential_id.clone(), keep: None };
    assert_eq!(store.change_account(&user, &last, T0).await.expect("remove"), Some(0), "the last way in stays");

    let other = another_user(store).await;
    let key = PasskeyRecord { credential_id: random_b64(16), user_id: other.clone(), ..key };
    store.change_account(&other, &AccountChange::PasskeyAdded { passkey: key }, T0).await.expect("add");
    store.change_account(&other, &on, T0).await.expect("on");
    sessions(store, &other, &[3]).await;
    assert_eq!(store.change_account(&other, &AccountChange::TwoStepReset, T0).await.expect("reset"), Some(12));
    assert_eq!(store.totp_of(&other).await.expect("read"), None);
    assert!(store.passkeys_of(&other).await.expect("list").is_empty());
    assert!(store.session(&[3; 32], T0).await.expect("get").is_none(), "every session ended");
    use EventKind::*;
    assert_eq!(kinds(store, &user).await, [PasskeyAdded, TwoStepOn, PasswordRemoved]);
    assert_eq!(kinds(store, &other).await, [PasskeyAdded, TwoStepOn, TwoStepReset]);
}
