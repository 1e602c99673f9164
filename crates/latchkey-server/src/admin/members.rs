//! Project members: who may see and change a project. Owners and editors manage the project and its clients;
//! only owners manage the members, and a project always keeps one owner. A developer who is not a member is told
//! the project does not exist, whether it does or not.

use super::results::{MemberChanged, MemberList, MemberView, ProjectDeleted, ProjectDetail, ProjectList, ProjectView};
use super::{find_client, find_user, project_create, project_detail, AdminError, AdminResult};
use latchkey_core::client::{Client, FieldError};
use latchkey_core::time::UnixTime;
use latchkey_store::{MemberChange, Project, ProjectMember, ProjectRole, Store};

/// A developer's access to a project.
#[derive(Debug, Clone)]
pub struct Access {
    /// The project.
    pub project: Project,
    /// The developer's role in it.
    pub role: ProjectRole,
}

impl Access {
    /// Refuses an editor: member management is for owners.
    pub fn require_owner(&self) -> Result<(), AdminError> {
        self.owners_only("manage its members")
    }

    /// Refuses an editor what only owners do (`what`: "manage its members", "delete it").
    pub fn owners_only(&self, what: &str) -> Result<(), AdminError> {
        match self.role {
            ProjectRole::Owner => Ok(()),
            ProjectRole::Editor => Err(AdminError::Forbidden(format!("only the project's owners {what}"))),
        }
    }
}

/// The error for a project the developer cannot see: the same whether it exists or not.
fn no_project(project_id: &str) -> AdminError {
    AdminError::NotFound(format!("project {project_id}"))
}

/// The developer's access to a project: `NotFound` unless they are a member.
pub async fn project_access(store: &dyn Store, project_id: &str, user_id: &str) -> Result<Access, AdminError> {
    let role = store.project_role(project_id, user_id).await?.ok_or_else(|| no_project(project_id))?;
    let project = store.project(project_id).await?.ok_or_else(|| no_project(project_id))?;
    Ok(Access { project, role })
}

/// A client of the project the developer has access to: `NotFound` for another project's client.
pub async fn client_of(store: &dyn Store, access: &Access, client_id: &str) -> Result<Client, AdminError> {
    match find_client(store, client_id).await {
        Ok(c) if c.project_id == access.project.id => Ok(c),
        Ok(_) | Err(AdminError::NotFound(_)) => Err(AdminError::NotFound(format!("client {client_id}"))),
        Err(e) => Err(e),
    }
}

impl Access {
    /// The project as the developer sees it: with their role.
    pub fn view(&self) -> ProjectView {
        ProjectView::of(&self.project, Some(self.role))
    }

    /// The project as the developer sees it, with its clients.
    pub async fn detail(&self, store: &dyn Store) -> AdminResult<ProjectDetail> {
        project_detail(store, self.view()).await
    }
}

/// Creates a project owned by the developer who asks.
pub async fn project_create_owned(
    store: &dyn Store,
    name: &str,
    owner_id: &str,
    now: UnixTime,
) -> AdminResult<ProjectView> {
    let created = project_create(store, name, now).await.map_err(|e| match e {
        AdminError::Invalid(m) => AdminError::Fields(vec![FieldError { field: "name", message: m }]),
        other => other,
    })?;
    let id = created.project_id.clone();
    let owner =
        ProjectMember { project_id: id.clone(), user_id: owner_id.into(), role: ProjectRole::Owner, added_at: now };
    if let Err(e) = store.add_project_member(&owner).await {
        // Without its owner nobody could see the project: take it back.
        let _ = store.delete_project(&id).await;
        return Err(e.into());
    }
    Ok(ProjectView { role: Some(ProjectRole::Owner.as_str()), ..created })
}

/// Creates a project owned by an existing account, named by e-mail address or id (`admin project create --owner`).
pub async fn project_create_for(store: &dyn Store, name: &str, owner: &str, now: UnixTime) -> AdminResult<ProjectView> {
    let owner = find_user(store, owner).await?;
    project_create_owned(store, name, &owner.id, now).await
}

