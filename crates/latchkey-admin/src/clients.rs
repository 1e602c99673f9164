//! The clients of a project: create, list, show, update, delete, restore, purge, and their App Check.

use crate::actor::{Actor, ClientRef, Right};
use crate::clock::OsRandom;
use crate::results::{
    AppCheckMetrics, AppCheckStatus, ClientChanged, ClientList, ClientView, DebugSecret, HourCount, Purged,
};
use crate::{client_secrets, quotas, random_id, AdminError, AdminResult};
use latchkey_core::app_check::{self, AppCheckAction, AppCheckError, AppCheckState, Category};
use latchkey_core::client::{self, Client, ClientDetails, ClientType, FieldError, RestoreRefusal};
use latchkey_core::secret::Secret;
use latchkey_core::time::UnixTime;
use latchkey_store::Store;

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
        registration: None,
        project_rotates: false,
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

/// Deletes (restorably) the clients unused for `unused_days` (self-registered ones: for
/// [`client::REGISTERED_UNUSED_DAYS`]), and purges with their grants the clients deleted more than `restore_days`
/// ago. Run by the server's upkeep and by `latchkey admin client purge`.
pub async fn client_purge(store: &dyn Store, lifecycle: Lifecycle, now: UnixTime) -> AdminResult<Purged> {
    let unused = client::unused_cutoff(now, lifecycle.unused_days);
    let registered = client::unused_cutoff(now, client::REGISTERED_UNUSED_DAYS);
    let deleted_unused = store.delete_unused_clients(unused, registered, now).await?;
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
