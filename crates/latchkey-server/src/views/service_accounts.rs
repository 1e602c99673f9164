//! The console's pages of a project's service accounts: the list with the form that makes one, and an
//! account's page with its keys.

use super::console::Layout;
use askama::Template;

/// A service account in a list or a heading.
#[derive(Debug, Clone)]
pub struct AccountRow {
    /// Its identifier (e-mail form).
    pub email: String,
    /// Its display name.
    pub display_name: String,
    /// Its id (the key file's `client_id`).
    pub unique_id: String,
    /// Whether it is disabled.
    pub disabled: bool,
}

/// A key of an account.
#[derive(Debug, Clone)]
pub struct KeyRow {
    /// The key id.
    pub id: String,
    /// RS256 or ES256.
    pub alg: &'static str,
    /// When it was made.
    pub created: String,
    /// Whether it is disabled.
    pub disabled: bool,
}

/// `GET /console/projects/{project}/service-accounts`.
#[derive(Template)]
#[template(path = "console/service_accounts.html")]
pub struct AccountsPage {
    /// The header.
    pub layout: Layout,
    /// A notice after a change.
    pub notice: Option<String>,
    /// The project's id.
    pub project_id: String,
    /// The project's name.
    pub project_name: String,
    /// Its service accounts.
    pub accounts: Vec<AccountRow>,
    /// The name typed into the form.
    pub name: String,
    /// The display name typed into the form.
    pub display_name: String,
    /// What is wrong with the form.
    pub name_error: Option<String>,
}

/// `GET /console/projects/{project}/service-accounts/{account}`.
#[derive(Template)]
#[template(path = "console/service_account.html")]
pub struct AccountPage {
    /// The header.
    pub layout: Layout,
    /// A notice after a change.
    pub notice: Option<String>,
    /// An error of the last action.
    pub error: Option<String>,
    /// The project's id.
    pub project_id: String,
    /// The project's name.
    pub project_name: String,
    /// The account.
    pub account: AccountRow,
    /// Its keys, oldest first.
    pub keys: Vec<KeyRow>,
    /// How many keys it may hold.
    pub max_keys: i64,
}
