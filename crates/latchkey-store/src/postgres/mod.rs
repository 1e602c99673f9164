//! The PostgreSQL engine: many stateless instances on one database (also the wire protocol of the distributed
//! PostgreSQL-compatible engines, see `docs/scaling.md`). It runs the statements every engine shares
//! ([`crate::sql`]); what is its own is the connection (tokio-postgres: statements prepared once per connection, sent
//! pipelined where a unit allows; [`connect`]), the few connections that reads share, pipelined ([`shared`]), the
//! transactions and the one-round-trip code redemption.
//!
//! Concurrency under READ COMMITTED, statement by statement:
//! - a code is redeemed once: `UPDATE ... WHERE used_at IS NULL` blocks on a concurrent redeemer's row lock and
//!   re-checks the row after it commits, so the second sees the code used;
//! - the refresh-token limits hold: a unit of work issuing a grant first takes the user's row lock
//!   ([`Tx::lock`]), so issuances for one user run one after the other and each sees the last;
//! - a single-use value is recorded once: `INSERT ... ON CONFLICT` waits for a concurrent inserter of the same key.
//!
//! Connection failures become [`StoreError::Unavailable`]: any failure to get a connection from the pool (whatever
//! its SQLSTATE: refused, `ALLOW_CONNECTIONS false`, the database dropped, the pool exhausted), and a connection
//! lost or a server shutting down under a statement; a unit of work that lost a serialization or deadlock race is
//! run again a few times first.

mod batch;
pub(crate) mod connect;
pub use connect::connect_one;
pub(crate) mod errors;
mod migrate;
mod notices;
mod proofs;
mod shared;
mod values;

use crate::db::{BoxFuture, Db, Durability, Engine, Mapper, Outcome, Tx, UnitFn};
use crate::records::Redemption;
use crate::rows::StoreRow;
use crate::sql::{Args, Read, Sql, Value};
use crate::{PoolSettings, Redeemed, StoreError, StoreResult};
use deadpool_postgres::{ClientWrapper, Object, Pool};
use errors::{is_retryable, map_err, spoils_connection, unavailable};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

/// The PostgreSQL engine under [`PgStore`].
#[derive(Clone)]
pub struct PgEngine {
    pool: Pool,
    /// Where the pool connects, for the connections of its own that listening takes.
    target: Arc<connect::Target>,
    /// The moment DPoP proofs' records are complete from, as the last recording read it ([`proofs`]).
    floor: Arc<std::sync::Mutex<Option<i64>>>,
    /// The connections that reads and DPoP's replay records share ([`shared`]).
    shared: Arc<shared::Shared>,
    /// The reads by key waiting to go together ([`batch`]).
    reads: Arc<batch::Reads>,
}

impl std::fmt::Debug for PgEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgEngine").field("pool", &self.pool.status()).finish_non_exhaustive()
    }
}

/// The PostgreSQL store.
pub type PgStore = Db<PgEngine>;

/// How often a unit of work that lost a serialization or deadlock race is tried again.
const TX_RETRIES: u32 = 3;

