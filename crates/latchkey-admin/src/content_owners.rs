//! Content owners: an entity that owns and manages several channels (a record label, a film studio),
//! the channels linked to it, its administrators, and the service accounts its administrators let act for it.
//! The operator makes owners, links channels (with their users' consent, given outside latchkey) and names
//! administrators; an owner's administrator, or the operator, grants and revokes the content-owner role. To any
//! other developer an owner does not exist.

use super::service_accounts::{digits, find_account};
use super::{find_user, Actor, AdminError, AdminResult};
use latchkey_core::time::UnixTime;
use latchkey_store::{ContentOwner, Store};
use serde::Serialize;
use utoipa::ToSchema;

/// A content owner.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContentOwnerView {
    /// Its id.
    pub content_owner_id: String,
    /// Its name.
    pub name: String,
}

/// A channel an owner manages.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OwnedChannel {
    /// The channel.
    pub channel_id: String,
    /// Its title.
    pub title: String,
}

/// An owner's channels.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OwnerChannels {
    /// The owner.
    pub content_owner_id: String,
    /// Its channels, by id.
    pub channels: Vec<OwnedChannel>,
}

/// A link between an owner and a channel or a service account, made or removed.
#[derive(Debug, Clone, Serialize, ToSchema)]
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

/// An owner as its administrators see it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContentOwnerDetail {
    /// Its id.
    pub content_owner_id: String,
    /// Its name.
    pub name: String,
    /// Its administrators' e-mail addresses.
    pub administrators: Vec<String>,
    /// The channels it manages, by id.
    pub channels: Vec<OwnedChannel>,
    /// The service accounts that may act for it, by identifier.
    pub service_accounts: Vec<String>,
}

/// An administrator named.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OwnerAdmin {
    /// The owner.
    pub content_owner_id: String,
    /// The administrator's e-mail address.
    pub administrator: String,
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

pub(super) async fn owner(store: &dyn Store, id: &str) -> AdminResult<ContentOwner> {
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

/// Names an administrator of an owner (the operator's act).
pub async fn content_owner_add_admin(
    store: &dyn Store,
    owner_id: &str,
    email: &str,
    now: UnixTime,
) -> AdminResult<OwnerAdmin> {
    let o = owner(store, owner_id).await?;
    let user = find_user(store, email.trim()).await?;
    if !store.add_content_owner_admin(&o.id, &user.id, now).await? {
        return Err(AdminError::Conflict(format!("{} administers {} already", user.email, o.id)));
    }
    Ok(OwnerAdmin { content_owner_id: o.id, administrator: user.email })
}

/// The owner, if the actor administers it (the operator administers every owner); else not found.
async fn administered(store: &dyn Store, actor: &Actor, owner_id: &str) -> AdminResult<ContentOwner> {
    let o = owner(store, owner_id).await?;
    match actor {
        Actor::Operator => Ok(o),
        Actor::Developer(user) if store.is_content_owner_admin(&o.id, &user.id).await? => Ok(o),
        Actor::Developer(_) => Err(AdminError::NotFound(format!("content owner {owner_id}"))),
    }
}

/// An owner with its administrators, channels and service accounts.
pub async fn content_owner_show(store: &dyn Store, actor: &Actor, owner_id: &str) -> AdminResult<ContentOwnerDetail> {
    let o = administered(store, actor, owner_id).await?;
    let channels = store.owner_channels(&o.id).await?;
    Ok(ContentOwnerDetail {
        administrators: store.content_owner_admins(&o.id).await?,
        channels: channels.into_iter().map(|c| OwnedChannel { channel_id: c.id, title: c.title }).collect(),
        service_accounts: store.content_owner_accounts(&o.id).await?.into_iter().map(|a| a.email).collect(),
        content_owner_id: o.id,
        name: o.name,
    })
}

/// Grants (`grant`) or revokes the content-owner role: whether a service account may act for an owner. The
/// owner's administrator's act (or the operator's); a revocation holds from the account's next data-API call.
pub async fn content_owner_grant(
    store: &dyn Store,
    actor: &Actor,
    owner_id: &str,
    account: &str,
    grant: bool,
    now: UnixTime,
) -> AdminResult<OwnerLink> {
    let o = administered(store, actor, owner_id).await?;
    let a = find_account(store, account).await?;
    let changed = match grant {
        true => store.grant_content_owner(&o.id, &a.id, now).await?,
        false => store.revoke_content_owner(&o.id, &a.id).await?,
    };
    if !changed {
        let state = if grant { "may act for it already" } else { "may not act for it" };
        return Err(AdminError::Conflict(format!("{} {state}", a.email)));
    }
    Ok(OwnerLink { content_owner_id: o.id, channel_id: None, service_account: Some(a.email), linked: grant })
}
