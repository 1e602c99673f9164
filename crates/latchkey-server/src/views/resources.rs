//! The console's pages of a project's registered APIs (resources, RFC 8707): their list and the form that
//! registers one on the project's page, and an API's page with its scopes, its edit form, its introspection
//! secrets and the protected resource metadata (RFC 9728) it should serve.

use super::console::{Layout, ProjectRow, SecretsPanel};
use askama::Template;
use latchkey_admin::resources::ResourceView;

/// A registered API in the project's list.
#[derive(Debug, Clone)]
pub struct ResourceRow {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its resource identifier.
    pub uri: String,
    /// Its scopes' names.
    pub scopes: Vec<String>,
    /// `project` or `public`.
    pub visibility: String,
    /// `opaque` or `jwt`.
    pub token_format: String,
}

impl From<&ResourceView> for ResourceRow {
    fn from(r: &ResourceView) -> Self {
        Self {
            id: r.resource_id.clone(),
            name: r.name.clone(),
            uri: r.uri.clone(),
            scopes: r.scopes.iter().map(|s| s.name.clone()).collect(),
            visibility: r.visibility.clone(),
            token_format: r.token_format.clone(),
        }
    }
}

/// The values of the form that registers an API or changes one, as typed (or stored), and what is wrong.
#[derive(Debug, Clone, Default)]
pub struct ResourceForm {
    /// The resource identifier (registering only).
    pub uri: String,
    /// The name.
    pub name: String,
    /// Scopes to add, one `name|description` a line.
    pub scopes: String,
    /// `project` or `public`.
    pub visibility: String,
    /// `opaque` or `jwt`.
    pub token_format: String,
    /// Why the form was refused.
    pub error: Option<String>,
}

impl ResourceForm {
    /// Whether the API is to be public.
    pub fn public(&self) -> bool {
        self.visibility == "public"
    }
    /// Whether the API wants JWT access tokens.
    pub fn jwt(&self) -> bool {
        self.token_format == "jwt"
    }
}

/// `GET /console/projects/{project}/resources/{resource}`.
#[derive(Template)]
#[template(path = "console/resource.html")]
pub struct ResourcePage {
    /// The header.
    pub layout: Layout,
    /// The project.
    pub project: ProjectRow,
    /// A notice after a change.
    pub notice: Option<String>,
    /// An error of the last action.
    pub error: Option<String>,
    /// The API.
    pub resource: ResourceView,
    /// When it was registered.
    pub created: String,
    /// The edit form.
    pub edit: ResourceForm,
    /// Its introspection secrets.
    pub secrets: SecretsPanel,
    /// Whether the developer may delete it (owners).
    pub can_delete: bool,
    /// The protected resource metadata it should serve, as pretty JSON.
    pub metadata: String,
    /// Where it should serve it.
    pub metadata_url: String,
}
