use super::*;
use crate::scope::Scope;

const READ: ScopeSet = Scope::Readonly.set();
const UPLOAD: ScopeSet = Scope::Upload.set();
const OPENID: ScopeSet = Scope::OpenId.set();

fn both(a: ScopeSet, b: ScopeSet) -> ScopeSet {
    ScopeSet(a.0 | b.0)
}

/// A member of `org` under the default policy: limited access, nothing restricted, listed or delegated.
pub(crate) fn member(org: &str) -> Membership {
    Membership {
        org_id: org.into(),
        admin: false,
        restricted: ScopeSet::EMPTY,
        default_access: AppAccess::Limited,
        trust_internal: false,
        block_self_registered: false,
        access: None,
        delegated: None,
        sign_in: crate::sign_in::Policy::default(),
    }
}

const OUTSIDE: Placement<'static> =
    Placement { org_id: None, audience: Audience::External, identity_assured: false, self_registered: false };

#[test]
fn an_account_outside_any_organisation_consents_scope_by_scope() {
    assert_eq!(decide(OUTSIDE, None, both(READ, UPLOAD)), Ok(Consent::Granular));
}

#[test]
fn an_internal_project_serves_only_its_organisations_members() {
    let internal = Placement { org_id: Some("o1"), audience: Audience::Internal, ..OUTSIDE };
    assert_eq!(decide(internal, None, READ), Err(Refusal::OrgInternal));
    assert_eq!(decide(internal, Some(&member("o2")), READ), Err(Refusal::OrgInternal));
    assert_eq!(decide(internal, Some(&member("o1")), READ), Ok(Consent::Granular));
    let external = Placement { org_id: Some("o1"), ..OUTSIDE };
    assert_eq!(decide(external, None, READ), Ok(Consent::Granular));
}

#[test]
fn a_limited_app_may_have_the_unrestricted_scopes_and_identity() {
    let m = Membership { restricted: UPLOAD, ..member("o1") };
    assert_eq!(decide(OUTSIDE, Some(&m), both(READ, OPENID)), Ok(Consent::Granular));
    assert_eq!(decide(OUTSIDE, Some(&m), both(READ, UPLOAD)), Err(Refusal::Policy { blocked: UPLOAD }));
}

#[test]
fn a_specific_app_may_have_its_listed_scopes_only() {
    let m = Membership { access: Some(AppAccess::Specific(UPLOAD)), ..member("o1") };
    assert_eq!(decide(OUTSIDE, Some(&m), both(UPLOAD, OPENID)), Ok(Consent::Granular));
    assert_eq!(decide(OUTSIDE, Some(&m), both(READ, UPLOAD)), Err(Refusal::Policy { blocked: READ }));
}

#[test]
fn a_blocked_app_may_have_nothing_not_even_sign_in() {
    let m = Membership { access: Some(AppAccess::Blocked), ..member("o1") };
    assert_eq!(decide(OUTSIDE, Some(&m), OPENID), Err(Refusal::Policy { blocked: OPENID }));
    let by_default = Membership { default_access: AppAccess::Blocked, ..member("o1") };
    assert_eq!(decide(OUTSIDE, Some(&by_default), READ), Err(Refusal::Policy { blocked: READ }));
}

#[test]
fn a_trusted_app_has_restricted_scopes_all_or_none() {
    let m = Membership { restricted: UPLOAD, access: Some(AppAccess::Trusted), ..member("o1") };
    assert_eq!(decide(OUTSIDE, Some(&m), both(READ, UPLOAD)), Ok(Consent::AllOrNone));
}

