//! PostgreSQL's errors in the store's terms.

use crate::StoreError;

/// SQLSTATEs that mean "try again": the server is going away or cannot take the connection, or the network broke.
fn is_unavailable_code(code: &str) -> bool {
    code.starts_with("08") // connection exception
        || matches!(
            code,
            "57P01" // admin_shutdown
            | "57P02" // crash_shutdown
            | "57P03" // cannot_connect_now
            | "53300" // too_many_connections
            | "25006" // read_only_sql_transaction: a failover in progress
            | "40001" // serialization_failure, after retries
            | "40P01" // deadlock_detected, after retries
        )
}

/// Whether a transaction may simply be run again.
pub(crate) fn is_retryable(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if matches!(d.code().as_deref(), Some("40001" | "40P01")))
}

/// Maps a driver error into the store's terms.
pub(crate) fn map_err(e: sqlx::Error) -> StoreError {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => StoreError::Conflict(d.message().to_owned()),
        sqlx::Error::Database(d) if d.code().as_deref().is_some_and(is_unavailable_code) => {
            StoreError::Unavailable(e.to_string())
        }
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => StoreError::Unavailable(e.to_string()),
        _ => StoreError::Other(e.to_string()),
    }
}
