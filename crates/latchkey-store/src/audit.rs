//! The audit log: what a change caused, written in the same unit of work as the change (a reused code's revoked
//! grants and their records commit together or not at all).

use crate::db::{Db, Engine};
use crate::rows::StoreRow;
use crate::sql::{args, Sql};
use crate::StoreResult;
use async_trait::async_trait;
use latchkey_core::time::UnixTime;

/// One audit record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// When it happened.
    pub at: UnixTime,
    /// What happened: `code_reused` (a code presented again, its grants revoked).
    pub action: String,
    /// The user concerned.
    pub user_id: Option<String>,
    /// The client concerned.
    pub client_id: Option<String>,
}

/// Reading the audit log.
#[async_trait]
pub trait Audit: Send + Sync {
    /// A user's audit records, oldest first.
    async fn audit_records(&self, user_id: &str) -> StoreResult<Vec<AuditRecord>>;
}

static RECORDS: Sql = Sql::new("SELECT at, action, user_id, client_id FROM audit_log WHERE user_id = $1 ORDER BY id");

fn record_from_row(r: &dyn StoreRow) -> StoreResult<AuditRecord> {
    Ok(AuditRecord {
        at: UnixTime(r.int("at")?),
        action: r.text("action")?,
        user_id: r.opt_text("user_id")?,
        client_id: r.opt_text("client_id")?,
    })
}

#[async_trait]
impl<E: Engine> Audit for Db<E> {
    async fn audit_records(&self, user_id: &str) -> StoreResult<Vec<AuditRecord>> {
        self.engine.all(&RECORDS, args![user_id], record_from_row).await
    }
}
