use super::*;

fn set(scope: &str) -> TokenSet {
    TokenSet {
        issuer: "https://as.example".into(),
        client_id: "lkapp-test".into(),
        access_token: "lka_secret-access".into(),
        expires_at: 10,
        refresh_token: Some("lkr_secret-refresh".into()),
        refresh_expires_at: None,
        scope: scope.into(),
        id_token: Some("id.token.secret".into()),
        dpop_jkt: None,
    }
}

#[test]
fn granted_matches_whole_scopes_only() {
    let t = set("https://latchkey.dev/auth/readonly openid");
    assert!(t.granted("https://latchkey.dev/auth/readonly"));
    assert!(t.granted("openid"));
    assert!(!t.granted("https://latchkey.dev/auth/upload"), "a scope not granted");
    assert!(!t.granted("https://latchkey.dev/auth/read"), "not a prefix");
    assert!(!t.granted("open"), "not a prefix");
    assert!(!t.granted(""), "the empty string is no scope");
    assert_eq!(t.scopes().collect::<Vec<_>>(), ["https://latchkey.dev/auth/readonly", "openid"]);
    assert_eq!(set("").scopes().count(), 0, "nothing granted");
}

#[test]
fn the_debug_form_leaves_every_token_out() {
    let text = format!("{:?}", set("openid"));
    for secret in ["lka_secret-access", "lkr_secret-refresh", "id.token.secret"] {
        assert!(!text.contains(secret), "{text}");
    }
}

#[test]
fn the_token_file_round_trips_is_mode_0600_and_clearing_it_twice_is_fine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FileTokenStore::new(dir.path().join("app/tokens.json"));
    assert_eq!(store.load().expect("load"), None, "nothing stored yet");
    store.save(&set("openid")).expect("save");
    assert_eq!(store.load().expect("load"), Some(set("openid")));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("app/tokens.json")).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    store.clear().expect("clear");
    store.clear().expect("clear again");
    assert_eq!(store.load().expect("load"), None);
}

#[test]
fn a_corrupt_token_file_is_a_storage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("t.json"), b"{ not json").expect("write");
    assert!(matches!(FileTokenStore::new(dir.path().join("t.json")).load(), Err(Error::Storage(_))));
}
