//! The console's pages for an organisation's administrators: the organisations they administer, and one
//! organisation's members and API access controls.

use super::console::Layout;
use askama::Template;
use latchkey_admin::orgs::{OrgDetail, OrgSummary};

/// `GET /console/orgs`: the organisations the developer administers.
#[derive(Template)]
#[template(path = "console/orgs.html")]
pub struct OrgsPage {
    /// The header.
    pub layout: Layout,
    /// The organisations.
    pub orgs: Vec<OrgSummary>,
}

/// A data-API scope with its restriction, on the organisation's page.
#[derive(Debug, Clone)]
pub struct ScopeRow {
    /// The scope identifier.
    pub id: String,
    /// What it allows, in words.
    pub summary: String,
    /// Whether the organisation restricts it.
    pub restricted: bool,
}

/// `GET /console/orgs/{org}`: members, domains and API access controls.
#[derive(Template)]
#[template(path = "console/org.html")]
pub struct OrgPage {
    /// The header.
    pub layout: Layout,
    /// A notice after a change.
    pub notice: Option<String>,
    /// The organisation.
    pub org: OrgDetail,
    /// Every data-API scope with its restriction.
    pub scopes: Vec<ScopeRow>,
    /// The signed-in administrator's id (they cannot disable themselves).
    pub me: String,
}
