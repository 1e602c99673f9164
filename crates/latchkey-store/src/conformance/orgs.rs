//! Organisations: members by domain and by name, the refusals that change nothing, the authorization read, and the
//! strict enforcement of a changed policy on grants and codes already issued.

use super::{another_user, code, fixture, grant_for, issue, random_b64, user_at, T0};
use crate::prelude::*;
use crate::{GrantLimits, Org, Redeemed};
use latchkey_core::account::EventKind;
use latchkey_core::org::{AppAccess, Audience, Membership, OrgChange, OrgRefusal, Refusal};
use latchkey_core::scope::{Scope, ScopeSet};
use latchkey_core::token::AuthCode;

const LIMITS: GrantLimits = GrantLimits { per_client_user: 50, per_user: 100 }; // well above what a check issues

/// A new organisation with one fresh domain; returns (org id, domain).
async fn org(store: &dyn Store) -> (String, String) {
    let domain = format!("{}.example", random_b64(6).to_lowercase().replace(['_', '-'], "x"));
    let org = Org {
        id: format!("org_{}", random_b64(9)),
        name: "Org".into(),
        created_at: T0,
        restricted: ScopeSet::EMPTY,
        default_access: AppAccess::Limited,
        trust_internal: false,
        block_self_registered: false,
        sign_in: Default::default(),
    };
    assert_eq!(store.create_org(&org, std::slice::from_ref(&domain)).await.expect("create"), Ok(()));
    (org.id, domain)
}

async fn change(store: &dyn Store, org: &str, c: OrgChange) -> Result<u64, OrgRefusal> {
    store.change_org(org, &c, T0).await.expect("change")
}

async fn org_of(store: &dyn Store, user: &str) -> Option<String> {
    store.membership_of(user).await.expect("membership").map(|(o, _)| o)
}

/// Accounts join by their address's domain (when created, and when the domain is added later) or by name; a user
/// belongs to one organisation; every refusal changes nothing.
pub(super) async fn organisations_keep_members_by_domain_and_by_name(store: &dyn Store) {
    let (o1, d1) = org(store).await;
    let early = user_at(store, "later.example").await;
    let joined = user_at(store, &d1.to_uppercase()).await;
    assert_eq!(org_of(store, &joined).await, Some(o1.clone()), "an account created at the domain joins");
    assert_eq!(change(store, &o1, OrgChange::AddDomain("later.example".into())).await, Ok(0));
    assert_eq!(org_of(store, &early).await, Some(o1.clone()), "an account at an added domain joins");
    let mut domains = vec![d1.clone(), "later.example".to_string()];
    domains.sort();
    assert_eq!(store.org_domains(&o1).await.expect("domains"), domains, "in order");

    let (o2, _) = org(store).await;
    let taken = Org { id: format!("org_{}", random_b64(9)), ..store.org(&o2).await.expect("get").expect("org") };
    assert_eq!(
        store.create_org(&taken, std::slice::from_ref(&d1)).await.expect("create"),
        Err(OrgRefusal::DomainTaken)
    );
    assert!(store.org(&taken.id).await.expect("get").is_none(), "a refused creation leaves nothing");
    assert_eq!(change(store, &o2, OrgChange::AddDomain(d1.clone())).await, Err(OrgRefusal::DomainTaken));
    let add = |user: &str, admin| OrgChange::AddMember { user_id: user.into(), admin };
    assert_eq!(change(store, &o2, add(&joined, false)).await, Err(OrgRefusal::MemberElsewhere));
    assert_eq!(change(store, &o2, add("no-such-user", false)).await, Err(OrgRefusal::UnknownUser));
    assert_eq!(change(store, "org_none", add(&joined, false)).await, Err(OrgRefusal::UnknownOrg));
    let remove = OrgChange::RemoveMember { user_id: joined.clone() };
    assert_eq!(change(store, &o2, remove.clone()).await, Err(OrgRefusal::NotMember));
    let unknown_client = OrgChange::AppAccess { client_id: "no-such-client".into(), access: None };
    assert_eq!(change(store, &o2, unknown_client).await, Err(OrgRefusal::UnknownClient));

    let outsider = another_user(store).await;
    assert_eq!(org_of(store, &outsider).await, None);
    assert_eq!(change(store, &o2, add(&outsider, true)).await, Ok(0));
    assert_eq!(store.membership_of(&outsider).await.expect("get"), Some((o2.clone(), true)));
    let members = store.org_members(&o2).await.expect("members");
    assert_eq!((members.len(), members[0].admin, members[0].via.as_str()), (1, true, "admin"));
    assert_eq!(change(store, &o1, remove).await, Ok(0));
    assert_eq!(org_of(store, &joined).await, None);
    assert_eq!(store.orgs().await.expect("orgs").len(), 2);
}

