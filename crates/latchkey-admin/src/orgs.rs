//! Organisations, for the operator's CLI, the console's pages and its JSON API: who may act on one is decided here
//! once. The operator holds every right; an organisation's administrators (accounts signed in to the console, or
//! calling its API with a key) manage its members and its policy; only the operator creates organisations and adds
//! their verified domains (latchkey does not verify a domain itself: the operator vouches for it). A developer who
//! does not administer an organisation is told it does not exist, whether it does or not.

use super::actor::no_project;
use super::results::{ProjectView, UserChanged};
use super::{find_user, random_id, Actor, AdminError, AdminResult, Right};
use latchkey_core::account::AccountChange;
use latchkey_core::org::{AppAccess, Audience, OrgChange, OrgRefusal};
use latchkey_core::scope::{ScopeRegistry, ScopeSet};
use latchkey_core::time::UnixTime;
use latchkey_store::{Org, Store};

pub use views::{OrgAppView, OrgChanged, OrgCreated, OrgDetail, OrgList, OrgMemberView, OrgPolicyView, OrgSummary};

mod views;

/// The error for an organisation the actor cannot see: the same whether it exists or not.
fn no_org(org_id: &str) -> AdminError {
    AdminError::NotFound(format!("organisation {org_id}"))
}

/// The refusal of an operator's action to anyone else.
fn operator_only(what: &str) -> AdminError {
    AdminError::Forbidden(format!("only the operator {what}"))
}

/// A store's refusal of a change, for the operator or the administrator.
fn refused(why: OrgRefusal, org_id: &str, subject: &str) -> AdminError {
    match why {
        OrgRefusal::UnknownOrg => no_org(org_id),
        OrgRefusal::UnknownUser => AdminError::NotFound(format!("user {subject}")),
        OrgRefusal::UnknownClient => AdminError::NotFound(format!("client {subject}")),
        OrgRefusal::UnknownProject => AdminError::NotFound(format!("project {subject}")),
        OrgRefusal::NotMember => AdminError::NotFound(format!("member {subject} of organisation {org_id}")),
        OrgRefusal::DomainTaken => AdminError::Conflict(format!("domain {subject}: {why}")),
        OrgRefusal::MemberElsewhere => AdminError::Conflict(format!("user {subject}: {why}")),
        OrgRefusal::InternalWithoutOrg => AdminError::Invalid(why.to_string()),
    }
}

/// Whether an account's address is at one of the organisation's verified domains: the accounts an administrator
/// manages (adds, disables, enables). Others are the operator's to add: an administrator must not be able to pull
/// an outside account into the organisation's policy (and its domain-wide delegations).
async fn at_its_domains(store: &dyn Store, org_id: &str, email: &str) -> Result<bool, AdminError> {
    Ok(store.org_domains(org_id).await?.contains(&latchkey_core::org::email_domain(email)))
}

/// For an administrator (not the operator), refuses an account outside the organisation's verified domains.
async fn managed(store: &dyn Store, actor: &Actor, org_id: &str, email: &str) -> Result<(), AdminError> {
    match actor {
        Actor::Developer(_) if !at_its_domains(store, org_id, email).await? => Err(AdminError::Forbidden(
            "an administrator manages the accounts at the organisation's verified domains; the operator adds others"
                .into(),
        )),
        _ => Ok(()),
    }
}

/// The organisation, if the actor may administer it.
pub async fn org_admin(store: &dyn Store, actor: &Actor, org_id: &str) -> Result<Org, AdminError> {
    if let Actor::Developer(user) = actor {
        match store.membership_of(&user.id).await? {
            Some((org, true)) if org == org_id => {}
            _ => return Err(no_org(org_id)),
        }
    }
    store.org(org_id).await?.ok_or_else(|| no_org(org_id))
}

/// A domain as organisations claim it: lower-case letters, digits, hyphens, at least two labels.
pub fn valid_domain(domain: &str) -> Result<String, AdminError> {
    let d = domain.trim().to_ascii_lowercase();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    match d.split('.').count() >= 2 && d.len() <= 253 && d.split('.').all(label_ok) {
        true => Ok(d),
        false => Err(AdminError::Invalid(format!("domain {domain:?} is not a domain name (like example.com)"))),
    }
}

/// Data-API scopes by their identifiers: every one must exist, and identity scopes are not controlled.
pub fn data_scopes(registry: &ScopeRegistry, ids: &[String]) -> Result<ScopeSet, AdminError> {
    let mut set = ScopeSet::EMPTY;
    for id in ids.iter().flat_map(|s| s.split_whitespace()) {
        match registry.index_of(id) {
            Some(i) if registry.get(i).is_some_and(|s| !s.identity) => set.0 |= 1 << i,
            Some(_) => {
                return Err(AdminError::Invalid(format!("scope {id} is an identity scope: only data-API scopes are")))
            }
            None => return Err(AdminError::Invalid(format!("there is no scope {id}"))),
        }
    }
    Ok(set)
}

