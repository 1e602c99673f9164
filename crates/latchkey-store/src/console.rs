//! The console's records: project members (owners and editors) and the developers' API keys. A membership
//! change that must keep an owner is a unit of work that first takes the project's row lock, so that two
//! owners removing each other at once cannot leave it without one.

use crate::console_rows::{api_key_from_row, member_from_row, project_role_from_row, role};
use crate::db::{BoxFuture, Db, Durability, Engine, Outcome, Tx};
use crate::records::{ApiKey, Member, MemberChange, Project, ProjectMember, ProjectRole};
use crate::sql::{args, Sql};
use crate::StoreResult;
use async_trait::async_trait;
use latchkey_core::client::LAST_USED_GRANULARITY;
use latchkey_core::time::UnixTime;

/// Project members and API keys.
#[async_trait]
pub trait Console: Send + Sync {
    /// Adds a member to a project; false when the user is a member already.
    async fn add_project_member(&self, member: &ProjectMember) -> StoreResult<bool>;
    /// Changes a member's role; refused when it would leave the project without an owner.
    async fn set_project_member_role(
        &self,
        project_id: &str,
        user_id: &str,
        role: ProjectRole,
    ) -> StoreResult<MemberChange>;
    /// Removes a member; refused when it would leave the project without an owner.
    async fn remove_project_member(&self, project_id: &str, user_id: &str) -> StoreResult<MemberChange>;
    /// The members of a project, in the order they joined.
    async fn project_members(&self, project_id: &str) -> StoreResult<Vec<Member>>;
    /// The user's role in a project, if they are a member.
    async fn project_role(&self, project_id: &str, user_id: &str) -> StoreResult<Option<ProjectRole>>;
    /// The projects a user is a member of, with their role, oldest first.
    async fn projects_of(&self, user_id: &str) -> StoreResult<Vec<(Project, ProjectRole)>>;

    /// Stores a new console API key.
    async fn create_api_key(&self, key: &ApiKey) -> StoreResult<()>;
    /// An API key by id.
    async fn api_key(&self, id: &str) -> StoreResult<Option<ApiKey>>;
    /// A user's API keys, oldest first.
    async fn api_keys_of(&self, user_id: &str) -> StoreResult<Vec<ApiKey>>;
    /// Deletes (revokes) a user's API key; false when the user has no such key.
    async fn delete_api_key(&self, id: &str, user_id: &str) -> StoreResult<bool>;
    /// Records that a key was used at `now`, at most once per [`LAST_USED_GRANULARITY`]; true when it wrote.
    async fn touch_api_key(&self, id: &str, now: UnixTime) -> StoreResult<bool>;
}

static ADD_MEMBER: Sql = Sql::new(
    "INSERT INTO project_members (project_id, user_id, role, added_at) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (project_id, user_id) DO NOTHING",
);
static LOCK_PROJECT: Sql = Sql::new("SELECT id FROM projects WHERE id = $1 FOR UPDATE");
/// Changes a role, unless the member stops being an owner and no other owner remains.
static SET_ROLE: Sql = Sql::new(
    "UPDATE project_members SET role = $3 WHERE project_id = $1 AND user_id = $2 AND ($3 = 'owner' \
     OR role <> 'owner' OR (SELECT COUNT(*) FROM project_members o WHERE o.project_id = $1 AND o.role = 'owner') > 1)",
);
/// Removes a member, unless they are an owner and no other owner remains.
static REMOVE_MEMBER: Sql = Sql::new(
    "DELETE FROM project_members WHERE project_id = $1 AND user_id = $2 AND (role <> 'owner' \
     OR (SELECT COUNT(*) FROM project_members o WHERE o.project_id = $1 AND o.role = 'owner') > 1)",
);
static MEMBERS: Sql = Sql::new(
    "SELECT m.user_id, u.email, u.name, m.role, m.added_at FROM project_members m JOIN users u ON u.id = m.user_id \
     WHERE m.project_id = $1 ORDER BY m.added_at, u.email",
);
static ROLE: Sql = Sql::new("SELECT role FROM project_members WHERE project_id = $1 AND user_id = $2");
static PROJECTS_OF: Sql = Sql::new(
    "SELECT p.id, p.name, p.api_enabled, p.created_at, p.time_based_access, p.org_id, p.audience, \
     p.rotate_refresh_tokens, p.open_registration, m.role \
     FROM project_members m \
     JOIN projects p ON p.id = m.project_id WHERE m.user_id = $1 ORDER BY p.created_at, p.id",
);

