//! Organisations: their domains, members and administrators, their policy over apps, and the projects placed
//! in them.
//!
//! Every change ([`Orgs::change_org`], [`Orgs::place_project`]) is one unit of work ([`change`]) that applies
//! it, records it in the audit log, and then judges again, with `latchkey_core::org::decide`, every live grant
//! and pending code the change may bear on: those the new policy refuses are revoked (grants, each with its
//! audit record and one `tokens_revoked` account event per account and client) or expired (codes). A change
//! that is refused (an unknown organisation, user, client or project, a domain claimed elsewhere, a member of
//! another organisation) changes nothing.

use crate::db::{Db, Durability, Engine};
use crate::records::{Org, OrgApp, OrgMember};
use crate::rows::{self, StoreRow};
use crate::sql::{args, Sql};
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use latchkey_core::org::{AppAccess, Audience, Membership, OrgChange, OrgRefusal, Refusal};
use latchkey_core::scope::ScopeSet;
use latchkey_core::time::UnixTime;
use latchkey_core::token::AuthCode;

mod change;
pub(crate) mod code;

/// Organisations and their policies.
#[async_trait]
pub trait Orgs: Send + Sync {
    /// Creates an organisation with its verified domains; accounts with addresses at them join. Refused
    /// (`DomainTaken`) when another organisation has one of the domains.
    async fn create_org(&self, org: &Org, domains: &[String]) -> StoreResult<Result<(), OrgRefusal>>;
    /// An organisation by id.
    async fn org(&self, id: &str) -> StoreResult<Option<Org>>;
    /// Every organisation.
    async fn orgs(&self) -> StoreResult<Vec<Org>>;
    /// An organisation's domains.
    async fn org_domains(&self, id: &str) -> StoreResult<Vec<String>>;
    /// An organisation's members, administrators first.
    async fn org_members(&self, id: &str) -> StoreResult<Vec<OrgMember>>;
    /// The apps an organisation lists.
    async fn org_apps(&self, id: &str) -> StoreResult<Vec<OrgApp>>;
    /// The organisation a user belongs to, and whether they administer it.
    async fn membership_of(&self, user_id: &str) -> StoreResult<Option<(String, bool)>>;
    /// The policy of the user's organisation as it bears on one client; `None` outside any organisation. One
    /// read: the authorization endpoint's, once the account is known.
    async fn member_policy(&self, user_id: &str, client_id: &str) -> StoreResult<Option<Membership>>;
    /// Stores an authorization code of a client of `project_id` if the organisation policy, read under the locks
    /// every organisation change takes, still allows its scopes for its user: the check and the insert are one
    /// unit of work ([`code`]), so no change slips between them. Otherwise nothing is stored: the refusal.
    async fn insert_code_if_allowed(&self, code: &AuthCode, project_id: &str) -> StoreResult<Result<(), Refusal>>;
    /// Applies a change to an organisation and revokes what the changed policy refuses; returns how many grants
    /// were revoked.
    async fn change_org(&self, org_id: &str, change: &OrgChange, now: UnixTime)
        -> StoreResult<Result<u64, OrgRefusal>>;
    /// Places a project in an organisation (or in none) with an audience, and revokes what that refuses;
    /// returns how many grants were revoked. An internal project needs an organisation.
    async fn place_project(
        &self,
        project_id: &str,
        org_id: Option<&str>,
        audience: Audience,
        now: UnixTime,
    ) -> StoreResult<Result<u64, OrgRefusal>>;
}

/// A membership's columns (`m` the member row, `o` the organisation, `a` the client's listing), in the order
/// [`membership_from_row`] reads them.
macro_rules! membership_columns {
    () => {
        "m.org_id, m.admin, o.restricted_scopes, o.default_access, o.trust_internal, o.block_self_registered, \
         o.require_two_step, o.passkeys_only, a.access, \
         a.scopes AS app_scopes, a.delegated"
    };
}
/// The organisation and listing joined to a member row `m` for the client `$client`.
macro_rules! membership_joins {
    ($client:literal) => {
        concat!(
            " LEFT JOIN orgs o ON o.id = m.org_id LEFT JOIN org_apps a ON a.org_id = m.org_id AND a.client_id = ",
            $client
        )
    };
}
pub(crate) use {membership_columns, membership_joins};

/// An organisation's columns, in the order [`org_from_row`] reads them.
macro_rules! org_columns {
    () => {
        "SELECT id, name, created_at, restricted_scopes, default_access, trust_internal, block_self_registered, \
         require_two_step, passkeys_only \
         FROM orgs"
    };
}
static ORG: Sql = Sql::new(concat!(org_columns!(), " WHERE id = $1"));
static ORGS: Sql = Sql::new(concat!(org_columns!(), " ORDER BY created_at, id"));
static DOMAINS: Sql = Sql::new("SELECT domain FROM org_domains WHERE org_id = $1 ORDER BY domain");
static MEMBERS: Sql = Sql::new(
    "SELECT m.user_id, u.email, m.admin, m.via, u.disabled_at FROM org_members m JOIN users u ON u.id = m.user_id \
     WHERE m.org_id = $1 ORDER BY m.admin DESC, u.email",
);
static APPS: Sql = Sql::new(
    "SELECT client_id, access, scopes AS app_scopes, delegated FROM org_apps WHERE org_id = $1 ORDER BY client_id",
);
static MEMBERSHIP_OF: Sql = Sql::new("SELECT org_id, admin FROM org_members WHERE user_id = $1");
/// The member's policy for one client (`$1` the user, `$2` the client).
pub(super) static MEMBER_POLICY: Sql = Sql::new(concat!(
    "SELECT ",
    membership_columns!(),
    " FROM org_members m",
    membership_joins!("$2"),
    " WHERE m.user_id = $1"
));