impl Db<PgEngine> {
    /// Connects to the database at `url` (`postgres://user@host:port/db`, or several hosts in libpq's form) with
    /// `pool` settings and migrates it (migrations take an advisory lock, so instances starting together run them
    /// once).
    pub async fn open(url: &str, pool: PoolSettings) -> StoreResult<Self> {
        let store = Self::connect(url, pool).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Connects without migrating: makes the pool's first connection, so that a server that cannot be reached
    /// is reported ([`StoreError::Unavailable`]) at once.
    pub async fn connect(url: &str, pool: PoolSettings) -> StoreResult<Self> {
        let target = connect::target(url, pool.acquire_timeout)?;
        let (timeout, shared) = (pool.acquire_timeout, pool.shared_connections as usize);
        let pool = connect::pool(target.clone(), pool)?;
        let target = Arc::new(target);
        let shared = Arc::new(shared::Shared::new(target.clone(), shared, timeout));
        let engine = PgEngine { pool, target, floor: Arc::default(), shared, reads: Arc::default() };
        drop(engine.connection().await?);
        Ok(Db::new(engine))
    }

    /// Runs the migrations not yet applied ([`crate::migrations`]), carrying a database numbered the earlier way
    /// over first, under an advisory lock (instances starting together migrate once).
    pub async fn migrate(&self) -> StoreResult<()> {
        let mut conn = self.engine.inner.connection().await?;
        let migrated = migrate::run(&mut conn).await;
        if migrated.is_err() {
            // A connection that may still hold the lock goes, instead of back to the pool.
            drop(Object::take(conn));
        }
        migrated
    }
}

/// The statement prepared on `conn` (once per connection: the pool keeps each connection's statements), its
/// parameters declared with the values' types.
async fn prepared(
    conn: &ClientWrapper,
    sql: &'static Sql,
    args: &[Value<'_>],
) -> Result<tokio_postgres::Statement, tokio_postgres::Error> {
    let types: Vec<_> = args.iter().map(Value::pg_type).collect();
    conn.prepare_typed_cached(sql.postgres(), &types).await
}

/// The values as the driver takes them.
fn params<'v>(args: &'v [Value<'_>]) -> Vec<&'v (dyn ToSql + Sync)> {
    args.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

/// Runs a read; its rows.
async fn query(conn: &ClientWrapper, sql: &'static Sql, args: &[Value<'_>]) -> Result<Vec<Row>, tokio_postgres::Error> {
    let statement = prepared(conn, sql, args).await?;
    conn.query(&statement, &params(args)).await
}

/// Runs a write; the rows it changed.
async fn execute(conn: &ClientWrapper, sql: &'static Sql, args: &[Value<'_>]) -> Result<u64, tokio_postgres::Error> {
    let statement = prepared(conn, sql, args).await?;
    conn.execute(&statement, &params(args)).await
}

/// The first column of a row, an integer.
fn first_int(row: Option<&Row>) -> StoreResult<Option<i64>> {
    row.map(|r| r.try_get::<_, i64>(0).map_err(map_err)).transpose()
}

/// A driver error in the store's terms, noted against the connection it came from.
fn failed(spoiled: &mut bool, e: tokio_postgres::Error) -> StoreError {
    let e = map_err(e);
    *spoiled |= spoils_connection(&e);
    e
}

/// A unit's statements on one connection, inside its transaction. `BEGIN` is sent with the unit's first
/// statement, in one round trip. It notes whether a statement lost a serialization or deadlock race, so that the
/// unit can be run again, and whether the connection is still fit for the pool.
struct PgTx<'c> {
    conn: &'c ClientWrapper,
    begun: bool,
    retryable: bool,
    spoiled: bool,
}

impl PgTx<'_> {
    fn note(&mut self, e: tokio_postgres::Error) -> StoreError {
        self.retryable |= is_retryable(&e);
        failed(&mut self.spoiled, e)
    }

    /// Runs `work`, with `BEGIN` pipelined before it when the transaction has not begun.
    async fn run<T>(
        &mut self,
        work: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> StoreResult<T> {
        let result = if self.begun {
            work.await
        } else {
            self.begun = true;
            let (begin, result) = tokio::join!(self.conn.batch_execute("BEGIN"), work);
            begin.and(result)
        };
        result.map_err(|e| self.note(e))
    }
}

impl Tx for PgTx<'_> {
    fn exec<'a>(&'a mut self, sql: &'static Sql, args: Args<'a>) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(async move {
            let statement = prepared(self.conn, sql, &args).await.map_err(|e| self.note(e))?;
            let conn = self.conn;
            self.run(async { conn.execute(&statement, &params(&args)).await }).await
        })
    }

    fn scalar<'a>(&'a mut self, sql: &'static Sql, args: Args<'a>) -> BoxFuture<'a, StoreResult<Option<i64>>> {
        Box::pin(async move {
            let rows = self.rows(sql, &args).await?;
            first_int(rows.first())
        })
    }

    fn each<'a>(
        &'a mut self,
        sql: &'static Sql,
        args: Args<'a>,
        row: &'a mut (dyn FnMut(&dyn StoreRow) -> StoreResult<()> + Send),
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move { self.rows(sql, &args).await?.iter().try_for_each(|r| row(r)) })
    }

    fn lock<'a>(&'a mut self, sql: &'static Sql, args: Args<'a>) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move { self.exec(sql, args).await.map(|_| ()) })
    }
}

