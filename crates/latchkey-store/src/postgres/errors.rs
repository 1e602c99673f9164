//! PostgreSQL's errors in the store's terms.

use crate::StoreError;
use tokio_postgres::error::SqlState;

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
pub(crate) fn is_retryable(e: &tokio_postgres::Error) -> bool {
    matches!(e.code(), Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED)
}

/// Maps a driver error into the store's terms. An error with no SQLSTATE is the connection's (closed, broken,
/// a protocol error): the server is unavailable to this connection.
pub(crate) fn map_err(e: tokio_postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(d) if *d.code() == SqlState::UNIQUE_VIOLATION => StoreError::Conflict(d.message().to_owned()),
        Some(d) if is_unavailable_code(d.code().code()) => StoreError::Unavailable(e.to_string()),
        Some(_) => StoreError::Other(e.to_string()),
        None if e.is_closed() || is_connection(&e) => StoreError::Unavailable(e.to_string()),
        None => StoreError::Other(e.to_string()),
    }
}

/// Whether an error without a SQLSTATE is the connection's (I/O, closed, TLS, a message out of place, a timeout)
/// rather than the statement's: the driver's statement errors are a parameter or column of the wrong type or
/// count, or a row count, and say so in their text (the kinds are private to the driver).
fn is_connection(e: &tokio_postgres::Error) -> bool {
    let text = e.to_string();
    !["error serializing", "error deserializing", "invalid column", "expected ", "query returned"]
        .iter()
        .any(|w| text.starts_with(w))
}

/// Whether the connection an error came from should be thrown away instead of going back to the pool: it is
/// closed, or its server can no longer take this store's writes (shutting down, or a standby after a failover).
pub(crate) fn spoils_connection(e: &StoreError) -> bool {
    matches!(e, StoreError::Unavailable(_))
}

/// A failure to get a connection: an outage, whatever its cause (a server gone or refusing connections, a
/// database dropped, the pool exhausted).
pub(crate) fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("no connection to PostgreSQL: {e}"))
}
