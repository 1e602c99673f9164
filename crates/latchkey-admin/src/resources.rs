//! APIs registered as resources (RFC 8707), for `latchkey admin resource`, the console and its JSON API: made,
//! changed, shown, listed and deleted by the project's members, with introspection secrets rotated like a
//! client's. The rules for what a registration holds are the core's (`latchkey_core::resource`).

use super::client_secrets::generate;
use super::{random_id, Actor, AdminError, AdminResult, Right};
use latchkey_core::client::{change_secrets, SecretChange};
use latchkey_core::resource::{
    check_name, check_scope, check_uri, parse_scope, Resource, ResourceRefusal, ResourceScope, TokenFormat, Visibility,
};
use latchkey_core::scope::ScopeRegistry;
use latchkey_core::time::UnixTime;
use latchkey_store::{ResourceUpdate, Store};
use serde::Serialize;
use utoipa::ToSchema;

/// What a registration is checked against: the deployment's well-known scopes (whose names an API cannot take)
/// and the data API's resource identifier (which no API can take).
pub struct Builtin<'a> {
    /// The well-known scopes.
    pub scopes: &'a ScopeRegistry,
    /// The data API's resource identifier.
    pub data_api: &'a str,
}

/// A new API, as the CLI, the form or the API gave it.
#[derive(Debug, Clone, Default)]
pub struct NewResource {
    /// The project.
    pub project_id: String,
    /// Its resource identifier.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Its scopes, each written `name|description`.
    pub scopes: Vec<String>,
    /// Who may ask for its scopes.
    pub visibility: Visibility,
    /// The access-token format it wants.
    pub token_format: TokenFormat,
}

/// A change to an API: each field given is changed.
#[derive(Debug, Clone, Default)]
pub struct ResourceChange {
    /// A new name.
    pub name: Option<String>,
    /// Who may now ask for its scopes.
    pub visibility: Option<Visibility>,
    /// The access-token format it now wants.
    pub token_format: Option<TokenFormat>,
    /// Scopes to add, or whose description to change, each written `name|description`.
    pub scopes: Vec<String>,
    /// Scopes to take away, by name.
    pub remove_scopes: Vec<String>,
}

/// One scope of an API.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScopeView {
    /// The scope.
    pub name: String,
    /// What it allows, shown on the consent page.
    pub description: String,
}

/// One of an API's introspection secrets (never the secret itself).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ResourceSecretView {
    /// Its id.
    pub secret_id: String,
    /// Its last four characters.
    pub hint: Option<String>,
    /// When it was made.
    pub created_at: i64,
    /// Whether it is disabled.
    pub disabled: bool,
}

/// A registered API.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ResourceView {
    /// Its id: with a secret, its introspection credentials.
    pub resource_id: String,
    /// Its project.
    pub project_id: String,
    /// Its resource identifier.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// `project` or `public`.
    pub visibility: String,
    /// `opaque`, `jwt` or `jwt-rs256`.
    pub token_format: String,
    /// Its scopes.
    pub scopes: Vec<ScopeView>,
    /// Its introspection secrets.
    pub secrets: Vec<ResourceSecretView>,
    /// When it was registered.
    pub created_at: i64,
}

impl From<&Resource> for ResourceView {
    fn from(r: &Resource) -> Self {
        Self {
            resource_id: r.id.clone(),
            project_id: r.project_id.clone(),
            uri: r.uri.clone(),
            name: r.name.clone(),
            visibility: r.visibility.as_str().into(),
            token_format: r.token_format.as_str().into(),
            scopes: r
                .scopes
                .iter()
                .map(|s| ScopeView { name: s.name.clone(), description: s.description.clone() })
                .collect(),
            secrets: r
                .secrets
                .iter()
                .map(|s| ResourceSecretView {
                    secret_id: s.id.clone(),
                    hint: s.hint.clone(),
                    created_at: s.created_at.0,
                    disabled: s.disabled_at.is_some(),
                })
                .collect(),
            created_at: r.created_at.0,
        }
    }
}