/// An app access by its name (`trusted`, `limited`, `specific` with scopes, `blocked`).
pub fn app_access(registry: &ScopeRegistry, name: &str, scopes: &[String]) -> Result<AppAccess, AdminError> {
    let listed = data_scopes(registry, scopes)?;
    let access = AppAccess::parse(name, listed)
        .ok_or_else(|| AdminError::Invalid(format!("access {name:?}: use one of {}", AppAccess::NAMES.join(", "))))?;
    match access {
        AppAccess::Specific(s) if s.is_empty() => Err(AdminError::Invalid("specific access lists its scopes".into())),
        AppAccess::Specific(_) => Ok(access),
        _ if !listed.is_empty() => Err(AdminError::Invalid(format!("{name} access takes no scopes"))),
        _ => Ok(access),
    }
}

/// Creates an organisation with its verified domains (operator only); accounts at them join.
pub async fn org_create(
    store: &dyn Store,
    actor: &Actor,
    name: &str,
    domains: &[String],
    now: UnixTime,
) -> AdminResult<OrgCreated> {
    if !matches!(actor, Actor::Operator) {
        return Err(operator_only("creates organisations"));
    }
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(AdminError::Invalid("an organisation's name has 1 to 100 characters".into()));
    }
    let domains = domains.iter().map(|d| valid_domain(d)).collect::<Result<Vec<_>, _>>()?;
    let org = Org {
        id: format!("org_{}", random_id(12)),
        name: name.into(),
        created_at: now,
        restricted: ScopeSet::EMPTY,
        default_access: AppAccess::Limited,
        trust_internal: false,
        block_self_registered: false,
        sign_in: Default::default(),
    };
    if let Err(why) = store.create_org(&org, &domains).await? {
        return Err(refused(why, &org.id, &domains.join(", ")));
    }
    Ok(OrgCreated { org_id: org.id, name: org.name, domains })
}

/// The organisations the actor may administer: every one for the operator.
pub async fn org_list(store: &dyn Store, actor: &Actor) -> AdminResult<OrgList> {
    let orgs = match actor {
        Actor::Operator => store.orgs().await?,
        Actor::Developer(user) => match store.membership_of(&user.id).await? {
            Some((org, true)) => store.org(&org).await?.into_iter().collect(),
            _ => Vec::new(),
        },
    };
    Ok(OrgList { orgs: orgs.iter().map(OrgSummary::from).collect() })
}

/// An organisation with its domains, members, policy and listed apps.
pub async fn org_show(
    store: &dyn Store,
    actor: &Actor,
    org_id: &str,
    registry: &ScopeRegistry,
) -> AdminResult<OrgDetail> {
    let org = org_admin(store, actor, org_id).await?;
    let mut apps = Vec::new();
    let now = latchkey_core::time::Clock::now(&crate::clock::SystemClock);
    for a in store.org_apps(org_id).await? {
        let client = store.client(&a.client_id).await?;
        let mut assured = None;
        if let (Some(c), true) = (&client, a.delegated.is_some()) {
            let project_org = store.project(&c.project_id).await?.and_then(|p| p.org_id);
            assured = views::assured_by(c, project_org.as_deref(), org_id, now);
        }
        apps.push(OrgAppView::of(&a, client.map(|c| c.name), assured, registry));
    }
    Ok(OrgDetail {
        org_id: org.id.clone(),
        name: org.name.clone(),
        created_at: org.created_at.0,
        domains: store.org_domains(org_id).await?,
        members: store.org_members(org_id).await?.iter().map(OrgMemberView::from).collect(),
        policy: OrgPolicyView::of(&org, registry),
        apps,
    })
}

/// Applies a change to an organisation's members or policy (adding a domain is the operator's alone), revoking
/// the grants the changed policy no longer allows.
pub async fn org_change(
    store: &dyn Store,
    actor: &Actor,
    org_id: &str,
    change: OrgChange,
    now: UnixTime,
) -> AdminResult<OrgChanged> {
    if matches!(change, OrgChange::AddDomain(_)) && !matches!(actor, Actor::Operator) {
        return Err(operator_only("adds an organisation's verified domains"));
    }
    org_admin(store, actor, org_id).await?;
    let change = match change {
        OrgChange::AddDomain(d) => OrgChange::AddDomain(valid_domain(&d)?),
        other => other,
    };
    apply(store, org_id, change, now).await
}

