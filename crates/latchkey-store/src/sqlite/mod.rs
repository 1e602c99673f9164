//! The SQLite engine: one file in WAL mode. Writes (statements and units of work) are group-committed by one
//! writer thread, and a durable write is answered only once the WAL holding it is fdatasynced, so that a
//! committed grant survives a crash and a power cut; reads run on pooled connections on the calling thread (see
//! [`engine`]). It runs the statements every engine shares ([`crate::sql`]); nothing here knows a table.

mod engine;

use crate::db::{BoxFuture, Db, Durability, Engine, Mapper, Outcome, Tx, UnitFn};
use crate::rows::{SqliteRow, StoreRow};
use crate::sql::{owned, Args, Sql, Value};
use crate::{StoreError, StoreResult};
use engine::map_err;
use rusqlite::types::ToSqlOutput;
use rusqlite::{params_from_iter, Connection};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// The SQLite engine under [`SqliteStore`].
#[derive(Debug, Clone)]
pub struct SqliteEngine {
    inner: Arc<engine::Engine>,
    /// DPoP proofs' single-use values, in memory ([`crate::replay::InMemory`]).
    proofs: Arc<crate::replay::InMemory>,
}

/// The SQLite store.
pub type SqliteStore = Db<SqliteEngine>;

/// The file a `sqlite://PATH` (or `sqlite:PATH`) URL names; query parameters are ignored.
fn path_of(url: &str) -> StoreResult<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .ok_or_else(|| StoreError::Other(format!("bad SQLite URL {url:?}: use sqlite://PATH")))?;
    let path = rest.split('?').next().unwrap_or("");
    if path.is_empty() || path == ":memory:" {
        return Err(StoreError::Other("the SQLite store needs a file: use sqlite://PATH".into()));
    }
    Ok(PathBuf::from(path))
}

impl Db<SqliteEngine> {
    /// Opens (creating if needed) the database at `url` (`sqlite://path`), migrates it and starts its writer.
    pub async fn open(url: &str) -> StoreResult<Self> {
        let path = path_of(url)?;
        let proofs = crate::replay::InMemory::of(&path);
        let inner = tokio::task::spawn_blocking(move || engine::Engine::open(&path))
            .await
            .map_err(|e| StoreError::Other(format!("opening SQLite: {e}")))??;
        Ok(Db::new(SqliteEngine { inner, proofs }))
    }
}

/// Writes a consistent copy of the database at `db` to the new file `to` (SQLite's `VACUUM INTO`), while servers
/// keep reading and writing it: the copy is one read transaction's view, every commit before it and none after.
/// The file is made first, empty, private (0600) and never through a link, so that no one else can open it while
/// it fills; an existing file is refused. Nothing is migrated: the copy is the database as it is. Returns its size
/// in bytes.
pub fn backup(db: &Path, to: &Path) -> StoreResult<u64> {
    let fail = |e: std::io::Error| StoreError::Other(format!("{}: {e}", to.display()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(to) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(StoreError::Conflict(format!("{} exists: back up to a new file", to.display())))
        }
        Err(e) => return Err(fail(e)),
    }
    let copy = || -> rusqlite::Result<()> {
        let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute("VACUUM INTO ?1", [to.to_string_lossy()])?;
        Ok(())
    };
    if let Err(e) = copy() {
        let _ = std::fs::remove_file(to);
        return Err(map_err(e));
    }
    std::fs::metadata(to).map(|m| m.len()).map_err(fail)
}

/// A value as SQLite stores it: a grant id as its encoded text (the column's type since the first schema),
/// booleans as integers.
impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self {
            Value::Int(v) => v.to_sql(),
            Value::Bool(v) => v.to_sql(),
            Value::Text(Some(t)) => Ok(ToSqlOutput::from(t.as_ref())),
            Value::Bytes(Some(b)) => Ok(ToSqlOutput::from(b.as_ref())),
            Value::Text(None) | Value::Bytes(None) => Ok(ToSqlOutput::from(rusqlite::types::Null)),
            Value::Grant(g) => Ok(ToSqlOutput::from(g.encode())),
        }
    }
}

/// Runs a statement; returns the rows it changed.
fn exec(conn: &Connection, sql: &'static Sql, args: &Args<'_>) -> StoreResult<u64> {
    let changed = conn.prepare_cached(sql.sqlite()).and_then(|mut s| s.execute(params_from_iter(args.iter())));
    Ok(changed.map_err(map_err)? as u64)
}

/// Runs a statement; returns the first column of its first row.
fn scalar(conn: &Connection, sql: &'static Sql, args: &Args<'_>) -> StoreResult<Option<i64>> {
    let first = || -> rusqlite::Result<Option<i64>> {
        let mut stmt = conn.prepare_cached(sql.sqlite())?;
        let mut rows = stmt.query(params_from_iter(args.iter()))?;
        rows.next()?.map(|r| r.get(0)).transpose()
    };
    first().map_err(map_err)
}

/// Every row of a read, mapped.
fn query<T: Send>(conn: &Connection, sql: &'static Sql, args: &Args<'_>, map: Mapper<T>) -> StoreResult<Vec<T>> {
    let mut out = Vec::new();
    each(conn, sql, args, &mut |r| {
        out.push(map(r)?);
        Ok(())
    })?;
    Ok(out)
}

