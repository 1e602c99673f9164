//! The PostgreSQL engine: many stateless instances on one database (also the wire protocol of the distributed
//! PostgreSQL-compatible engines, see `docs/scaling.md`). It runs the statements every engine shares
//! ([`crate::sql`]); what is its own is the pool, the transactions and the one-round-trip code redemption.
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

pub(crate) mod errors;
mod notices;

use crate::db::{BoxFuture, Db, Durability, Engine, Mapper, Outcome, Tx, UnitFn};
use crate::records::Redemption;
use crate::rows::StoreRow;
use crate::sql::{Args, Sql, Value};
use crate::{PoolSettings, Redeemed, StoreError, StoreResult};
use errors::{is_retryable, map_err};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::{Postgres, Row};
use std::str::FromStr;
use std::time::Duration;

/// The PostgreSQL engine under [`PgStore`].
#[derive(Debug, Clone)]
pub struct PgEngine {
    pool: PgPool,
}

/// The PostgreSQL store.
pub type PgStore = Db<PgEngine>;

/// A pooled connection idle for longer is pinged before it is handed out (a broken one is replaced).
const PING_IF_IDLE_FOR: Duration = Duration::from_millis(50);

/// How often a unit of work that lost a serialization or deadlock race is tried again.
const TX_RETRIES: u32 = 3;

impl Db<PgEngine> {
    /// Connects to the database at `url` (`postgres://user@host:port/db`) with `pool` settings and migrates it
    /// (migrations take an advisory lock, so instances starting together run them once).
    pub async fn open(url: &str, pool: PoolSettings) -> StoreResult<Self> {
        let store = Self::connect(url, pool).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Connects without migrating.
    pub async fn connect(url: &str, pool: PoolSettings) -> StoreResult<Self> {
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::Other(format!("bad PostgreSQL URL: {e}")))?
            .application_name("latchkey");
        let pool = PgPoolOptions::new()
            .max_connections(pool.max_connections.max(1))
            .min_connections(0)
            .acquire_timeout(pool.acquire_timeout)
            // A connection that sat idle (for example through an outage) is checked with a ping before use; a
            // busy one is not, so that a query costs one round trip under load instead of two.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for < PING_IF_IDLE_FOR {
                        return Ok(true);
                    }
                    Ok(sqlx::Connection::ping(conn).await.is_ok())
                })
            })
            .idle_timeout(Duration::from_secs(300))
            .connect_with(options)
            .await
            .map_err(map_err)?;
        Ok(Db::new(PgEngine { pool }))
    }

    /// Runs the migrations not yet applied, carrying a database numbered the earlier way over first, under
    /// sqlx's advisory lock (instances starting together migrate once).
    pub async fn migrate(&self) -> StoreResult<()> {
        use sqlx::migrate::Migrate;
        let failed = |e: sqlx::migrate::MigrateError| StoreError::Other(format!("migration failed: {e}"));
        let mut migrator = sqlx::migrate!("migrations/postgres");
        migrator.set_locking(false);
        let mut conn = self.engine.inner.connection().await?;
        conn.lock().await.map_err(failed)?;
        let migrated = async {
            conn.ensure_migrations_table().await.map_err(failed)?;
            crate::migrations::carry_over_postgres(&mut conn, &migrator).await?;
            // `run_direct` is `run` on a connection: `run(&mut PgConnection)` trips sqlx's "implementation of
            // `Acquire` is not general enough" in a spawned task, as sqlx's own comment on `run_direct` says.
            migrator.run_direct(&mut *conn).await.map_err(failed)
        }
        .await;
        // A connection that may still hold the lock goes, instead of back to the pool.
        if conn.unlock().await.is_err() {
            conn.close_on_drop();
        }
        migrated
    }
}

type Query<'q> = sqlx::query::Query<'q, Postgres, PgArguments>;

/// The statement with its values bound, each as its PostgreSQL type.
fn bind<'q>(sql: &'static Sql, args: &'q [Value<'_>]) -> Query<'q> {
    args.iter().fold(sqlx::query(sql.postgres()), |q, v| match v {
        Value::Int(v) => q.bind(*v),
        Value::Bool(v) => q.bind(*v),
        Value::Text(v) => q.bind(v.as_deref()),
        Value::Bytes(v) => q.bind(v.as_deref()),
        Value::Grant(g) => q.bind(&g.0[..]),
    })
}

/// The first column of a row, an integer.
fn first_int(row: Option<sqlx::postgres::PgRow>) -> StoreResult<Option<i64>> {
    row.map(|r| r.try_get::<i64, _>(0).map_err(map_err)).transpose()
}

/// A unit's statements on one connection, inside its transaction. It notes whether a statement lost a
/// serialization or deadlock race, so that the unit can be run again.
struct PgTx<'c> {
    conn: &'c mut PgConnection,
    retryable: bool,
}

impl PgTx<'_> {
    fn note(&mut self, e: sqlx::Error) -> StoreError {
        self.retryable |= is_retryable(&e);
        map_err(e)
    }
}

