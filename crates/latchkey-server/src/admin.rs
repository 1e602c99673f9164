//! Administrative operations on the store, shared by the `latchkey admin` CLI (and later the console): each
//! returns the JSON object the CLI prints.

use crate::keys;
use crate::password;
use latchkey_core::client::{self, Client, ClientDetails, ClientType};
use latchkey_core::secret::{random_bytes, Secret};
use latchkey_core::time::UnixTime;
use latchkey_store::{Channel, KeyKind, NewUser, Project, Store, StoreError, User};
use serde_json::{json, Value};

/// An administrative operation that failed, with a message for the operator.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The thing named does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The input breaks a rule.
    #[error("invalid: {0}")]
    Invalid(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The result of an administrative operation.
pub type AdminResult = Result<Value, AdminError>;

/// A random identifier of lower-case letters and digits.
fn random_id(len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    random_bytes(len).into_iter().map(|b| ALPHABET[usize::from(b) % ALPHABET.len()] as char).collect()
}

fn random_digits(len: usize) -> String {
    random_bytes(len).into_iter().map(|b| char::from(b'0' + b % 10)).collect()
}

/// Creates a project.
pub async fn project_create(store: &dyn Store, name: &str, now: UnixTime) -> AdminResult {
    let name = name.trim();
    if name.is_empty() {
        return Err(AdminError::Invalid("a project needs a name".into()));
    }
    let id = format!("project-{}", random_id(10));
    store.create_project(&Project { id: id.clone(), name: name.into(), api_enabled: false, created_at: now }).await?;
    Ok(json!({ "project_id": id, "name": name, "api_enabled": false }))
}

/// Enables or disables the data API of a project.
pub async fn project_set_api(store: &dyn Store, id: &str, enabled: bool) -> AdminResult {
    if !store.set_api_enabled(id, enabled).await? {
        return Err(AdminError::NotFound(format!("project {id}")));
    }
    Ok(json!({ "project_id": id, "api_enabled": enabled }))
}

fn project_json(p: &Project) -> Value {
    json!({ "project_id": p.id, "name": p.name, "api_enabled": p.api_enabled, "created_at": p.created_at.0 })
}

/// Lists projects.
pub async fn project_list(store: &dyn Store) -> AdminResult {
    Ok(json!({ "projects": store.projects().await?.iter().map(project_json).collect::<Vec<_>>() }))
}

/// Shows a project with its clients.
pub async fn project_show(store: &dyn Store, id: &str) -> AdminResult {
    let p = store.project(id).await?.ok_or_else(|| AdminError::NotFound(format!("project {id}")))?;
    let mut v = project_json(&p);
    v["clients"] = store.clients(Some(id)).await?.iter().map(client_json).collect();
    Ok(v)
}

/// Deletes a project, its clients and their grants.
pub async fn project_delete(store: &dyn Store, id: &str) -> AdminResult {
    if !store.delete_project(id).await? {
        return Err(AdminError::NotFound(format!("project {id}")));
    }
    Ok(json!({ "project_id": id, "deleted": true }))
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

/// Creates a client; the secret is shown this once.
pub async fn client_create(store: &dyn Store, new: NewClient, now: UnixTime) -> AdminResult {
    if store.project(&new.project_id).await?.is_none() {
        return Err(AdminError::NotFound(format!("project {}", new.project_id)));
    }
    let errors = client::validate_fields(new.client_type, &new.name, &new.redirect_uris, &new.details);
    if !errors.is_empty() {
        let text: Vec<String> = errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
        return Err(AdminError::Invalid(text.join("; ")));
    }
    let secret = Secret::generate("lks_");
    let client = Client {
        client_id: format!("lkapp-{}", random_id(24)),
        project_id: new.project_id,
        name: new.name.trim().into(),
        client_type: new.client_type,
        redirect_uris: new.redirect_uris,
        secret_hash: secret.hash(),
        details: new.details,
        created_at: now,
        deleted_at: None,
    };
    store.create_client(&client).await?;
    let mut v = client_json(&client);
    v["client_secret"] = secret.into_inner().into();
    Ok(v)
}

fn client_json(c: &Client) -> Value {
    json!({
        "client_id": c.client_id,
        "project_id": c.project_id,
        "name": c.name,
        "type": c.client_type.as_str(),
        "redirect_uris": c.redirect_uris,
        "bundle_id": c.details.bundle_id,
        "store_id": c.details.store_id,
        "team_id": c.details.team_id,
        "app_check": c.details.app_check,
        "uwp_store_id": c.details.uwp_store_id,
        "package_sid": c.details.package_sid,
        "extension_item_id": c.details.extension_item_id,
        "created_at": c.created_at.0,
        "deleted_at": c.deleted_at.map(|t| t.0),
    })
}

/// Lists clients, of one project or all.
pub async fn client_list(store: &dyn Store, project_id: Option<&str>) -> AdminResult {
    Ok(json!({ "clients": store.clients(project_id).await?.iter().map(client_json).collect::<Vec<_>>() }))
}

/// Shows a client (never its secret, which is stored only as a hash).
pub async fn client_show(store: &dyn Store, client_id: &str) -> AdminResult {
    let c = store.client(client_id).await?.ok_or_else(|| AdminError::NotFound(format!("client {client_id}")))?;
    Ok(client_json(&c))
}

/// Deletes a client (restorable for 30 days).
pub async fn client_delete(store: &dyn Store, client_id: &str, now: UnixTime) -> AdminResult {
    if !store.delete_client(client_id, now).await? {
        return Err(AdminError::NotFound(format!("live client {client_id}")));
    }
    Ok(json!({ "client_id": client_id, "deleted": true }))
}

/// Creates a user and their channel.
pub async fn user_create(
    store: &dyn Store,
    email: &str,
    password: &str,
    name: Option<&str>,
    now: UnixTime,
) -> AdminResult {
    let email = email.trim();
    if !valid_email(email) {
        return Err(AdminError::Invalid(format!("not an e-mail address: {email}")));
    }
    if password.chars().count() < 8 {
        return Err(AdminError::Invalid("a password is at least 8 characters".into()));
    }
    let password_hash = password::hash(password).map_err(|e| AdminError::Invalid(e.to_string()))?;
    let id = random_digits(21);
    let name = name.map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned);
    let user = NewUser { id: id.clone(), email: email.into(), name: name.clone(), password_hash, created_at: now };
    let channel = Channel {
        id: format!("UC{}", latchkey_core::secret::random_b64(16)),
        user_id: id.clone(),
        title: name.clone().unwrap_or_else(|| email.split('@').next().unwrap_or(email).to_owned()),
        description: String::new(),
        created_at: now,
    };
    match store.create_user(&user, &channel).await {
        Err(StoreError::Conflict(_)) => Err(AdminError::Invalid(format!("a user with e-mail {email} exists"))),
        other => other.map_err(AdminError::from),
    }?;
    Ok(json!({ "user_id": id, "email": email, "name": name, "channel_id": channel.id }))
}

fn valid_email(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else { return false };
    !local.is_empty()
        && !domain.is_empty()
        && !domain.contains('@')
        && email.len() <= 254
        && !email.contains(char::is_whitespace)
}

fn user_json(u: &User) -> Value {
    json!({ "user_id": u.id, "email": u.email, "name": u.name, "created_at": u.created_at.0,
            "disabled_at": u.disabled_at.map(|t| t.0) })
}

/// Lists users.
pub async fn user_list(store: &dyn Store) -> AdminResult {
    Ok(json!({ "users": store.users().await?.iter().map(user_json).collect::<Vec<_>>() }))
}

async fn find_user(store: &dyn Store, id_or_email: &str) -> Result<User, AdminError> {
    let found = match store.user(id_or_email).await? {
        Some(u) => Some(u),
        None => store.user_by_email(id_or_email).await?,
    };
    found.ok_or_else(|| AdminError::NotFound(format!("user {id_or_email}")))
}

/// Shows a user, by id or e-mail.
pub async fn user_show(store: &dyn Store, id_or_email: &str) -> AdminResult {
    let u = find_user(store, id_or_email).await?;
    let mut v = user_json(&u);
    v["channel_id"] = store.channel_of(&u.id).await?.map(|c| c.id).into();
    Ok(v)
}

/// Deletes a user with their channel, sessions and grants.
pub async fn user_delete(store: &dyn Store, id_or_email: &str) -> AdminResult {
    let u = find_user(store, id_or_email).await?;
    store.delete_user(&u.id).await?;
    Ok(json!({ "user_id": u.id, "deleted": true }))
}

/// Disables or re-enables a user; a disabled user cannot sign in and their tokens stop working.
pub async fn user_set_disabled(store: &dyn Store, id_or_email: &str, disabled: bool, now: UnixTime) -> AdminResult {
    let u = find_user(store, id_or_email).await?;
    store.set_user_disabled(&u.id, disabled.then_some(now)).await?;
    Ok(json!({ "user_id": u.id, "disabled": disabled }))
}

/// Parses a key kind's CLI name.
pub fn key_kind(name: &str) -> Result<KeyKind, AdminError> {
    match name {
        "id-token" => Ok(KeyKind::IdToken),
        "access-token" | "mac" => Ok(KeyKind::Mac),
        other => Err(AdminError::Invalid(format!("key kind is id-token or access-token, not {other}"))),
    }
}

/// Adds a new signing key of a kind; running servers sign with it within a minute.
pub async fn key_rotate(store: &dyn Store, kind: KeyKind, now: UnixTime) -> AdminResult {
    let id = keys::rotate(store, kind, now).await?;
    Ok(json!({ "key_id": id, "kind": kind.as_str() }))
}

/// Retires a key: it stops signing; it verifies (and id_token keys stay published) for a grace period.
pub async fn key_retire(store: &dyn Store, id: u32, now: UnixTime) -> AdminResult {
    if !store.retire_key(id, now).await? {
        return Err(AdminError::NotFound(format!("live key {id}")));
    }
    Ok(json!({ "key_id": id, "retired": true }))
}

/// Lists keys (never their material).
pub async fn key_list(store: &dyn Store) -> AdminResult {
    let mut out = Vec::new();
    for kind in [KeyKind::Mac, KeyKind::IdToken] {
        for k in store.keys(kind).await? {
            out.push(json!({ "key_id": k.id, "kind": kind.as_str(), "created_at": k.created_at.0,
                             "retired_at": k.retired_at.map(|t| t.0) }));
        }
    }
    Ok(json!({ "keys": out }))
}
