//! An account's passkeys, for the account page (and, later, the operator): add one, remove one. Each change goes
//! through the store's `change_account`, so its security event (CAEP `credential-change`) commits with it, and a
//! removal ends the account's other sessions.

use crate::{AdminError, AdminResult};
use latchkey_core::account::AccountChange;
use latchkey_core::passkey::PasskeyRecord;
use latchkey_core::time::UnixTime;
use latchkey_store::Store;

/// Adds a passkey to its account (`passkey.user_id`). A credential id that an account holds already is refused.
pub async fn add_passkey(store: &dyn Store, passkey: PasskeyRecord, now: UnixTime) -> AdminResult<()> {
    let user_id = passkey.user_id.clone();
    match store.change_account(&user_id, &AccountChange::PasskeyAdded { passkey }, now).await? {
        Some(1) => Ok(()),
        Some(_) => Err(AdminError::Conflict("this passkey is registered already".into())),
        None => Err(AdminError::NotFound(format!("user {user_id}"))),
    }
}

/// Removes one of the account's passkeys; every session of the account but `keep` ends.
pub async fn remove_passkey(
    store: &dyn Store,
    user_id: &str,
    credential_id: &str,
    keep: Option<Vec<u8>>,
    now: UnixTime,
) -> AdminResult<()> {
    let change = AccountChange::PasskeyRemoved { credential_id: credential_id.into(), keep };
    match store.change_account(user_id, &change, now).await? {
        Some(1) => Ok(()),
        Some(_) => Err(AdminError::NotFound("that passkey is not one of this account's".into())),
        None => Err(AdminError::NotFound(format!("user {user_id}"))),
    }
}
