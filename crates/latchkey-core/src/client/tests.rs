use super::*;

const T0: UnixTime = UnixTime(1_700_000_000);

fn mobile(app_check: bool) -> Client {
    Client {
        client_id: "c".into(),
        project_id: "p".into(),
        name: "App".into(),
        client_type: ClientType::Mobile,
        redirect_uris: vec![],
        secrets: vec![],
        details: ClientDetails {
            bundle_id: Some("com.example.app".into()),
            team_id: Some("TEAM123".into()),
            app_check,
            ..ClientDetails::default()
        },
        created_at: T0,
        deleted_at: None,
        last_used_at: None,
        app_check: Default::default(),
        ownership_verified_at: None,
        registration: None,
        project_rotates: false,
    }
}

#[test]
fn a_deleted_client_is_restorable_for_the_window_and_not_after() {
    let deleted = Some(T0);
    assert_eq!(check_restore(deleted, T0.plus(30 * DAY), 30), Ok(()));
    assert_eq!(
        check_restore(deleted, T0.plus(30 * DAY + 1), 30),
        Err(RestoreRefusal::WindowPassed { restore_days: 30 })
    );
    assert_eq!(check_restore(None, T0, 30), Err(RestoreRefusal::NotDeleted));
    let message = RestoreRefusal::WindowPassed { restore_days: 30 }.to_string();
    assert!(message.contains("more than 30 days ago"), "{message}");
}

#[test]
fn unused_clients_are_measured_from_last_use_or_creation() {
    let mut c = mobile(false);
    assert_eq!(c.last_activity(), T0);
    c.last_used_at = Some(T0.plus(DAY));
    assert_eq!(c.last_activity(), T0.plus(DAY));
    assert_eq!(unused_cutoff(T0.plus(180 * DAY), 180), T0);
    assert_eq!(purge_cutoff(T0.plus(30 * DAY), 30), T0);
}

#[test]
fn the_bundle_id_is_frozen_once_app_check_is_used() {
    let old = mobile(true);
    let mut d = old.details.clone();
    d.bundle_id = Some("com.example.other".into());
    let errors = validate_update(&old, "App", &[], &d);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].field, "bundle_id");
    assert!(errors[0].message.contains("frozen"));
    // Without App Check the bundle ID may change; other fields may change either way.
    assert!(validate_update(&mobile(false), "App", &[], &d).is_empty());
    assert!(validate_update(&old, "Renamed", &[], &old.details).is_empty());
}

#[test]
fn an_edit_is_checked_against_the_type_rules() {
    let old = mobile(false);
    let mut d = old.details.clone();
    d.bundle_id = None;
    let errors = validate_update(&old, " ", &[], &d);
    let fields: Vec<_> = errors.iter().map(|e| e.field).collect();
    assert_eq!(fields, ["name", "bundle_id"]);
}

