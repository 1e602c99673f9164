//! Row mappers of the console's tables (project members, API keys), shared by both backends.

use crate::records::{ApiKey, Member, Project, ProjectRole};
use crate::rows::{project_from_row, StoreRow};
use crate::{StoreError, StoreResult};
use latchkey_core::time::UnixTime;

/// The role column.
pub(crate) fn role(r: &dyn StoreRow) -> StoreResult<ProjectRole> {
    let s = r.text("role")?;
    ProjectRole::parse(&s).ok_or_else(|| StoreError::Other(format!("unknown project role {s:?}")))
}

/// A row of `project_members` joined with `users` (`email`, `name`).
pub(crate) fn member_from_row(r: &dyn StoreRow) -> StoreResult<Member> {
    Ok(Member {
        user_id: r.text("user_id")?,
        email: r.text("email")?,
        name: r.opt_text("name")?,
        role: role(r)?,
        added_at: UnixTime(r.int("added_at")?),
    })
}

/// A row of `projects` with the member's `role`.
pub(crate) fn project_role_from_row(r: &dyn StoreRow) -> StoreResult<(Project, ProjectRole)> {
    Ok((project_from_row(r)?, role(r)?))
}

/// A row of `api_keys`.
pub(crate) fn api_key_from_row(r: &dyn StoreRow) -> StoreResult<ApiKey> {
    Ok(ApiKey {
        id: r.text("id")?,
        user_id: r.text("user_id")?,
        name: r.text("name")?,
        secret_hash: r.bytes("secret_hash")?,
        created_at: UnixTime(r.int("created_at")?),
        last_used_at: r.opt_int("last_used_at")?.map(UnixTime),
    })
}
