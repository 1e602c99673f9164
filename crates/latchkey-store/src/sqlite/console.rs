//! The console's tables on SQLite: project members and API keys. A membership change that must keep an owner
//! is one statement, which the single writer runs atomically.

use super::SqliteStore;
use crate::console_rows::{api_key_from_row, member_from_row, project_role_from_row, role};
use crate::records::*;
use crate::StoreResult;
use latchkey_core::time::UnixTime;

/// The condition under which a member may stop being an owner (they are not one, or another owner remains),
/// spelled out in both statements that need it because the writer takes `&'static str` statements.
const SET_ROLE: &str = "UPDATE project_members SET role = ?3 WHERE project_id = ?1 AND user_id = ?2 \
     AND (?3 = 'owner' OR role <> 'owner' OR (SELECT COUNT(*) FROM project_members o \
     WHERE o.project_id = ?1 AND o.role = 'owner') > 1)";
const REMOVE_MEMBER: &str = "DELETE FROM project_members WHERE project_id = ?1 AND user_id = ?2 \
     AND (role <> 'owner' OR (SELECT COUNT(*) FROM project_members o \
     WHERE o.project_id = ?1 AND o.role = 'owner') > 1)";

impl SqliteStore {
    pub(super) async fn console_add_member(&self, m: &ProjectMember) -> StoreResult<bool> {
        let sql = "INSERT INTO project_members (project_id, user_id, role, added_at) VALUES (?1, ?2, ?3, ?4) \
                   ON CONFLICT (project_id, user_id) DO NOTHING";
        let params = (m.project_id.clone(), m.user_id.clone(), m.role.as_str(), m.added_at.0);
        Ok(self.exec(sql, params).await? == 1)
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
        let n = self.exec(SET_ROLE, (project_id.to_owned(), user_id.to_owned(), role.as_str())).await?;
        self.membership_outcome(n == 1, project_id, user_id).await
    }

    pub(super) async fn console_remove_member(&self, project_id: &str, user_id: &str) -> StoreResult<MemberChange> {
        let n = self.exec(REMOVE_MEMBER, (project_id.to_owned(), user_id.to_owned())).await?;
        self.membership_outcome(n == 1, project_id, user_id).await
    }

    pub(super) async fn console_members(&self, project_id: &str) -> StoreResult<Vec<Member>> {
        let sql = "SELECT m.user_id, u.email, u.name, m.role, m.added_at FROM project_members m \
                   JOIN users u ON u.id = m.user_id WHERE m.project_id = ?1 ORDER BY m.added_at, u.email";
        self.all(sql, (project_id.to_owned(),), |r| member_from_row(r)).await
    }

    pub(super) async fn console_role(&self, project_id: &str, user_id: &str) -> StoreResult<Option<ProjectRole>> {
        let sql = "SELECT role FROM project_members WHERE project_id = ?1 AND user_id = ?2";
        self.one(sql, [project_id, user_id], |r| role(r))
    }

    pub(super) async fn console_projects_of(&self, user_id: &str) -> StoreResult<Vec<(Project, ProjectRole)>> {
        let sql = "SELECT p.id, p.name, p.api_enabled, p.created_at, m.role FROM project_members m \
                   JOIN projects p ON p.id = m.project_id WHERE m.user_id = ?1 ORDER BY p.created_at, p.id";
        self.all(sql, (user_id.to_owned(),), |r| project_role_from_row(r)).await
    }

    pub(super) async fn console_create_key(&self, k: &ApiKey) -> StoreResult<()> {
        let sql = "INSERT INTO api_keys (id, user_id, name, secret_hash, created_at, last_used_at) \
                   VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
        let params = (
            k.id.clone(),
            k.user_id.clone(),
            k.name.clone(),
            k.secret_hash.clone(),
            k.created_at.0,
            k.last_used_at.map(|t| t.0),
        );
        self.exec(sql, params).await?;
        Ok(())
    }

    pub(super) async fn console_key(&self, id: &str) -> StoreResult<Option<ApiKey>> {
        self.one("SELECT * FROM api_keys WHERE id = ?1", [id], |r| api_key_from_row(r))
    }

    pub(super) async fn console_keys_of(&self, user_id: &str) -> StoreResult<Vec<ApiKey>> {
        let sql = "SELECT * FROM api_keys WHERE user_id = ?1 ORDER BY created_at, id";
        self.all(sql, (user_id.to_owned(),), |r| api_key_from_row(r)).await
    }

    pub(super) async fn console_delete_key(&self, id: &str, user_id: &str) -> StoreResult<bool> {
        let n = self.exec("DELETE FROM api_keys WHERE id = ?1 AND user_id = ?2", (id.to_owned(), user_id.to_owned()));
        Ok(n.await? == 1)
    }

    pub(super) async fn console_touch_key(&self, id: &str, now: UnixTime) -> StoreResult<bool> {
        let sql =
            "UPDATE api_keys SET last_used_at = ?2 WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at <= ?3)";
        let since = now.0 - latchkey_core::client::LAST_USED_GRANULARITY;
        Ok(self.exec(sql, (id.to_owned(), now.0, since)).await? == 1)
    }
}
