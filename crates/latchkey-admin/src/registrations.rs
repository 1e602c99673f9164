//! Apps that register themselves (RFC 7591) and manage their registration (RFC 7592), into the one project that
//! collects them (`ProjectSetting::OpenRegistration`). Such a client is a desktop app with no secret, marked as
//! registered by itself; its registration access token is stored only as its hash, and compared in constant time.

use super::{random_id, AdminError, AdminResult};
use crate::clock::OsRandom;
use latchkey_core::client::{Client, RegistrationKind};
use latchkey_core::registration::{self, ClientMetadata};
use latchkey_core::secret::{self, Secret};
use latchkey_core::time::UnixTime;
use latchkey_store::Store;

/// The prefix of a registration access token.
pub const TOKEN_PREFIX: &str = "lkreg_";

/// A registration's answer: the client, and its registration access token when it was just made.
#[derive(Debug)]
pub struct Registered {
    /// The client as stored.
    pub client: Client,
    /// The registration access token (RFC 7592), only in the answer to the registration itself.
    pub token: Option<Secret>,
}

/// Why the registration endpoint is closed: no project collects self-registered apps.
fn closed() -> AdminError {
    AdminError::Forbidden("Dynamic client registration is not open on this server.".into())
}

/// The refusal of a registration access token that is not the client's (or of a client that is gone): the same
/// whatever is wrong, so that it tells nothing about which clients exist.
pub fn not_authorized() -> AdminError {
    AdminError::NotFound("no such registration for this registration access token".into())
}

/// Registers an app with its checked metadata into the project that collects self-registered apps.
pub async fn register(store: &dyn Store, metadata: ClientMetadata, now: UnixTime) -> AdminResult<Registered> {
    let project = store.open_registration_project().await?.ok_or_else(closed)?;
    let token = Secret::generate(TOKEN_PREFIX, &OsRandom);
    let ids = (format!("lkapp-{}", random_id(24)), project.id);
    let client = registration::client(ids, metadata, RegistrationKind::Dynamic, Some(token.hash()), now);
    store.create_client(&client).await?;
    Ok(Registered { client, token: Some(token) })
}

/// The live, dynamically registered client whose registration access token `token` is.
pub async fn registered(store: &dyn Store, client_id: &str, token: &str) -> AdminResult<Client> {
    let client = store.client(client_id).await?.filter(|c| c.deleted_at.is_none()).ok_or_else(not_authorized)?;
    let stored = client.registration.as_ref().and_then(|r| r.token_hash.as_deref()).unwrap_or_default();
    if stored.is_empty() || !secret::ct_eq(stored, &secret::hash(token)) {
        return Err(not_authorized());
    }
    Ok(client)
}

/// The registration as it stands, with a new registration access token (RFC 7592 §2.1, §3: the answer carries
/// one, and only its hash is kept, so the one presented is replaced).
pub async fn read(store: &dyn Store, client_id: &str, token: &str) -> AdminResult<Registered> {
    reissue(store, registered(store, client_id, token).await?).await
}

/// Gives a registration a new access token in place of the one just presented.
async fn reissue(store: &dyn Store, mut client: Client) -> AdminResult<Registered> {
    let token = Secret::generate(TOKEN_PREFIX, &OsRandom);
    let before = client.registration.as_ref().and_then(|r| r.token_hash.clone()).unwrap_or_default();
    if !store.set_registration_token(&client.client_id, &before, &token.hash()).await? {
        return Err(not_authorized());
    }
    if let Some(r) = client.registration.as_mut() {
        r.token_hash = Some(token.hash());
    }
    Ok(Registered { client, token: Some(token) })
}

/// Replaces a registration's metadata (RFC 7592 §2.2): its name, redirect URIs and links; the answer carries a
/// new registration access token.
pub async fn reregister(
    store: &dyn Store,
    client_id: &str,
    token: &str,
    metadata: ClientMetadata,
) -> AdminResult<Registered> {
    let mut client = registered(store, client_id, token).await?;
    client.name = metadata.client_name;
    client.redirect_uris = metadata.redirect_uris;
    if let Some(r) = client.registration.as_mut() {
        r.client_uri = metadata.client_uri;
        r.logo_uri = metadata.logo_uri;
    }
    if !store.update_client(&client).await? {
        return Err(not_authorized());
    }
    reissue(store, client).await
}

/// Deletes a registration (RFC 7592 §2.3): the client is deleted, and its tokens stop working.
pub async fn unregister(store: &dyn Store, client_id: &str, token: &str, now: UnixTime) -> AdminResult<()> {
    registered(store, client_id, token).await?;
    if !store.delete_client(client_id, now).await? {
        return Err(not_authorized());
    }
    Ok(())
}

/// The metadata a registered client answers with.
pub fn metadata_of(client: &Client) -> ClientMetadata {
    let r = client.registration.as_ref();
    ClientMetadata {
        redirect_uris: client.redirect_uris.clone(),
        token_endpoint_auth_method: "none",
        grant_types: vec!["authorization_code".into(), "refresh_token".into()],
        response_types: vec!["code".into()],
        client_name: client.name.clone(),
        client_uri: r.and_then(|r| r.client_uri.clone()),
        logo_uri: r.and_then(|r| r.logo_uri.clone()),
    }
}
