//! The units of work that change organisations, and [`enforce`]: what every change runs before it commits.

use super::{membership_columns, membership_from_row, membership_joins};
use crate::accounts::USER_EXISTS;
use crate::db::{rows, BoxFuture, Outcome, Tx};
use crate::records::Org;
use crate::rows::StoreRow;
use crate::sql::{args, Sql};
use crate::StoreResult;
use latchkey_core::access_token::GrantId;
use latchkey_core::account::EventKind;
use latchkey_core::org::{self, AppAccess, Audience, Membership, OrgChange, OrgRefusal, Placement};
use latchkey_core::scope::ScopeSet;
use latchkey_core::time::UnixTime;
use std::collections::BTreeSet;

/// A unit's result: a refusal rolls back.
type Changed<T> = StoreResult<Outcome<Result<T, OrgRefusal>>>;

/// The refusal of a change: nothing it wrote stays.
fn refuse<T>(why: OrgRefusal) -> Changed<T> {
    Ok(Outcome::Discard(Err(why)))
}

/// BIGINTs on both engines (`Tx::scalar` reads an i64).
static ORG_EXISTS: Sql = Sql::new("SELECT CAST(1 AS BIGINT) FROM orgs WHERE id = $1");
static CLIENT_EXISTS: Sql = Sql::new("SELECT CAST(1 AS BIGINT) FROM clients WHERE client_id = $1");
static PROJECT_EXISTS: Sql = Sql::new("SELECT CAST(1 AS BIGINT) FROM projects WHERE id = $1");
/// 1 when the user is a member of `$2`, 0 when of another organisation, no row when of none.
static MEMBER_OF: Sql =
    Sql::new("SELECT CAST(CASE WHEN org_id = $2 THEN 1 ELSE 0 END AS BIGINT) FROM org_members WHERE user_id = $1");
/// 1 when the domain is `$2`'s, 0 when another organisation's, no row when unclaimed.
static DOMAIN_OF: Sql =
    Sql::new("SELECT CAST(CASE WHEN org_id = $2 THEN 1 ELSE 0 END AS BIGINT) FROM org_domains WHERE domain = $1");
static RESTRICTED: Sql = Sql::new("SELECT restricted_scopes FROM orgs WHERE id = $1");

static INSERT_ORG: Sql = Sql::new(
    "INSERT INTO orgs (id, name, created_at, restricted_scopes, default_access, trust_internal) \
     VALUES ($1, $2, $3, $4, $5, $6)",
);
static INSERT_DOMAIN: Sql = Sql::new("INSERT INTO org_domains (domain, org_id) VALUES ($1, $2)");
/// Accounts at the domain `$2` that belong to no organisation join `$1`.
static JOIN_BY_DOMAIN: Sql = Sql::new(
    "INSERT INTO org_members (user_id, org_id, admin, via, added_at) SELECT id, $1, $4, 'domain', $3 FROM users \
     WHERE substr(lower(email), length(email) - length(CAST($2 AS TEXT))) = '@' || CAST($2 AS TEXT) \
     AND id NOT IN (SELECT user_id FROM org_members)",
);
static INSERT_MEMBER: Sql =
    Sql::new("INSERT INTO org_members (user_id, org_id, admin, via, added_at) VALUES ($1, $2, $3, 'admin', $4)");
static MAKE_ADMIN: Sql = Sql::new("UPDATE org_members SET admin = $3 WHERE user_id = $1 AND org_id = $2");
static REMOVE_MEMBER: Sql = Sql::new("DELETE FROM org_members WHERE user_id = $1 AND org_id = $2");
static SET_ACCESS: Sql = Sql::new(
    "INSERT INTO org_apps (org_id, client_id, access, scopes) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (org_id, client_id) DO UPDATE SET access = excluded.access, scopes = excluded.scopes",
);
static SET_DELEGATION: Sql = Sql::new(
    "INSERT INTO org_apps (org_id, client_id, delegated) VALUES ($1, $2, $3) \
     ON CONFLICT (org_id, client_id) DO UPDATE SET delegated = excluded.delegated",
);
/// A listing with neither an access nor a delegation says nothing: it goes.
static DROP_EMPTY_APP: Sql =
    Sql::new("DELETE FROM org_apps WHERE org_id = $1 AND client_id = $2 AND access IS NULL AND delegated IS NULL");
