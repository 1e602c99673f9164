//! The server's keys, shared by every instance through the store: HMAC keys for access and CSRF tokens, ES256
//! keys for id_tokens, RS256 keys for security event tokens (made with the first stream: [`ensure_event_key`]). The newest live key signs; every key not long retired verifies. Instances reload the
//! set periodically, so a rotation made with `latchkey admin keys rotate` reaches them without a restart.
//!
//! The store holds each key encrypted under the system secrets ([`crate::secrets`]). Keys an earlier version
//! stored in the clear are encrypted when an instance starts; [`reencrypt`] moves every key under the first
//! system secret (`latchkey admin secrets reencrypt` and `rotate`).

use crate::clock::OsRandom;
use crate::secrets::{Protection, SecretSource, SecretsError, SystemSecrets};
use latchkey_core::access_token::MacKey;
use latchkey_core::jws::{RsaSigningKey, SigningKey};
use latchkey_core::secret::random_bytes;
use latchkey_core::time::UnixTime;
use latchkey_store::{KeyKind, Store, StoreError, StoreResult};
use std::sync::{Arc, RwLock};

/// How long a retired key still verifies (the configuration's, which bounds `access_token_lifetime` by it): an
/// id_token or event key stays published, so that tokens it signed still verify (and events in flight, signed
/// when they are sent, were signed by a key still published); an HMAC key still verifies the access tokens, CSRF
/// tokens and DPoP nonces it made, so that a rotation signs nobody out and breaks no form left open.
/// How long a retired key still verifies (and stays published): a week.
pub const RETIRED_VERIFIES_FOR: i64 = 7 * 86_400;

/// One loaded set of keys.
#[derive(Debug)]
pub struct KeySet {
    /// HMAC keys, newest live first.
    pub mac: Vec<MacKey>,
    /// id_token keys, newest live first, then retired ones still published.
    pub id_token: Vec<SigningKey>,
    /// Security event keys, newest live first, then retired ones still published; none before the first stream.
    pub event: Vec<RsaSigningKey>,
}

impl KeySet {
    /// The key that signs access tokens.
    pub fn mac_signer(&self) -> &MacKey {
        &self.mac[0]
    }

    /// The key that signs id_tokens.
    pub fn id_token_signer(&self) -> &SigningKey {
        &self.id_token[0]
    }

    /// The key that signs security events, once there is one.
    pub fn event_signer(&self) -> Option<&RsaSigningKey> {
        self.event.first()
    }
}

/// The current key set, swapped on reload.
#[derive(Debug, Clone)]
pub struct KeyRing {
    /// The set, with the number of the reload that read it.
    current: Arc<RwLock<(u64, Arc<KeySet>)>>,
    /// Reloads started so far: a reload that started earlier never replaces the set of one that started later
    /// (the periodic reload, slow under load, would otherwise put back keys read before a rotation).
    reloads: Arc<std::sync::atomic::AtomicU64>,
    /// When an on-demand reload last ran (Unix seconds), so that unknown key ids cannot make every request
    /// read the store.
    last_demand: Arc<std::sync::atomic::AtomicI64>,
    /// Where the system secrets come from (a file is read again at every reload).
    secrets: Arc<SecretSource>,
}

impl KeyRing {
    /// Loads the keys at start-up: makes the default secret file when no key is encrypted yet, encrypts the keys
    /// stored in the clear by an earlier version, and creates the first key of each kind when the store has none.
    pub async fn load(store: &dyn Store, secrets: SecretSource, now: UnixTime) -> StoreResult<Self> {
        let system = secrets_for(store, &secrets).await?;
        let sealed = reencrypt(store, &system, Scope::Plaintext).await?;
        if sealed.reencrypted > 0 {
            tracing::warn!(
                keys = sealed.reencrypted,
                "encrypted the keys an earlier version stored in the clear; earlier backups still hold them in the \
                 clear, so keep those secret and rotate both kinds (latchkey admin keys rotate)"
            );
        }
        let set = load_set(store, &system, now).await?;
        let secrets = Arc::new(secrets);
        Ok(Self {
            current: Arc::new(RwLock::new((0, Arc::new(set)))),
            reloads: Arc::default(),
            last_demand: Arc::default(),
            secrets,
        })
    }

