//! Statements pipelined on a few shared connections: the reads, and DPoP's replay records.
//!
//! A statement on a connection of its own costs each side a wake-up, a `send` and a `recv`: under load, most of
//! what one indexed read costs the database, and a good part of what it costs latchkey. Statements from many
//! requests sent on one connection at once are pipelined by the driver: it writes what is queued in one `send`, the
//! server reads them in one `recv` and runs them one after the other, each in an implicit transaction of its own,
//! and the answers come back together. So the short statements that need no transaction and whose commit waits
//! for no WAL flush go round-robin over a few connections that every request shares: the store's reads of one row
//! ([`crate::db::Engine::one`], a read by contract: SQLite runs it on its read-only connections; a grant, a code,
//! a client), and the recording of a DPoP proof's values (unlogged tables: its commit waits for no WAL flush nor
//! standby). Listings (`all`) and the reads that may scan many rows ([`crate::sql::Sql::scanning`]) stay on the
//! pool, so that a long one does not hold up the reads queued behind it; so do writes: each commit waits for its
//! WAL flush before the server reads the next message, and on one shared connection commits would follow each
//! other instead of being flushed together.
//!
//! A statement here sees what it would on a pooled connection: what was committed when it began, so a revocation
//! is seen by the next read on any connection. A connection that failed (the server gone, a failover) is dropped
//! and made again by the next statement, through the same URL and so to the same writable host.

use super::connect::Target;
use super::errors::{spoils_connection, unavailable};
use crate::sql::{Sql, Value};
use crate::{StoreError, StoreResult};
use deadpool_postgres::ClientWrapper;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Row;

/// The shared connections.
pub(crate) struct Shared {
    target: Arc<Target>,
    /// How long making a connection may take (the pool's acquire timeout).
    timeout: Duration,
    slots: Box<[Slot]>,
    next: AtomicUsize,
}

/// One shared connection, made on first use and again after it failed.
#[derive(Default)]
struct Slot {
    client: Mutex<Option<Arc<ClientWrapper>>>,
    /// Held while connecting, so that the statements waiting for the connection make one.
    connecting: tokio::sync::Mutex<()>,
}

impl Slot {
    /// The connection, unless there is none or it has ended.
    fn current(&self) -> Option<Arc<ClientWrapper>> {
        let mut client = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        if client.as_ref().is_some_and(|c| c.is_closed()) {
            *client = None;
        }
        client.clone()
    }

    /// Drops `failed` if it is still the slot's connection.
    fn forget(&self, failed: &Arc<ClientWrapper>) {
        let mut client = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        if client.as_ref().is_some_and(|c| Arc::ptr_eq(c, failed)) {
            *client = None;
        }
    }
}

impl Shared {
    /// `count` shared connections to `target` (at least one), each made within `timeout`.
    pub(crate) fn new(target: Arc<Target>, count: usize, timeout: Duration) -> Self {
        let slots = (0..count.max(1)).map(|_| Slot::default()).collect();
        Self { target, timeout, slots, next: AtomicUsize::new(0) }
    }

    /// Runs a statement on the next shared connection; its rows.
    pub(crate) async fn rows(&self, sql: &'static Sql, args: &[Value<'_>]) -> StoreResult<Vec<Row>> {
        self.on_next(|client| async move { super::query(&client, sql, args).await }).await
    }

    /// Runs a statement of `text`, its parameters of `types`, on the next shared connection ([`super::batch`]'s,
    /// made at run time); its rows.
    pub(crate) async fn query(
        &self,
        text: &str,
        types: &[Type],
        params: &[&(dyn ToSql + Sync)],
    ) -> StoreResult<Vec<Row>> {
        self.on_next(|client| async move {
            let statement = client.prepare_typed_cached(text, types).await?;
            client.query(&statement, params).await
        })
        .await
    }

    /// Runs `run` on the next shared connection; a connection it finds failed is dropped.
    async fn on_next<'a, F, Fut>(&'a self, run: F) -> StoreResult<Vec<Row>>
    where
        F: FnOnce(Arc<ClientWrapper>) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<Row>, tokio_postgres::Error>> + 'a,
    {
        let slot = &self.slots[self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len()];
        // The wait is bounded as a pooled connection's is: the statements queued behind a failing connect do not
        // each wait for one of their own in turn.
        let client = match tokio::time::timeout(self.timeout, self.client(slot)).await {
            Ok(client) => client?,
            Err(_) => return Err(timed_out()),
        };
        let result = run(client.clone()).await.map_err(super::errors::map_err);
        if let Err(e) = &result {
            if spoils_connection(e) {
                slot.forget(&client);
            }
        }
        result
    }

    /// The slot's connection, made first when it has none.
    async fn client(&self, slot: &Slot) -> StoreResult<Arc<ClientWrapper>> {
        if let Some(client) = slot.current() {
            return Ok(client);
        }
        let _connecting = slot.connecting.lock().await;
        if let Some(client) = slot.current() {
            return Ok(client);
        }
        let (client, task) = match tokio::time::timeout(self.timeout, super::connect::open(&self.target)).await {
            Ok(Ok(made)) => made,
            Ok(Err(e)) => return Err(unavailable(e)),
            Err(_) => return Err(timed_out()),
        };
        let client = Arc::new(ClientWrapper::new(client, task));
        *slot.client.lock().unwrap_or_else(PoisonError::into_inner) = Some(client.clone());
        Ok(client)
    }
}

/// No connection within the acquire timeout: an outage.
fn timed_out() -> StoreError {
    unavailable("not made within the acquire timeout")
}
