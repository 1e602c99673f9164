//! Projects and their members. Owners and editors manage a project and its clients; only owners manage the
//! members and delete the project, and a project always keeps one owner (who may do what: [`super::actor`]).

use super::actor::{no_project, Access, Actor, Right};
use super::results::{
    ApiSwitched, ClientView, MemberChanged, MemberList, MemberView, ProjectDeleted, ProjectDetail, ProjectList,
    ProjectView,
};
use super::{find_user, random_id, AdminError, AdminResult};
use latchkey_core::client::FieldError;
use latchkey_core::time::UnixTime;
use latchkey_store::{MemberChange, Project, ProjectMember, ProjectRole, ProjectSetting, Store, StoreError};

/// A project with its clients.
async fn project_detail(store: &dyn Store, project: ProjectView) -> AdminResult<ProjectDetail> {
    let clients = store.clients(Some(&project.project_id)).await?.iter().map(ClientView::from).collect();
    Ok(ProjectDetail { project, clients })
}

impl Access {
    /// The project as the actor sees it: with a developer's role.
    pub fn view(&self) -> ProjectView {
        ProjectView::of(&self.project, self.role)
    }
}

/// Creates a project. A developer owns the project they create; the operator may name an existing account, by
/// e-mail address or id, as its owner (`admin project create --owner`), or none.
pub async fn project_create(
    store: &dyn Store,
    actor: &Actor,
    name: &str,
    owner: Option<&str>,
    now: UnixTime,
) -> AdminResult<ProjectView> {
    let owner_id = match (actor, owner) {
        (Actor::Developer(user), _) => Some(user.id.clone()),
        (Actor::Operator, Some(owner)) => Some(find_user(store, owner).await?.id),
        (Actor::Operator, None) => None,
    };
    let name = name.trim();
    if name.is_empty() {
        let message = "a project needs a name".into();
        return Err(match owner_id {
            Some(_) => AdminError::Fields(vec![FieldError { field: "name", message }]),
            None => AdminError::Invalid(message),
        });
    }
    if let (Actor::Developer(user), Some(_)) = (actor, &owner_id) {
        let owned = store.projects_of(&user.id).await?.iter().filter(|(_, r)| *r == ProjectRole::Owner).count();
        if owned >= super::quotas::PROJECTS_PER_DEVELOPER {
            return Err(super::quotas::reached("projects you own", super::quotas::PROJECTS_PER_DEVELOPER));
        }
    }
    let id = format!("project-{}", random_id(10));
    store
        .create_project(&Project {
            id: id.clone(),
            name: name.into(),
            api_enabled: false,
            created_at: now,
            time_based_access: false,
            org_id: None,
            audience: Default::default(),
            rotate_refresh_tokens: false,
            open_registration: false,
        })
        .await?;
    let created = ProjectView {
        project_id: id.clone(),
        name: name.into(),
        api_enabled: false,
        time_based_access: false,
        rotate_refresh_tokens: false,
        open_registration: false,
        org_id: None,
        audience: "external",
        created_at: None,
        role: None,
    };
    let Some(owner_id) = owner_id else { return Ok(created) };
    let owner = ProjectMember { project_id: id.clone(), user_id: owner_id, role: ProjectRole::Owner, added_at: now };
    if let Err(e) = store.add_project_member(&owner).await {
        // Without its owner nobody could see the project: take it back.
        let _ = store.delete_project(&id).await;
        return Err(e.into());
    }
    Ok(ProjectView { role: Some(ProjectRole::Owner.as_str()), ..created })
}

/// The projects the actor sees: every one for the operator, a developer's own with their role.
pub async fn project_list(store: &dyn Store, actor: &Actor) -> AdminResult<ProjectList> {
    let projects = match actor {
        Actor::Operator => store.projects().await?.iter().map(|p| ProjectView::of(p, None)).collect(),
        Actor::Developer(user) => {
            store.projects_of(&user.id).await?.iter().map(|(p, role)| ProjectView::of(p, Some(*role))).collect()
        }
    };
    Ok(ProjectList { projects })
}

/// A project with its clients.
pub async fn project_show(store: &dyn Store, actor: &Actor, project_id: &str) -> AdminResult<ProjectDetail> {
    let access = actor.project(store, project_id, Right::View).await?;
    project_detail(store, access.view()).await
}

