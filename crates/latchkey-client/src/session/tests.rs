use super::*;
use crate::client::AppConfig;
use crate::fake_http::{self, form, oauth_error, token_answer, FakeHttp, ISSUER};
use crate::tokens::FileTokenStore;
use std::time::Duration;

const READONLY: &str = "https://latchkey.dev/auth/readonly";

/// A session over a token file in a temporary directory, talking to `http`.
struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    session: Arc<Session>,
}

fn fixture(http: Arc<FakeHttp>, stored: Option<TokenSet>) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tokens.json");
    let store = FileTokenStore::new(&path);
    if let Some(t) = &stored {
        store.save(t).expect("store");
    }
    let client = Arc::new(OAuthClient::new(AppConfig::new(ISSUER, "lkapp-test"), fake_http::discovery(true), http));
    let session = Arc::new(Session::new(client, Arc::new(store), None));
    Fixture { _dir: dir, path, session }
}

/// Stored tokens whose access token has `left` seconds to live.
fn stored(left: i64) -> TokenSet {
    TokenSet {
        issuer: ISSUER.into(),
        client_id: "lkapp-test".into(),
        access_token: "lka_old".into(),
        expires_at: unix_now() + left,
        refresh_token: Some("lkr_1".into()),
        refresh_expires_at: None,
        scope: READONLY.into(),
        id_token: None,
        dpop_jkt: None,
    }
}

fn on_disk(f: &Fixture) -> Option<TokenSet> {
    FileTokenStore::new(&f.path).load().expect("load")
}

#[tokio::test]
async fn an_access_token_with_more_than_a_minute_left_is_reused_without_a_request() {
    let http = FakeHttp::new(vec![]);
    let f = fixture(http.clone(), Some(stored(90)));
    assert_eq!(f.session.access_token().await.expect("token"), "lka_old");
    assert_eq!(f.session.access_token().await.expect("token"), "lka_old");
    assert!(http.requests().is_empty(), "no refresh while the token has time left");
}

#[tokio::test]
async fn an_access_token_with_less_than_a_minute_left_is_refreshed_and_the_new_one_stored() {
    let http = FakeHttp::new(vec![token_answer("lka_new", None, READONLY, 3600)]);
    let f = fixture(http.clone(), Some(stored(50)));
    assert_eq!(f.session.access_token().await.expect("token"), "lka_new");
    assert_eq!(form(&http.requests()[0])["refresh_token"], "lkr_1");
    let kept = on_disk(&f).expect("stored");
    assert_eq!((kept.access_token.as_str(), kept.refresh_token.as_deref()), ("lka_new", Some("lkr_1")));
    assert_eq!(f.session.access_token().await.expect("token"), "lka_new", "then reused");
    assert_eq!(http.requests().len(), 1);
}

#[tokio::test]
async fn concurrent_callers_wait_for_one_refresh_and_share_its_token() {
    let http = FakeHttp::slow(vec![token_answer("lka_new", None, READONLY, 3600)], Duration::from_millis(200));
    let f = fixture(http.clone(), Some(stored(-5)));
    let callers: Vec<_> = (0..8)
        .map(|_| {
            let s = f.session.clone();
            tokio::spawn(async move { s.access_token().await })
        })
        .collect();
    for c in callers {
        assert_eq!(c.await.expect("join").expect("token"), "lka_new");
    }
    assert_eq!(http.requests().len(), 1, "a single refresh in flight, however many callers");
}

#[tokio::test]
async fn a_time_limited_grant_past_its_end_asks_to_sign_in_again_without_a_request() {
    let http = FakeHttp::new(vec![]);
    let ended = TokenSet { refresh_expires_at: Some(unix_now() - 1), ..stored(3000) };
    let f = fixture(http.clone(), Some(ended));
    assert!(matches!(f.session.access_token().await, Err(Error::SignInAgain(_))), "the period ended");
    assert!(http.requests().is_empty(), "known without asking the server");
    assert!(on_disk(&f).is_none(), "the tokens are forgotten");

    let running = TokenSet { refresh_expires_at: Some(unix_now() + 600), ..stored(3000) };
    let f = fixture(FakeHttp::new(vec![]), Some(running));
    assert_eq!(f.session.access_token().await.expect("token"), "lka_old", "before its end the grant works");
}

#[tokio::test]
async fn sign_in_again_on_refresh_forgets_the_stored_tokens() {
    let http = FakeHttp::new(vec![oauth_error(400, "invalid_grant")]);
    let f = fixture(http, Some(stored(0)));
    assert!(matches!(f.session.access_token().await, Err(Error::SignInAgain(_))));
    assert!(!f.path.exists(), "the dead tokens are removed from storage");
    assert!(matches!(f.session.access_token().await, Err(Error::NotSignedIn)), "and from memory");
}