/// The authorization read gives the member's organisation's policy for one client, listing included.
pub(super) async fn a_members_policy_is_read_for_one_client(store: &dyn Store) {
    let (client_id, user) = fixture(store).await;
    let (o, _) = org(store).await;
    assert_eq!(store.member_policy(&user, &client_id).await.expect("read"), None, "outside any organisation");
    change(store, &o, OrgChange::AddMember { user_id: user.clone(), admin: false }).await.expect("add");
    let upload = Scope::Upload.set();
    change(store, &o, OrgChange::ScopeAccess { scopes: upload, restricted: true }).await.expect("restrict");
    change(store, &o, OrgChange::TrustInternalApps(true)).await.expect("trust");
    change(store, &o, OrgChange::DefaultAccess(AppAccess::Blocked)).await.expect("default");
    let two_step = OrgChange::SignInPolicy { require_two_step: Some(true), passkeys_only: None };
    change(store, &o, two_step).await.expect("policy");
    let only = OrgChange::SignInPolicy { require_two_step: None, passkeys_only: Some(true) };
    change(store, &o, only).await.expect("policy");
    let sign_in = latchkey_core::sign_in::Policy { require_two_step: true, passkeys_only: true };
    assert_eq!(store.org(&o).await.expect("get").expect("org").sign_in, sign_in, "each setting changes alone");
    let specific = Some(AppAccess::Specific(upload));
    change(store, &o, OrgChange::AppAccess { client_id: client_id.clone(), access: specific }).await.expect("list");
    change(store, &o, OrgChange::Delegate { client_id: client_id.clone(), scopes: Some(upload) }).await.expect("dwd");
    let expected = Membership {
        org_id: o.clone(),
        admin: false,
        restricted: upload,
        default_access: AppAccess::Blocked,
        trust_internal: true,
        block_self_registered: false,
        sign_in,
        access: specific,
        delegated: Some(upload),
    };
    assert_eq!(store.member_policy(&user, &client_id).await.expect("read"), Some(expected.clone()));
    let other = store.member_policy(&user, "another-client").await.expect("read");
    assert_eq!(other, Some(Membership { access: None, delegated: None, ..expected }), "another client: no listing");
    change(store, &o, OrgChange::AppAccess { client_id: client_id.clone(), access: None }).await.expect("unlist");
    change(store, &o, OrgChange::Delegate { client_id: client_id.clone(), scopes: None }).await.expect("end");
    assert!(store.org_apps(&o).await.expect("apps").is_empty(), "a listing with nothing left goes");
}

