//! A short-lived, in-process cache of client rows, shared by both backends.
//!
//! Every token and revocation request authenticates its client, and a client row changes rarely (a console
//! edit, a deletion, App Check settings, the hourly `last_used_at`): reading it from the store on every request
//! was one read transaction of two or three per request, 18% of the server's CPU on a refresh. The cache keeps
//! a row for [`TTL`] after it was read.
//!
//! **Consistency.** Every change a store makes to a client forgets the cached row before the call returns, so
//! within one process a change is seen by the next request, as without the cache. A load that raced with a
//! change is not cached (a generation counter, bumped by every change, tells). A change made by another process
//! (another instance on the same PostgreSQL database, or the admin CLI on the same SQLite file) is seen within
//! [`TTL`]: for that long a client deleted elsewhere can still get tokens here. Grants, codes, users and
//! revocations are never cached.
//!
//! Absent clients are not cached (a request naming an unknown client costs a read, as before), and the cache
//! holds at most [`CAPACITY`] rows: when full it drops the expired ones, or everything if none has expired.

use crate::StoreResult;
use latchkey_core::client::Client;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a client row read from the store is used without reading it again.
pub const TTL: Duration = Duration::from_secs(1);
/// The most client rows held.
pub const CAPACITY: usize = 4096;

/// The cache: client id to the row and when it was read.
#[derive(Debug, Default)]
pub(crate) struct ClientCache {
    entries: Mutex<HashMap<String, (Instant, Client)>>,
    /// Bumped by every change; a load that saw another generation at its start is not kept.
    generation: AtomicU64,
}

impl ClientCache {
    /// The client, from the cache while its row is fresh, else from `load` (kept when found and no change
    /// happened meanwhile).
    pub(crate) async fn get_or_load<F, Fut>(&self, client_id: &str, load: F) -> StoreResult<Option<Client>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = StoreResult<Option<Client>>>,
    {
        let now = Instant::now();
        if let Some((read_at, client)) = self.lock().get(client_id) {
            if now.duration_since(*read_at) < TTL {
                return Ok(Some(client.clone()));
            }
        }
        let generation = self.generation.load(Ordering::Acquire);
        let loaded = load().await?;
        if let Some(client) = &loaded {
            let mut entries = self.lock();
            // Checked under the lock that `forget` bumps the generation under: no change can slip in between.
            if self.generation.load(Ordering::Acquire) == generation {
                if entries.len() >= CAPACITY && !entries.contains_key(client_id) {
                    entries.retain(|_, (read_at, _)| now.duration_since(*read_at) < TTL);
                    if entries.len() >= CAPACITY {
                        entries.clear();
                    }
                }
                entries.insert(client_id.to_owned(), (now, client.clone()));
            }
        }
        Ok(loaded)
    }

    /// Forgets one client's row (`Some`), or every row (`None`: a change that may touch many clients). Called
    /// after the change is written.
    pub(crate) fn forget(&self, client_id: Option<&str>) {
        let mut entries = self.lock();
        self.generation.fetch_add(1, Ordering::AcqRel);
        match client_id {
            Some(id) => {
                entries.remove(id);
            }
            None => entries.clear(),
        }
    }

    /// Forgets as [`forget`](Self::forget) does and passes `result` (the change's) through.
    pub(crate) fn after<T>(&self, client_id: Option<&str>, result: T) -> T {
        self.forget(client_id);
        result
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, Client)>> {
        // A panic while holding the lock leaves a map that is still valid: go on with it.
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreError;
    use latchkey_core::client::{ClientDetails, ClientType};
    use latchkey_core::time::UnixTime;

    fn client(name: &str) -> Client {
        Client {
            client_id: "lkapp-1".into(),
            project_id: "p".into(),
            name: name.into(),
            client_type: ClientType::Desktop,
            redirect_uris: vec![],
            secrets: vec![],
            details: ClientDetails::default(),
            created_at: UnixTime(0),
            deleted_at: None,
            last_used_at: None,
            app_check: Default::default(),
            ownership_verified_at: None,
            registration: None,
            project_rotates: false,
        }
    }

    async fn get(cache: &ClientCache, row: Option<Client>, loads: &mut u32) -> Option<Client> {
        cache
            .get_or_load("lkapp-1", move || async move {
                *loads += 1;
                Ok(row)
            })
            .await
            .expect("load")
    }

    #[tokio::test]
    async fn a_row_is_read_once_until_it_is_forgotten() {
        let cache = ClientCache::default();
        let mut loads = 0;
        assert_eq!(get(&cache, Some(client("a")), &mut loads).await.map(|c| c.name), Some("a".into()));
        assert_eq!(get(&cache, Some(client("b")), &mut loads).await.map(|c| c.name), Some("a".into()));
        assert_eq!(loads, 1, "the second read came from the cache");
        cache.forget(Some("lkapp-1"));
        assert_eq!(get(&cache, Some(client("b")), &mut loads).await.map(|c| c.name), Some("b".into()));
        cache.forget(None);
        assert_eq!(get(&cache, None, &mut loads).await, None);
        assert_eq!(get(&cache, Some(client("c")), &mut loads).await.map(|c| c.name), Some("c".into()));
        assert_eq!(loads, 4, "an absent client is not cached");
    }

    #[tokio::test]
    async fn a_row_older_than_the_ttl_is_read_again() {
        let cache = ClientCache::default();
        let mut loads = 0;
        get(&cache, Some(client("a")), &mut loads).await;
        // Another instance changed the client; this one learns of it once its row is TTL old.
        let read_at = Instant::now().checked_sub(TTL).expect("a TTL ago");
        cache.lock().get_mut("lkapp-1").expect("cached").0 = read_at;
        assert_eq!(get(&cache, Some(client("b")), &mut loads).await.map(|c| c.name), Some("b".into()));
        assert_eq!(loads, 2);
    }

    #[tokio::test]
    async fn a_load_that_raced_with_a_change_is_not_kept() {
        let cache = ClientCache::default();
        let stale = cache
            .get_or_load("lkapp-1", || async {
                cache.forget(Some("lkapp-1")); // the change lands while the old row is being read
                Ok(Some(client("old")))
            })
            .await
            .expect("load");
        assert_eq!(stale.map(|c| c.name), Some("old".into()));
        let mut loads = 0;
        assert_eq!(get(&cache, Some(client("new")), &mut loads).await.map(|c| c.name), Some("new".into()));
        assert_eq!(loads, 1);
    }

    #[tokio::test]
    async fn a_failed_load_is_returned_and_not_kept() {
        let cache = ClientCache::default();
        let failed = cache.get_or_load("lkapp-1", || async { Err(StoreError::Unavailable("down".into())) }).await;
        assert!(matches!(failed, Err(StoreError::Unavailable(_))));
        let mut loads = 0;
        get(&cache, Some(client("a")), &mut loads).await;
        assert_eq!(loads, 1);
    }

    #[tokio::test]
    async fn the_cache_stays_within_its_capacity() {
        let cache = ClientCache::default();
        for i in 0..CAPACITY + 10 {
            let id = format!("lkapp-{i}");
            cache.get_or_load(&id, || async { Ok(Some(client("x"))) }).await.expect("load");
            assert!(cache.lock().len() <= CAPACITY);
        }
        assert!(cache.lock().contains_key(&format!("lkapp-{}", CAPACITY + 9)), "the newest row is kept");
    }
}