/// Hands each row of a read, in order, to `row`.
fn each(
    conn: &Connection,
    sql: &'static Sql,
    args: &Args<'_>,
    row: &mut (dyn FnMut(&dyn StoreRow) -> StoreResult<()> + Send),
) -> StoreResult<()> {
    let mut stmt = conn.prepare_cached(sql.sqlite()).map_err(map_err)?;
    let mut rows = stmt.query(params_from_iter(args.iter())).map_err(map_err)?;
    while let Some(r) = rows.next().map_err(map_err)? {
        row(&SqliteRow::new(r))?;
    }
    Ok(())
}

/// A unit's statements on the writer's connection, inside the batch's transaction.
/// It holds the connection by `&mut`, which is `Send` where `&Connection` is not.
struct SqliteTx<'c> {
    conn: &'c mut Connection,
}

impl Tx for SqliteTx<'_> {
    fn exec<'a>(&'a mut self, sql: &'static Sql, args: Args<'a>) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(std::future::ready(exec(self.conn, sql, &args)))
    }

    fn scalar<'a>(&'a mut self, sql: &'static Sql, args: Args<'a>) -> BoxFuture<'a, StoreResult<Option<i64>>> {
        Box::pin(std::future::ready(scalar(self.conn, sql, &args)))
    }

    fn each<'a>(
        &'a mut self,
        sql: &'static Sql,
        args: Args<'a>,
        row: &'a mut (dyn FnMut(&dyn StoreRow) -> StoreResult<()> + Send),
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(std::future::ready(each(self.conn, sql, &args, row)))
    }

    fn lock<'a>(&'a mut self, _sql: &'static Sql, _args: Args<'a>) -> BoxFuture<'a, StoreResult<()>> {
        // One writer runs every unit in turn: there is nothing to order.
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The result of a future that is ready at once, as a unit's future over a [`SqliteTx`] is.
fn ready_now<T>(future: impl Future<Output = StoreResult<T>>) -> StoreResult<T> {
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(result) => result,
        Poll::Pending => Err(StoreError::Other("a unit of work waited on something other than SQLite".into())),
    }
}

impl Engine for SqliteEngine {
    const BACKEND: &'static str = "sqlite";

    fn one<T: Send + 'static>(
        &self,
        sql: &'static Sql,
        args: Args<'_>,
        map: Mapper<T>,
    ) -> impl Future<Output = StoreResult<Option<T>>> + Send {
        // The first row only, mapped where it lies: no list for one row.
        let read = self.inner.read(|c| {
            let mut stmt = c.prepare_cached(sql.sqlite())?;
            let mut rows = stmt.query(params_from_iter(args.iter()))?;
            Ok(rows.next()?.map(|r| map(&SqliteRow::new(r))).transpose())
        });
        std::future::ready(read.and_then(|r| r))
    }

    async fn all<T: Send + 'static>(&self, sql: &'static Sql, args: Args<'_>, map: Mapper<T>) -> StoreResult<Vec<T>> {
        // Listings can be long: read on the blocking pool.
        let args = owned(args);
        self.inner.read_blocking(move |c| Ok(query(c, sql, &args, map))).await?
    }

    async fn exec(&self, durability: Durability, sql: &'static Sql, args: Args<'_>) -> StoreResult<u64> {
        let args = owned(args);
        self.inner.write(durability, move |c| exec(c, sql, &args).map(Outcome::Keep)).await
    }

    async fn scalar(&self, durability: Durability, sql: &'static Sql, args: Args<'_>) -> StoreResult<Option<i64>> {
        let args = owned(args);
        self.inner.write(durability, move |c| scalar(c, sql, &args).map(Outcome::Keep)).await
    }

    async fn unit<S: Send + Sync + 'static, R: Send + 'static>(
        &self,
        durability: Durability,
        unit: UnitFn<S, R>,
        data: S,
    ) -> StoreResult<R> {
        self.inner.write(durability, move |conn| ready_now(unit(&mut SqliteTx { conn }, &data))).await
    }

    async fn record_proof(
        &self,
        values: &[(Vec<u8>, latchkey_core::time::UnixTime)],
        admission: &latchkey_core::dpop::Admission,
        now: latchkey_core::time::UnixTime,
    ) -> StoreResult<latchkey_core::dpop::Recorded> {
        static LEASE: Sql = Sql::new("SELECT until FROM proof_lease");
        static EXTEND: Sql = Sql::new(
            "INSERT INTO proof_lease (one, until) VALUES (1, $1) ON CONFLICT (one) DO UPDATE SET until = excluded.until",
        );
        if self.proofs.starting() {
            let earlier = self.one(&LEASE, vec![], |r| r.int("until")).await?;
            self.proofs.start(earlier, now);
        }
        // The lease covers every value before it is accepted, durably: a crash or power cut after the answer leaves
        // it behind. Extended a minute ahead, it is written about once a minute.
        let longest = values.iter().map(|(_, expires_at)| expires_at.0).max().unwrap_or(now.0);
        if longest > self.proofs.lease() {
            let until = longest + crate::replay::LEASE_AHEAD;
            self.exec(Durability::Durable, &EXTEND, crate::sql::args![until]).await?;
            self.proofs.extend(until);
        }
        Ok(self.proofs.record(values, admission, now))
    }

    fn proofs_complete_since(&self) -> Option<latchkey_core::time::UnixTime> {
        self.proofs.complete_since()
    }

    async fn ping(&self) -> StoreResult<()> {
        self.inner.read(|c| c.query_row("SELECT 1", [], |_| Ok(())))
    }
}

#[cfg(test)]
mod tests;