/// Deletes a project for its owner (an editor is refused): [`super::project_delete`], the operation the CLI
/// runs, so its clients go with it for good.
pub async fn project_delete_owned(store: &dyn Store, access: &Access) -> AdminResult<ProjectDeleted> {
    access.owners_only("delete it")?;
    super::project_delete(store, &access.project.id).await
}

/// The projects the developer is a member of.
pub async fn projects_of(store: &dyn Store, user_id: &str) -> AdminResult<ProjectList> {
    let projects = store.projects_of(user_id).await?.iter().map(|(p, role)| ProjectView::of(p, Some(*role))).collect();
    Ok(ProjectList { projects })
}

/// Parses a role's name.
pub fn parse_role(name: &str) -> Result<ProjectRole, AdminError> {
    ProjectRole::parse(name).ok_or_else(|| {
        AdminError::Fields(vec![FieldError { field: "role", message: "Choose owner or editor.".into() }])
    })
}

/// The members of a project.
pub async fn member_list(store: &dyn Store, project_id: &str) -> AdminResult<MemberList> {
    if store.project(project_id).await?.is_none() {
        return Err(no_project(project_id));
    }
    let members = store.project_members(project_id).await?.iter().map(MemberView::from).collect();
    Ok(MemberList { project_id: project_id.into(), members })
}

/// Adds the account with this e-mail address to a project.
pub async fn member_add(
    store: &dyn Store,
    project_id: &str,
    email: &str,
    role: ProjectRole,
    now: UnixTime,
) -> AdminResult<MemberChanged> {
    if store.project(project_id).await?.is_none() {
        return Err(no_project(project_id));
    }
    let email = email.trim();
    let user = match store.user_by_email(email).await? {
        Some(u) => u,
        None => {
            let message = if email.is_empty() {
                "Enter the e-mail address of the developer to add.".to_owned()
            } else {
                format!("There is no latchkey account with the e-mail address {email}.")
            };
            return Err(AdminError::Fields(vec![FieldError { field: "email", message }]));
        }
    };
    let member = ProjectMember { project_id: project_id.into(), user_id: user.id.clone(), role, added_at: now };
    if !store.add_project_member(&member).await? {
        return Err(AdminError::Conflict(format!("{} is a member of the project already", user.email)));
    }
    Ok(MemberChanged {
        project_id: project_id.into(),
        user_id: user.id,
        email: Some(user.email),
        role: Some(role.as_str()),
        removed: None,
    })
}

fn change_result(change: MemberChange, project_id: &str, user_id: &str) -> Result<(), AdminError> {
    match change {
        MemberChange::Done => Ok(()),
        MemberChange::NotMember => Err(AdminError::NotFound(format!("member {user_id} of project {project_id}"))),
        MemberChange::LastOwner => {
            Err(AdminError::Conflict("a project keeps at least one owner: make another member an owner first".into()))
        }
    }
}

/// Removes a member (by user id or e-mail address); the last owner stays.
pub async fn member_remove(store: &dyn Store, project_id: &str, user: &str) -> AdminResult<MemberChanged> {
    let user_id = member_id(store, user).await?;
    change_result(store.remove_project_member(project_id, &user_id).await?, project_id, &user_id)?;
    Ok(MemberChanged { project_id: project_id.into(), user_id, email: None, role: None, removed: Some(true) })
}

/// Changes a member's role (by user id or e-mail address); the last owner stays one.
pub async fn member_set_role(
    store: &dyn Store,
    project_id: &str,
    user: &str,
    role: ProjectRole,
) -> AdminResult<MemberChanged> {
    let user_id = member_id(store, user).await?;
    change_result(store.set_project_member_role(project_id, &user_id, role).await?, project_id, &user_id)?;
    Ok(MemberChanged { project_id: project_id.into(), user_id, email: None, role: Some(role.as_str()), removed: None })
}

async fn member_id(store: &dyn Store, user: &str) -> Result<String, AdminError> {
    Ok(find_user(store, user).await?.id)
}
