//! The migration folders, numbered in step, and how a database installed before they were is carried over.
//!
//! `migrations/sqlite` and `migrations/postgres` list the same steps under the same numbers and names (a test
//! fails when they differ). A step that one engine needs and the other does not is, for the other, a file whose
//! body is only a comment saying why. A new step takes the next free number in both folders.
//!
//! **Carrying an installed database over.** Up to commit `53f1487` the folders were numbered apart: PostgreSQL
//! had no `dpop_replay` or `code_grant` step, so its `client_lifecycle` was 0002 where SQLite's was 0003, and so
//! on. Each applied step is a row of the ledger `_sqlx_migrations` (version, description, checksum: the SHA-384
//! of the file), which the migrations check against the folder: a version whose checksum differs is refused, so
//! a database made by that version would not open against the renumbered folder as it stands. Before the
//! migrations run, [`carry_over_sqlite`] and [`carry_over_postgres`] look for the rows of the earlier numbering
//! ([`SQLITE`], [`POSTGRES`]): a row at the earlier version, with the earlier description and the checksum of the
//! file the step is in now (the steps' SQL was kept byte for byte; only the file names changed). Finding one, they
//! rewrite the ledger in one transaction:
//! - each such row moves to the step's version now, with its description and checksum (when it was applied, and
//!   how long it took, are kept);
//! - the steps whose file is only a comment on that engine are recorded as applied.
//!
//! The migrations then run as always and apply only the steps the database had not reached. A new database, or
//! one already carried over, has no row of the earlier numbering, and nothing changes. Instances starting
//! together carry a database over once: on SQLite the carry-over reads the ledger inside a `BEGIN IMMEDIATE`
//! transaction; on PostgreSQL it runs under the advisory lock of sqlx's migrator, which the store takes around
//! both. The tables below are history: they describe the numbering of `53f1487` and never grow.

use crate::{StoreError, StoreResult};
use sqlx::migrate::{Migration, Migrator};

/// A step that the earlier numbering recorded elsewhere.
struct Moved {
    /// Its version in the earlier numbering.
    from: i64,
    /// Its description there.
    was: &'static str,
    /// Its version now.
    to: i64,
}

/// How one engine's earlier numbering maps onto the folders in step.
pub(crate) struct Renumbering {
    /// The steps whose version or name changed.
    moved: &'static [Moved],
    /// The steps whose file on this engine is only a comment, recorded as applied when a database is carried over.
    no_ops: &'static [i64],
}

/// SQLite: the numbers stayed; `0100_grant_counts_and_replay` is now `0100_grant_counts` (PostgreSQL's name, the
/// part both engines share), and `0105_redeem_function` is PostgreSQL's alone.
pub(crate) const SQLITE: Renumbering =
    Renumbering { moved: &[Moved { from: 100, was: "grant counts and replay", to: 100 }], no_ops: &[105] };

/// PostgreSQL: `0002_dpop_replay` and `0101_code_grant` are SQLite's alone; the steps after them moved up, and
/// `redeem_function` (0102) moved after the last step the two engines share.
pub(crate) const POSTGRES: Renumbering = Renumbering {
    moved: &[
        Moved { from: 2, was: "client lifecycle", to: 3 },
        Moved { from: 3, was: "console", to: 4 },
        Moved { from: 101, was: "refresh by grant id", to: 102 },
        Moved { from: 102, was: "redeem function", to: 105 },
    ],
    no_ops: &[2, 101],
};

/// A row of the ledger, as far as the carry-over reads and writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The step's number.
    pub(crate) version: i64,
    /// Its name, with spaces for underscores (as sqlx records it).
    pub(crate) description: String,
    /// The SHA-384 of its file.
    pub(crate) checksum: Vec<u8>,
}

impl Applied {
    fn of(m: &Migration) -> Self {
        Self { version: m.version, description: m.description.to_string(), checksum: m.checksum.to_vec() }
    }
}

/// One rewrite of the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// The row at version `from` becomes `to`.
    Move {
        /// The earlier version.
        from: i64,
        /// The row as it is now.
        to: Applied,
    },
    /// A step whose file is only a comment, recorded as applied.
    Record(Applied),
}

/// The ledger, every row (both engines).
const READ: &str = "SELECT version, description, checksum FROM _sqlx_migrations ORDER BY version";
/// Moves a row to a version of its own (`$1`) with its new description and checksum. The version is first made
/// negative, so that the rows can change places in any order without two ever sharing one; [`SETTLE`] ends that.
/// (`$n` are positional parameters on both engines: SQLite numbers them in the order they first appear.)
const MOVE: &str = "UPDATE _sqlx_migrations SET version = $1, description = $2, checksum = $3 WHERE version = $4";
/// Makes the moved rows' versions positive again.
const SETTLE: &str = "UPDATE _sqlx_migrations SET version = -version WHERE version < 0";
/// Records a step as applied.
const RECORD: &str = "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                      VALUES ($1, $2, TRUE, $3, 0)";