    /// The system secrets in force now.
    pub fn secrets(&self) -> Result<Arc<SystemSecrets>, SecretsError> {
        self.secrets.load()
    }

    /// Where the system secrets come from.
    pub fn secret_source(&self) -> &SecretSource {
        &self.secrets
    }

    /// Reloads because a request named a key this instance does not hold; at most once per second, so that
    /// forged key ids cost nothing. Returns whether a reload ran.
    pub async fn reload_on_demand(&self, store: &dyn Store, now: UnixTime) -> StoreResult<bool> {
        use std::sync::atomic::Ordering;
        let last = self.last_demand.load(Ordering::Relaxed);
        if now.0 <= last || self.last_demand.compare_exchange(last, now.0, Ordering::AcqRel, Ordering::Relaxed).is_err()
        {
            return Ok(false);
        }
        self.reload(store, now).await?;
        Ok(true)
    }

    /// The current set.
    pub fn get(&self) -> Arc<KeySet> {
        match self.current.read() {
            Ok(g) => g.1.clone(),
            Err(poisoned) => poisoned.into_inner().1.clone(),
        }
    }

    /// Reads the keys again from the store (and the system secrets again from their file).
    pub async fn reload(&self, store: &dyn Store, now: UnixTime) -> StoreResult<()> {
        let ticket = self.reloads.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let set = Arc::new(load_set(store, &*self.secrets()?, now).await?);
        let mut current = match self.current.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if ticket > current.0 {
            *current = (ticket, set);
        }
        Ok(())
    }
}

/// Adds a new key of `kind`, encrypted under the first system secret, which signs from the next reload on;
/// returns its id. Refused when a stored key is encrypted under a secret not in `secrets`: the instances using
/// that one could not read the new key.
pub async fn rotate(store: &dyn Store, secrets: &SystemSecrets, kind: KeyKind, now: UnixTime) -> StoreResult<u32> {
    check_readable(store, secrets).await?;
    // RSA key generation takes about a second: off the async threads, which serve requests meanwhile.
    let material = tokio::task::spawn_blocking(move || new_secret(kind))
        .await
        .map_err(|e| StoreError::Other(format!("key generation: {e}")))??;
    store.add_key(kind, &secrets.seal(kind, &material)?, now).await
}

/// The scheduled rotation: for each kind whose newest live key is at least `every` seconds old, adds a new key and
/// retires the older live ones (they verify, and stay published, for [`RETIRED_VERIFIES_FOR`]). Returns the keys
/// made. Instances that rotate at the same moment each add a key; each then retires every live key older than its
/// own, so that the newest one alone signs whichever instance finishes last.
pub async fn rotate_due(
    store: &dyn Store,
    secrets: &SystemSecrets,
    every: i64,
    now: UnixTime,
) -> StoreResult<Vec<(KeyKind, u32)>> {
    let mut made = Vec::new();
    for kind in KeyKind::STORED {
        let live: Vec<_> = store.keys(kind).await?.into_iter().filter(|k| k.retired_at.is_none()).collect();
        // No live key: an event key is made with the first stream, the others at start.
        let Some(newest) = live.iter().max_by_key(|k| k.id) else { continue };
        if now.0 - newest.created_at.0 < every {
            continue;
        }
        let id = rotate(store, secrets, kind, now).await?;
        for older in store.keys(kind).await?.iter().filter(|k| k.retired_at.is_none() && k.id < id) {
            store.retire_key(older.id, now).await?;
        }
        made.push((kind, id));
    }
    Ok(made)
}

/// What the store keeps encrypted under the system secrets: a key, a stream's push authorization, or an
/// account's TOTP secret.
enum Sealed {
    /// A key of the `keys` table, by id.
    Key(u32),
    /// The push authorization of a stream, by stream id.
    Push(String),
    /// The authenticator-app secret of an account, by user id.
    Totp(String),
}

