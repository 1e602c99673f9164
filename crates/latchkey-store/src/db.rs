//! The one handle behind every aggregate's trait: [`Db`] over an [`Engine`], SQLite's or PostgreSQL's.
//!
//! Each aggregate (clients, grants, users, console, keys, single-use values) implements its trait once, for
//! `Db<E>` whatever the engine, with statements written once ([`Sql`]). The engines differ only in how they run
//! a statement and a unit of work, and that is all an [`Engine`] does.
//!
//! **Units of work.** A change that needs several statements to hold together (a code redeemed and its grant
//! stored; a reused code's grants revoked and their audit records written) is a [`UnitFn`]: an async function over a [`Tx`] that
//! runs in one transaction on both engines, and whose changes commit together or not at all. It returns
//! [`Outcome::Keep`] to commit, or [`Outcome::Discard`] to roll back while still answering; an error rolls back
//! too. SQLite runs it in its writer thread, inside the batch's transaction and its own savepoint (the futures of
//! a SQLite [`Tx`] are ready at once); PostgreSQL runs it in a transaction of its own, and again when it lost a
//! serialization or deadlock race, which is why a unit takes its data by reference.

pub(crate) mod measured;

use crate::client_cache::ClientCache;
use crate::rows::StoreRow;
use crate::sql::{Args, Sql};
use crate::StoreResult;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future that may move between threads.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Maps one row.
pub(crate) type Mapper<T> = fn(&dyn StoreRow) -> StoreResult<T>;

/// A unit of work: statements over a [`Tx`] that commit together, given its data by reference.
pub(crate) type UnitFn<S, R> = for<'t> fn(&'t mut dyn Tx, &'t S) -> BoxFuture<'t, StoreResult<Outcome<R>>>;

/// How much a write must survive before its caller is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Survives a power cut. Grants, revocations, codes, accounts, clients, keys: everything a response
    /// promises.
    Durable,
    /// Survives a crash of the process, not necessarily of the machine: DPoP replay records, throttling
    /// counters, App Check counts, last-use times. SQLite answers these before its fdatasync; PostgreSQL
    /// commits every write the same way.
    Ephemeral,
}

/// Whether a unit's changes stay (`Keep`) or are rolled back (`Discard`) while its result is still returned.
#[derive(Debug)]
pub(crate) enum Outcome<R> {
    /// Commit the changes.
    Keep(R),
    /// Roll the changes back.
    Discard(R),
}

/// The statements of a unit of work, inside its transaction.
pub(crate) trait Tx: Send {
    /// Runs a statement; returns the rows it changed.
    fn exec<'a>(&'a mut self, sql: &'static Sql, args: Args<'a>) -> BoxFuture<'a, StoreResult<u64>>;
    /// Runs a statement; returns the first column of its first row, an integer.
    fn scalar<'a>(&'a mut self, sql: &'static Sql, args: Args<'a>) -> BoxFuture<'a, StoreResult<Option<i64>>>;
    /// Runs a read; hands each row, in order, to `row`.
    fn each<'a>(
        &'a mut self,
        sql: &'static Sql,
        args: Args<'a>,
        row: &'a mut (dyn FnMut(&dyn StoreRow) -> StoreResult<()> + Send),
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// Takes a row lock that orders this unit after others changing the same thing. Only an engine whose
    /// writers run side by side takes it (PostgreSQL); SQLite's single writer already runs units one by one.
    fn lock<'a>(&'a mut self, sql: &'static Sql, args: Args<'a>) -> BoxFuture<'a, StoreResult<()>>;
}

/// Every row of a read inside a unit of work, mapped.
pub(crate) async fn rows<T: Send>(
    tx: &mut dyn Tx,
    sql: &'static Sql,
    args: Args<'_>,
    map: Mapper<T>,
) -> StoreResult<Vec<T>> {
    let mut out = Vec::new();
    tx.each(sql, args, &mut |r| {
        out.push(map(r)?);
        Ok(())
    })
    .await?;
    Ok(out)
}

