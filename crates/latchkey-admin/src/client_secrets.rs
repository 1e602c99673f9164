//! Client secret rotation: add a second secret, move the app to it while both work, disable the old
//! one, then delete it. The rules are the core's (`latchkey_core::client::change_secrets`); the console's pages,
//! its JSON API and `latchkey admin client secret` all call these. Tokens issued before a change keep working:
//! a secret authenticates the client at the token endpoint, it is not bound to the grants.

use super::results::ClientView;
use super::{random_id, AdminError, AdminResult};
use super::{Actor, ClientRef};
use crate::clock::OsRandom;
use latchkey_core::client::{change_secrets, ClientSecret, SecretChange, SecretRefusal};
use latchkey_core::secret::Secret;
use latchkey_core::time::UnixTime;
use latchkey_store::Store;
use serde::Serialize;
use utoipa::ToSchema;

/// A secret just added: the only time it is shown.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NewClientSecret {
    /// The client.
    pub client_id: String,
    /// The new secret's id.
    pub secret_id: String,
    /// The secret itself, shown this once.
    pub client_secret: String,
    /// When it was made.
    pub created_at: i64,
}

/// A new secret with its stored form: `lks_` and 43 random characters, of which the last four are kept as a
/// hint.
pub(crate) fn generate(now: UnixTime) -> (Secret, ClientSecret) {
    let secret = Secret::generate("lks_", &OsRandom);
    let text = secret.expose();
    let hint = text.get(text.len().saturating_sub(4)..).map(str::to_owned);
    let stored = ClientSecret {
        id: format!("cs_{}", random_id(12)),
        hash: secret.hash(),
        hint,
        created_at: now,
        disabled_at: None,
    };
    (secret, stored)
}

/// Adds a secret to the client (it works at once, beside the other); shown this once.
pub async fn client_secret_add(
    store: &dyn Store,
    actor: &Actor,
    at: ClientRef<'_>,
    now: UnixTime,
) -> AdminResult<NewClientSecret> {
    let (secret, stored) = generate(now);
    let secret_id = stored.id.clone();
    let client_id = client_secret_change(store, actor, at, SecretChange::Add(stored)).await?.client_id;
    Ok(NewClientSecret { client_id, secret_id, client_secret: secret.into_inner(), created_at: now.0 })
}

/// Disables, enables or deletes one of the client's secrets (`SecretChange`), only if the secrets are still the ones
/// read: a disabled secret authenticates nothing from then on; the only enabled secret cannot be disabled, nor an
/// enabled one deleted.
pub async fn client_secret_change(
    store: &dyn Store,
    actor: &Actor,
    at: ClientRef<'_>,
    change: SecretChange,
) -> AdminResult<ClientView> {
    let client_id = at.id;
    let mut client = actor.client_to_edit(store, at).await?;
    let after = change_secrets(&client.secrets, &change).map_err(|refusal| match refusal {
        SecretRefusal::Unknown => AdminError::NotFound(format!("secret of client {client_id}")),
        other => AdminError::Conflict(other.to_string()),
    })?;
    if !store.set_client_secrets(client_id, &client.secrets, &after).await? {
        return Err(AdminError::Conflict("the client's secrets changed meanwhile: look again and retry".into()));
    }
    client.secrets = after;
    Ok(ClientView::from(&client))
}