static CREATE_KEY: Sql = Sql::new(
    "INSERT INTO api_keys (id, user_id, name, secret_hash, created_at, last_used_at) VALUES ($1, $2, $3, $4, $5, $6)",
);
static KEY: Sql = Sql::new("SELECT * FROM api_keys WHERE id = $1");
static KEYS_OF: Sql = Sql::new("SELECT * FROM api_keys WHERE user_id = $1 ORDER BY created_at, id");
static DELETE_KEY: Sql = Sql::new("DELETE FROM api_keys WHERE id = $1 AND user_id = $2");
static TOUCH_KEY: Sql =
    Sql::new("UPDATE api_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $3)");

/// A membership change: the project, the member, and the new role (`None`: removal).
type Change = (String, String, Option<ProjectRole>);

/// Runs a membership change under the project's row lock; true when it changed a row.
fn change<'t>(
    tx: &'t mut dyn Tx,
    (project_id, user_id, role): &'t Change,
) -> BoxFuture<'t, StoreResult<Outcome<bool>>> {
    Box::pin(async move {
        tx.lock(&LOCK_PROJECT, args![project_id]).await?;
        let n = match role {
            Some(role) => tx.exec(&SET_ROLE, args![project_id, user_id, role.as_str()]).await?,
            None => tx.exec(&REMOVE_MEMBER, args![project_id, user_id]).await?,
        };
        Ok(Outcome::Keep(n == 1))
    })
}

// `Engine` is the crate's own: these helpers serve the aggregates' implementations, not other crates.
#[allow(private_bounds)]
impl<E: Engine> Db<E> {
    /// Runs a membership change and says what became of it.
    async fn change_membership(&self, change_: Change) -> StoreResult<MemberChange> {
        let (project_id, user_id) = (change_.0.clone(), change_.1.clone());
        if self.engine.unit(Durability::Durable, change, change_).await? {
            return Ok(MemberChange::Done);
        }
        Ok(match self.project_role(&project_id, &user_id).await? {
            Some(_) => MemberChange::LastOwner,
            None => MemberChange::NotMember,
        })
    }
}

#[async_trait]
impl<E: Engine> Console for Db<E> {
    async fn add_project_member(&self, m: &ProjectMember) -> StoreResult<bool> {
        self.exec_one(&ADD_MEMBER, args![&m.project_id, &m.user_id, m.role.as_str(), m.added_at]).await
    }

    async fn set_project_member_role(
        &self,
        project_id: &str,
        user_id: &str,
        role: ProjectRole,
    ) -> StoreResult<MemberChange> {
        self.change_membership((project_id.to_owned(), user_id.to_owned(), Some(role))).await
    }

    async fn remove_project_member(&self, project_id: &str, user_id: &str) -> StoreResult<MemberChange> {
        self.change_membership((project_id.to_owned(), user_id.to_owned(), None)).await
    }

    async fn project_members(&self, project_id: &str) -> StoreResult<Vec<Member>> {
        self.engine.all(&MEMBERS, args![project_id], member_from_row).await
    }

    async fn project_role(&self, project_id: &str, user_id: &str) -> StoreResult<Option<ProjectRole>> {
        self.engine.one(&ROLE, args![project_id, user_id], role).await
    }

    async fn projects_of(&self, user_id: &str) -> StoreResult<Vec<(Project, ProjectRole)>> {
        self.engine.all(&PROJECTS_OF, args![user_id], project_role_from_row).await
    }

    async fn create_api_key(&self, k: &ApiKey) -> StoreResult<()> {
        let args = args![&k.id, &k.user_id, &k.name, &k.secret_hash, k.created_at, k.last_used_at];
        self.exec(&CREATE_KEY, args).await?;
        Ok(())
    }

    async fn api_key(&self, id: &str) -> StoreResult<Option<ApiKey>> {
        self.engine.one(&KEY, args![id], api_key_from_row).await
    }

    async fn api_keys_of(&self, user_id: &str) -> StoreResult<Vec<ApiKey>> {
        self.engine.all(&KEYS_OF, args![user_id], api_key_from_row).await
    }

    async fn delete_api_key(&self, id: &str, user_id: &str) -> StoreResult<bool> {
        self.exec_one(&DELETE_KEY, args![id, user_id]).await
    }

    async fn touch_api_key(&self, id: &str, now: UnixTime) -> StoreResult<bool> {
        self.exec_one(&TOUCH_KEY, args![id, now, now.0 - LAST_USED_GRANULARITY]).await
    }
}
