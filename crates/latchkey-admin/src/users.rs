//! The people with accounts: create, list, show, delete, disable, and a required password change.

use crate::clock::OsRandom;
use crate::results::{UserChanged, UserCreated, UserDetail, UserList, UserView};
use crate::{accounts, random_digits, AdminError, AdminResult};
use latchkey_core::account::AccountChange;
use latchkey_core::time::UnixTime;
use latchkey_store::{Channel, NewUser, Store, StoreError, User};

/// Creates a user and their channel.
pub async fn user_create(
    store: &dyn Store,
    email: &str,
    password: &str,
    name: Option<&str>,
    now: UnixTime,
) -> AdminResult<UserCreated> {
    let email = email.trim();
    if !valid_email(email) {
        return Err(AdminError::Invalid(format!("not an e-mail address: {email}")));
    }
    let password_hash = accounts::new_password_hash(password)?;
    let id = random_digits(21);
    let name = name.map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned);
    let user = NewUser { id: id.clone(), email: email.into(), name: name.clone(), password_hash, created_at: now };
    let channel = Channel {
        id: format!("UC{}", latchkey_core::secret::random_b64(16, &OsRandom)),
        user_id: id.clone(),
        title: name.clone().unwrap_or_else(|| email.split('@').next().unwrap_or(email).to_owned()),
        description: String::new(),
        created_at: now,
    };
    match store.create_user(&user, &channel).await {
        Err(StoreError::Conflict(_)) => Err(AdminError::Conflict(format!("a user with e-mail {email} exists"))),
        other => other.map_err(AdminError::from),
    }?;
    Ok(UserCreated { user_id: id, email: email.into(), name, channel_id: channel.id })
}

pub(crate) fn valid_email(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else { return false };
    !local.is_empty()
        && !domain.is_empty()
        && !domain.contains('@')
        && email.len() <= 254
        && !email.contains(char::is_whitespace)
}

/// Lists users.
pub async fn user_list(store: &dyn Store) -> AdminResult<UserList> {
    Ok(UserList { users: store.users().await?.iter().map(UserView::from).collect() })
}

/// The user with this id or e-mail address.
pub async fn find_user(store: &dyn Store, id_or_email: &str) -> Result<User, AdminError> {
    let found = match store.user(id_or_email).await? {
        Some(u) => Some(u),
        None => store.user_by_email(id_or_email).await?,
    };
    found.ok_or_else(|| AdminError::NotFound(format!("user {id_or_email}")))
}

/// Shows a user, by id or e-mail.
pub async fn user_show(store: &dyn Store, id_or_email: &str) -> AdminResult<UserDetail> {
    let u = find_user(store, id_or_email).await?;
    Ok(UserDetail {
        channel_id: store.channel_of(&u.id).await?.map(|c| c.id),
        methods: crate::two_step::methods(store, &u).await?,
        user: UserView::from(&u),
    })
}

/// Deletes a user with their channel, sessions and grants (an `account_purged` event).
pub async fn user_delete(store: &dyn Store, id_or_email: &str, now: UnixTime) -> AdminResult<UserChanged> {
    let u = find_user(store, id_or_email).await?;
    if store.change_account(&u.id, &AccountChange::Delete, now).await?.is_none() {
        return Err(AdminError::NotFound(format!("user {id_or_email}")));
    }
    Ok(UserChanged { user_id: u.id, deleted: Some(true), disabled: None })
}

/// Marks a user's password as compromised: every browser session ends, and the apps the user granted access
/// are told the account must change its password (an `account-credential-change-required` security event).
pub async fn user_require_password_change(
    store: &dyn Store,
    id_or_email: &str,
    now: UnixTime,
) -> AdminResult<UserChanged> {
    let u = find_user(store, id_or_email).await?;
    if store.change_account(&u.id, &AccountChange::CredentialChangeRequired, now).await?.is_none() {
        return Err(AdminError::NotFound(format!("user {id_or_email}")));
    }
    Ok(UserChanged { user_id: u.id, deleted: None, disabled: None })
}

/// Disables or re-enables a user. A disabled user cannot sign in, their browser sessions end at once and their
/// tokens stop working (an `account_disabled` or `account_enabled` event, when the state changed).
pub async fn user_set_disabled(
    store: &dyn Store,
    id_or_email: &str,
    disabled: bool,
    now: UnixTime,
) -> AdminResult<UserChanged> {
    let u = find_user(store, id_or_email).await?;
    let change = if disabled { AccountChange::Disable } else { AccountChange::Enable };
    if store.change_account(&u.id, &change, now).await?.is_none() {
        return Err(AdminError::NotFound(format!("user {id_or_email}")));
    }
    Ok(UserChanged { user_id: u.id, deleted: None, disabled: Some(disabled) })
}

/// Sets a user's password as an operator (no current password): every session ends.
pub async fn user_set_password(
    store: &dyn Store,
    id_or_email: &str,
    new_password: &str,
    now: UnixTime,
) -> AdminResult<crate::results::UserChanged> {
    let user = find_user(store, id_or_email).await?;
    accounts::change_password(store, &user, true, new_password, None, now).await?;
    Ok(crate::results::UserChanged { user_id: user.id, deleted: None, disabled: None })
}

/// Resets a locked-out person's second steps (`latchkey admin user reset-2sv`), by id or e-mail: see
/// [`crate::two_step::reset`].
pub async fn user_reset_two_step(store: &dyn Store, id_or_email: &str, now: UnixTime) -> AdminResult<UserChanged> {
    let u = find_user(store, id_or_email).await?;
    crate::two_step::reset(store, &u, now).await?;
    Ok(UserChanged { user_id: u.id, deleted: None, disabled: None })
}