impl PgTx<'_> {
    async fn rows(&mut self, sql: &'static Sql, args: &[Value<'_>]) -> StoreResult<Vec<Row>> {
        let statement = prepared(self.conn, sql, args).await.map_err(|e| self.note(e))?;
        let conn = self.conn;
        self.run(async { conn.query(&statement, &params(args)).await }).await
    }
}

/// A pooled connection while a unit's transaction may be open on it. If the unit's future is dropped before it
/// commits or rolls back (its caller was cancelled: a server shutting down, a client gone), or the connection
/// failed, the connection is closed instead of going back to the pool, so the server rolls the transaction back
/// at once: a connection left idle in a transaction would hold its row locks until it was next used.
struct OpenTx {
    conn: Option<Object>,
    open: bool,
}

impl Drop for OpenTx {
    fn drop(&mut self) {
        if let (true, Some(conn)) = (self.open, self.conn.take()) {
            drop(Object::take(conn));
        }
    }
}

impl PgEngine {
    /// A connection of the pool. Any failure to get one (a server gone or refusing connections whatever its
    /// SQLSTATE, a database dropped, the pool exhausted, no host accepting writes) is an outage, answered 503 with
    /// `Retry-After`: only errors of a statement run on a connection are told apart by their SQLSTATE.
    async fn connection(&self) -> StoreResult<Object> {
        self.pool.get().await.map_err(unavailable)
    }

    /// A statement's result in the store's terms; the connection goes back to the pool unless the error shows it
    /// unfit, when it is thrown away.
    fn settle<T>(conn: Object, result: Result<T, tokio_postgres::Error>) -> StoreResult<T> {
        let mut spoiled = false;
        let result = result.map_err(|e| failed(&mut spoiled, e));
        if spoiled {
            drop(Object::take(conn));
        }
        result
    }

    /// Runs a read on a pooled connection; its rows.
    async fn rows(&self, sql: &'static Sql, args: &[Value<'_>]) -> StoreResult<Vec<Row>> {
        let conn = self.connection().await?;
        let result = query(&conn, sql, args).await;
        Self::settle(conn, result)
    }

    /// Runs a unit once: `Ok(Err(e))` when it failed in a way worth running it again.
    async fn unit_once<S, R>(&self, unit: UnitFn<S, R>, data: &S) -> StoreResult<Result<R, StoreError>> {
        let mut tx = OpenTx { conn: Some(self.connection().await?), open: true };
        let conn = tx.conn.as_deref().expect("the connection is held until the unit ends");
        let mut pg = PgTx { conn, begun: false, retryable: false, spoiled: false };
        let outcome = unit(&mut pg, data).await;
        let (begun, retryable, spoiled) = (pg.begun, pg.retryable, pg.spoiled);
        let (end, result) = match outcome {
            Ok(Outcome::Keep(r)) => ("COMMIT", Ok(r)),
            Ok(Outcome::Discard(r)) => ("ROLLBACK", Ok(r)),
            Err(e) => ("ROLLBACK", Err(e)),
        };
        if spoiled {
            return result.map(Ok);
        }
        if begun {
            match conn.batch_execute(end).await {
                Ok(()) => tx.open = false,
                Err(e) if is_retryable(&e) => return Ok(Err(map_err(e))),
                Err(e) => return Err(map_err(e)),
            }
        } else {
            tx.open = false;
        }
        match result {
            Ok(r) => Ok(Ok(r)),
            Err(e) if retryable => Ok(Err(e)),
            Err(e) => Err(e),
        }
    }
}

impl Engine for PgEngine {
    const BACKEND: &'static str = "postgres";

