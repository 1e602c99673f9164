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
//! transaction; on PostgreSQL it runs under the migrations' advisory lock, which the store takes around both.
//! The tables below are history: they describe the numbering of `53f1487` and never grow.
//!
//! **The steps** are embedded at build time (`build.rs` lists the folders). The ledger keeps sqlx's table, names
//! and checksums (earlier versions migrated with sqlx's migrator), so that every database made before opens as it
//! is.

use crate::{StoreError, StoreResult};

/// One migration step, embedded from its file.
#[derive(Debug)]
pub(crate) struct Step {
    /// Its number.
    pub(crate) version: i64,
    /// Its name, with spaces for underscores.
    pub(crate) description: &'static str,
    /// The file's text.
    pub(crate) sql: &'static str,
}

impl Step {
    /// The SHA-384 of the file, as the ledger records it.
    pub(crate) fn checksum(&self) -> Vec<u8> {
        ring::digest::digest(&ring::digest::SHA384, self.sql.as_bytes()).as_ref().to_vec()
    }
}

/// SQLite's steps, in order.
pub(crate) static SQLITE_STEPS: &[Step] = include!(concat!(env!("OUT_DIR"), "/sqlite_migrations.rs"));
/// PostgreSQL's steps, in order.
pub(crate) static POSTGRES_STEPS: &[Step] = include!(concat!(env!("OUT_DIR"), "/postgres_migrations.rs"));

/// The steps of `steps` up to `up_to` that the ledger (version, success, checksum) has not applied, in order. A
/// step applied from another file, or left half applied, is an error, and so is a step applied that this binary
/// does not have: the database was migrated by a newer version, whose schema this one may misread.
pub(crate) fn pending<'s>(
    steps: &'s [Step],
    ledger: &[(i64, bool, Vec<u8>)],
    up_to: i64,
) -> StoreResult<Vec<&'s Step>> {
    if let Some((unknown, ..)) = ledger.iter().find(|(v, ..)| !steps.iter().any(|s| s.version == *v)) {
        return Err(StoreError::Other(format!(
            "migration {unknown} was applied to the database but is unknown to this version of latchkey: the \
             database was migrated by a newer version"
        )));
    }
    let mut todo = Vec::new();
    for step in steps.iter().filter(|s| s.version <= up_to) {
        match ledger.iter().find(|(v, ..)| *v == step.version) {
            Some((_, true, sum)) if *sum == step.checksum() => {}
            Some((_, true, _)) => {
                return Err(StoreError::Other(format!("migration {} was changed after it was applied", step.version)))
            }
            Some((_, false, _)) => {
                return Err(StoreError::Other(format!("migration {} is partially applied", step.version)))
            }
            None => todo.push(step),
        }
    }
    Ok(todo)
}

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
    fn of(m: &Step) -> Self {
        Self { version: m.version, description: m.description.to_owned(), checksum: m.checksum() }
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

/// What carrying `ledger` over to the folder of `steps` takes: nothing when it holds no row of the earlier
/// numbering. An error when a moved step's version is held by another row (a ledger this code did not write).
pub(crate) fn plan(renumbering: &Renumbering, steps: &[Step], ledger: &[Applied]) -> StoreResult<Vec<Change>> {
    let file = |version: i64| {
        steps
            .iter()
            .find(|m| m.version == version)
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
pub(crate) fn carry_over_sqlite(conn: &rusqlite::Connection) -> StoreResult<usize> {
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
        let changes = plan(&SQLITE, SQLITE_STEPS, &ledger)?;
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
pub(crate) async fn carry_over_postgres(conn: &mut tokio_postgres::Client) -> StoreResult<usize> {
    use crate::postgres::errors::map_err;
    let tx = conn.transaction().await.map_err(map_err)?;
    let ledger: Vec<Applied> = tx
        .query(READ, &[])
        .await
        .map_err(map_err)?
        .iter()
        .map(|r| Ok(Applied { version: r.try_get(0)?, description: r.try_get(1)?, checksum: r.try_get(2)? }))
        .collect::<Result<_, tokio_postgres::Error>>()
        .map_err(map_err)?;
    let changes = plan(&POSTGRES, POSTGRES_STEPS, &ledger)?;
    if changes.is_empty() {
        return Ok(0);
    }
    for change in &changes {
        match change {
            Change::Move { from, to } => tx.execute(MOVE, &[&-to.version, &to.description, &to.checksum, from]).await,
            Change::Record(a) => tx.execute(RECORD, &[&a.version, &a.description, &a.checksum]).await,
        }
        .map_err(map_err)?;
    }
    tx.execute(SETTLE, &[]).await.map_err(map_err)?;
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