impl Tx for PgTx<'_> {
    fn exec<'a>(&'a mut self, sql: &'static Sql, args: Args<'a>) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(async move {
            match bind(sql, &args).execute(&mut *self.conn).await {
                Ok(r) => Ok(r.rows_affected()),
                Err(e) => Err(self.note(e)),
            }
        })
    }

    fn scalar<'a>(&'a mut self, sql: &'static Sql, args: Args<'a>) -> BoxFuture<'a, StoreResult<Option<i64>>> {
        Box::pin(async move {
            match bind(sql, &args).fetch_optional(&mut *self.conn).await {
                Ok(row) => first_int(row),
                Err(e) => Err(self.note(e)),
            }
        })
    }

    fn each<'a>(
        &'a mut self,
        sql: &'static Sql,
        args: Args<'a>,
        row: &'a mut (dyn FnMut(&dyn StoreRow) -> StoreResult<()> + Send),
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let rows = match bind(sql, &args).fetch_all(&mut *self.conn).await {
                Ok(rows) => rows,
                Err(e) => return Err(self.note(e)),
            };
            rows.iter().try_for_each(|r| row(r))
        })
    }

    fn lock<'a>(&'a mut self, sql: &'static Sql, args: Args<'a>) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move { self.exec(sql, args).await.map(|_| ()) })
    }
}

/// A pooled connection while a unit's transaction is open on it. If the unit's future is dropped before it
/// commits or rolls back (its caller was cancelled: a server shutting down, a client gone), the connection is
/// closed instead of going back to the pool, so the server rolls the transaction back at once: a connection left
/// idle in a transaction would hold its row locks until it was next used.
struct OpenTx {
    conn: PoolConnection<Postgres>,
    open: bool,
}

impl Drop for OpenTx {
    fn drop(&mut self) {
        if self.open {
            self.conn.close_on_drop();
        }
    }
}

static BEGIN: Sql = Sql::new("BEGIN");
static COMMIT: Sql = Sql::new("COMMIT");
static ROLLBACK: Sql = Sql::new("ROLLBACK");

impl PgEngine {
    /// A connection of the pool. Any failure to get one (a server gone or refusing connections whatever its
    /// SQLSTATE, a database dropped, the pool exhausted) is an outage, answered 503 with `Retry-After`: only
    /// errors of a statement run on a connection are told apart by their SQLSTATE.
    async fn connection(&self) -> StoreResult<sqlx::pool::PoolConnection<sqlx::Postgres>> {
        self.pool.acquire().await.map_err(|e| StoreError::Unavailable(format!("no connection to PostgreSQL: {e}")))
    }

    /// Runs a unit once: `Ok(Err(e))` when it failed in a way worth running it again.
    async fn unit_once<S, R>(&self, unit: UnitFn<S, R>, data: &S) -> StoreResult<Result<R, StoreError>> {
        let mut tx = OpenTx { conn: self.connection().await?, open: true };
        bind(&BEGIN, &[]).execute(&mut *tx.conn).await.map_err(map_err)?;
        let mut pg = PgTx { conn: &mut tx.conn, retryable: false };
        let outcome = unit(&mut pg, data).await;
        let retryable = pg.retryable;
        let (end, result) = match outcome {
            Ok(Outcome::Keep(r)) => (&COMMIT, Ok(r)),
            Ok(Outcome::Discard(r)) => (&ROLLBACK, Ok(r)),
            Err(e) => (&ROLLBACK, Err(e)),
        };
        match bind(end, &[]).execute(&mut *tx.conn).await {
            Ok(_) => tx.open = false,
            Err(e) if is_retryable(&e) => return Ok(Err(map_err(e))),
            Err(e) => return Err(map_err(e)),
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
        let row = bind(sql, &args).fetch_optional(&mut *self.connection().await?).await.map_err(map_err)?;
        row.map(|r| map(&r)).transpose()
    }

    async fn all<T: Send + 'static>(&self, sql: &'static Sql, args: Args<'_>, map: Mapper<T>) -> StoreResult<Vec<T>> {
        let rows = bind(sql, &args).fetch_all(&mut *self.connection().await?).await.map_err(map_err)?;
        rows.iter().map(|r| map(r)).collect()
    }

    async fn exec(&self, _durability: Durability, sql: &'static Sql, args: Args<'_>) -> StoreResult<u64> {
        Ok(bind(sql, &args).execute(&mut *self.connection().await?).await.map_err(map_err)?.rows_affected())
    }

    async fn scalar(&self, _durability: Durability, sql: &'static Sql, args: Args<'_>) -> StoreResult<Option<i64>> {
        first_int(bind(sql, &args).fetch_optional(&mut *self.connection().await?).await.map_err(map_err)?)
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

    async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&mut *self.connection().await?).await.map_err(map_err)?;
        Ok(())
    }

    fn delivery_notices(
        &self,
    ) -> impl std::future::Future<Output = StoreResult<Option<crate::notices::Notices>>> + Send {
        notices::listen(self.pool.clone())
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
            match bind(&FAST, &args).fetch_one(&mut *self.connection().await?).await {
                Ok(row) => {
                    return Ok(match row.try_get::<i64, _>(0).map_err(map_err)? {
                        0 => Some(Redeemed::AlreadyUsed),
                        1 => Some(Redeemed::Issued),
                        _ => None,
                    })
                }
                Err(e) if is_retryable(&e) && attempt < TX_RETRIES => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(5u64 << attempt)).await;
                }
                Err(e) => return Err(map_err(e)),
            }
        }
    }
}