fn org_from_row(r: &dyn StoreRow) -> StoreResult<Org> {
    Ok(Org {
        id: r.text("id")?,
        name: r.text("name")?,
        created_at: rows::time(r, "created_at")?,
        restricted: rows::scope_bits(r, "restricted_scopes")?,
        default_access: default_access(r)?,
        trust_internal: r.flag("trust_internal")?,
        block_self_registered: r.flag("block_self_registered")?,
        sign_in: sign_in_policy(r)?,
    })
}

/// The `require_two_step` and `passkeys_only` columns.
fn sign_in_policy(r: &dyn StoreRow) -> StoreResult<latchkey_core::sign_in::Policy> {
    Ok(latchkey_core::sign_in::Policy {
        require_two_step: r.flag("require_two_step")?,
        passkeys_only: r.flag("passkeys_only")?,
    })
}

/// The `default_access` column (never `specific`: it has no scopes of its own).
fn default_access(r: &dyn StoreRow) -> StoreResult<AppAccess> {
    let name = r.text("default_access")?;
    AppAccess::parse(&name, ScopeSet::EMPTY).ok_or_else(|| StoreError::Other(format!("default access {name}")))
}

fn member_from_row(r: &dyn StoreRow) -> StoreResult<OrgMember> {
    Ok(OrgMember {
        user_id: r.text("user_id")?,
        email: r.text("email")?,
        admin: r.flag("admin")?,
        via: r.text("via")?,
        disabled: r.opt_int("disabled_at")?.is_some(),
    })
}

fn app_from_row(r: &dyn StoreRow) -> StoreResult<OrgApp> {
    Ok(OrgApp {
        client_id: r.text("client_id")?,
        access: rows::app_access(r, "access", "app_scopes")?,
        delegated: delegated(r)?,
    })
}

fn delegated(r: &dyn StoreRow) -> StoreResult<Option<ScopeSet>> {
    match r.opt_int("delegated")? {
        Some(_) => rows::scope_bits(r, "delegated").map(Some),
        None => Ok(None),
    }
}

/// A membership from [`membership_columns`]; `None` when the row has no member (`m.org_id` is null).
pub(crate) fn membership_from_row(r: &dyn StoreRow) -> StoreResult<Option<Membership>> {
    let Some(org_id) = r.opt_text("org_id")? else { return Ok(None) };
    Ok(Some(Membership {
        org_id,
        admin: r.flag("admin")?,
        restricted: rows::scope_bits(r, "restricted_scopes")?,
        default_access: default_access(r)?,
        trust_internal: r.flag("trust_internal")?,
        block_self_registered: r.flag("block_self_registered")?,
        sign_in: sign_in_policy(r)?,
        access: rows::app_access(r, "access", "app_scopes")?,
        delegated: delegated(r)?,
    }))
}

#[async_trait]
impl<E: Engine> Orgs for Db<E> {
    async fn create_org(&self, org: &Org, domains: &[String]) -> StoreResult<Result<(), OrgRefusal>> {
        let data = (org.clone(), domains.to_vec());
        self.engine.unit(Durability::Durable, change::create, data).await
    }

    async fn org(&self, id: &str) -> StoreResult<Option<Org>> {
        self.engine.one(&ORG, args![id], org_from_row).await
    }

    async fn orgs(&self) -> StoreResult<Vec<Org>> {
        self.engine.all(&ORGS, args![], org_from_row).await
    }

    async fn org_domains(&self, id: &str) -> StoreResult<Vec<String>> {
        self.engine.all(&DOMAINS, args![id], |r| r.text("domain")).await
    }

    async fn org_members(&self, id: &str) -> StoreResult<Vec<OrgMember>> {
        self.engine.all(&MEMBERS, args![id], member_from_row).await
    }

    async fn org_apps(&self, id: &str) -> StoreResult<Vec<OrgApp>> {
        self.engine.all(&APPS, args![id], app_from_row).await
    }

    async fn membership_of(&self, user_id: &str) -> StoreResult<Option<(String, bool)>> {
        self.engine.one(&MEMBERSHIP_OF, args![user_id], |r| Ok((r.text("org_id")?, r.flag("admin")?))).await
    }

    async fn member_policy(&self, user_id: &str, client_id: &str) -> StoreResult<Option<Membership>> {
        Ok(self.engine.one(&MEMBER_POLICY, args![user_id, client_id], membership_from_row).await?.flatten())
    }

    async fn insert_code_if_allowed(&self, code: &AuthCode, project_id: &str) -> StoreResult<Result<(), Refusal>> {
        let data = (code.clone(), project_id.to_owned());
        self.engine.unit(Durability::Durable, code::insert_if_allowed, data).await
    }

    async fn change_org(&self, org_id: &str, c: &OrgChange, now: UnixTime) -> StoreResult<Result<u64, OrgRefusal>> {
        let data = (org_id.to_owned(), c.clone(), now);
        self.engine.unit(Durability::Durable, change::change, data).await
    }

    async fn place_project(
        &self,
        project_id: &str,
        org_id: Option<&str>,
        audience: Audience,
        now: UnixTime,
    ) -> StoreResult<Result<u64, OrgRefusal>> {
        let data = (project_id.to_owned(), org_id.map(str::to_owned), audience, now);
        self.engine.unit(Durability::Durable, change::place, data).await
    }
}
