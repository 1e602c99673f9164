//! Administrative operations on the store, shared by the `latchkey admin` CLI, the console's pages and its JSON
//! API: each returns a typed result of [`results`] (which the CLI prints and the API sends, serialized) or a typed
//! [`AdminError`]. Who may act on a project (its members)
//! is checked in [`members`]; the console's API keys live in [`api_keys`], the signing keys and the system
//! secrets that encrypt them in [`signing_keys`].

pub mod accounts;
pub mod actor;
pub mod api_keys;
pub mod client_secrets;
pub mod content_owners;
pub mod members;
pub mod orgs;
pub mod quotas;
pub mod results;
pub mod service_account_keys;
pub mod service_accounts;
pub mod signing_keys;
pub mod streams;

pub use actor::{Access, Actor, ClientRef, Right};
pub use client_secrets::{client_secret_add, client_secret_change};
pub use members::{
    project_create, project_delete, project_list, project_set_api, project_set_time_based_access, project_show,
};
pub use signing_keys::{key_kind, key_list, key_retire, key_rotate, secrets_reencrypt, secrets_rotate};

use crate::clock::OsRandom;
use latchkey_core::account::AccountChange;
use latchkey_core::app_check::{self, AppCheckAction, AppCheckError, AppCheckState, Category};
use latchkey_core::client::{self, Client, ClientDetails, ClientType, FieldError, RestoreRefusal};
use latchkey_core::secret::{random_bytes, Secret};
use latchkey_core::time::UnixTime;
use latchkey_store::{Channel, NewUser, Store, StoreError, User};
use results::{
    AppCheckMetrics, AppCheckStatus, ClientChanged, ClientList, ClientView, DebugSecret, HourCount, Purged,
    UserChanged, UserCreated, UserDetail, UserList, UserView,
};

mod listings;
pub use listings::{listing_add, listing_remove, listing_show, verify_ownership, ListingDirectory, StoreDirectory};

