//! Migrating a PostgreSQL database ([`crate::migrations`]): under an advisory lock, so that instances starting
//! together migrate once, each step in a transaction of its own with its row of the ledger.

use super::errors::map_err;
use crate::migrations::{self, pending, POSTGRES_STEPS};
use crate::{StoreError, StoreResult};
use tokio_postgres::Client;

/// The advisory lock's key (any number no other lock of the database's users takes).
const LOCK: i64 = 0x6c61_7463_686b_6579; // "latchkey"

/// The ledger of applied steps, as sqlx's migrator made it (databases made by earlier versions open unchanged).
const LEDGER: &str = "CREATE TABLE IF NOT EXISTS _sqlx_migrations (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    installed_on TIMESTAMPTZ NOT NULL DEFAULT now(),
    success BOOLEAN NOT NULL,
    checksum BYTEA NOT NULL,
    execution_time BIGINT NOT NULL
)";

/// Applies the steps not yet applied.
pub(super) async fn run(conn: &mut Client) -> StoreResult<()> {
    let failed = |e: tokio_postgres::Error| StoreError::Other(format!("migration failed: {e}"));
    conn.execute("SELECT pg_advisory_lock($1)", &[&LOCK]).await.map_err(map_err)?;
    let migrated = async {
        conn.batch_execute(LEDGER).await.map_err(failed)?;
        migrations::carry_over_postgres(conn).await?;
        let ledger = conn
            .query("SELECT version, success, checksum FROM _sqlx_migrations", &[])
            .await
            .map_err(failed)?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .collect::<Result<Vec<_>, tokio_postgres::Error>>()
            .map_err(failed)?;
        for step in pending(POSTGRES_STEPS, &ledger, i64::MAX)? {
            let started = std::time::Instant::now();
            let tx = conn.transaction().await.map_err(failed)?;
            tx.batch_execute(step.sql).await.map_err(failed)?;
            let took = i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX);
            tx.execute(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                 VALUES ($1, $2, TRUE, $3, $4)",
                &[&step.version, &step.description, &step.checksum(), &took],
            )
            .await
            .map_err(failed)?;
            tx.commit().await.map_err(failed)?;
        }
        Ok(())
    }
    .await;
    conn.execute("SELECT pg_advisory_unlock($1)", &[&LOCK]).await.map_err(map_err)?;
    migrated
}