/// Everything the store keeps sealed, with its kind and its stored form.
async fn sealed_items(store: &dyn Store) -> StoreResult<Vec<(KeyKind, Sealed, Vec<u8>)>> {
    let mut out = Vec::new();
    for kind in KeyKind::STORED {
        out.extend(store.keys(kind).await?.into_iter().map(|k| (kind, Sealed::Key(k.id), k.secret)));
    }
    for s in store.streams().await? {
        if let Some(auth) = s.push_auth {
            out.push((KeyKind::PushAuthorization, Sealed::Push(s.stream_id), auth));
        }
    }
    for (user, secret) in store.totp_secrets().await? {
        out.push((KeyKind::TotpSecret, Sealed::Totp(user), secret));
    }
    Ok(out)
}

/// Checks that `secrets` open every stored key and push authorization; returns how many there are.
pub async fn check_readable(store: &dyn Store, secrets: &SystemSecrets) -> StoreResult<usize> {
    let items = sealed_items(store).await?;
    for (kind, item, stored) in &items {
        secrets.open(*kind, stored).map_err(|e| unreadable(*kind, item, e))?;
    }
    Ok(items.len())
}

/// The system secrets of `source`, at start-up and for the admin commands: a secret file other accounts may read
/// is tightened, and the default one is made on first use, while no stored key is encrypted (when one is, a
/// missing file is an error: a new secret could not read it).
pub async fn secrets_for(store: &dyn Store, source: &SecretSource) -> StoreResult<Arc<SystemSecrets>> {
    if let SecretSource::File(file) = source {
        file.tighten();
    }
    match (source.load(), source.default_file()) {
        (Err(SecretsError::MissingFile(path)), Some(file)) => {
            for (_, _, stored) in sealed_items(store).await? {
                if !matches!(crate::secrets::sealed_by(&stored), Ok(None)) {
                    return Err(SecretsError::MissingFile(path).into());
                }
            }
            file.create()?;
            Ok(source.load()?)
        }
        (loaded, _) => Ok(loaded?),
    }
}

/// Which stored keys [`reencrypt`] encrypts anew.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Only those stored in the clear (the upgrade at start).
    Plaintext,
    /// Every key not encrypted under the first system secret.
    NotCurrent,
}

/// What [`reencrypt`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Reencryption {
    /// The keys stored, of both kinds.
    pub keys: usize,
    /// The keys this call encrypted anew.
    pub reencrypted: usize,
}

/// How often [`reencrypt`] looks again when another process changed a key under it.
const REENCRYPT_PASSES: usize = 5;

/// Encrypts the keys of `scope` under the first system secret. A key changed meanwhile by another process (which
/// is re-encrypting too) is read again, so that no key is left behind.
pub async fn reencrypt(store: &dyn Store, secrets: &SystemSecrets, scope: Scope) -> StoreResult<Reencryption> {
    let mut done = Reencryption::default();
    for _ in 0..REENCRYPT_PASSES {
        let mut raced = false;
        done.keys = 0;
        for (kind, item, stored) in sealed_items(store).await? {
            if let Sealed::Key(_) = item {
                done.keys += 1;
            }
            let opened = secrets.open(kind, &stored).map_err(|e| unreadable(kind, &item, e))?;
            let wanted = match scope {
                Scope::Plaintext => opened.protection == Protection::Plaintext,
                Scope::NotCurrent => opened.protection != Protection::Current,
            };
            if !wanted {
                continue;
            }
            let sealed = secrets.seal(kind, opened.material.expose())?;
            let replaced = match &item {
                Sealed::Key(id) => store.replace_key_secret(*id, &stored, &sealed).await?,
                Sealed::Push(stream) => store.replace_push_auth(stream, &stored, &sealed).await?,
                Sealed::Totp(user) => store.replace_totp_secret(user, &stored, &sealed).await?,
            };
            if replaced {
                done.reencrypted += 1;
            } else {
                raced = true;
            }
        }
        if !raced {
            return Ok(done);
        }
    }
    Err(StoreError::Other("the keys kept changing while they were re-encrypted; run the command again".into()))
}