/// What carrying `ledger` over to the folder of `migrator` takes: nothing when it holds no row of the earlier
/// numbering. An error when a moved step's version is held by another row (a ledger this code did not write).
pub(crate) fn plan(renumbering: &Renumbering, migrator: &Migrator, ledger: &[Applied]) -> StoreResult<Vec<Change>> {
    let file = |version: i64| {
        migrator
            .iter()
            .find(|m| m.version == version && !m.migration_type.is_down_migration())
            .map(Applied::of)
            .ok_or_else(|| StoreError::Other(format!("migration {version} is missing from the folder")))
    };
    let mut changes = Vec::new();
    for moved in renumbering.moved {
        let to = file(moved.to)?;
        if ledger.iter().any(|a| a.version == moved.from && a.description == moved.was && a.checksum == to.checksum) {
            changes.push(Change::Move { from: moved.from, to });
        }
    }
    if changes.is_empty() {
        return Ok(changes);
    }
    let vacated = |v: i64| changes.iter().any(|c| matches!(c, Change::Move { from, .. } if *from == v));
    let kept: Vec<&Applied> = ledger.iter().filter(|a| !vacated(a.version)).collect();
    let mut taken: Vec<i64> = kept.iter().map(|a| a.version).collect();
    for change in &changes {
        if let Change::Move { to, .. } = change {
            if let Some(holder) = kept.iter().find(|a| a.version == to.version) {
                return Err(StoreError::Other(format!(
                    "cannot carry the migration ledger over: version {} is `{}`, where `{}` goes",
                    to.version, holder.description, to.description
                )));
            }
            taken.push(to.version);
        }
    }
    for &version in renumbering.no_ops {
        if !taken.contains(&version) {
            changes.push(Change::Record(file(version)?));
        }
    }
    Ok(changes)
}

/// Carries a SQLite database's ledger over (see the module's doc), in one `BEGIN IMMEDIATE` transaction; returns
/// how many rows changed. The ledger table must exist.
pub(crate) fn carry_over_sqlite(conn: &rusqlite::Connection, migrator: &Migrator) -> StoreResult<usize> {
    let fail = |e: rusqlite::Error| StoreError::Other(format!("carrying the migration ledger over: {e}"));
    conn.execute_batch("BEGIN IMMEDIATE").map_err(fail)?;
    let carried = (|| {
        let ledger = conn
            .prepare(READ)
            .and_then(|mut s| {
                s.query_map([], |r| Ok(Applied { version: r.get(0)?, description: r.get(1)?, checksum: r.get(2)? }))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(fail)?;
        let changes = plan(&SQLITE, migrator, &ledger)?;
        if changes.is_empty() {
            return Ok(0);
        }
        for change in &changes {
            match change {
                Change::Move { from, to } => {
                    conn.execute(MOVE, rusqlite::params![-to.version, to.description, to.checksum, from])
                }
                Change::Record(a) => conn.execute(RECORD, rusqlite::params![a.version, a.description, a.checksum]),
            }
            .map_err(fail)?;
        }
        conn.execute(SETTLE, []).map_err(fail)?;
        Ok(changes.len())
    })();
    match carried {
        Ok(n) => {
            conn.execute_batch("COMMIT").map_err(fail)?;
            report(n);
            Ok(n)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Carries a PostgreSQL database's ledger over (see the module's doc), in one transaction; returns how many rows
/// changed. The ledger table must exist, and the caller holds the migrations' advisory lock.
pub(crate) async fn carry_over_postgres(conn: &mut sqlx::PgConnection, migrator: &Migrator) -> StoreResult<usize> {
    use crate::postgres::errors::map_err;
    use sqlx::Connection;
    let mut tx = conn.begin().await.map_err(map_err)?;
    let ledger: Vec<Applied> = sqlx::query_as::<_, (i64, String, Vec<u8>)>(READ)
        .fetch_all(&mut *tx)
        .await
        .map_err(map_err)?
        .into_iter()
        .map(|(version, description, checksum)| Applied { version, description, checksum })
        .collect();
    let changes = plan(&POSTGRES, migrator, &ledger)?;
    if changes.is_empty() {
        return Ok(0);
    }
    for change in &changes {
        let query = match change {
            Change::Move { from, to } => {
                sqlx::query(MOVE).bind(-to.version).bind(&to.description).bind(&to.checksum).bind(*from)
            }
            Change::Record(a) => sqlx::query(RECORD).bind(a.version).bind(&a.description).bind(&a.checksum),
        };
        query.execute(&mut *tx).await.map_err(map_err)?;
    }
    sqlx::query(SETTLE).execute(&mut *tx).await.map_err(map_err)?;
    tx.commit().await.map_err(map_err)?;
    report(changes.len());
    Ok(changes.len())
}

/// Logs a carry-over that changed something.
fn report(changed: usize) {
    if changed > 0 {
        tracing::info!(rows = changed, "migration ledger carried over to the numbering in step");
    }
}

#[cfg(test)]
mod tests;