/// Applies a change the actor may make (checked by the caller).
async fn apply(store: &dyn Store, org_id: &str, change: OrgChange, now: UnixTime) -> AdminResult<OrgChanged> {
    let subject = match &change {
        OrgChange::AddDomain(s) => s.as_str(),
        OrgChange::AddMember { user_id, .. } | OrgChange::RemoveMember { user_id } => user_id,
        OrgChange::AppAccess { client_id, .. } | OrgChange::Delegate { client_id, .. } => client_id,
        _ => "",
    };
    match store.change_org(org_id, &change, now).await? {
        Ok(revoked_grants) => Ok(OrgChanged { org_id: org_id.into(), revoked_grants }),
        Err(why) => Err(refused(why, org_id, subject)),
    }
}

/// Adds an account (by e-mail address or id) as a member, or as an administrator.
pub async fn org_add_member(
    store: &dyn Store,
    actor: &Actor,
    org_id: &str,
    id_or_email: &str,
    admin: bool,
    now: UnixTime,
) -> AdminResult<OrgChanged> {
    org_admin(store, actor, org_id).await?;
    if id_or_email.contains('@') {
        // Before the account is looked up: an administrator learns nothing of addresses outside the domains.
        managed(store, actor, org_id, id_or_email).await?;
    }
    let user = find_user(store, id_or_email).await?;
    managed(store, actor, org_id, &user.email).await?;
    apply(store, org_id, OrgChange::AddMember { user_id: user.id, admin }, now).await
}

/// Removes a member (by e-mail address or id).
pub async fn org_remove_member(
    store: &dyn Store,
    actor: &Actor,
    org_id: &str,
    id_or_email: &str,
    now: UnixTime,
) -> AdminResult<OrgChanged> {
    org_admin(store, actor, org_id).await?;
    let user = find_user(store, id_or_email).await?;
    apply(store, org_id, OrgChange::RemoveMember { user_id: user.id }, now).await
}

/// Disables (or enables again) a member's account: the operator's disable, by the organisation's administrator.
pub async fn org_member_set_disabled(
    store: &dyn Store,
    actor: &Actor,
    org_id: &str,
    id_or_email: &str,
    disabled: bool,
    now: UnixTime,
) -> AdminResult<UserChanged> {
    org_admin(store, actor, org_id).await?;
    let user = find_user(store, id_or_email).await?;
    if !matches!(store.membership_of(&user.id).await?, Some((org, _)) if org == org_id) {
        return Err(refused(OrgRefusal::NotMember, org_id, id_or_email));
    }
    managed(store, actor, org_id, &user.email).await?;
    if let Actor::Developer(me) = actor {
        if me.id == user.id {
            return Err(AdminError::Invalid("an administrator cannot disable their own account".into()));
        }
    }
    let change = if disabled { AccountChange::Disable } else { AccountChange::Enable };
    if store.change_account(&user.id, &change, now).await?.is_none() {
        return Err(AdminError::NotFound(format!("user {id_or_email}")));
    }
    Ok(UserChanged { user_id: user.id, deleted: None, disabled: Some(disabled) })
}

/// Places a project in an organisation (`org`: `Some(None)` takes it out of any) and sets its audience, revoking
/// the grants an internal audience no longer allows. A developer needs to edit the project and, to place it in an
/// organisation, to administer that organisation.
pub async fn project_place(
    store: &dyn Store,
    actor: &Actor,
    project_id: &str,
    org: Option<Option<&str>>,
    audience: Option<Audience>,
    now: UnixTime,
) -> AdminResult<ProjectView> {
    let access = actor.project(store, project_id, Right::Edit).await?;
    if let Some(current) = &access.project.org_id {
        // A project in an organisation is that organisation's administrators' to move or open up.
        org_admin(store, actor, current).await?;
    }
    let org_id = match org {
        Some(Some(o)) => {
            org_admin(store, actor, o).await?;
            // Placing a project into an organisation hands its placement and audience to that organisation's
            // administrators: its owners' decision, not an editor's (who may administer the organisation).
            if access.project.org_id.as_deref() != Some(o) {
                actor.project(store, project_id, Right::ManageMembers).await?;
            }
            Some(o.to_owned())
        }
        Some(None) => None,
        None => access.project.org_id.clone(),
    };
    let audience = audience.unwrap_or(access.project.audience);
    match store.place_project(project_id, org_id.as_deref(), audience, now).await? {
        Ok(_) => Ok(ProjectView { org_id, audience: audience.as_str(), ..access.view() }),
        Err(OrgRefusal::UnknownProject) => Err(no_project(project_id)),
        Err(why) => Err(refused(why, org_id.as_deref().unwrap_or(""), project_id)),
    }
}
