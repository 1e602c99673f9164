//! Who acts on a project and what they may do, decided here once for every surface: the operator at the
//! `latchkey admin` command line holds every right; a developer (signed in to the console, or calling its API with
//! a key) holds those of their role in the project. Each administrative operation names the [`Right`] it needs and
//! asks [`Actor::project`] or [`Actor::client`]; no handler checks roles itself. A developer who is not a member is
//! told the project does not exist, whether it does or not.

use super::{find_client, AdminError};
use latchkey_core::client::Client;
use latchkey_store::{Project, ProjectRole, Store, User};

/// Who runs an administrative operation.
#[derive(Debug, Clone)]
pub enum Actor {
    /// The operator, at the command line with the store in hand: every right on every project.
    Operator,
    /// A developer of the console or its API: the rights of their role in each project they are a member of.
    Developer(User),
}

/// What an operation does to a project, and so who may run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Right {
    /// See the project, its clients and its members.
    View,
    /// Change the project's settings and its clients.
    Edit,
    /// Add and remove members and change their roles.
    ManageMembers,
    /// Delete the project.
    Delete,
}

impl Right {
    /// Whether a member with this role holds the right: owners hold every one, editors all but members and deletion.
    pub fn held_by(self, role: ProjectRole) -> bool {
        match self {
            Right::View | Right::Edit => true,
            Right::ManageMembers | Right::Delete => role == ProjectRole::Owner,
        }
    }

    /// The refusal of an editor, who can see the project (so saying why leaks nothing).
    fn refusal(self) -> AdminError {
        let what = match self {
            Right::Delete => "delete it",
            _ => "manage its members",
        };
        AdminError::Forbidden(format!("only the project's owners {what}"))
    }
}

/// A project an actor may act on, with their role in it (none for the operator).
#[derive(Debug, Clone)]
pub struct Access {
    /// The project.
    pub project: Project,
    /// The developer's role in it; `None` for the operator.
    pub role: Option<ProjectRole>,
}

/// A client as an operation names it: its id and, where the caller reached it through a project (a console or API
/// URL), that project, which must be the client's own.
#[derive(Debug, Clone, Copy)]
pub struct ClientRef<'a> {
    /// The project it was reached through, if any.
    pub project: Option<&'a str>,
    /// The client's id.
    pub id: &'a str,
}

impl<'a> ClientRef<'a> {
    /// A client named by its id alone (the command line).
    pub fn id(id: &'a str) -> Self {
        Self { project: None, id }
    }

    /// A client named within a project.
    pub fn within(project: &'a str, id: &'a str) -> Self {
        Self { project: Some(project), id }
    }

    fn not_found(self) -> AdminError {
        AdminError::NotFound(format!("client {}", self.id))
    }
}

/// The error for a project the actor cannot see: the same whether it exists or not.
pub(super) fn no_project(project_id: &str) -> AdminError {
    AdminError::NotFound(format!("project {project_id}"))
}

impl Actor {
    /// The project, if the actor holds `right` on it: `NotFound` for a project that does not exist or of which a
    /// developer is not a member, `Forbidden` for an editor asking for an owner's right.
    pub async fn project(&self, store: &dyn Store, project_id: &str, right: Right) -> Result<Access, AdminError> {
        let role = match self {
            Actor::Operator => None,
            Actor::Developer(user) => {
                let role = store.project_role(project_id, &user.id).await?.ok_or_else(|| no_project(project_id))?;
                if !right.held_by(role) {
                    return Err(right.refusal());
                }
                Some(role)
            }
        };
        let project = store.project(project_id).await?.ok_or_else(|| no_project(project_id))?;
        Ok(Access { project, role })
    }

    /// The client, if the actor holds `right` on its project: `NotFound` for a client that does not exist, of
    /// another project than the one it was reached through, or of a project the developer is not a member of.
    pub async fn client(&self, store: &dyn Store, at: ClientRef<'_>, right: Right) -> Result<Client, AdminError> {
        Ok(self.client_in_project(store, at, right).await?.1)
    }

    /// The client, to change it: [`Actor::client`] with [`Right::Edit`], refused while it is deleted (it is
    /// restored first). Every operation that edits a client starts here.
    pub async fn client_to_edit(&self, store: &dyn Store, at: ClientRef<'_>) -> Result<Client, AdminError> {
        let client = self.client(store, at, Right::Edit).await?;
        if client.deleted_at.is_some() {
            return Err(AdminError::Invalid(format!("client {} is deleted: restore it first", at.id)));
        }
        Ok(client)
    }

    /// [`Actor::client`], with the actor's access to the client's project (the console's pages show both).
    pub async fn client_in_project(
        &self,
        store: &dyn Store,
        at: ClientRef<'_>,
        right: Right,
    ) -> Result<(Access, Client), AdminError> {
        let access = match at.project {
            Some(project) => Some(self.project(store, project, right).await?),
            None => None,
        };
        let client = find_client(store, at.id).await?;
        let access = match access {
            Some(access) if access.project.id == client.project_id => access,
            Some(_) => return Err(at.not_found()),
            None => match self.project(store, &client.project_id, right).await {
                Err(AdminError::NotFound(_)) => return Err(at.not_found()),
                access => access?,
            },
        };
        Ok((access, client))
    }

    /// The developer's e-mail address; none for the operator.
    pub fn email(&self) -> Option<&str> {
        match self {
            Actor::Operator => None,
            Actor::Developer(user) => Some(&user.email),
        }
    }
}