    async fn one<T: Send + 'static>(
        &self,
        sql: &'static Sql,
        args: Args<'_>,
        map: Mapper<T>,
    ) -> StoreResult<Option<T>> {
        let rows = match (sql.read(), batch::key(&args)) {
            (Read::ByKey, Some(key)) => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let answer = move |row: StoreResult<Option<&Row>>| {
                    drop(tx.send(row.and_then(|r| r.map(|r| map(r)).transpose())))
                };
                self.reads.read(&self.shared, sql, key, Box::new(answer));
                return rx.await.unwrap_or_else(|_| Err(unavailable("the read's batch was not sent")));
            }
            (Read::Scanning, _) => self.rows(sql, &args).await?,
            _ => self.shared.rows(sql, &args).await?,
        };
        rows.first().map(|r| map(r)).transpose()
    }

    async fn all<T: Send + 'static>(&self, sql: &'static Sql, args: Args<'_>, map: Mapper<T>) -> StoreResult<Vec<T>> {
        // Listings can be long: on a pooled connection, not ahead of other requests' reads on a shared one.
        let rows = self.rows(sql, &args).await?;
        rows.iter().map(|r| map(r)).collect()
    }

    async fn exec(&self, _durability: Durability, sql: &'static Sql, args: Args<'_>) -> StoreResult<u64> {
        let conn = self.connection().await?;
        let result = execute(&conn, sql, &args).await;
        Self::settle(conn, result)
    }

    async fn scalar(&self, _durability: Durability, sql: &'static Sql, args: Args<'_>) -> StoreResult<Option<i64>> {
        first_int(self.rows(sql, &args).await?.first())
    }

    async fn unit<S: Send + Sync + 'static, R: Send + 'static>(
        &self,
        _durability: Durability,
        unit: UnitFn<S, R>,
        data: S,
    ) -> StoreResult<R> {
        // A task of its own: a caller that goes away (a request cancelled, a server stopping) does not cut the
        // unit short between two statements; it commits or rolls back all the same.
        let engine = self.clone();
        let task = tokio::spawn(async move {
            let mut attempt = 0;
            loop {
                match engine.unit_once(unit, &data).await? {
                    Ok(r) => return Ok(r),
                    Err(e) if attempt >= TX_RETRIES => return Err(e),
                    Err(_) => {
                        attempt += 1;
                        tokio::time::sleep(Duration::from_millis(5u64 << attempt)).await;
                    }
                }
            }
        });
        task.await.map_err(|e| StoreError::Other(format!("a unit of work stopped: {e}")))?
    }

    async fn record_proof(
        &self,
        values: &[(Vec<u8>, latchkey_core::time::UnixTime)],
        admission: &latchkey_core::dpop::Admission,
        now: latchkey_core::time::UnixTime,
    ) -> StoreResult<latchkey_core::dpop::Recorded> {
        self.record_proof_values(values, admission, now).await
    }

    fn proofs_complete_since(&self) -> Option<latchkey_core::time::UnixTime> {
        self.floor.lock().unwrap_or_else(std::sync::PoisonError::into_inner).map(latchkey_core::time::UnixTime)
    }

    async fn purge_proofs(&self, now: latchkey_core::time::UnixTime) -> StoreResult<u64> {
        self.purge_proof_values(now).await
    }

    async fn ping(&self) -> StoreResult<()> {
        let conn = self.connection().await?;
        let result = conn.batch_execute("SELECT 1").await;
        Self::settle(conn, result)
    }

    fn delivery_notices(
        &self,
    ) -> impl std::future::Future<Output = StoreResult<Option<crate::notices::Notices>>> + Send {
        notices::listen(self.target.clone())
    }

    /// Redeems the code and issues the grant in one call of `latchkey_redeem_code_fast` (migration 0106 makes it),
    /// one round trip instead of the shared unit's six, when the user is under both refresh-token limits, as
    /// they nearly always are. At a limit it writes nothing, and the shared unit of work, which invalidates the
    /// oldest grants, runs instead.
    async fn redeem_fast<'a>(&'a self, r: &'a Redemption) -> StoreResult<Option<Redeemed>> {
        static FAST: Sql = Sql::new(
            "SELECT latchkey_redeem_code_fast($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)::BIGINT",
        );
        let mut args = crate::grants::grant_args(&r.grant);
        args.extend(crate::sql::args![r.now, i64::from(r.limits.per_client_user), i64::from(r.limits.per_user)]);
        let mut attempt = 0;
        loop {
            let conn = self.connection().await?;
            match query(&conn, &FAST, &args).await {
                Ok(rows) => {
                    return Ok(match first_int(rows.first())? {
                        Some(0) => Some(Redeemed::AlreadyUsed),
                        Some(1) => Some(Redeemed::Issued),
                        _ => None,
                    })
                }
                Err(e) if is_retryable(&e) && attempt < TX_RETRIES => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(5u64 << attempt)).await;
                }
                Err(e) => return Self::settle(conn, Err(e)),
            }
        }
    }
}
