//! Content owners and service accounts (issue 23), for the operator's CLI (and later the console): an owner and
//! the channels it manages, the service accounts of a project, and the owners each account may act for.

use super::{Actor, AdminError, AdminResult, Right};
use latchkey_core::secret::random_bytes;
use latchkey_core::service_account;
use latchkey_core::time::UnixTime;
use latchkey_store::{ContentOwner, ServiceAccount, Store};
use serde::Serialize;

/// A content owner.
#[derive(Debug, Clone, Serialize)]
pub struct ContentOwnerView {
    /// Its id.
    pub content_owner_id: String,
    /// Its name.
    pub name: String,
}

/// A channel an owner manages.
#[derive(Debug, Clone, Serialize)]
pub struct OwnedChannel {
    /// The channel.
    pub channel_id: String,
    /// Its title.
    pub title: String,
}

/// An owner's channels.
#[derive(Debug, Clone, Serialize)]
pub struct OwnerChannels {
    /// The owner.
    pub content_owner_id: String,
    /// Its channels, by id.
    pub channels: Vec<OwnedChannel>,
}

/// A link between an owner and a channel or a service account, made or removed.
#[derive(Debug, Clone, Serialize)]
pub struct OwnerLink {
    /// The owner.
    pub content_owner_id: String,
    /// The channel, for a channel link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel_id: Option<String>,
    /// The service account, for a grant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account: Option<String>,
    /// Whether the link exists now.
    pub linked: bool,
}

/// A service account.
#[derive(Debug, Clone, Serialize)]
pub struct ServiceAccountView {
    /// Its identifier (the assertions' `iss`).
    pub email: String,
    /// Its id (the key file's `client_id`).
    pub unique_id: String,
    /// Its project.
    pub project_id: String,
    /// Its display name.
    pub display_name: String,
    /// Whether it is disabled.
    pub disabled: bool,
}

impl From<&ServiceAccount> for ServiceAccountView {
    fn from(a: &ServiceAccount) -> Self {
        Self {
            email: a.email.clone(),
            unique_id: a.id.clone(),
            project_id: a.project_id.clone(),
            display_name: a.display_name.clone(),
            disabled: a.disabled_at.is_some(),
        }
    }
}

/// The service accounts of a project.
#[derive(Debug, Clone, Serialize)]
pub struct ServiceAccountList {
    /// The project.
    pub project_id: String,
    /// Its service accounts, by identifier.
    pub service_accounts: Vec<ServiceAccountView>,
}

/// Makes a content owner.
pub async fn content_owner_create(store: &dyn Store, name: &str, now: UnixTime) -> AdminResult<ContentOwnerView> {
    let name = name.trim();
    if name.is_empty() || name.len() > 200 {
        return Err(AdminError::Invalid("a content owner's name has 1 to 200 characters".into()));
    }
    let owner = ContentOwner { id: format!("co-{}", digits(12)), name: name.to_owned(), created_at: now };
    store.create_content_owner(&owner).await?;
    Ok(ContentOwnerView { content_owner_id: owner.id, name: owner.name })
}

async fn owner(store: &dyn Store, id: &str) -> AdminResult<ContentOwner> {
    store.content_owner(id).await?.ok_or_else(|| AdminError::NotFound(format!("content owner {id}")))
}

/// Links the channel of the account with address `email` to an owner (or unlinks it).
pub async fn content_owner_link_channel(
    store: &dyn Store,
    owner_id: &str,
    email: &str,
    link: bool,
    now: UnixTime,
) -> AdminResult<OwnerLink> {
    let o = owner(store, owner_id).await?;
    let user = store.user_by_email(email.trim()).await?.ok_or_else(|| AdminError::NotFound(format!("user {email}")))?;
    let channel =
        store.channel_of(&user.id).await?.ok_or_else(|| AdminError::NotFound(format!("channel of {email}")))?;
    let changed = if link {
        store.link_channel(&o.id, &channel.id, now).await?
    } else {
        store.unlink_channel(&o.id, &channel.id).await?
    };
    if !changed {
        let state = if link { "linked to it already" } else { "not linked to it" };
        return Err(AdminError::Conflict(format!("the channel of {email} is {state}")));
    }
    Ok(OwnerLink { content_owner_id: o.id, channel_id: Some(channel.id), service_account: None, linked: link })
}