/// Deletes a project for good, with every client of it (live ones, and deleted ones still in their restore
/// window: none can be restored) and their grants and authorization codes, and its memberships. Apps using its
/// clients stop working at once. `clients_deleted` counts the clients it had. Owners only.
pub async fn project_delete(store: &dyn Store, actor: &Actor, project_id: &str) -> AdminResult<ProjectDeleted> {
    actor.project(store, project_id, Right::Delete).await?;
    let clients = store.clients(Some(project_id)).await?.len();
    if !store.delete_project(project_id).await? {
        return Err(no_project(project_id));
    }
    Ok(ProjectDeleted { project_id: project_id.into(), deleted: true, clients_deleted: clients })
}

/// Switches one of a project's settings: time-based access on its clients' consent page (grants already limited
/// keep their end), the rotation of its clients' refresh tokens (from each token's next refresh), or whether apps
/// may register themselves into it (the operator's alone, for one project at a time: opening registration opens
/// `/register` to anyone).
pub async fn project_set(
    store: &dyn Store,
    actor: &Actor,
    project_id: &str,
    setting: ProjectSetting,
    on: bool,
) -> AdminResult<ProjectView> {
    let access = actor.project(store, project_id, Right::Edit).await?;
    if setting == ProjectSetting::OpenRegistration && !matches!(actor, Actor::Operator) {
        return Err(AdminError::Forbidden("only an operator opens or closes dynamic client registration".into()));
    }
    match store.set_project_setting(project_id, setting, on).await {
        Ok(true) => {}
        Ok(false) => return Err(no_project(project_id)),
        Err(StoreError::Conflict(_)) => {
            let other = store.open_registration_project().await?.map(|p| p.id).unwrap_or_default();
            return Err(AdminError::Conflict(format!("project {other} collects self-registered apps already")));
        }
        Err(e) => return Err(e.into()),
    }
    let mut view = access.view();
    match setting {
        ProjectSetting::TimeBasedAccess => view.time_based_access = on,
        ProjectSetting::RotateRefreshTokens => view.rotate_refresh_tokens = on,
        ProjectSetting::OpenRegistration => view.open_registration = on,
    }
    Ok(view)
}

/// Enables or disables the data API of a project.
pub async fn project_set_api(store: &dyn Store, actor: &Actor, project_id: &str, on: bool) -> AdminResult<ApiSwitched> {
    actor.project(store, project_id, Right::Edit).await?;
    if !store.set_api_enabled(project_id, on).await? {
        return Err(no_project(project_id));
    }
    Ok(ApiSwitched { project_id: project_id.into(), api_enabled: on })
}

/// Parses a role's name.
pub fn parse_role(name: &str) -> Result<ProjectRole, AdminError> {
    ProjectRole::parse(name).ok_or_else(|| {
        AdminError::Fields(vec![FieldError { field: "role", message: "Choose owner or editor.".into() }])
    })
}

/// The members of a project.
pub async fn member_list(store: &dyn Store, actor: &Actor, project_id: &str) -> AdminResult<MemberList> {
    actor.project(store, project_id, Right::View).await?;
    let members = store.project_members(project_id).await?.iter().map(MemberView::from).collect();
    Ok(MemberList { project_id: project_id.into(), members })
}

/// Adds the account with this e-mail address to a project.
pub async fn member_add(
    store: &dyn Store,
    actor: &Actor,
    project_id: &str,
    email: &str,
    role: ProjectRole,
    now: UnixTime,
) -> AdminResult<MemberChanged> {
    actor.project(store, project_id, Right::ManageMembers).await?;
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
pub async fn member_remove(
    store: &dyn Store,
    actor: &Actor,
    project_id: &str,
    user: &str,
) -> AdminResult<MemberChanged> {
    actor.project(store, project_id, Right::ManageMembers).await?;
    let user_id = member_id(store, user).await?;
    change_result(store.remove_project_member(project_id, &user_id).await?, project_id, &user_id)?;
    Ok(MemberChanged { project_id: project_id.into(), user_id, email: None, role: None, removed: Some(true) })
}

/// Changes a member's role (by user id or e-mail address); the last owner stays one.
pub async fn member_set_role(
    store: &dyn Store,
    actor: &Actor,
    project_id: &str,
    user: &str,
    role: ProjectRole,
) -> AdminResult<MemberChanged> {
    actor.project(store, project_id, Right::ManageMembers).await?;
    let user_id = member_id(store, user).await?;
    change_result(store.set_project_member_role(project_id, &user_id, role).await?, project_id, &user_id)?;
    Ok(MemberChanged { project_id: project_id.into(), user_id, email: None, role: Some(role.as_str()), removed: None })
}

async fn member_id(store: &dyn Store, user: &str) -> Result<String, AdminError> {
    Ok(find_user(store, user).await?.id)
}