/// A registration just made: with its first introspection secret, shown this once.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CreatedResource {
    /// The API.
    #[serde(flatten)]
    pub resource: ResourceView,
    /// Its introspection secret, shown this once.
    pub secret: String,
}

/// A project's APIs.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ResourceList {
    /// The project.
    pub project_id: String,
    /// Its APIs, oldest first.
    pub resources: Vec<ResourceView>,
}

/// An introspection secret just added: the only time it is shown.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NewResourceSecret {
    /// The API.
    pub resource_id: String,
    /// The new secret's id.
    pub secret_id: String,
    /// The secret itself, shown this once.
    pub secret: String,
}

fn invalid(refusal: ResourceRefusal) -> AdminError {
    match refusal {
        ResourceRefusal::UriTaken | ResourceRefusal::ScopeTaken(_) | ResourceRefusal::NoFreeBit => {
            AdminError::Conflict(refusal.to_string())
        }
        _ => AdminError::Invalid(refusal.to_string()),
    }
}

/// Reads and checks written scopes: each a scope token, none a well-known scope's name, none twice.
fn scopes_of(written: &[String], builtin: &Builtin<'_>) -> AdminResult<Vec<(String, String)>> {
    let mut scopes: Vec<(String, String)> = Vec::with_capacity(written.len());
    for w in written {
        let (name, description) = parse_scope(w);
        check_scope(&name, &description).map_err(invalid)?;
        if builtin.scopes.index_of(&name).is_some() || scopes.iter().any(|(n, _)| *n == name) {
            return Err(invalid(ResourceRefusal::ScopeTaken(name)));
        }
        scopes.push((name, description));
    }
    Ok(scopes)
}

/// An API the actor may act on with `right`.
async fn find(store: &dyn Store, actor: &Actor, id: &str, right: Right) -> AdminResult<Resource> {
    let found = store.resource(id.trim()).await?.ok_or_else(|| AdminError::NotFound(format!("API {id}")))?;
    // A developer who is no member of its project is told it does not exist, as for the project.
    actor.project(store, &found.project_id, right).await.map_err(|e| match e {
        AdminError::NotFound(_) => AdminError::NotFound(format!("API {id}")),
        other => other,
    })?;
    Ok(found)
}

/// Registers an API in a project, with its first introspection secret (shown this once).
pub async fn resource_create(
    store: &dyn Store,
    actor: &Actor,
    new: NewResource,
    builtin: &Builtin<'_>,
    now: UnixTime,
) -> AdminResult<CreatedResource> {
    let access = actor.project(store, &new.project_id, Right::Edit).await?;
    let uri = new.uri.trim();
    check_uri(uri, builtin.data_api).map_err(invalid)?;
    check_name(&new.name).map_err(invalid)?;
    let scopes = scopes_of(&new.scopes, builtin)?;
    let (secret, stored) = generate(now);
    let resource = Resource {
        id: format!("{}{}", latchkey_core::resource::ID_PREFIX, random_id(16)),
        project_id: access.project.id,
        uri: uri.to_owned(),
        name: new.name.trim().to_owned(),
        visibility: new.visibility,
        token_format: new.token_format,
        scopes: scopes.into_iter().map(|(name, description)| ResourceScope { bit: 0, name, description }).collect(),
        secrets: vec![stored],
        created_at: now,
    };
    let made = store.create_resource(&resource, now).await?.map_err(invalid)?;
    Ok(CreatedResource { resource: ResourceView::from(&made), secret: secret.into_inner() })
}

