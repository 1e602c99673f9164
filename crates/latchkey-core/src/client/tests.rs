use super::*;

const T0: UnixTime = UnixTime(1_700_000_000);

fn mobile(app_check: bool) -> Client {
    Client {
        client_id: "c".into(),
        project_id: "p".into(),
        name: "App".into(),
        client_type: ClientType::Mobile,
        redirect_uris: vec![],
        secret_hash: vec![],
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