#[tokio::test]
async fn an_explicit_refresh_that_gets_invalid_grant_also_forgets_the_tokens() {
    let http = FakeHttp::new(vec![oauth_error(400, "invalid_grant")]);
    let f = fixture(http, Some(stored(3000)));
    assert!(matches!(f.session.refresh().await, Err(Error::SignInAgain(_))));
    assert!(!f.path.exists());
}

#[tokio::test]
async fn a_transient_failure_keeps_the_tokens_for_the_next_try() {
    let http = FakeHttp::new(vec![oauth_error(503, "temporarily_unavailable")]);
    let f = fixture(http, Some(stored(0)));
    assert!(matches!(f.session.access_token().await, Err(Error::OAuth { .. })));
    assert_eq!(on_disk(&f).expect("still stored").access_token, "lka_old");
    assert!(matches!(f.session.access_token().await, Err(Error::Transport(_))), "the next call tries again");
}

#[tokio::test]
async fn without_stored_tokens_the_app_is_not_signed_in() {
    let f = fixture(FakeHttp::new(vec![]), None);
    assert!(matches!(f.session.access_token().await, Err(Error::NotSignedIn)));
    assert!(matches!(f.session.refresh().await, Err(Error::NotSignedIn)));
    assert!(matches!(f.session.revoke().await, Err(Error::NotSignedIn)));
    assert_eq!(f.session.tokens().await.expect("tokens"), None);
}

#[tokio::test]
async fn revoke_sends_the_refresh_token_then_forgets_the_tokens() {
    let http = FakeHttp::new(vec![fake_http::json(200, serde_json::json!({}))]);
    let f = fixture(http.clone(), Some(stored(3000)));
    f.session.revoke().await.expect("revoked");
    assert_eq!(form(&http.requests()[0])["token"], "lkr_1", "the refresh token revokes the whole grant");
    assert!(!f.path.exists());
    assert!(matches!(f.session.access_token().await, Err(Error::NotSignedIn)));
}

#[tokio::test]
async fn a_refused_revocation_keeps_the_tokens() {
    let http = FakeHttp::new(vec![oauth_error(503, "temporarily_unavailable")]);
    let f = fixture(http, Some(stored(3000)));
    assert!(f.session.revoke().await.is_err());
    assert!(on_disk(&f).is_some(), "the user can try again");
}

#[tokio::test]
async fn saved_tokens_are_written_to_a_private_file_and_used() {
    let f = fixture(FakeHttp::new(vec![]), None);
    f.session.save(stored(3000)).await.expect("save");
    assert_eq!(f.session.access_token().await.expect("token"), "lka_old");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&f.path).expect("meta").permissions().mode() & 0o777, 0o600);
    }
    f.session.forget().await.expect("forget");
    assert!(!f.path.exists());
}

#[tokio::test]
async fn the_clock_passed_in_decides_when_the_access_token_is_refreshed() {
    let http = FakeHttp::new(vec![token_answer("lka_new", None, READONLY, 3600)]);
    let f = fixture(http.clone(), None);
    let clock = crate::clock::ManualClock::at(1_000);
    let client = OAuthClient::new(AppConfig::new(ISSUER, "lkapp-test"), fake_http::discovery(true), http.clone())
        .with_clock(clock.clone());
    let session = Session::new(Arc::new(client), Arc::new(FileTokenStore::new(&f.path)), None);
    session.save(TokenSet { expires_at: 1_000 + 90, ..stored(0) }).await.expect("save");
    assert_eq!(session.access_token().await.expect("token"), "lka_old", "90 s left at 1000");
    clock.advance(29);
    assert_eq!(session.access_token().await.expect("token"), "lka_old", "61 s left: still reused");
    assert!(http.requests().is_empty(), "no request while the hand clock says the token has time left");
    clock.advance(2);
    assert_eq!(session.access_token().await.expect("token"), "lka_new", "59 s left: refreshed");
    let fresh = session.tokens().await.expect("tokens").expect("some");
    assert_eq!(fresh.expires_at, 1_000 + 31 + 3600, "the new expiry is counted from the clock passed in");
}

#[tokio::test]
async fn the_refresh_a_session_makes_names_the_apps_resources() {
    let http = FakeHttp::new(vec![token_answer("lka_new", None, READONLY, 3600)]);
    let f = fixture(http.clone(), Some(stored(10)));
    let config = AppConfig::new(ISSUER, "lkapp-test").with_resource("https://api.example.com/orders");
    let client = Arc::new(OAuthClient::new(config, fake_http::discovery(true), http.clone()));
    let session = Session::new(client, Arc::new(FileTokenStore::new(&f.path)), None);
    assert_eq!(session.access_token().await.expect("token"), "lka_new");
    let sent = http.requests();
    assert_eq!(fake_http::form_values(&sent[0], "resource"), ["https://api.example.com/orders"]);
}