/// Changes an API: its name, visibility, token format, and scopes added, described again or taken away.
pub async fn resource_update(
    store: &dyn Store,
    actor: &Actor,
    id: &str,
    change: ResourceChange,
    builtin: &Builtin<'_>,
    now: UnixTime,
) -> AdminResult<ResourceView> {
    let found = find(store, actor, id, Right::Edit).await?;
    if let Some(name) = &change.name {
        check_name(name).map_err(invalid)?;
    }
    let scopes = scopes_of(&change.scopes, builtin)?;
    if let Some(missing) = change.remove_scopes.iter().find(|n| !found.scopes.iter().any(|s| s.name == **n)) {
        return Err(AdminError::Invalid(format!("the API has no scope {missing:?}")));
    }
    let update = ResourceUpdate {
        name: change.name.map(|n| n.trim().to_owned()),
        visibility: change.visibility,
        token_format: change.token_format,
        scopes,
        remove_scopes: change.remove_scopes,
    };
    let changed = store.update_resource(&found.id, &update, now).await?.map_err(invalid)?;
    changed.map(|r| ResourceView::from(&r)).ok_or_else(|| AdminError::NotFound(format!("API {id}")))
}

/// Shows an API.
pub async fn resource_show(store: &dyn Store, actor: &Actor, id: &str) -> AdminResult<ResourceView> {
    Ok(ResourceView::from(&find(store, actor, id, Right::View).await?))
}

/// Lists a project's APIs.
pub async fn resource_list(store: &dyn Store, actor: &Actor, project_id: &str) -> AdminResult<ResourceList> {
    let access = actor.project(store, project_id, Right::View).await?;
    let resources = store.project_resources(&access.project.id).await?;
    Ok(ResourceList { project_id: access.project.id, resources: resources.iter().map(ResourceView::from).collect() })
}

/// The protected resource metadata (RFC 9728 §2) the API should serve at
/// `/.well-known/oauth-protected-resource` under its identifier's host (the identifier's path appended), so that a
/// client that meets its 401 finds `issuer`, the authorization server.
pub async fn resource_metadata(
    store: &dyn Store,
    actor: &Actor,
    id: &str,
    issuer: &str,
) -> AdminResult<serde_json::Value> {
    let found = find(store, actor, id, Right::View).await?;
    let scopes: Vec<&str> = found.scopes.iter().map(|s| s.name.as_str()).collect();
    Ok(serde_json::json!({
        "resource": found.uri,
        "authorization_servers": [issuer],
        "scopes_supported": scopes,
        "bearer_methods_supported": ["header"],
        "resource_name": found.name,
    }))
}

/// Deletes an API: its scopes are retired (tokens that carry them no longer name it), its credentials end.
pub async fn resource_delete(store: &dyn Store, actor: &Actor, id: &str, now: UnixTime) -> AdminResult<ResourceView> {
    let found = find(store, actor, id, Right::Delete).await?;
    if !store.delete_resource(&found.id, now).await? {
        return Err(AdminError::NotFound(format!("API {id}")));
    }
    Ok(ResourceView::from(&found))
}

/// Adds an introspection secret (it works at once, beside the other); shown this once.
pub async fn resource_secret_add(
    store: &dyn Store,
    actor: &Actor,
    id: &str,
    now: UnixTime,
) -> AdminResult<NewResourceSecret> {
    let (secret, stored) = generate(now);
    let secret_id = stored.id.clone();
    let found = change_resource_secrets(store, actor, id, SecretChange::Add(stored)).await?;
    Ok(NewResourceSecret { resource_id: found.resource_id, secret_id, secret: secret.into_inner() })
}

/// Disables, enables or deletes one of an API's secrets, as for a client's (`SecretChange`).
pub async fn change_resource_secrets(
    store: &dyn Store,
    actor: &Actor,
    id: &str,
    change: SecretChange,
) -> AdminResult<ResourceView> {
    let found = find(store, actor, id, Right::Edit).await?;
    let next = change_secrets(&found.secrets, &change).map_err(|e| AdminError::Conflict(e.to_string()))?;
    if !store.set_resource_secrets(&found.id, &found.secrets, &next).await? {
        return Err(AdminError::Conflict("the API's secrets changed meanwhile: read them again".into()));
    }
    Ok(ResourceView::from(&Resource { secrets: next, ..found }))
}