/// An administrative operation that failed, with a message for the operator.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The thing named does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The input breaks a rule.
    #[error("invalid: {0}")]
    Invalid(String),
    /// Fields of a form break rules: each with the message shown next to it.
    #[error("invalid: {}", fields_text(.0))]
    Fields(Vec<FieldError>),
    /// The developer may not do this (they can see the project, so saying so leaks nothing).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The change conflicts with the current state (a member already added, the last owner).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The client is deleted already.
    #[error("conflict: client {0} is deleted already")]
    AlreadyDeleted(String),
    /// The client cannot be restored (it is not deleted, or its restore window has passed).
    #[error("invalid: client {0}: {1}")]
    NotRestorable(String, RestoreRefusal),
    /// An App Check action that must be confirmed was not (`enforcing`, `unenforcing`): each surface says how to.
    #[error("invalid: {0} must be confirmed")]
    Unconfirmed(&'static str),
    /// Asked again too soon (a stream's verification); the message says when to retry.
    #[error("too soon: {0}")]
    TooSoon(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn fields_text(errors: &[FieldError]) -> String {
    errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>().join("; ")
}

/// The result of an administrative operation.
pub type AdminResult<T = serde_json::Value> = Result<T, AdminError>;

/// A random identifier of lower-case letters and digits.
pub(crate) fn random_id(len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    random_bytes(len, &OsRandom).into_iter().map(|b| ALPHABET[usize::from(b) % ALPHABET.len()] as char).collect()
}

fn random_digits(len: usize) -> String {
    random_bytes(len, &OsRandom).into_iter().map(|b| char::from(b'0' + b % 10)).collect()
}

/// What a new client is made of.
#[derive(Debug, Clone)]
pub struct NewClient {
    /// The project.
    pub project_id: String,
    /// The type.
    pub client_type: ClientType,
    /// The name.
    pub name: String,
    /// Authorized redirect URIs.
    pub redirect_uris: Vec<String>,
    /// Type-specific fields.
    pub details: ClientDetails,
}

/// Whether a client of type `t` has the type-specific field `field` (`bundle_id`, `app_check`, ...).
fn type_has_field(t: ClientType, field: &str) -> bool {
    match field {
        "bundle_id" | "store_id" | "team_id" | "app_check" => t == ClientType::Mobile,
        "uwp_store_id" | "package_sid" => t == ClientType::UniversalDesktop,
        "extension_item_id" => t == ClientType::BrowserExtension,
        _ => true,
    }
}

/// The fields `given` (name, whether given) that a client of type `t` does not have, each refused with its
/// message: the one rule the CLI, the console's pages and the JSON API apply, on creation and on edit.
fn foreign_fields(t: ClientType, given: &[(&'static str, bool)]) -> Vec<FieldError> {
    given
        .iter()
        .filter(|(field, sent)| *sent && !type_has_field(t, field))
        .map(|&(field, _)| {
            let message = if field == "app_check" {
                "App Check is for mobile-platform clients.".to_owned()
            } else {
                format!("{} clients have no {field}.", t.label())
            };
            FieldError { field, message }
        })
        .collect()
}

/// Creates a client; the secret is shown this once. A type-specific field of another type is refused.
pub async fn client_create(store: &dyn Store, actor: &Actor, new: NewClient, now: UnixTime) -> AdminResult<ClientView> {
    actor.project(store, &new.project_id, Right::Edit).await?;
    if store.clients(Some(&new.project_id)).await?.len() >= quotas::CLIENTS_PER_PROJECT {
        return Err(quotas::reached("OAuth clients in the project", quotas::CLIENTS_PER_PROJECT));
    }
    let d = &new.details;
    let foreign = foreign_fields(
        new.client_type,
        &[
            ("bundle_id", d.bundle_id.is_some()),
            ("store_id", d.store_id.is_some()),
            ("team_id", d.team_id.is_some()),
            ("app_check", d.app_check),
            ("uwp_store_id", d.uwp_store_id.is_some()),
            ("package_sid", d.package_sid.is_some()),
            ("extension_item_id", d.extension_item_id.is_some()),
        ],
    );
    if !foreign.is_empty() {
        return Err(AdminError::Fields(foreign));
    }
    let errors = client::validate_fields(new.client_type, &new.name, &new.redirect_uris, &new.details);
    if !errors.is_empty() {
        return Err(AdminError::Fields(errors));
    }
    let (secret, stored) = client_secrets::generate(now);
    // A client created with App Check on starts enabled (it has no traffic yet to wait for).
    let app_check = if new.client_type == ClientType::Mobile && new.details.app_check {
        app_check::AppCheck { state: AppCheckState::Enabled, pending: None }
    } else {
        app_check::AppCheck::default()
    };
    let client = Client {
        client_id: format!("lkapp-{}", random_id(24)),
        project_id: new.project_id,
        name: new.name.trim().into(),
        client_type: new.client_type,
        redirect_uris: new.redirect_uris,
        secrets: vec![stored],
        details: new.details,
        created_at: now,
        deleted_at: None,
        last_used_at: None,
        app_check,
        ownership_verified_at: None,
    };
    store.create_client(&client).await?;
    Ok(ClientView { client_secret: Some(secret.into_inner()), ..ClientView::from(&client) })
}

/// Lists clients, of one project or (the operator) all.
pub async fn client_list(store: &dyn Store, actor: &Actor, project_id: Option<&str>) -> AdminResult<ClientList> {
    match (actor, project_id) {
        (_, Some(project_id)) => drop(actor.project(store, project_id, Right::View).await?),
        (Actor::Operator, None) => {}
        (Actor::Developer(_), None) => {
            return Err(AdminError::Invalid("name the project whose clients to list".into()))
        }
    }
    Ok(ClientList { clients: store.clients(project_id).await?.iter().map(ClientView::from).collect() })
}

/// Shows a client (never its secret, which is stored only as a hash).
pub async fn client_show(store: &dyn Store, actor: &Actor, at: ClientRef<'_>) -> AdminResult<ClientView> {
    Ok(ClientView::from(&actor.client(store, at, Right::View).await?))
}

/// Deletes a client (restorable for `client_restore_days`, 30 by default); a deleted one is refused.
pub async fn client_delete(
    store: &dyn Store,
    actor: &Actor,
    at: ClientRef<'_>,
    now: UnixTime,
) -> AdminResult<ClientChanged> {
    let client_id = at.id;
    let c = actor.client(store, at, Right::Edit).await?;
    if c.deleted_at.is_some() || !store.delete_client(client_id, now).await? {
        return Err(AdminError::AlreadyDeleted(client_id.into()));
    }
    Ok(ClientChanged { client_id: client_id.into(), deleted: Some(true), restored: None })
}

/// The client-lifecycle settings (`client_unused_days`, `client_restore_days`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lifecycle {
    /// Days without tokens after which a client is deleted automatically.
    pub unused_days: i64,
    /// Days a deleted client can be restored.
    pub restore_days: i64,
}

impl crate::config::Config {
    /// The client-lifecycle settings. (Here rather than beside the settings, so that the configuration names no
    /// admin module.)
    pub fn client_lifecycle(&self) -> Lifecycle {
        Lifecycle { unused_days: self.client_unused_days, restore_days: self.client_restore_days }
    }
}

impl Default for Lifecycle {
    fn default() -> Self {
        Self { unused_days: 180, restore_days: 30 }
    }
}

pub(crate) async fn find_client(store: &dyn Store, client_id: &str) -> Result<Client, AdminError> {
    store.client(client_id).await?.ok_or_else(|| AdminError::NotFound(format!("client {client_id}")))
}

/// Restores a deleted client within the restore window: its grants work again.
pub async fn client_restore(
    store: &dyn Store,
    actor: &Actor,
    at: ClientRef<'_>,
    lifecycle: Lifecycle,
    now: UnixTime,
) -> AdminResult<ClientChanged> {
    let client_id = at.id;
    let c = actor.client(store, at, Right::Edit).await?;
    let refused = |e| AdminError::NotRestorable(client_id.into(), e);
    client::check_restore(c.deleted_at, now, lifecycle.restore_days).map_err(refused)?;
    // Restored or purged meanwhile.
    if !store.restore_client(client_id, client::purge_cutoff(now, lifecycle.restore_days)).await? {
        return Err(refused(RestoreRefusal::WindowPassed { restore_days: lifecycle.restore_days }));
    }
    Ok(ClientChanged { client_id: client_id.into(), deleted: None, restored: Some(true) })
}

/// An edit of a client: each field given replaces the stored one.
#[derive(Debug, Clone, Default)]
pub struct ClientEdit {
    /// The name.
    pub name: Option<String>,
    /// The redirect URIs (all of them).
    pub redirect_uris: Option<Vec<String>>,
    /// Mobile: the bundle ID (frozen once App Check is used).
    pub bundle_id: Option<String>,
    /// Mobile: the app-store ID.
    pub store_id: Option<String>,
    /// Mobile: the team ID.
    pub team_id: Option<String>,
    /// Universal desktop: the store ID.
    pub uwp_store_id: Option<String>,
    /// Universal desktop: the package SID.
    pub package_sid: Option<String>,
    /// Browser extension: the item ID.
    pub extension_item_id: Option<String>,
}

/// Edits a live client: a field of another type is refused, the type's rules are checked again and the bundle
/// ID is frozen once App Check is used.
pub async fn client_update(
    store: &dyn Store,
    actor: &Actor,
    at: ClientRef<'_>,
    edit: ClientEdit,
) -> AdminResult<ClientView> {
    let client_id = at.id;
    let old = actor.client_to_edit(store, at).await?;
    let foreign = foreign_fields(
        old.client_type,
        &[
            ("bundle_id", edit.bundle_id.is_some()),
            ("store_id", edit.store_id.is_some()),
            ("team_id", edit.team_id.is_some()),
            ("uwp_store_id", edit.uwp_store_id.is_some()),
            ("package_sid", edit.package_sid.is_some()),
            ("extension_item_id", edit.extension_item_id.is_some()),
        ],
    );
    if !foreign.is_empty() {
        return Err(AdminError::Fields(foreign));
    }
    let mut new = old.clone();
    if let Some(name) = edit.name {
        new.name = name.trim().into();
    }
    if let Some(uris) = edit.redirect_uris {
        new.redirect_uris = uris;
    }
    let d = &mut new.details;
    for (field, value) in [
        (&mut d.bundle_id, edit.bundle_id),
        (&mut d.store_id, edit.store_id),
        (&mut d.team_id, edit.team_id),
        (&mut d.uwp_store_id, edit.uwp_store_id),
        (&mut d.package_sid, edit.package_sid),
        (&mut d.extension_item_id, edit.extension_item_id),
    ] {
        if let Some(v) = value {
            // An empty value clears the field.
            *field = Some(v).filter(|v| !v.is_empty());
        }
    }
    let errors = client::validate_update(&old, &new.name, &new.redirect_uris, &new.details);
    if !errors.is_empty() {
        return Err(AdminError::Fields(errors));
    }
    if !store.update_client(&new).await? {
        return Err(AdminError::NotFound(format!("client {client_id}")));
    }
    Ok(ClientView::from(&new))
}

/// Deletes (restorably) the clients unused for `unused_days`, and purges with their grants the clients
/// deleted more than `restore_days` ago. Run by the server's upkeep and by `latchkey admin client purge`.
pub async fn client_purge(store: &dyn Store, lifecycle: Lifecycle, now: UnixTime) -> AdminResult<Purged> {
    let deleted_unused = store.delete_unused_clients(client::unused_cutoff(now, lifecycle.unused_days), now).await?;
    let purged = store.purge_deleted_clients(client::purge_cutoff(now, lifecycle.restore_days)).await?;
    Ok(Purged { deleted_unused, purged })
}

/// Applies an App Check action (`docs/decisions.md`, "App Check"); the change takes effect after
/// `propagation_secs` (`app_check_propagation_secs`).
pub async fn client_app_check(
    store: &dyn Store,
    actor: &Actor,
    at: ClientRef<'_>,
    action: AppCheckAction,
    confirmed: bool,
    propagation_secs: i64,
    now: UnixTime,
) -> AdminResult<AppCheckStatus> {
    let client_id = at.id;
    let mut c = actor.client_to_edit(store, at).await?;
    c.app_check = app_check::apply(&c, c.app_check, action, confirmed, now, propagation_secs).map_err(|e| match e {
        AppCheckError::NotConfirmed(what) => AdminError::Unconfirmed(what),
        e => AdminError::Invalid(format!("client {client_id}: {e}")),
    })?;
    // The switch of the client's fields follows the state asked for: on, the bundle ID is frozen.
    c.details.app_check = c.app_check.target() != AppCheckState::Disabled;
    if !store.update_client(&c).await? {
        return Err(AdminError::NotFound(format!("client {client_id}")));
    }
    Ok(AppCheckStatus::of(&c, now))
}

/// The App Check state in force and the change on its way.
pub async fn client_app_check_status(
    store: &dyn Store,
    actor: &Actor,
    at: ClientRef<'_>,
    now: UnixTime,
) -> AdminResult<AppCheckStatus> {
    Ok(AppCheckStatus::of(&actor.client(store, at, Right::View).await?, now))
}

/// App Check counts of the last `hours` hours, per hour and category.
pub async fn client_app_check_metrics(
    store: &dyn Store,
    actor: &Actor,
    at: ClientRef<'_>,
    hours: i64,
    now: UnixTime,
) -> AdminResult<AppCheckMetrics> {
    let c = actor.client(store, at, Right::View).await?;
    let since = UnixTime(now.0 - now.0.rem_euclid(3600) - (hours.max(1) - 1) * 3600);
    let counts = store.app_check_metrics(&c.client_id, since).await?;
    let totals = Category::ALL
        .iter()
        .map(|&k| (k.as_str(), counts.iter().filter(|m| m.category == k).map(|m| m.count).sum()))
        .collect();
    let hourly = counts.iter().map(|m| HourCount { hour: m.hour.0, category: m.category, count: m.count }).collect();
    Ok(AppCheckMetrics { client_id: c.client_id, since: since.0, totals, hourly })
}

/// Registers a new debug secret for a mobile client (replacing any earlier one); shown this once.
pub async fn client_app_check_debug_secret(
    store: &dyn Store,
    actor: &Actor,
    at: ClientRef<'_>,
) -> AdminResult<DebugSecret> {
    let client_id = at.id;
    let c = actor.client(store, at, Right::Edit).await?;
    if c.client_type != ClientType::Mobile {
        return Err(AdminError::Invalid("App Check is available for mobile-platform clients only".into()));
    }
    let secret = Secret::generate("lkd_", &OsRandom);
    store.set_app_check_debug_secret(client_id, Some(&secret.hash())).await?;
    Ok(DebugSecret { client_id: client_id.into(), debug_secret: secret.into_inner() })
}

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

pub(crate) async fn find_user(store: &dyn Store, id_or_email: &str) -> Result<User, AdminError> {
    let found = match store.user(id_or_email).await? {
        Some(u) => Some(u),
        None => store.user_by_email(id_or_email).await?,
    };
    found.ok_or_else(|| AdminError::NotFound(format!("user {id_or_email}")))
}

/// Shows a user, by id or e-mail.
pub async fn user_show(store: &dyn Store, id_or_email: &str) -> AdminResult<UserDetail> {
    let u = find_user(store, id_or_email).await?;
    Ok(UserDetail { channel_id: store.channel_of(&u.id).await?.map(|c| c.id), user: UserView::from(&u) })
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
