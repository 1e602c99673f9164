//! An account's sign-in methods beyond its password: 2-step verification (an authenticator app and its recovery
//! codes), "passkey only", and the operator's reset for a person locked out. Each change goes through the store's
//! `change_account`, so its security event (CAEP `credential-change`) commits with it. The TOTP arithmetic and the
//! secrets' sealing are the server's; this module takes them sealed and hashed.

use crate::results::SignInMethod;
use crate::{AdminError, AdminResult};
use latchkey_core::account::AccountChange;
use latchkey_core::time::UnixTime;
use latchkey_store::{Store, User};

/// The account's sign-in methods, oldest first, never a secret: its password (unless it has none), its
/// authenticator app and recovery codes (while 2-step verification is on), and its passkeys.
pub async fn methods(store: &dyn Store, u: &User) -> AdminResult<Vec<SignInMethod>> {
    let mut out = Vec::new();
    if !u.password_hash.is_empty() {
        out.push(SignInMethod {
            kind: "password",
            name: "password".into(),
            created_at: u.created_at.0,
            last_used_at: None,
        });
    }
    if let Some(totp) = store.totp_of(&u.id).await? {
        let at = |t: Option<UnixTime>| t.map(|t| t.0);
        out.push(SignInMethod {
            kind: "totp",
            name: "authenticator app".into(),
            created_at: totp.created_at.0,
            last_used_at: at(totp.last_used_at),
        });
        let codes = store.recovery_codes_of(&u.id).await?;
        out.push(SignInMethod {
            kind: "recovery_codes",
            name: format!("{} recovery codes left", codes.unused),
            created_at: codes.created_at.map_or(totp.created_at.0, |t| t.0),
            last_used_at: at(codes.last_used_at),
        });
    }
    out.extend(store.passkeys_of(&u.id).await?.into_iter().map(|k| SignInMethod {
        kind: "passkey",
        name: k.name,
        created_at: k.created_at.0,
        last_used_at: k.last_used_at.map(|t| t.0),
    }));
    Ok(out)
}

/// Applies a change that must touch something, or says why it did not: `none` is the message for a change that
/// found nothing to do.
async fn change(
    store: &dyn Store,
    user_id: &str,
    change: &AccountChange,
    now: UnixTime,
    none: &str,
) -> AdminResult<()> {
    match store.change_account(user_id, change, now).await? {
        Some(0) => Err(AdminError::Conflict(none.into())),
        Some(_) => Ok(()),
        None => Err(AdminError::NotFound(format!("user {user_id}"))),
    }
}

/// Turns 2-step verification on with the authenticator app's sealed secret and the recovery codes' hashes.
pub async fn turn_on(
    store: &dyn Store,
    user_id: &str,
    secret: Vec<u8>,
    recovery_codes: Vec<Vec<u8>>,
    now: UnixTime,
) -> AdminResult<()> {
    let on = AccountChange::TwoStepOn { secret, recovery_codes };
    change(store, user_id, &on, now, "2-step verification is on already").await
}

/// Turns 2-step verification off; every session but `keep` ends.
pub async fn turn_off(store: &dyn Store, user_id: &str, keep: Option<Vec<u8>>, now: UnixTime) -> AdminResult<()> {
    change(store, user_id, &AccountChange::TwoStepOff { keep }, now, "2-step verification is off already").await
}

/// Replaces the recovery codes (their hashes) while 2-step verification is on.
pub async fn renew_codes(store: &dyn Store, user_id: &str, codes: Vec<Vec<u8>>, now: UnixTime) -> AdminResult<()> {
    let renewed = AccountChange::RecoveryCodesRenewed { recovery_codes: codes };
    change(store, user_id, &renewed, now, "2-step verification is off: there are no recovery codes to replace").await
}

/// Uses a recovery code (its hash): false when it is unknown or used already.
pub async fn use_code(store: &dyn Store, user_id: &str, code_hash: Vec<u8>, now: UnixTime) -> AdminResult<bool> {
    Ok(store.change_account(user_id, &AccountChange::RecoveryCodeUsed { code_hash }, now).await? == Some(1))
}

/// Removes the account's password ("passkey only"); every session but `keep` ends.
pub async fn remove_password(
    store: &dyn Store,
    user_id: &str,
    keep: Option<Vec<u8>>,
    now: UnixTime,
) -> AdminResult<()> {
    let why = "an account without a password needs a passkey first (or has no password already)";
    change(store, user_id, &AccountChange::PasswordRemoved { keep }, now, why).await
}

/// The operator's reset for a person locked out (`latchkey admin user reset-2sv`): the authenticator app, the
/// recovery codes and the passkeys go, and every session ends. The person signs in with their password and enrols
/// again; an account without a password needs a new one too (`latchkey admin user password`).
pub async fn reset(store: &dyn Store, u: &User, now: UnixTime) -> AdminResult<()> {
    let why = "this account has no authenticator app, recovery codes or passkeys: nothing to reset";
    change(store, &u.id, &AccountChange::TwoStepReset, now, why).await
}