static SET_RESTRICTED: Sql = Sql::new("UPDATE orgs SET restricted_scopes = $2 WHERE id = $1");
static SET_TRUST_INTERNAL: Sql = Sql::new("UPDATE orgs SET trust_internal = $2 WHERE id = $1");
static SET_BLOCK_SELF_REGISTERED: Sql = Sql::new("UPDATE orgs SET block_self_registered = $2 WHERE id = $1");
/// Each setting `$2`, `$3` given (not null) changes; the other stays.
static SET_SIGN_IN_POLICY: Sql = Sql::new(
    "UPDATE orgs SET require_two_step = COALESCE($2, require_two_step), passkeys_only = COALESCE($3, passkeys_only) \
     WHERE id = $1",
);
static SET_DEFAULT_ACCESS: Sql = Sql::new("UPDATE orgs SET default_access = $2 WHERE id = $1");
static PLACE_PROJECT: Sql = Sql::new("UPDATE projects SET org_id = $2, audience = $3 WHERE id = $1");
static AUDIT: Sql = Sql::new("INSERT INTO audit_log (at, action, user_id, client_id) VALUES ($1, $2, $3, $4)");

/// What a change may bear on: the grants and codes of an organisation's members, of one account, or of one
/// project's clients.
#[derive(Debug, Clone, Copy)]
enum Affected<'a> {
    Members(&'a str),
    User(&'a str),
    Project(&'a str),
}

/// The rows of `$table` (its key column `$id`) that are still `$live` (`$1` is now) and that a change may bear on
/// (`$where`, with `$2`), with what [`org::decide`] needs.
macro_rules! candidates {
    ($id:literal, $table:literal, $live:literal, $where:literal) => {
        concat!(
            "SELECT g.",
            $id,
            ", g.user_id, g.client_id, g.scopes, p.org_id AS project_org, p.audience, \
             c.registration IS NOT NULL AS self_registered, ",
            membership_columns!(),
            " FROM ",
            $table,
            " g JOIN clients c ON c.client_id = g.client_id JOIN projects p ON p.id = c.project_id \
             LEFT JOIN org_members m ON m.user_id = g.user_id",
            membership_joins!("g.client_id"),
            " WHERE ",
            $live,
            " AND ",
            $where
        )
    };
    (grants, $where:literal) => {
        candidates!("id", "grants", "g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > $1)", $where)
    };
    (codes, $where:literal) => {
        candidates!("code_hash", "auth_codes", "g.used_at IS NULL AND g.expires_at > $1", $where)
    };
}

static GRANTS_OF_MEMBERS: Sql = Sql::new(candidates!(grants, "m.org_id = $2"));
static GRANTS_OF_USER: Sql = Sql::new(candidates!(grants, "g.user_id = $2"));
static GRANTS_OF_PROJECT: Sql = Sql::new(candidates!(grants, "c.project_id = $2"));
static CODES_OF_MEMBERS: Sql = Sql::new(candidates!(codes, "m.org_id = $2"));
static CODES_OF_USER: Sql = Sql::new(candidates!(codes, "g.user_id = $2"));
static CODES_OF_PROJECT: Sql = Sql::new(candidates!(codes, "c.project_id = $2"));

static REVOKE_GRANT: Sql = Sql::new("UPDATE grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL");
static AUDIT_GRANT: Sql = Sql::new(
    "INSERT INTO audit_log (at, action, user_id, client_id, grant_id) VALUES ($1, 'org_policy_revoked', $2, $3, $4)",
);
/// An expired code is refused at the token endpoint like any other (`invalid_grant`); a redeemed one stays as it is.
static EXPIRE_CODE: Sql = Sql::new("UPDATE auth_codes SET expires_at = 0 WHERE code_hash = $1 AND used_at IS NULL");
/// The locks of a change, in the order of [`super::code`]: account, organisation, project.
static LOCK_USER: Sql = Sql::new("SELECT id FROM users WHERE id = $1 FOR UPDATE");
static LOCK_ORG: Sql = Sql::new("SELECT id FROM orgs WHERE id = $1 FOR UPDATE");
static LOCK_PROJECT: Sql = Sql::new("SELECT id FROM projects WHERE id = $1 FOR UPDATE");

/// A grant or code [`enforce`] judges.
struct Candidate<I> {
    id: I,
    user_id: String,
    client_id: String,
    scopes: ScopeSet,
    project_org: Option<String>,
    audience: Audience,
    self_registered: bool,
    member: Option<Membership>,
}

impl<I> Candidate<I> {
    /// Whether the policy as it stands now refuses it.
    fn refused(&self) -> bool {
        // Whether a grant is refused does not depend on the client's assured identity (only how consent is asked).
        let placement = Placement {
            org_id: self.project_org.as_deref(),
            audience: self.audience,
            identity_assured: false,
            self_registered: self.self_registered,
        };
        org::decide(placement, self.member.as_ref(), self.scopes).is_err()
    }
}

fn candidate<I>(r: &dyn StoreRow, id: I) -> StoreResult<Candidate<I>> {
    Ok(Candidate {
        id,
        user_id: r.text("user_id")?,
        client_id: r.text("client_id")?,
        scopes: crate::rows::scopes(r)?,
        project_org: r.opt_text("project_org")?,
        audience: crate::rows::audience(r)?,
        self_registered: r.flag("self_registered")?,
        member: membership_from_row(r)?,
    })
}

fn grant_candidate(r: &dyn StoreRow) -> StoreResult<Candidate<GrantId>> {
    candidate(r, r.grant_id("id")?)
}

fn code_candidate(r: &dyn StoreRow) -> StoreResult<Candidate<Vec<u8>>> {
    candidate(r, r.bytes("code_hash")?)
}

/// Judges again every live grant and pending code `affected` names: revokes the grants the policy now refuses
/// (each with its audit record, and one `tokens_revoked` event per account and client) and expires such codes.
/// Returns how many grants were revoked.
async fn enforce(tx: &mut dyn Tx, affected: Affected<'_>, now: UnixTime) -> StoreResult<u64> {
    let (grants, codes, key) = match affected {
        Affected::Members(org) => (&GRANTS_OF_MEMBERS, &CODES_OF_MEMBERS, org),
        Affected::User(user) => (&GRANTS_OF_USER, &CODES_OF_USER, user),
        Affected::Project(project) => (&GRANTS_OF_PROJECT, &CODES_OF_PROJECT, project),
    };
    // Codes first, then grants: a code being redeemed meanwhile either finds itself expired (the redemption's
    // statement wants an unexpired code) or, redeemed first, has its grant among those read next.
    for c in rows(tx, codes, args![now, key], code_candidate).await?.into_iter().filter(Candidate::refused) {
        tx.exec(&EXPIRE_CODE, args![&c.id]).await?;
    }
    let mut revoked = 0;
    let mut events = BTreeSet::new();
    for g in rows(tx, grants, args![now, key], grant_candidate).await?.into_iter().filter(Candidate::refused) {
        if tx.exec(&REVOKE_GRANT, args![now, &g.id]).await? == 1 {
            tx.exec(&AUDIT_GRANT, args![now, &g.user_id, &g.client_id, &g.id]).await?;
            revoked += 1;
            events.insert((g.user_id, g.client_id));
        }
    }
    for (user, client) in &events {
        crate::streams::fanout::record(tx, now, EventKind::TokensRevoked, user, Some(client.as_str())).await?;
    }
    Ok(revoked)
}

/// Creates an organisation with its domains: one unit of work.
pub(super) fn create<'t>(tx: &'t mut dyn Tx, (o, domains): &'t (Org, Vec<String>)) -> BoxFuture<'t, Changed<()>> {
    Box::pin(async move {
        let access = o.default_access;
        let row = args![&o.id, &o.name, o.created_at, o.restricted.to_stored(), access.name(), o.trust_internal];
        tx.exec(&INSERT_ORG, row).await?;
        for d in domains {
            if let Err(why) = add_domain(tx, &o.id, d, o.created_at).await? {
                return refuse(why);
            }
        }
        tx.exec(&AUDIT, args![o.created_at, "org_created", None::<&str>, None::<&str>]).await?;
        Ok(Outcome::Keep(Ok(())))
    })
}

/// Claims a domain for an organisation; its accounts outside any organisation join.
async fn add_domain(tx: &mut dyn Tx, org: &str, domain: &str, now: UnixTime) -> StoreResult<Result<(), OrgRefusal>> {
    match tx.scalar(&DOMAIN_OF, args![domain, org]).await? {
        Some(0) => return Ok(Err(OrgRefusal::DomainTaken)),
        Some(_) => {}
        None => {
            tx.exec(&INSERT_DOMAIN, args![domain, org]).await?;
        }
    }
    tx.exec(&JOIN_BY_DOMAIN, args![org, domain, now, false]).await?;
    Ok(Ok(()))
}

/// Applies an [`OrgChange`] and enforces the policy it leaves: one unit of work.
pub(super) fn change<'t>(
    tx: &'t mut dyn Tx,
    (org, change, now): &'t (String, OrgChange, UnixTime),
) -> BoxFuture<'t, Changed<u64>> {
    Box::pin(async move {
        let (org, now) = (org.as_str(), *now);
        if let OrgChange::AddMember { user_id, .. } | OrgChange::RemoveMember { user_id } = change {
            tx.lock(&LOCK_USER, args![user_id]).await?;
        }
        tx.lock(&LOCK_ORG, args![org]).await?;
        if tx.scalar(&ORG_EXISTS, args![org]).await?.is_none() {
            return refuse(OrgRefusal::UnknownOrg);
        }
        let client = match change {
            OrgChange::AppAccess { client_id, .. } | OrgChange::Delegate { client_id, .. } => Some(client_id),
            _ => None,
        };
        if let Some(c) = client {
            if tx.scalar(&CLIENT_EXISTS, args![c]).await?.is_none() {
                return refuse(OrgRefusal::UnknownClient);
            }
        }
        let (action, affected) = match change {
            OrgChange::AddDomain(domain) => {
                if let Err(why) = add_domain(tx, org, domain, now).await? {
                    return refuse(why);
                }
                ("org_domain_added", Affected::Members(org))
            }
            OrgChange::AddMember { user_id, admin } => {
                if tx.scalar(&USER_EXISTS, args![user_id]).await?.is_none() {
                    return refuse(OrgRefusal::UnknownUser);
                }
                match tx.scalar(&MEMBER_OF, args![user_id, org]).await? {
                    Some(0) => return refuse(OrgRefusal::MemberElsewhere),
                    Some(_) if *admin => tx.exec(&MAKE_ADMIN, args![user_id, org, true]).await?,
                    Some(_) => 0,
                    None => tx.exec(&INSERT_MEMBER, args![user_id, org, *admin, now]).await?,
                };
                ("org_member_added", Affected::User(user_id))
            }
            OrgChange::RemoveMember { user_id } => {
                if tx.exec(&REMOVE_MEMBER, args![user_id, org]).await? == 0 {
                    return refuse(OrgRefusal::NotMember);
                }
                ("org_member_removed", Affected::User(user_id))
            }
            OrgChange::AppAccess { client_id, access } => {
                let name = access.map(AppAccess::name);
                let listed = access.map_or(0, |a| a.scopes().to_stored());
                tx.exec(&SET_ACCESS, args![org, client_id, name, listed]).await?;
                tx.exec(&DROP_EMPTY_APP, args![org, client_id]).await?;
                ("org_app_access", Affected::Members(org))
            }
            OrgChange::Delegate { client_id, scopes } => {
                tx.exec(&SET_DELEGATION, args![org, client_id, scopes.map(ScopeSet::to_stored)]).await?;
                tx.exec(&DROP_EMPTY_APP, args![org, client_id]).await?;
                ("org_delegation", Affected::Members(org))
            }
            OrgChange::ScopeAccess { scopes, restricted } => {
                let now_restricted = tx.scalar(&RESTRICTED, args![org]).await?.unwrap_or(0);
                let bits = scopes.to_stored();
                let next = if *restricted { now_restricted | bits } else { now_restricted & !bits };
                tx.exec(&SET_RESTRICTED, args![org, next]).await?;
                ("org_scope_access", Affected::Members(org))
            }
            OrgChange::TrustInternalApps(on) => {
                tx.exec(&SET_TRUST_INTERNAL, args![org, *on]).await?;
                ("org_trust_internal_apps", Affected::Members(org))
            }
            OrgChange::BlockSelfRegisteredApps(on) => {
                tx.exec(&SET_BLOCK_SELF_REGISTERED, args![org, *on]).await?;
                ("org_block_self_registered_apps", Affected::Members(org))
            }
            OrgChange::SignInPolicy { require_two_step, passkeys_only } => {
                tx.exec(&SET_SIGN_IN_POLICY, args![org, *require_two_step, *passkeys_only]).await?;
                // It bears on sign-ins, not on grants: the authorization endpoint checks it against each session.
                ("org_sign_in_policy", Affected::Members(org))
            }
            OrgChange::DefaultAccess(access) => {
                tx.exec(&SET_DEFAULT_ACCESS, args![org, access.name()]).await?;
                ("org_default_access", Affected::Members(org))
            }
        };
        let user = match affected {
            Affected::User(u) => Some(u),
            _ => None,
        };
        tx.exec(&AUDIT, args![now, action, user, client.map(String::as_str)]).await?;
        let revoked = enforce(tx, affected, now).await?;
        Ok(Outcome::Keep(Ok(revoked)))
    })
}

/// Places a project in an organisation with an audience and enforces it: one unit of work.
pub(super) fn place<'t>(
    tx: &'t mut dyn Tx,
    (project, org, audience, now): &'t (String, Option<String>, Audience, UnixTime),
) -> BoxFuture<'t, Changed<u64>> {
    Box::pin(async move {
        if let Some(o) = org {
            tx.lock(&LOCK_ORG, args![o]).await?;
        }
        tx.lock(&LOCK_PROJECT, args![project]).await?;
        if tx.scalar(&PROJECT_EXISTS, args![project]).await?.is_none() {
            return refuse(OrgRefusal::UnknownProject);
        }
        match org {
            Some(o) if tx.scalar(&ORG_EXISTS, args![o]).await?.is_none() => return refuse(OrgRefusal::UnknownOrg),
            None if *audience == Audience::Internal => return refuse(OrgRefusal::InternalWithoutOrg),
            _ => {}
        }
        tx.exec(&PLACE_PROJECT, args![project, org, audience.as_str()]).await?;
        tx.exec(&AUDIT, args![*now, "project_placed", None::<&str>, None::<&str>]).await?;
        Ok(Outcome::Keep(Ok(enforce(tx, Affected::Project(project), *now).await?)))
    })
}