/// The error for a stored key or push authorization that cannot be opened.
fn unreadable(kind: KeyKind, item: &Sealed, e: SecretsError) -> StoreError {
    match item {
        Sealed::Key(id) => StoreError::Other(format!("{} key {id}: {e}", kind.as_str())),
        Sealed::Push(stream) => StoreError::Other(format!("the push authorization of stream {stream}: {e}")),
        Sealed::Totp(user) => StoreError::Other(format!("the authenticator-app secret of account {user}: {e}")),
    }
}

fn new_secret(kind: KeyKind) -> StoreResult<Vec<u8>> {
    match kind {
        KeyKind::Mac => Ok(random_bytes(32, &OsRandom)),
        KeyKind::IdToken => SigningKey::generate_pkcs8(&OsRandom).map_err(|e| StoreError::Other(e.to_string())),
        KeyKind::Event => new_rsa_pkcs8(),
        KeyKind::PushAuthorization | KeyKind::TotpSecret => {
            Err(StoreError::Other(format!("a {} is not a key", kind.as_str())))
        }
    }
}

/// A fresh 2048-bit RSA key as PKCS#8 DER (the RustCrypto `rsa` crate makes it; *ring* signs with it).
fn new_rsa_pkcs8() -> StoreResult<Vec<u8>> {
    use rsa::pkcs8::EncodePrivateKey;
    let key = rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).map_err(|e| StoreError::Other(e.to_string()))?;
    Ok(key.to_pkcs8_der().map_err(|e| StoreError::Other(e.to_string()))?.as_bytes().to_vec())
}

/// Makes the first security event key when there is none yet (the first stream's creation), and reloads the
/// ring so this instance signs with it at once; the others load it at their next reload.
pub async fn ensure_event_key(ring: &KeyRing, store: &dyn Store, now: UnixTime) -> StoreResult<()> {
    if store.keys(KeyKind::Event).await?.iter().any(|k| k.retired_at.is_none()) {
        return Ok(());
    }
    rotate(store, &*ring.secrets()?, KeyKind::Event, now).await?;
    ring.reload(store, now).await
}

async fn load_set(store: &dyn Store, secrets: &SystemSecrets, now: UnixTime) -> StoreResult<KeySet> {
    let (mut mac, mut id_token, mut event) = (Vec::new(), Vec::new(), Vec::new());
    for kind in KeyKind::STORED {
        let mut stored = store.keys(kind).await?;
        // Event keys are made with the first stream, not at start (RSA key generation takes a while).
        if kind != KeyKind::Event && !stored.iter().any(|k| k.retired_at.is_none()) {
            rotate(store, secrets, kind, now).await?;
            stored = store.keys(kind).await?;
            // Instances starting together on an empty store may each have made one: all keep the first, so that
            // they sign with the same key (the others, retired, still verify).
            let first = stored.iter().filter(|k| k.retired_at.is_none()).map(|k| k.id).min();
            for k in stored.iter_mut().filter(|k| k.retired_at.is_none() && Some(k.id) != first) {
                store.retire_key(k.id, now).await?;
                k.retired_at = Some(now);
            }
        }
        // Live keys first (newest first), then retired ones still within their grace period.
        stored.sort_by_key(|k| (k.retired_at.is_some(), std::cmp::Reverse(k.id)));
        for k in stored {
            if k.retired_at.is_some_and(|r| now.0 - r.0 >= RETIRED_VERIFIES_FOR) {
                continue;
            }
            let material = secrets.open(kind, &k.secret).map_err(|e| unreadable(kind, &Sealed::Key(k.id), e))?.material;
            match kind {
                KeyKind::Mac => mac.push(MacKey::new(k.id, material.expose())),
                KeyKind::IdToken => id_token.push(
                    SigningKey::from_pkcs8(material.expose(), &OsRandom)
                        .map_err(|e| StoreError::Other(format!("key {}: {e}", k.id)))?,
                ),
                KeyKind::Event => event.push(
                    RsaSigningKey::from_pkcs8(material.expose())
                        .map_err(|e| StoreError::Other(format!("key {}: {e}", k.id)))?,
                ),
                KeyKind::PushAuthorization | KeyKind::TotpSecret => {}
            }
        }
    }
    Ok(KeySet { mac, id_token, event })
}

#[cfg(test)]
mod tests;