/// The channels an owner manages.
pub async fn content_owner_channels(store: &dyn Store, owner_id: &str) -> AdminResult<OwnerChannels> {
    let o = owner(store, owner_id).await?;
    let channels = store.owner_channels(&o.id).await?;
    Ok(OwnerChannels {
        content_owner_id: o.id,
        channels: channels.into_iter().map(|c| OwnedChannel { channel_id: c.id, title: c.title }).collect(),
    })
}

/// Lets a service account act for an owner (the owner's administrator's grant of the content-owner role).
pub async fn content_owner_grant(
    store: &dyn Store,
    owner_id: &str,
    account: &str,
    now: UnixTime,
) -> AdminResult<OwnerLink> {
    let o = owner(store, owner_id).await?;
    let a = find_account(store, account).await?;
    if !store.grant_content_owner(&o.id, &a.id, now).await? {
        return Err(AdminError::Conflict(format!("{} may act for {} already", a.email, o.id)));
    }
    Ok(OwnerLink { content_owner_id: o.id, channel_id: None, service_account: Some(a.email), linked: true })
}

/// A service account by identifier or id.
pub(super) async fn find_account(store: &dyn Store, account: &str) -> AdminResult<ServiceAccount> {
    let found = store.service_account(account.trim()).await?;
    found.ok_or_else(|| AdminError::NotFound(format!("service account {account}")))
}

/// Makes a service account `name` in a project; `host` is the host of the deployment's scope base.
pub async fn service_account_create(
    store: &dyn Store,
    actor: &Actor,
    project_id: &str,
    name: &str,
    display_name: Option<&str>,
    host: &str,
    now: UnixTime,
) -> AdminResult<ServiceAccountView> {
    let access = actor.project(store, project_id, Right::Edit).await?;
    service_account::check_name(name).map_err(|e| AdminError::Invalid(e.into()))?;
    let account = ServiceAccount {
        id: digits(21),
        email: service_account::email(name, &access.project.id, host),
        project_id: access.project.id,
        display_name: display_name.unwrap_or(name).to_owned(),
        created_at: now,
        disabled_at: None,
    };
    if !store.create_service_account(&account).await? {
        return Err(AdminError::Conflict(format!("service account {} exists already", account.email)));
    }
    Ok(ServiceAccountView::from(&account))
}

/// The service accounts of a project.
pub async fn service_account_list(
    store: &dyn Store,
    actor: &Actor,
    project_id: &str,
) -> AdminResult<ServiceAccountList> {
    let access = actor.project(store, project_id, Right::View).await?;
    let accounts = store.service_accounts(&access.project.id).await?;
    Ok(ServiceAccountList {
        project_id: access.project.id,
        service_accounts: accounts.iter().map(ServiceAccountView::from).collect(),
    })
}

/// The account, if the actor may change its project.
async fn editable(store: &dyn Store, actor: &Actor, account: &str) -> AdminResult<ServiceAccount> {
    let a = find_account(store, account).await?;
    match actor.project(store, &a.project_id, Right::Edit).await {
        Ok(_) => Ok(a),
        Err(AdminError::NotFound(_)) => Err(AdminError::NotFound(format!("service account {account}"))),
        Err(e) => Err(e),
    }
}

/// Disables (no new tokens) or enables a service account.
pub async fn service_account_set_disabled(
    store: &dyn Store,
    actor: &Actor,
    account: &str,
    disabled: bool,
    now: UnixTime,
) -> AdminResult<ServiceAccountView> {
    let mut a = editable(store, actor, account).await?;
    a.disabled_at = disabled.then_some(now);
    store.set_service_account_disabled(&a.id, a.disabled_at).await?;
    Ok(ServiceAccountView::from(&a))
}

/// Deletes a service account with its keys and grants.
pub async fn service_account_delete(store: &dyn Store, actor: &Actor, account: &str) -> AdminResult<serde_json::Value> {
    let a = editable(store, actor, account).await?;
    store.delete_service_account(&a.id).await?;
    Ok(serde_json::json!({ "email": a.email, "deleted": true }))
}

/// `n` random decimal digits, the first not zero (ids that look like the best-known provider's).
fn digits(n: usize) -> String {
    let bytes = random_bytes(n, &crate::clock::OsRandom);
    bytes.iter().enumerate().map(|(i, b)| char::from(b'0' + if i == 0 { 1 + b % 9 } else { b % 10 })).collect()
}