/// How one engine runs statements and units of work.
pub(crate) trait Engine: Send + Sync + 'static {
    /// The backend's name, the `backend` label of the store's metrics.
    const BACKEND: &'static str;
    /// The first row of a read, mapped.
    fn one<T: Send + 'static>(
        &self,
        sql: &'static Sql,
        args: Args<'_>,
        map: Mapper<T>,
    ) -> impl Future<Output = StoreResult<Option<T>>> + Send;
    /// Every row of a read, mapped.
    fn all<T: Send + 'static>(
        &self,
        sql: &'static Sql,
        args: Args<'_>,
        map: Mapper<T>,
    ) -> impl Future<Output = StoreResult<Vec<T>>> + Send;
    /// Runs one statement as a write of its own; returns the rows it changed.
    fn exec(
        &self,
        durability: Durability,
        sql: &'static Sql,
        args: Args<'_>,
    ) -> impl Future<Output = StoreResult<u64>> + Send;
    /// Runs one statement as a write of its own; returns the first column of its first row (`RETURNING`).
    fn scalar(
        &self,
        durability: Durability,
        sql: &'static Sql,
        args: Args<'_>,
    ) -> impl Future<Output = StoreResult<Option<i64>>> + Send;
    /// Runs a unit of work in one transaction.
    fn unit<S: Send + Sync + 'static, R: Send + 'static>(
        &self,
        durability: Durability,
        unit: UnitFn<S, R>,
        data: S,
    ) -> impl Future<Output = StoreResult<R>> + Send;
    /// Records a DPoP proof's single-use values off the durable path ([`crate::Replay::record_proof`]).
    fn record_proof(
        &self,
        values: &[(Vec<u8>, latchkey_core::time::UnixTime)],
        admission: &latchkey_core::dpop::Admission,
        now: latchkey_core::time::UnixTime,
    ) -> impl Future<Output = StoreResult<latchkey_core::dpop::Recorded>> + Send;
    /// The moment DPoP proofs' records are complete from, as the engine last found it.
    fn proofs_complete_since(&self) -> Option<latchkey_core::time::UnixTime>;
    /// Deletes the expired DPoP proof values the engine keeps in the database; how many (none where it keeps
    /// them in memory, which drops them as it goes).
    fn purge_proofs(&self, _now: latchkey_core::time::UnixTime) -> impl Future<Output = StoreResult<u64>> + Send {
        std::future::ready(Ok(0))
    }
    /// Whether the database answers.
    fn ping(&self) -> impl Future<Output = StoreResult<()>> + Send;
    /// The engine's notices of new deliveries to poll, from every instance, when it has them
    /// ([`crate::notices`]); `None` where it has not.
    fn delivery_notices(&self) -> impl Future<Output = StoreResult<Option<crate::notices::Notices>>> + Send {
        std::future::ready(Ok(None))
    }
    /// The engine's own way of redeeming a code, when it has one that is quicker than the shared unit of work
    /// for the usual case; `None` to run the shared one.
    fn redeem_fast<'a>(
        &'a self,
        _redemption: &'a crate::records::Redemption,
    ) -> impl Future<Output = StoreResult<Option<crate::Redeemed>>> + Send + 'a {
        std::future::ready(Ok(None))
    }
}

/// The store: an engine, and what is shared above it.
#[derive(Debug)]
pub struct Db<E> {
    /// The engine, its operations timed ([`measured`]).
    pub(crate) engine: measured::Measured<E>,
    pub(crate) clients: Arc<ClientCache>,
}

// `Engine` is the crate's own: these helpers serve the aggregates' implementations, not other crates.
#[allow(private_bounds)]
impl<E: Engine> Db<E> {
    /// A store over `engine`.
    pub(crate) fn new(engine: E) -> Self {
        Self { engine: measured::Measured::new(engine), clients: Arc::default() }
    }

    /// Runs one statement durably; returns the rows it changed.
    pub(crate) async fn exec(&self, sql: &'static Sql, args: Args<'_>) -> StoreResult<u64> {
        self.engine.exec(Durability::Durable, sql, args).await
    }

    /// Runs one statement that need not survive a power cut; returns the rows it changed.
    pub(crate) async fn exec_ephemeral(&self, sql: &'static Sql, args: Args<'_>) -> StoreResult<u64> {
        self.engine.exec(Durability::Ephemeral, sql, args).await
    }

    /// Runs one statement durably; true when it changed exactly one row.
    pub(crate) async fn exec_one(&self, sql: &'static Sql, args: Args<'_>) -> StoreResult<bool> {
        Ok(self.exec(sql, args).await? == 1)
    }
}
