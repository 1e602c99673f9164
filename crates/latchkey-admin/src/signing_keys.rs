//! The signing keys (`latchkey admin keys`) and the system secrets that encrypt them in the store
//! (`latchkey admin secrets`).

use super::{AdminError, AdminResult};
use crate::keys::{self, Scope};
use crate::secrets::{self, SecretSource, SystemSecret, SystemSecrets};
use latchkey_core::time::UnixTime;
use latchkey_store::{KeyKind, Store};
use serde::Serialize;

/// A signing key (never its material), added, retired or listed.
#[derive(Debug, Clone, Serialize)]
pub struct KeyView {
    /// The key's id.
    pub key_id: u32,
    /// Its kind (`mac`, `id_token`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// When it was created (in lists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    /// When it was retired (in lists: null for a live key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<Option<i64>>,
    /// The fingerprint of the system secret it is encrypted under (in lists: null for a key stored in the clear).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encrypted_under: Option<Option<String>>,
    /// Present (true) after retiring it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retired: Option<bool>,
}

/// The signing keys.
#[derive(Debug, Clone, Serialize)]
pub struct KeyList {
    /// The keys.
    pub keys: Vec<KeyView>,
}

/// The stored keys encrypted again under the first system secret.
#[derive(Debug, Clone, Serialize)]
pub struct Reencrypted {
    /// The fingerprint of the secret they are now encrypted under.
    pub fingerprint: String,
    /// The fingerprints of the secrets dropped (after a rotation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<Vec<String>>,
    /// How many keys are stored.
    pub keys: usize,
    /// How many were encrypted again.
    pub reencrypted: usize,
    /// The secret file rewritten (after a rotation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

impl KeyView {
    fn id(key_id: u32) -> Self {
        Self { key_id, kind: None, created_at: None, retired_at: None, encrypted_under: None, retired: None }
    }
}

/// Parses a key kind's CLI name.
pub fn key_kind(name: &str) -> Result<KeyKind, AdminError> {
    match name {
        "id-token" => Ok(KeyKind::IdToken),
        "access-token" | "mac" => Ok(KeyKind::Mac),
        "event" => Ok(KeyKind::Event),
        other => Err(AdminError::Invalid(format!("key kind is id-token, access-token or event, not {other}"))),
    }
}

/// Adds a new signing key of a kind, encrypted under the first system secret of `source`; running servers sign
/// with it within a minute.
pub async fn key_rotate(
    store: &dyn Store,
    source: &SecretSource,
    kind: KeyKind,
    now: UnixTime,
) -> AdminResult<KeyView> {
    let system = keys::secrets_for(store, source).await?;
    let id = keys::rotate(store, &system, kind, now).await?;
    Ok(KeyView { kind: Some(kind.as_str()), ..KeyView::id(id) })
}

/// Retires a key: it stops signing; it verifies (and id_token keys stay published) for a grace period.
pub async fn key_retire(store: &dyn Store, id: u32, now: UnixTime) -> AdminResult<KeyView> {
    if !store.retire_key(id, now).await? {
        return Err(AdminError::NotFound(format!("live key {id}")));
    }
    Ok(KeyView { retired: Some(true), ..KeyView::id(id) })
}

/// Lists keys (never their material), each with the fingerprint of the system secret it is encrypted under (null
/// for a key an earlier version stored in the clear).
pub async fn key_list(store: &dyn Store) -> AdminResult<KeyList> {
    let mut out = Vec::new();
    for kind in KeyKind::STORED {
        for k in store.keys(kind).await? {
            let under = secrets::sealed_by(&k.secret).ok().flatten().map(|f| f.to_string());
            out.push(KeyView {
                kind: Some(kind.as_str()),
                created_at: Some(k.created_at.0),
                retired_at: Some(k.retired_at.map(|t| t.0)),
                encrypted_under: Some(under),
                ..KeyView::id(k.id)
            });
        }
    }
    Ok(KeyList { keys: out })
}

/// Encrypts every stored key under the first system secret (decrypting with any of them). Run it after putting a
/// new secret first in `secrets_system`, before removing the old one.
pub async fn secrets_reencrypt(store: &dyn Store, source: &SecretSource) -> AdminResult<Reencrypted> {
    let system = keys::secrets_for(store, source).await?;
    let done = keys::reencrypt(store, &system, Scope::NotCurrent).await?;
    let fingerprint = system.current().to_string();
    Ok(Reencrypted { fingerprint, dropped: None, keys: done.keys, reencrypted: done.reencrypted, file: None })
}

/// Rotates the system secret of a secret file (the default `<data_dir>/system-secret`, or
/// `secrets_system_file`): writes a new secret first in the file, keeping the old ones for decryption, encrypts
/// every stored key under it, then drops the old ones. Running instances read the file at every key reload, so
/// they follow. Secrets listed in the configuration cannot be rewritten from here (see
/// `docs/configuration.md` for their procedure).
pub async fn secrets_rotate(store: &dyn Store, source: &SecretSource) -> AdminResult<Reencrypted> {
    let SecretSource::File(file) = source else {
        return Err(AdminError::Invalid(
            "secrets_system is set in the configuration, which this command cannot rewrite: put a new secret first \
             in secrets_system on every instance and restart them, run `latchkey admin secrets reencrypt`, then \
             remove the old secret"
                .into(),
        ));
    };
    let before = keys::secrets_for(store, source).await?;
    keys::check_readable(store, &before).await?;
    let old = file.read_secrets().map_err(stored)?;
    let new = SystemSecret::generate();
    let both: Vec<_> = std::iter::once(&new).chain(&old).collect();
    file.write(&both).map_err(stored)?;
    let during = file.read().map_err(stored)?;
    let done = keys::reencrypt(store, &during, Scope::NotCurrent).await?;
    file.write(&[&new]).map_err(stored)?;
    let after = SystemSecrets::parse([new.expose()], "the new secret").map_err(stored)?;
    if let Err(e) = keys::check_readable(store, &after).await {
        // A key was added under an old secret meanwhile (a server starting, another rotation): keep the old ones.
        file.write(&both).map_err(stored)?;
        return Err(AdminError::Conflict(format!("{e}; the old secrets are kept: run the command again")));
    }
    let dropped: Vec<String> = before.fingerprints().iter().map(ToString::to_string).collect();
    Ok(Reencrypted {
        fingerprint: after.current().to_string(),
        dropped: Some(dropped),
        keys: done.keys,
        reencrypted: done.reencrypted,
        file: Some(file.path().display().to_string()),
    })
}

/// The secret file failed: a storage failure.
fn stored(e: secrets::SecretsError) -> AdminError {
    AdminError::Store(e.into())
}
