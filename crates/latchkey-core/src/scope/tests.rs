use super::*;

#[test]
fn the_seven_data_scopes_live_under_the_scope_base() {
    let r = ScopeRegistry::new("https://latchkey.dev/");
    assert_eq!(r.all()[0].id, "https://latchkey.dev/auth/readonly");
    assert_eq!(r.all()[1].id, "https://latchkey.dev/auth/force-ssl");
    assert_eq!(r.all().iter().filter(|s| !s.identity).count(), 7);
}

#[test]
fn parse_and_format_round_trip_in_registry_order() {
    let r = ScopeRegistry::new("https://x");
    let set = r.parse("email  https://x/auth/upload openid").unwrap();
    assert_eq!(r.format(set), "https://x/auth/upload openid email");
    assert!(set.has(Scope::Upload) && set.has(Scope::OpenId) && !set.has(Scope::Profile));
}

#[test]
fn unknown_scopes_are_invalid_scope_but_dropped_by_parse_known() {
    let r = ScopeRegistry::new("https://x");
    assert_eq!(r.parse("openid https://x/auth/nope").unwrap_err().code, latchkey_proto::ErrorCode::InvalidScope);
    assert_eq!(r.parse_known("openid https://x/auth/nope"), Scope::OpenId.set());
}

#[test]
fn scope_identifiers_are_case_sensitive() {
    let r = ScopeRegistry::new("https://x");
    assert!(r.parse("OPENID").is_err());
}

#[test]
fn channels_list_accepts_four_scopes() {
    assert!(CHANNELS_LIST.intersects(Scope::Partner.set()));
    assert!(!CHANNELS_LIST.intersects(Scope::Upload.set()));
}
