//! The built-in listing directory (the extension store's developer dashboard) and owner verification of
//! browser-extension clients against it.

use super::results::{ListingRemoved, ListingView, OwnershipVerified};
use super::{valid_email, Actor, AdminError, AdminResult, ClientRef, Right};
use latchkey_core::client::ClientType;
use latchkey_core::time::UnixTime;
use latchkey_store::{Listing, Publisher, Store, StoreError};

/// Registers a listing in the built-in listing directory: an individual publisher (`publisher_email`) or a
/// group publisher (`group` with its `members`).
pub async fn listing_add(
    store: &dyn Store,
    item_id: &str,
    publisher_email: Option<&str>,
    group: Option<(&str, &[String])>,
    now: UnixTime,
) -> AdminResult<ListingView> {
    let item_id = item_id.trim();
    if item_id.is_empty() {
        return Err(AdminError::Invalid("a listing needs an item ID".into()));
    }
    let publisher = match (publisher_email, group) {
        (Some(e), None) if valid_email(e.trim()) => Publisher::Individual(e.trim().into()),
        (None, Some((name, members))) if !name.trim().is_empty() && !members.is_empty() => {
            if let Some(bad) = members.iter().find(|m| !valid_email(m.trim())) {
                return Err(AdminError::Invalid(format!("not an e-mail address: {bad}")));
            }
            Publisher::Group { name: name.trim().into(), members: members.iter().map(|m| m.trim().into()).collect() }
        }
        _ => {
            return Err(AdminError::Invalid(
                "give either a publisher e-mail address, or a group name with at least one member".into(),
            ))
        }
    };
    let listing = Listing { item_id: item_id.into(), publisher, created_at: now };
    store.put_listing(&listing).await?;
    Ok(ListingView::from(&listing))
}

/// Shows a listing.
pub async fn listing_show(directory: &dyn ListingDirectory, item_id: &str) -> AdminResult<ListingView> {
    let l = directory.listing(item_id).await?.ok_or_else(|| AdminError::NotFound(format!("listing {item_id}")))?;
    Ok(ListingView::from(&l))
}

/// Removes a listing.
pub async fn listing_remove(store: &dyn Store, item_id: &str) -> AdminResult<ListingRemoved> {
    if !store.delete_listing(item_id).await? {
        return Err(AdminError::NotFound(format!("listing {item_id}")));
    }
    Ok(ListingRemoved { item_id: item_id.into(), removed: true })
}

/// Where owner verification looks listings up: the extension store's developer dashboard. The built-in
/// implementation is the store's own directory, kept with `latchkey admin listing`.
#[async_trait::async_trait]
pub trait ListingDirectory: Send + Sync {
    /// The listing with this item ID.
    async fn listing(&self, item_id: &str) -> Result<Option<Listing>, StoreError>;
}

/// The built-in directory: listings kept in the store.
pub struct StoreDirectory<'a>(pub &'a dyn Store);

#[async_trait::async_trait]
impl ListingDirectory for StoreDirectory<'_> {
    async fn listing(&self, item_id: &str) -> Result<Option<Listing>, StoreError> {
        self.0.listing(item_id).await
    }
}

/// Owner verification (`docs/decisions.md`, "Clients"): succeeds when a listing with the browser-extension client's
/// item ID is registered and `developer_email` is its publisher or a member of its group publisher; records
/// `ownership_verified_at`.
pub async fn verify_ownership(
    store: &dyn Store,
    actor: &Actor,
    directory: &dyn ListingDirectory,
    at: ClientRef<'_>,
    developer_email: &str,
    now: UnixTime,
) -> AdminResult<OwnershipVerified> {
    let client_id = at.id;
    let c = actor.client(store, at, Right::Edit).await?;
    let item_id = match (c.client_type, c.details.extension_item_id.as_deref()) {
        (ClientType::BrowserExtension, Some(id)) => id.to_owned(),
        _ => return Err(AdminError::Invalid("owner verification is for browser-extension clients".into())),
    };
    let refused = || {
        AdminError::Invalid(format!(
            "ownership not verified: a listing with the same item ID ({item_id}) must be registered in the extension \
             store developer dashboard, and you must be its publisher or a member of its group publisher"
        ))
    };
    let listing = directory.listing(&item_id).await?.ok_or_else(refused)?;
    let me = developer_email.trim();
    let owns = match &listing.publisher {
        Publisher::Individual(e) => e.eq_ignore_ascii_case(me),
        Publisher::Group { members, .. } => members.iter().any(|m| m.eq_ignore_ascii_case(me)),
    };
    if !owns {
        return Err(refused());
    }
    store.set_ownership_verified(client_id, now).await?;
    Ok(OwnershipVerified { client_id: client_id.into(), item_id, ownership_verified: true, verified_at: now.0 })
}
