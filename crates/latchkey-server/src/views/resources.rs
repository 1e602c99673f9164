//! The console's pages of a project's registered APIs (resources, RFC 8707): their list and the form that
//! registers one on the project's page, and an API's page with its scopes, its edit form, its introspection
//! secrets and the protected resource metadata (RFC 9728) it should serve.

use super::console::{Layout, ProjectRow, SecretsPanel};
pub use super::resource_forms::{ResourceForm, ResourceRow};
use askama::Template;
use latchkey_admin::resources::ResourceView;

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
