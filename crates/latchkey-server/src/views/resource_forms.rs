//! A registered API as the project page lists it, and the form that registers or changes one (shared by the
//! project page and the API's page).

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
    /// `opaque`, `jwt` or `jwt-rs256`.
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
    /// `opaque`, `jwt` or `jwt-rs256`.
    pub token_format: String,
    /// Why the form was refused.
    pub error: Option<String>,
}

impl ResourceForm {
    /// Whether the API is to be public.
    pub fn public(&self) -> bool {
        self.visibility == "public"
    }
}
