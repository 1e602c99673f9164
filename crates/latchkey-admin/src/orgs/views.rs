//! The typed results of the organisation operations: what the CLI prints and the JSON API sends.

use latchkey_core::client::Client;
use latchkey_core::org::AppAccess;
use latchkey_core::scope::{ScopeRegistry, ScopeSet};
use latchkey_core::time::UnixTime;
use latchkey_store::{Org, OrgApp, OrgMember};
use serde::Serialize;
use utoipa::ToSchema;

/// The identifiers of a set's scopes, in registry order.
fn ids(registry: &ScopeRegistry, set: ScopeSet) -> Vec<String> {
    registry.iter(set).map(|s| s.id.clone()).collect()
}

/// An organisation created.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrgCreated {
    /// The organisation's id (`org_...`).
    pub org_id: String,
    /// Its name.
    pub name: String,
    /// Its verified domains.
    pub domains: Vec<String>,
}

/// An organisation in a list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrgSummary {
    /// The organisation's id.
    pub org_id: String,
    /// Its name.
    pub name: String,
    /// When it was created.
    pub created_at: i64,
}

impl From<&Org> for OrgSummary {
    fn from(o: &Org) -> Self {
        Self { org_id: o.id.clone(), name: o.name.clone(), created_at: o.created_at.0 }
    }
}

/// Organisations.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrgList {
    /// The organisations.
    pub orgs: Vec<OrgSummary>,
}

/// A member of an organisation.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrgMemberView {
    /// The account.
    pub user_id: String,
    /// Its e-mail address.
    pub email: String,
    /// Whether it administers the organisation.
    pub admin: bool,
    /// How it joined: `admin` (added) or `domain` (by its address).
    pub via: String,
    /// Whether the account is disabled.
    pub disabled: bool,
}

impl From<&OrgMember> for OrgMemberView {
    fn from(m: &OrgMember) -> Self {
        Self {
            user_id: m.user_id.clone(),
            email: m.email.clone(),
            admin: m.admin,
            via: m.via.clone(),
            disabled: m.disabled,
        }
    }
}

/// An organisation's API access controls.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrgPolicyView {
    /// The data-API scopes only trusted (or specifically allowed) apps may have.
    pub restricted_scopes: Vec<String>,
    /// The data-API scopes every app not blocked may have.
    pub unrestricted_scopes: Vec<String>,
    /// The access of apps not listed: `limited` unless changed.
    pub default_access: &'static str,
    /// Whether the clients of the organisation's own projects are trusted.
    pub trust_internal_apps: bool,
    /// Whether every app that registered itself is blocked for the members.
    pub block_self_registered_apps: bool,
    /// Whether a member's password sign-in needs a second step (2-step verification).
    pub require_2sv: bool,
    /// Whether members sign in with passkeys only (it wins over `require_2sv`).
    pub passkeys_only: bool,
}

impl OrgPolicyView {
    /// An organisation's policy, with scope identifiers.
    pub fn of(o: &Org, registry: &ScopeRegistry) -> Self {
        let data = registry.all().iter().enumerate().filter(|(_, s)| !s.identity).fold(0, |acc, (i, _)| acc | 1 << i);
        Self {
            restricted_scopes: ids(registry, o.restricted),
            unrestricted_scopes: ids(registry, ScopeSet(data & !o.restricted.0)),
            default_access: o.default_access.name(),
            trust_internal_apps: o.trust_internal,
            block_self_registered_apps: o.block_self_registered,
            require_2sv: o.sign_in.require_two_step,
            passkeys_only: o.sign_in.passkeys_only,
        }
    }
}

/// An app an organisation lists.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrgAppView {
    /// The client id.
    pub client_id: String,
    /// The client's name (absent once the client is gone).
    pub client_name: Option<String>,
    /// Its access (`trusted`, `limited`, `specific`, `blocked`); absent when it follows the default.
    pub access: Option<&'static str>,
    /// The scopes of a `specific` access.
    pub scopes: Vec<String>,
    /// The scopes it is delegated for every member (domain-wide delegation); absent when it is not.
    pub delegated_scopes: Option<Vec<String>>,
    /// How a delegated app's members consent: `none` when its identity is assured (`app_check_enforced`,
    /// `own_project`: see `assured_by`), else `all_or_none` (the consent page without checkboxes: any installed
    /// app could name this client). Absent when it is not delegated.
    pub delegated_consent: Option<&'static str>,
    /// Why a delegated app skips the consent page (`app_check_enforced`, `own_project`).
    pub assured_by: Option<&'static str>,
}

/// Why a client's identity is assured to an organisation, if it is: what lets a delegated client skip consent.
pub fn assured_by(client: &Client, project_org: Option<&str>, org_id: &str, now: UnixTime) -> Option<&'static str> {
    if project_org == Some(org_id) {
        Some("own_project")
    } else if client.identity_assured(now) {
        Some("app_check_enforced")
    } else {
        None
    }
}

impl OrgAppView {
    /// A listing, with the client's name and, for a delegated one, why its identity is assured (if it is).
    pub fn of(
        a: &OrgApp,
        client_name: Option<String>,
        assured_by: Option<&'static str>,
        registry: &ScopeRegistry,
    ) -> Self {
        let delegated = a.delegated.is_some();
        Self {
            client_id: a.client_id.clone(),
            client_name,
            access: a.access.map(AppAccess::name),
            scopes: ids(registry, a.access.map_or(ScopeSet::EMPTY, AppAccess::scopes)),
            delegated_scopes: a.delegated.map(|d| ids(registry, d)),
            delegated_consent: delegated.then_some(if assured_by.is_some() { "none" } else { "all_or_none" }),
            assured_by: assured_by.filter(|_| delegated),
        }
    }
}

/// An organisation with everything an administrator sees.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrgDetail {
    /// The organisation's id.
    pub org_id: String,
    /// Its name.
    pub name: String,
    /// When it was created.
    pub created_at: i64,
    /// Its verified domains.
    pub domains: Vec<String>,
    /// Its members, administrators first.
    pub members: Vec<OrgMemberView>,
    /// Its API access controls.
    pub policy: OrgPolicyView,
    /// The apps it lists.
    pub apps: Vec<OrgAppView>,
}

/// A change applied to an organisation.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrgChanged {
    /// The organisation.
    pub org_id: String,
    /// How many grants the change revoked because the new policy no longer allows them.
    pub revoked_grants: u64,
}
