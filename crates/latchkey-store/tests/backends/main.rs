//! The store's tests on real backends, under a harness of our own (libtest-mimic, `harness = false`; see
//! docs/design.md, "Tests"), so that a PostgreSQL test with no server to run on is reported as ignored, not passed:
//!
//! - `conformance::sqlite::<check>` and `conformance::postgres::<check>`: the conformance suite, one test per check
//!   per backend, each on a fresh store (SQLite: a new file; PostgreSQL: a new schema);
//! - `postgres::<test>`: the PostgreSQL backend's own tests.
//!
//! PostgreSQL is `LATCHKEY_TEST_DATABASE_URL`, else the local server; under `CI=true` a missing one fails the tests.

mod postgres;

use latchkey_store::conformance::{Check, CHECKS};
use latchkey_store::postgres::PgStore;
use latchkey_store::sqlite::SqliteStore;
use latchkey_store::test_database::{run, trial, TestDatabase, Unreachable};
use latchkey_store::PoolSettings;
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    let mut tests = Vec::new();
    for check in CHECKS {
        tests.push(trial(format!("conformance::sqlite::{}", check.name), move || on_sqlite(check)));
        tests.push(trial(format!("conformance::postgres::{}", check.name), move || on_postgres(check)));
    }
    tests.extend(postgres::tests());
    // Most of a test's time is spent waiting for the database (its migrations, its commits).
    run(tests, 2)
}

/// Runs a check on a store of its own, on a new file.
async fn on_sqlite(check: &'static Check) -> Result<(), Unreachable> {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let store = SqliteStore::open(&url).await.expect("open");
    (check.run)(Arc::new(store)).await;
    Ok(())
}

/// Runs a check on a store of its own, in a new schema.
async fn on_postgres(check: &'static Check) -> Result<(), Unreachable> {
    let db = TestDatabase::create().await?;
    let store = PgStore::open(&db.url, PoolSettings::default()).await.expect("open");
    (check.run)(Arc::new(store)).await;
    Ok(())
}
