//! The console's tables on SQLite: project members and API keys. A membership change that must keep an owner
//! is one statement, which SQLite runs atomically.

use super::{map_err, SqliteStore};
use crate::console_rows::{api_key_from_row, member_from_row, project_role_from_row, role};
use crate::records::*;
use crate::StoreResult;
use latchkey_core::time::UnixTime;

/// The condition under which a member may stop being an owner: they are not one, or another owner remains.
const KEEPS_AN_OWNER: &str = "(role <> 'owner' OR (SELECT COUNT(*) FROM project_members o \
     WHERE o.project_id = ?1 AND o.role = 'owner') > 1)";

impl SqliteStore {
    pub(super) async fn console_add_member(&self, m: &ProjectMember) -> StoreResult<bool> {
        let r = sqlx::query(
            "INSERT INTO project_members (project_id, user_id, role, added_at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (project_id, user_id) DO NOTHING",
        )
        .bind(&m.project_id)
        .bind(&m.user_id)
        .bind(m.role.as_str())
        .bind(m.added_at.0)
        .execute(&self.pool)
        .await
        .map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn membership_outcome(&self, changed: bool, project_id: &str, user_id: &str) -> StoreResult<MemberChange> {
        if changed {
            return Ok(MemberChange::Done);
        }
        Ok(match self.console_role(project_id, user_id).await? {
            Some(_) => MemberChange::LastOwner,
            None => MemberChange::NotMember,
        })
    }

    pub(super) async fn console_set_role(
        &self,
        project_id: &str,
        user_id: &str,
        role: ProjectRole,
    ) -> StoreResult<MemberChange> {
        let sql = format!(
            "UPDATE project_members SET role = ?3 WHERE project_id = ?1 AND user_id = ?2 \
             AND (?3 = 'owner' OR {KEEPS_AN_OWNER})"
        );
        let r = sqlx::query(&sql)
            .bind(project_id)
            .bind(user_id)
            .bind(role.as_str())
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        self.membership_outcome(r.rows_affected() == 1, project_id, user_id).await
    }

    pub(super) async fn console_remove_member(&self, project_id: &str, user_id: &str) -> StoreResult<MemberChange> {
        let sql = format!("DELETE FROM project_members WHERE project_id = ?1 AND user_id = ?2 AND {KEEPS_AN_OWNER}");
        let r = sqlx::query(&sql).bind(project_id).bind(user_id).execute(&self.pool).await.map_err(map_err)?;
        self.membership_outcome(r.rows_affected() == 1, project_id, user_id).await
    }

    pub(super) async fn console_members(&self, project_id: &str) -> StoreResult<Vec<Member>> {
        let rows = sqlx::query(
            "SELECT m.user_id, u.email, u.name, m.role, m.added_at FROM project_members m \
             JOIN users u ON u.id = m.user_id WHERE m.project_id = ?1 ORDER BY m.added_at, u.email",
        )
        .bind(project_id)
        .fetch_all(&self.pool)
        .await
        .map_err(map_err)?;
        rows.iter().map(member_from_row).collect()
    }

    pub(super) async fn console_role(&self, project_id: &str, user_id: &str) -> StoreResult<Option<ProjectRole>> {
        let row = sqlx::query("SELECT role FROM project_members WHERE project_id = ?1 AND user_id = ?2")
            .bind(project_id)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_err)?;
        row.map(|r| role(&r)).transpose()
    }

    pub(super) async fn console_projects_of(&self, user_id: &str) -> StoreResult<Vec<(Project, ProjectRole)>> {
        let rows = sqlx::query(
            "SELECT p.id, p.name, p.api_enabled, p.created_at, m.role FROM project_members m \
             JOIN projects p ON p.id = m.project_id WHERE m.user_id = ?1 ORDER BY p.created_at, p.id",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await
        .map_err(map_err)?;
        rows.iter().map(project_role_from_row).collect()
    }

    pub(super) async fn console_create_key(&self, k: &ApiKey) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO api_keys (id, user_id, name, secret_hash, created_at, last_used_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .bind(&k.id)
        .bind(&k.user_id)
        .bind(&k.name)
        .bind(&k.secret_hash)
        .bind(k.created_at.0)
        .bind(k.last_used_at.map(|t| t.0))
        .execute(&self.pool)
        .await
        .map_err(map_err)?;
        Ok(())
    }

    pub(super) async fn console_key(&self, id: &str) -> StoreResult<Option<ApiKey>> {
        let row = sqlx::query("SELECT * FROM api_keys WHERE id = ?1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(map_err)?;
        row.map(|r| api_key_from_row(&r)).transpose()
    }

    pub(super) async fn console_keys_of(&self, user_id: &str) -> StoreResult<Vec<ApiKey>> {
        let rows = sqlx::query("SELECT * FROM api_keys WHERE user_id = ?1 ORDER BY created_at, id")
            .bind(user_id)
            .fetch_all(&self.pool)
            .await
            .map_err(map_err)?;
        rows.iter().map(api_key_from_row).collect()
    }

    pub(super) async fn console_delete_key(&self, id: &str, user_id: &str) -> StoreResult<bool> {
        let r = sqlx::query("DELETE FROM api_keys WHERE id = ?1 AND user_id = ?2")
            .bind(id)
            .bind(user_id)
            .execute(&self.pool)
            .await
            .map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }

    pub(super) async fn console_touch_key(&self, id: &str, now: UnixTime) -> StoreResult<bool> {
        let r = sqlx::query(
            "UPDATE api_keys SET last_used_at = ?2 WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at <= ?3)",
        )
        .bind(id)
        .bind(now.0)
        .bind(now.0 - latchkey_core::client::LAST_USED_GRANULARITY)
        .execute(&self.pool)
        .await
        .map_err(map_err)?;
        Ok(r.rows_affected() == 1)
    }
}