/// A policy change revokes, in the same unit, the live grants the new policy refuses (each with its audit record,
/// one `tokens_revoked` event per account and client) and expires such pending codes; the rest stay.
pub(super) async fn a_policy_change_revokes_what_it_no_longer_allows(store: &dyn Store) {
    let (client_id, user) = fixture(store).await;
    let (o, _) = org(store).await;
    change(store, &o, OrgChange::AddMember { user_id: user.clone(), admin: false }).await.expect("add");
    let both = issue(store, &client_id, &user, LIMITS).await; // scopes 0b11: readonly and force-ssl
    let pending = code(&client_id, &user);
    store.insert_code(&pending).await.expect("code");
    let outsider = another_user(store).await;
    let outside = issue(store, &client_id, &outsider, LIMITS).await;
    let force_ssl = Scope::ForceSsl.set();
    let restrict = OrgChange::ScopeAccess { scopes: force_ssl, restricted: true };
    assert_eq!(change(store, &o, restrict).await, Ok(1), "the member's grant with force-ssl");
    assert!(store.grant(&both.id).await.expect("get").expect("grant").grant.revoked_at.is_some());
    assert!(store.grant(&outside.id).await.expect("get").expect("grant").grant.revoked_at.is_none(), "not a member");
    let expired = store.code(&pending.code_hash).await.expect("get").expect("code");
    assert!(expired.expires_at <= T0, "the pending code the policy refuses expires");
    let late = store.redeem_code(&grant_for(&pending, T0), LIMITS, T0).await.expect("redeem");
    assert_eq!(late, Redeemed::AlreadyUsed, "an exchange that read the code before it expired still gets no grant");
    let events: Vec<_> = store.account_events(&user).await.expect("events").iter().map(|e| e.kind).collect();
    assert_eq!(events, vec![EventKind::TokensRevoked]);
    let audit = store.audit_records(&user).await.expect("audit");
    assert!(audit.iter().any(|r| r.action == "org_policy_revoked" && r.client_id.as_deref() == Some(&client_id)));

    let project = store.client(&client_id).await.expect("get").expect("client").project_id;
    let refused = code(&client_id, &user); // readonly and force-ssl: force-ssl is restricted now
    let judged = store.insert_code_if_allowed(&refused, &project).await.expect("insert");
    assert_eq!(judged, Err(Refusal::Policy { blocked: force_ssl }), "judged with the policy as it stands");
    assert!(store.code(&refused.code_hash).await.expect("get").is_none(), "a refused code is not stored");
    let allowed = AuthCode { scopes: Scope::Readonly.set(), ..code(&client_id, &user) };
    assert_eq!(store.insert_code_if_allowed(&allowed, &project).await.expect("insert"), Ok(()));
    assert!(store.code(&allowed.code_hash).await.expect("get").is_some(), "an allowed code is stored");

    let trusted = OrgChange::AppAccess { client_id: client_id.clone(), access: Some(AppAccess::Trusted) };
    assert_eq!(change(store, &o, trusted).await, Ok(0));
    let again = issue(store, &client_id, &user, LIMITS).await;
    let blocked = OrgChange::AppAccess { client_id: client_id.clone(), access: Some(AppAccess::Blocked) };
    assert_eq!(change(store, &o, blocked).await, Ok(1));
    assert!(store.grant(&again.id).await.expect("get").expect("grant").grant.revoked_at.is_some());
}

/// An internal project serves its organisation's members only: placing it so revokes the others' grants, and a
/// member who leaves loses theirs; an internal project needs an organisation.
pub(super) async fn an_internal_project_keeps_only_its_members_grants(store: &dyn Store) {
    let (client_id, member) = fixture(store).await;
    let project = store.client(&client_id).await.expect("get").expect("client").project_id;
    let (o, _) = org(store).await;
    change(store, &o, OrgChange::AddMember { user_id: member.clone(), admin: false }).await.expect("add");
    let outsider = another_user(store).await;
    let (kept, lost) =
        (issue(store, &client_id, &member, LIMITS).await, issue(store, &client_id, &outsider, LIMITS).await);
    let internal = Audience::Internal;
    let project = project.as_str();
    let place = |org| async move { store.place_project(project, org, internal, T0).await.expect("place") };
    assert_eq!(place(None).await, Err(OrgRefusal::InternalWithoutOrg));
    assert_eq!(place(Some("org_none")).await, Err(OrgRefusal::UnknownOrg));
    let unknown = store.place_project("no-such-project", Some(&o), Audience::Internal, T0).await.expect("place");
    assert_eq!(unknown, Err(OrgRefusal::UnknownProject));
    assert_eq!(place(Some(&o)).await, Ok(1));
    let placed = store.project(project).await.expect("get").expect("project");
    assert_eq!((placed.org_id.as_deref(), placed.audience), (Some(o.as_str()), Audience::Internal));
    assert!(store.grant(&kept.id).await.expect("get").expect("grant").grant.revoked_at.is_none());
    assert!(store.grant(&lost.id).await.expect("get").expect("grant").grant.revoked_at.is_some());
    assert_eq!(change(store, &o, OrgChange::RemoveMember { user_id: member.clone() }).await, Ok(1), "leaving");
    assert!(store.grant(&kept.id).await.expect("get").expect("grant").grant.revoked_at.is_some());
}
