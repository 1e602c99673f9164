//! The server's keys, shared by every instance through the store: HMAC keys for access and CSRF tokens, ES256
//! keys for id_tokens. The newest live key signs; every key not long retired verifies. Instances reload the
//! set periodically, so a rotation made with `latchkey admin keys rotate` reaches them without a restart.

use latchkey_core::access_token::MacKey;
use latchkey_core::jws::SigningKey;
use latchkey_core::secret::random_bytes;
use latchkey_core::time::UnixTime;
use latchkey_store::{KeyKind, Store, StoreError, StoreResult};
use std::sync::{Arc, RwLock};

/// How long a retired id_token key stays published, so tokens it signed still verify.
const RETIRED_PUBLISHED_FOR: i64 = 7 * 86_400;

/// One loaded set of keys.
#[derive(Debug)]
pub struct KeySet {
    /// HMAC keys, newest live first.
    pub mac: Vec<MacKey>,
    /// id_token keys, newest live first, then retired ones still published.
    pub id_token: Vec<SigningKey>,
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
}

/// The current key set, swapped on reload.
#[derive(Debug, Clone)]
pub struct KeyRing {
    current: Arc<RwLock<Arc<KeySet>>>,
    /// When an on-demand reload last ran (Unix seconds), so that unknown key ids cannot make every request
    /// read the store.
    last_demand: Arc<std::sync::atomic::AtomicI64>,
}

impl KeyRing {
    /// Loads the keys, creating the first of each kind when the store has none.
    pub async fn load(store: &dyn Store, now: UnixTime) -> StoreResult<Self> {
        let set = load_set(store, now).await?;
        Ok(Self { current: Arc::new(RwLock::new(Arc::new(set))), last_demand: Arc::default() })
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
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Reads the keys again from the store.
    pub async fn reload(&self, store: &dyn Store, now: UnixTime) -> StoreResult<()> {
        let set = Arc::new(load_set(store, now).await?);
        match self.current.write() {
            Ok(mut g) => *g = set,
            Err(poisoned) => *poisoned.into_inner() = set,
        }
        Ok(())
    }
}

/// Adds a new key of `kind`, which signs from the next reload on; returns its id.
pub async fn rotate(store: &dyn Store, kind: KeyKind, now: UnixTime) -> StoreResult<u32> {
    store.add_key(kind, &new_secret(kind)?, now).await
}

fn new_secret(kind: KeyKind) -> StoreResult<Vec<u8>> {
    match kind {
        KeyKind::Mac => Ok(random_bytes(32)),
        KeyKind::IdToken => SigningKey::generate_pkcs8().map_err(|e| StoreError::Other(e.to_string())),
    }
}

async fn load_set(store: &dyn Store, now: UnixTime) -> StoreResult<KeySet> {
    let mut mac = Vec::new();
    let mut id_token = Vec::new();
    for kind in [KeyKind::Mac, KeyKind::IdToken] {
        let mut stored = store.keys(kind).await?;
        if !stored.iter().any(|k| k.retired_at.is_none()) {
            rotate(store, kind, now).await?;
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
            let published = k.retired_at.is_none_or(|r| now.0 - r.0 < RETIRED_PUBLISHED_FOR);
            match kind {
                KeyKind::Mac => mac.push(MacKey::new(k.id, &k.secret)),
                KeyKind::IdToken if published => id_token.push(
                    SigningKey::from_pkcs8(&k.secret).map_err(|e| StoreError::Other(format!("key {}: {e}", k.id)))?,
                ),
                KeyKind::IdToken => {}
            }
        }
    }
    Ok(KeySet { mac, id_token })
}

#[cfg(test)]
mod tests;