#[test]
fn redirect_uris_follow_the_redirect_methods_of_the_type() {
    let d = |kind| match kind {
        ClientType::Mobile => ClientDetails { bundle_id: Some("com.example.app".into()), ..Default::default() },
        ClientType::UniversalDesktop => ClientDetails {
            uwp_store_id: Some("9NBLGGH4NNS1".into()),
            package_sid: Some("s-1-15-2-1".into()),
            ..Default::default()
        },
        ClientType::BrowserExtension => {
            ClientDetails { extension_item_id: Some("abcdef".into()), ..Default::default() }
        }
        ClientType::Desktop | ClientType::Tv => ClientDetails::default(),
    };
    let fields = |kind, uri: &str| -> Vec<&'static str> {
        validate_fields(kind, "App", &[uri.to_owned()], &d(kind)).iter().map(|e| e.field).collect()
    };
    for kind in ClientType::ALL {
        assert_eq!(fields(kind, "urn:ietf:wg:oauth:2.0:oob"), vec!["redirect_uri"], "{kind:?}: no OOB");
    }
    assert!(fields(ClientType::Desktop, "http://127.0.0.1:8080/cb").is_empty());
    for uri in ["http://127.0.0.1:8080/cb", "https://example.com/cb", "com.example.app:/cb"] {
        assert_eq!(fields(ClientType::Tv, uri), vec!["redirect_uri"], "a TV client has no redirect URI: {uri}");
    }
    assert!(validate_fields(ClientType::Tv, "Living room", &[], &ClientDetails::default()).is_empty());
    assert_eq!(ClientType::parse("tv"), Some(ClientType::Tv));
    assert!(fields(ClientType::Desktop, "com.example.app:/cb").is_empty());
    for kind in [ClientType::Mobile, ClientType::UniversalDesktop, ClientType::BrowserExtension] {
        assert_eq!(fields(kind, "http://127.0.0.1:8080/cb"), vec!["redirect_uri"], "{kind:?}: loopback");
    }
    assert!(fields(ClientType::Mobile, "com.example.app:/oauth2redirect").is_empty());
    let scheme39 = format!("{}://s-1-15-2-1", "a".repeat(39));
    let scheme40 = format!("{}://s-1-15-2-1", "a".repeat(40));
    assert!(fields(ClientType::UniversalDesktop, &scheme39).is_empty());
    assert_eq!(fields(ClientType::UniversalDesktop, &scheme40), vec!["redirect_uri"]);
    // Only <scheme>://<its own package SID>: another SID, a path, or no SID registered is refused.
    for uri in ["ms-app://s-1-15-2-2", "ms-app://s-1-15-2-1/cb", "ms-app:/s-1-15-2-1", "ms-app://S-1-15-2-1"] {
        assert_eq!(fields(ClientType::UniversalDesktop, uri), vec!["redirect_uri"], "{uri}");
    }
    let no_sid = ClientDetails { package_sid: None, ..d(ClientType::UniversalDesktop) };
    let errors = validate_fields(ClientType::UniversalDesktop, "App", &["ms-app://s-1-15-2-1".into()], &no_sid);
    assert!(errors.iter().any(|e| e.field == "redirect_uri" && e.message.contains("package SID")), "{errors:?}");
    assert!(fields(ClientType::BrowserExtension, "https://abcdef.chromiumapp.org/").is_empty());
    assert_eq!(fields(ClientType::BrowserExtension, "com.example:/cb"), vec!["redirect_uri"]);
}

mod secrets {
    use crate::client::{change_secrets, ClientSecret, SecretChange, SecretRefusal};
    use crate::time::UnixTime;

    fn secret(id: &str) -> ClientSecret {
        ClientSecret { id: id.into(), hash: vec![1], hint: None, created_at: UnixTime(1), disabled_at: None }
    }

    #[test]
    fn a_rotation_adds_disables_and_deletes_and_every_step_that_would_fail_is_refused() {
        let one = vec![secret("a")];
        let two = change_secrets(&one, &SecretChange::Add(secret("b"))).unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(change_secrets(&two, &SecretChange::Add(secret("c"))), Err(SecretRefusal::Full));
        assert_eq!(change_secrets(&two, &SecretChange::Delete("a".into())), Err(SecretRefusal::StillEnabled));
        assert_eq!(change_secrets(&two, &SecretChange::Disable("x".into(), UnixTime(5))), Err(SecretRefusal::Unknown));
        let disabled = change_secrets(&two, &SecretChange::Disable("a".into(), UnixTime(5))).unwrap();
        assert_eq!(disabled[0].disabled_at, Some(UnixTime(5)));
        let again = change_secrets(&disabled, &SecretChange::Disable("a".into(), UnixTime(9))).unwrap();
        assert_eq!(again[0].disabled_at, Some(UnixTime(5)), "disabling twice keeps the first time");
        assert_eq!(
            change_secrets(&disabled, &SecretChange::Disable("b".into(), UnixTime(6))),
            Err(SecretRefusal::LastEnabled),
            "the only enabled secret stays"
        );
        let enabled = change_secrets(&disabled, &SecretChange::Enable("a".into())).unwrap();
        assert!(enabled[0].enabled());
        let deleted = change_secrets(&disabled, &SecretChange::Delete("a".into())).unwrap();
        assert_eq!(deleted, vec![secret("b")]);
    }
}
