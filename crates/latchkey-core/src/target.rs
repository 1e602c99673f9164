//! Resource indicators (RFC 8707): which APIs an access token is for.
//!
//! A token's audience is the resources its scopes belong to ([`ScopeRegistry::audience`]): the data API for its
//! scopes, a registered API for its own. So `resource` needs no state of its own: on the authorization request it
//! checks the scopes asked for (or stands for them when no `scope` is sent), and on the token request it narrows
//! the access token to the grant's scopes of the resources named, which narrows its audience alike. The refresh
//! token keeps the whole grant.

use crate::scope::{ScopeRegistry, ScopeSet, DATA_API, REGISTERED};
use crate::OAuthError;
use latchkey_proto::ErrorCode;

/// The most `resource` parameters one request may carry.
pub const MAX_RESOURCES: usize = 8;

fn invalid_target(text: impl Into<std::borrow::Cow<'static, str>>) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidTarget, text)
}

/// A client-supplied URI, capped for an error description.
fn shown(uri: &str) -> String {
    uri.chars().take(200).collect()
}

/// A `resource` value is an absolute URI without a fragment (RFC 8707 §2).
fn well_formed(uri: &str) -> Result<(), OAuthError> {
    match url::Url::parse(uri) {
        Ok(u) if u.fragment().is_none() && !u.cannot_be_a_base() => Ok(()),
        _ => Err(invalid_target(format!("A resource is an absolute URI without a fragment: {}", shown(uri)))),
    }
}

fn at_most(resources: &[impl AsRef<str>]) -> Result<(), OAuthError> {
    if resources.len() > MAX_RESOURCES {
        return Err(invalid_target(format!("At most {MAX_RESOURCES} resources in one request.")));
    }
    Ok(())
}

/// The scopes of each resource an authorization request names, in its order, as a client of `project_id` sees
/// them: a registered API of another project that is not public is as unknown as one never registered
/// (`invalid_target`).
pub fn requested(
    registry: &ScopeRegistry,
    resources: &[impl AsRef<str>],
    project_id: &str,
) -> Result<Vec<ScopeSet>, OAuthError> {
    at_most(resources)?;
    let visible = |api: Option<&crate::scope::ApiInfo>| api.is_none_or(|a| a.public || a.project_id == project_id);
    let mut sets = Vec::with_capacity(resources.len());
    for uri in resources.iter().map(AsRef::as_ref) {
        well_formed(uri)?;
        match registry.resource(uri) {
            Some((set, api)) if visible(api) => sets.push(set),
            _ => return Err(invalid_target(format!("Unknown resource: {}", shown(uri)))),
        }
    }
    Ok(sets)
}

/// The scopes of all the resources named.
pub fn union(targets: &[ScopeSet]) -> ScopeSet {
    targets.iter().fold(ScopeSet::EMPTY, |all, set| all.union(*set))
}

/// When a request names resources (`targets`, their scopes by [`requested`], in the order of `resources`): every
/// API scope it asks for belongs to one of them, and each has one of its scopes asked for (`invalid_target` naming
/// the first that does not); identity scopes belong to no resource and pass. Nothing to check without resources.
pub fn within(
    registry: &ScopeRegistry,
    scopes: ScopeSet,
    targets: &[ScopeSet],
    resources: &[impl AsRef<str>],
) -> Result<(), OAuthError> {
    if targets.is_empty() {
        return Ok(());
    }
    let outside = ScopeSet(scopes.intersection(DATA_API.union(REGISTERED)).0 & !union(targets).0);
    if let Some(s) = registry.iter(outside).next() {
        return Err(invalid_target(format!("The scope {} belongs to none of the requested resources.", s.id)));
    }
    match targets.iter().zip(resources).find(|(set, _)| !set.intersects(scopes)) {
        Some((_, uri)) => {
            Err(invalid_target(format!("None of the scopes asked for is one of {}'s.", shown(uri.as_ref()))))
        }
        None => Ok(()),
    }
}