#[test]
fn internal_apps_are_trusted_when_the_switch_is_on_unless_listed_otherwise() {
    let own = Placement { org_id: Some("o1"), ..OUTSIDE };
    let m = Membership { restricted: UPLOAD, trust_internal: true, ..member("o1") };
    assert_eq!(decide(own, Some(&m), UPLOAD), Ok(Consent::AllOrNone));
    assert_eq!(decide(OUTSIDE, Some(&m), UPLOAD), Err(Refusal::Policy { blocked: UPLOAD }));
    let listed = Membership { access: Some(AppAccess::Blocked), ..m };
    assert_eq!(decide(own, Some(&listed), READ), Err(Refusal::Policy { blocked: READ }));
}

#[test]
fn a_delegated_app_skips_consent_within_its_scopes_and_is_refused_outside_them() {
    let m = Membership { restricted: UPLOAD, delegated: Some(UPLOAD), ..member("o1") };
    let assured = Placement { identity_assured: true, ..OUTSIDE };
    assert_eq!(decide(assured, Some(&m), both(UPLOAD, OPENID)), Ok(Consent::Skip));
    assert_eq!(decide(assured, Some(&m), both(READ, UPLOAD)), Err(Refusal::Policy { blocked: READ }));
    assert_eq!(decide(OUTSIDE, Some(&m), both(READ, UPLOAD)), Err(Refusal::Policy { blocked: READ }));
}

#[test]
fn a_delegated_app_whose_identity_is_not_assured_asks_all_or_none_unless_it_is_the_organisations_own() {
    let m = Membership { delegated: Some(UPLOAD), ..member("o1") };
    assert_eq!(decide(OUTSIDE, Some(&m), UPLOAD), Ok(Consent::AllOrNone), "any installed app could name it");
    let own = Placement { org_id: Some("o1"), ..OUTSIDE };
    assert_eq!(decide(own, Some(&m), UPLOAD), Ok(Consent::Skip), "the organisation's own project vouches for it");
    let elsewhere = Placement { org_id: Some("o2"), ..OUTSIDE };
    assert_eq!(decide(elsewhere, Some(&m), UPLOAD), Ok(Consent::AllOrNone));
}

#[test]
fn a_self_registered_app_is_an_unlisted_app_never_trusted_as_internal_and_blocked_where_all_such_apps_are() {
    let own = Placement { org_id: Some("o1"), self_registered: true, ..OUTSIDE };
    let m = Membership { restricted: UPLOAD, trust_internal: true, ..member("o1") };
    assert_eq!(decide(own, Some(&m), UPLOAD), Err(Refusal::Policy { blocked: UPLOAD }), "limited, not trusted");
    assert_eq!(decide(own, Some(&m), READ), Ok(Consent::Granular));
    let listed = Membership { access: Some(AppAccess::Trusted), ..m.clone() };
    assert_eq!(decide(own, Some(&listed), UPLOAD), Ok(Consent::AllOrNone), "an administrator may still list it");
    let blocking = Membership { block_self_registered: true, ..listed };
    assert_eq!(decide(own, Some(&blocking), OPENID), Err(Refusal::Policy { blocked: OPENID }), "not even sign-in");
    let console_made = Placement { self_registered: false, ..own };
    assert_eq!(decide(console_made, Some(&blocking), UPLOAD), Ok(Consent::AllOrNone), "others are untouched");
    assert_eq!(decide(Placement { self_registered: true, ..OUTSIDE }, None, UPLOAD), Ok(Consent::Granular));
    let delegated = Membership { delegated: Some(UPLOAD), ..member("o1") };
    assert_eq!(decide(own, Some(&delegated), UPLOAD), Ok(Consent::AllOrNone), "delegated, but never skips consent");
}

#[test]
fn names_read_back() {
    for name in AppAccess::NAMES {
        assert_eq!(AppAccess::parse(name, READ).map(AppAccess::name), Some(name));
    }
    assert_eq!(AppAccess::parse("open", READ), None);
    assert_eq!(Audience::parse("internal"), Some(Audience::Internal));
    assert_eq!(Audience::parse(Audience::External.as_str()), Some(Audience::External));
    assert_eq!(Audience::parse("everyone"), None);
}