/// The scopes of an access token narrowed to a token request's `resource` parameters (RFC 8707 §2.2): each must
/// be a resource of the grant (`invalid_target`), and the token keeps the grant's scopes of those resources only
/// (identity scopes are for the server's own UserInfo, no resource named). Without `resource`, the grant's scopes.
pub fn narrow(registry: &ScopeRegistry, granted: ScopeSet, resources: &[&str]) -> Result<ScopeSet, OAuthError> {
    if resources.is_empty() {
        return Ok(granted);
    }
    at_most(resources)?;
    let mut kept = ScopeSet::EMPTY;
    for uri in resources {
        well_formed(uri)?;
        match registry.resource(uri) {
            Some((set, _)) if set.intersects(granted) => kept = kept.union(set.intersection(granted)),
            _ => return Err(invalid_target(format!("The resource {} is not one of the grant's.", shown(uri)))),
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::ApiInfo;

    const DATA: &str = "https://api.example/video/v3";
    const ORDERS: &str = "https://orders.example/api";

    fn registry() -> ScopeRegistry {
        let api = |id: &str, uri: &str, public| ApiInfo {
            resource_id: id.into(),
            project_id: "p1".into(),
            uri: uri.into(),
            name: id.into(),
            public,
            jwt: false,
            rs256: false,
        };
        ScopeRegistry::new("https://latchkey.dev")
            .with_data_api_uri(DATA)
            .with_api(api("orders", ORDERS, false), [(10, "orders.read".into(), "Read".into())])
            .with_api(api("stock", "https://stock.example", true), [(11, "stock".into(), "Stock".into())])
    }

    #[test]
    fn a_named_resource_stands_for_its_scopes_as_its_project_sees_it() {
        let r = registry();
        assert_eq!(requested(&r, &[DATA], "p2").unwrap(), [DATA_API]);
        assert_eq!(requested(&r, &[ORDERS], "p1").unwrap(), [ScopeSet::bit(10)]);
        let both = requested(&r, &[ORDERS, "https://stock.example"], "p1").unwrap();
        assert_eq!(union(&both), ScopeSet(0b11 << 10));
        assert!(requested(&r, &[] as &[&str], "p1").unwrap().is_empty());
        for (uri, project) in [(ORDERS, "p2"), ("https://nowhere.example", "p1"), ("relative/path", "p1")] {
            assert_eq!(requested(&r, &[uri], project).unwrap_err().code, ErrorCode::InvalidTarget, "{uri}");
        }
        assert_eq!(requested(&r, &[format!("{ORDERS}#f")], "p1").unwrap_err().code, ErrorCode::InvalidTarget);
        assert!(requested(&r, &[DATA; 9], "p1").is_err(), "at most eight");
    }

    #[test]
    fn scopes_outside_the_named_resources_are_invalid_target_and_identity_scopes_pass() {
        let r = registry();
        let openid = r.parse("openid orders.read").unwrap();
        let orders = [ScopeSet::bit(10)];
        assert!(within(&r, openid, &orders, &[ORDERS]).is_ok());
        assert!(within(&r, r.parse("stock").unwrap(), &[], &[] as &[&str]).is_ok(), "no resource named");
        let e = within(&r, r.parse("orders.read stock").unwrap(), &orders, &[ORDERS]).unwrap_err();
        assert_eq!((e.code, e.description.contains("stock")), (ErrorCode::InvalidTarget, true));
        let e = within(&r, r.parse("openid").unwrap(), &orders, &[ORDERS]).unwrap_err();
        assert_eq!((e.code, e.description.contains(ORDERS)), (ErrorCode::InvalidTarget, true), "a resource unasked");
    }

    #[test]
    fn a_token_request_narrows_to_resources_of_the_grant_only() {
        let r = registry();
        let granted = r.parse("openid orders.read https://latchkey.dev/auth/readonly").unwrap();
        assert_eq!(narrow(&r, granted, &[]).unwrap(), granted);
        assert_eq!(narrow(&r, granted, &[ORDERS]).unwrap(), r.parse("orders.read").unwrap(), "its scopes only");
        assert_eq!(r.audience(narrow(&r, granted, &[DATA]).unwrap()), [DATA]);
        assert_eq!(r.audience(granted), [DATA, ORDERS]);
        let orders_only = narrow(&r, granted, &[ORDERS]).unwrap();
        assert_eq!(r.sole_api(orders_only).map(|a| a.uri.as_str()), Some(ORDERS));
        assert!(r.sole_api(granted).is_none() && r.sole_api(r.parse("openid").unwrap()).is_none());
        assert!(r.sole_api(r.parse("openid orders.read").unwrap()).is_none(), "userinfo takes the token too");
        assert!(r.sole_api(r.parse("orders.read stock").unwrap()).is_none(), "two APIs");
        let e = narrow(&r, granted, &["https://stock.example"]).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidTarget, "a known resource outside the grant");
    }
}
