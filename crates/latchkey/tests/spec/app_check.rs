//! App Check (`docs/decisions.md`, "App Check"): the state table (enable, enforce and unenforce confirmed, disable)
//! with its propagation delay; the debug provider; an external provider's JWKS (a file, or a URL fetched over
//! HTTPS); the four metric categories of
//! token requests; enforcement (401 `invalid_client` without a valid token); and owner verification of
//! browser-extension clients (`docs/decisions.md`, "Clients").

use crate::support::*;
use latchkey_admin::clock::{OsRandom, SystemClock};
use latchkey_admin::{self as admin, NewClient, StoreDirectory};
use latchkey_admin::{Actor, ClientRef};
use latchkey_core::app_check::AppCheckAction;
use latchkey_core::client::{ClientDetails, ClientType};
use latchkey_core::jws::SigningKey;
use latchkey_core::time::Clock;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const ALICE: &str = "alice@example.com";
const REDIRECT: &str = "com.example.phone:/oauth2redirect";
const APP_UA: &str = "Phone/1.0 CFNetwork/1490.0.4 Darwin/23.2.0";

/// A mobile client with a team ID (App Check off) in a project with the API on.
async fn phone(server: &TestServer) -> App {
    let base = server.app().await;
    let new = NewClient {
        project_id: base.project_id.clone(),
        client_type: ClientType::Mobile,
        name: "Phone".into(),
        redirect_uris: vec![REDIRECT.into()],
        details: ClientDetails {
            bundle_id: Some("com.example.phone".into()),
            team_id: Some("TEAM12345".into()),
            ..Default::default()
        },
    };
    let c = admin::client_create(server.store(), &Actor::Operator, new, SystemClock.now()).await.expect("create");
    App { project_id: base.project_id, client_id: c.client_id, client_secret: c.client_secret.expect("secret") }
}

async fn act(server: &TestServer, app: &App, action: AppCheckAction) -> Value {
    let s = admin::client_app_check(
        server.store(),
        &Actor::Operator,
        ClientRef::id(&app.client_id),
        action,
        true,
        0,
        SystemClock.now(),
    )
    .await;
    serde_json::to_value(s.expect("action")).expect("json")
}

/// A token request (a refresh with a made-up token) with the given App Check token and User-Agent.
async fn request(server: &TestServer, app: &App, token: Option<&str>, ua: Option<&str>) -> (u16, String) {
    let mut r = server.http().post(server.url("/token")).form(&[
        ("grant_type", "refresh_token"),
        ("client_id", app.client_id.as_str()),
        ("refresh_token", "lkr_not-a-real-token"),
    ]);
    if let Some(t) = token {
        r = r.header("X-Latchkey-AppCheck", t);
    }
    if let Some(ua) = ua {
        r = r.header("User-Agent", ua);
    }
    error_of(r.send().await.expect("token request")).await
}

/// The debug provider's token for `app`.
async fn debug_token(server: &TestServer, app: &App) -> String {
    let secret = admin::client_app_check_debug_secret(server.store(), &Actor::Operator, ClientRef::id(&app.client_id))
        .await
        .expect("secret");
    let secret = secret.debug_secret.as_str();
    let r = server
        .http()
        .post(server.url("/v1/appcheck/debug"))
        .form(&[("client_id", app.client_id.as_str()), ("debug_secret", secret)])
        .send()
        .await
        .expect("debug");
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["expires_in"], 3600);
    body["token"].as_str().expect("token").into()
}

async fn totals(server: &TestServer, app: &App) -> Value {
    let m = admin::client_app_check_metrics(
        server.store(),
        &Actor::Operator,
        ClientRef::id(&app.client_id),
        24,
        SystemClock.now(),
    )
    .await;
    serde_json::to_value(m.expect("metrics").totals).expect("json")
}

#[tokio::test]
async fn requests_are_counted_in_four_categories_and_none_is_blocked_until_enforced() {
    let server = TestServer::start_with(|c| c.app_check_propagation_secs = 0).await;
    let app = phone(&server).await;
    // Disabled: nothing is counted.
    assert_eq!(request(&server, &app, None, Some(APP_UA)).await.1, "invalid_grant");
    assert_eq!(totals(&server, &app).await["unverified_outdated_client"], 0);

    assert_eq!(act(&server, &app, AppCheckAction::Enable).await["state"], "enabled");
    let token = debug_token(&server, &app).await;
    assert_eq!(request(&server, &app, Some(&token), Some(APP_UA)).await, (400, "invalid_grant".into()));
    assert_eq!(request(&server, &app, None, Some(APP_UA)).await, (400, "invalid_grant".into()));
    assert_eq!(request(&server, &app, None, None).await, (400, "invalid_grant".into()));
    assert_eq!(request(&server, &app, None, Some(CHROME_UA)).await, (400, "invalid_grant".into()));
    assert_eq!(request(&server, &app, Some("not.a.token"), Some(APP_UA)).await, (400, "invalid_grant".into()));
    assert_eq!(
        totals(&server, &app).await,
        json!({ "verified": 1, "unverified_outdated_client": 1, "unverified_unknown_origin": 2,
                "unverified_invalid": 1 })
    );

    // Enforced: only requests with a valid token get past App Check.
    assert_eq!(act(&server, &app, AppCheckAction::Enforce).await["state"], "enforced");
    assert_eq!(request(&server, &app, None, Some(APP_UA)).await, (401, "invalid_client".into()));
    assert_eq!(request(&server, &app, Some("not.a.token"), Some(APP_UA)).await, (401, "invalid_client".into()));
    assert_eq!(request(&server, &app, Some(&token), Some(APP_UA)).await, (400, "invalid_grant".into()));
    // A token of another client does not count for this one.
    let other = phone(&server).await;
    act(&server, &other, AppCheckAction::Enable).await;
    let other_token = debug_token(&server, &other).await;
    assert_eq!(request(&server, &app, Some(&other_token), Some(APP_UA)).await.0, 401);

    // Unenforced, then disabled: everything is allowed again.
    assert_eq!(act(&server, &app, AppCheckAction::Unenforce).await["state"], "enabled");
    assert_eq!(request(&server, &app, None, None).await.0, 400);
    assert_eq!(act(&server, &app, AppCheckAction::Disable).await["state"], "disabled");
    let before = totals(&server, &app).await;
    assert_eq!(request(&server, &app, None, None).await.0, 400);
    assert_eq!(totals(&server, &app).await, before, "disabled: no monitoring");
}

#[tokio::test]
async fn an_enforced_client_gets_tokens_with_a_valid_app_check_token() {
    let server = TestServer::start_with(|c| c.app_check_propagation_secs = 0).await;
    let app = phone(&server).await;
    server.user(ALICE).await;
    act(&server, &app, AppCheckAction::Enable).await;
    act(&server, &app, AppCheckAction::Enforce).await;
    let token = debug_token(&server, &app).await;
    let exchange = |code: String, pkce: Pkce, app_check: Option<String>| {
        let server = &server;
        let app = &app;
        async move {
            let mut r = server.http().post(server.url("/token")).header("User-Agent", APP_UA).form(&[
                ("grant_type", "authorization_code"),
                ("client_id", app.client_id.as_str()),
                ("code", code.as_str()),
                ("code_verifier", pkce.verifier.as_str()),
                ("redirect_uri", REDIRECT),
            ]);
            if let Some(t) = app_check {
                r = r.header("X-Latchkey-AppCheck", t);
            }
            r.send().await.expect("exchange")
        }
    };
    let pkce = Pkce::new();
    let code = server.browser().code(&server, &app, ALICE, &[READONLY], &[READONLY], &pkce, REDIRECT).await;
    let refused = exchange(code, pkce, None).await;
    assert_eq!(error_of(refused).await, (401, "invalid_client".into()));
    let pkce = Pkce::new();
    let code = server.browser().code(&server, &app, ALICE, &[READONLY], &[READONLY], &pkce, REDIRECT).await;
    let ok = exchange(code, pkce, Some(token)).await;
    assert_eq!(ok.status(), 200);
}

#[tokio::test]
async fn a_change_takes_effect_after_the_propagation_delay() {
    let server = TestServer::start().await; // the default delay, 15 minutes
    let app = phone(&server).await;
    let now = SystemClock.now();
    let s = admin::client_app_check(
        server.store(),
        &Actor::Operator,
        ClientRef::id(&app.client_id),
        AppCheckAction::Enable,
        false,
        900,
        now,
    )
    .await
    .expect("enable");
    assert_eq!(s.state, "disabled");
    assert_eq!(s.pending.map(|p| (p.state, p.effective_at)), Some(("enabled", now.0 + 900)));
    // Not yet in force: the request is neither counted nor checked.
    assert_eq!(request(&server, &app, None, None).await.0, 400);
    assert_eq!(totals(&server, &app).await["unverified_unknown_origin"], 0);
    let later =
        admin::client_app_check_status(server.store(), &Actor::Operator, ClientRef::id(&app.client_id), now.plus(900))
            .await
            .expect("status");
    assert_eq!(later.state, "enabled");
    assert!(later.pending.is_none());
}

#[tokio::test]
async fn the_state_table_refuses_what_it_does_not_allow() {
    let server = TestServer::start_with(|c| c.app_check_propagation_secs = 0).await;
    let app = phone(&server).await;
    let now = SystemClock.now();
    let run = |action, confirmed| {
        admin::client_app_check(
            server.store(),
            &Actor::Operator,
            ClientRef::id(&app.client_id),
            action,
            confirmed,
            0,
            now,
        )
    };
    assert!(run(AppCheckAction::Enforce, true).await.is_err(), "not enabled");
    run(AppCheckAction::Enable, false).await.expect("enable");
    let e = run(AppCheckAction::Enforce, false).await.expect_err("unconfirmed");
    assert!(e.to_string().contains("must be confirmed"), "{e}");
    // With App Check used, the bundle ID is frozen.
    let edit = admin::ClientEdit { bundle_id: Some("com.example.other".into()), ..Default::default() };
    assert!(admin::client_update(server.store(), &Actor::Operator, ClientRef::id(&app.client_id), edit).await.is_err());

    // Enabling needs a team ID and a bundle ID without *.
    let base = server.app().await;
    let new = NewClient {
        project_id: base.project_id,
        client_type: ClientType::Mobile,
        name: "Wild".into(),
        redirect_uris: vec![],
        details: ClientDetails { bundle_id: Some("com.example.*".into()), ..Default::default() },
    };
    let wild = admin::client_create(server.store(), &Actor::Operator, new, now).await.expect("create");
    let id = wild.client_id.as_str();
    let e = admin::client_app_check(
        server.store(),
        &Actor::Operator,
        ClientRef::id(id),
        AppCheckAction::Enable,
        false,
        0,
        now,
    )
    .await
    .expect_err("team");
    assert!(e.to_string().contains("team ID"), "{e}");
    let e = admin::client_app_check(
        server.store(),
        &Actor::Operator,
        ClientRef::id(&base.client_id),
        AppCheckAction::Enable,
        false,
        0,
        now,
    )
    .await;
    assert!(e.expect_err("desktop").to_string().contains("mobile-platform clients only"));
}

#[tokio::test]
async fn an_external_providers_tokens_verify_against_its_jwks_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = SigningKey::from_pkcs8(&SigningKey::generate_pkcs8(&OsRandom).expect("gen"), &OsRandom).expect("key");
    let jwk = key.public_jwk();
    let jwks = json!({ "keys": [{ "kty": "EC", "crv": jwk.crv, "x": jwk.x, "y": jwk.y, "kid": key.kid() }] });
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, jwks.to_string()).expect("write jwks");
    let server = TestServer::start_with(|c| {
        c.app_check_propagation_secs = 0;
        c.app_check_jwks_file = Some(path.clone());
        c.app_check_issuer = Some("https://appcheck.example".into());
    })
    .await;
    let app = phone(&server).await;
    act(&server, &app, AppCheckAction::Enable).await;
    act(&server, &app, AppCheckAction::Enforce).await;
    let exp = SystemClock.now().0 + 300;
    let sign = |iss: &str| {
        key.sign("JWT", &json!({ "iss": iss, "sub": app.client_id, "aud": [app.client_id], "exp": exp }), &OsRandom)
            .expect("sign")
    };
    assert_eq!(request(&server, &app, Some(&sign("https://appcheck.example")), None).await.0, 400);
    assert_eq!(request(&server, &app, Some(&sign("https://elsewhere.example")), None).await.0, 401);
    assert_eq!(totals(&server, &app).await["verified"], 1);
    assert_eq!(totals(&server, &app).await["unverified_invalid"], 1);
}

#[tokio::test]
async fn the_debug_provider_refuses_a_wrong_secret() {
    let server = TestServer::start().await;
    let app = phone(&server).await;
    let form = [("client_id", app.client_id.as_str()), ("debug_secret", "lkd_wrong")];
    let r = server.http().post(server.url("/v1/appcheck/debug")).form(&form).send().await.expect("debug");
    assert_eq!(error_of(r).await, (401, "invalid_client".into()));
    admin::client_app_check_debug_secret(server.store(), &Actor::Operator, ClientRef::id(&app.client_id))
        .await
        .expect("register");
    let r = server.http().post(server.url("/v1/appcheck/debug")).form(&form).send().await.expect("debug");
    assert_eq!(error_of(r).await, (401, "invalid_client".into()));
}

#[tokio::test]
async fn owner_verification_needs_a_listing_published_by_the_developer_or_their_group() {
    let server = TestServer::start().await;
    let store = server.store();
    let base = server.app().await;
    let now = SystemClock.now();
    let item = format!("item{}", latchkey_core::secret::random_b64(8, &OsRandom).to_lowercase());
    let new = NewClient {
        project_id: base.project_id.clone(),
        client_type: ClientType::BrowserExtension,
        name: "Extension".into(),
        redirect_uris: vec![],
        details: ClientDetails { extension_item_id: Some(item.clone()), ..Default::default() },
    };
    let ext = admin::client_create(store, &Actor::Operator, new, now).await.expect("create");
    let id = ext.client_id.as_str();
    let dir = StoreDirectory(store);
    let verify =
        |dev: &'static str| admin::verify_ownership(store, &Actor::Operator, &dir, ClientRef::id(id), dev, now);

    let e = verify("dev@example.com").await.expect_err("no listing");
    let wording = "a listing with the same item ID";
    assert!(e.to_string().contains(wording) && e.to_string().contains("publisher"), "{e}");
    admin::listing_add(store, &item, Some("dev@example.com"), None, now).await.expect("listing");
    assert!(verify("other@example.com").await.is_err(), "not the publisher");
    assert!(verify("DEV@example.com").await.expect("publisher").ownership_verified);
    assert_eq!(store.client(id).await.expect("get").expect("c").ownership_verified_at, Some(now));

    let members = vec!["a@example.com".to_string(), "b@example.com".to_string()];
    admin::listing_add(store, &item, None, Some(("Studio", &members)), now).await.expect("group listing");
    assert!(verify("b@example.com").await.is_ok(), "a member of the group");
    assert!(verify("dev@example.com").await.is_err(), "no longer the publisher");
    let shown = serde_json::to_value(admin::listing_show(&dir, &item).await.expect("show")).expect("json");
    assert_eq!(shown["group"], "Studio");
    admin::listing_remove(store, &item).await.expect("remove");
    assert!(verify("b@example.com").await.is_err());
    let e =
        admin::verify_ownership(store, &Actor::Operator, &dir, ClientRef::id(&base.client_id), "dev@example.com", now)
            .await;
    assert!(e.expect_err("desktop").to_string().contains("browser-extension"));
}

/// An App Check provider's JWKS host over HTTPS: serves `keys` (or 503 while `down`) and counts the fetches.
struct JwksHost {
    url: String,
    ca_file: std::path::PathBuf,
    keys: Arc<Mutex<Value>>,
    down: Arc<AtomicBool>,
    fetches: Arc<AtomicUsize>,
    _dir: tempfile::TempDir,
}

impl JwksHost {
    async fn start(keys: Value) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = latchkey_server::tls::ensure_local_certificate(dir.path()).expect("certificate");
        let tls = latchkey_server::tls::server_config(&files.cert, &files.key).expect("tls");
        let keys = Arc::new(Mutex::new(keys));
        let (down, fetches) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let (k, d, f) = (keys.clone(), down.clone(), fetches.clone());
        let router = axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || async move {
                f.fetch_add(1, Ordering::SeqCst);
                if d.load(Ordering::SeqCst) {
                    return Err(axum::http::StatusCode::SERVICE_UNAVAILABLE);
                }
                Ok(axum::Json(k.lock().expect("keys").clone()))
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("https://127.0.0.1:{}/jwks", listener.local_addr().expect("addr").port());
        tokio::spawn(latchkey_server::listener::serve(
            listener,
            tls,
            router,
            Default::default(),
            std::future::pending(),
        ));
        Self { url, ca_file: files.cert, keys, down, fetches, _dir: dir }
    }
}

fn jwks_of(keys: &[&SigningKey]) -> Value {
    let keys: Vec<Value> = keys
        .iter()
        .map(|k| {
            let j = k.public_jwk();
            json!({ "kty": "EC", "crv": j.crv, "x": j.x, "y": j.y, "kid": k.kid() })
        })
        .collect();
    json!({ "keys": keys })
}

fn new_key() -> SigningKey {
    SigningKey::from_pkcs8(&SigningKey::generate_pkcs8(&OsRandom).expect("gen"), &OsRandom).expect("key")
}

#[tokio::test]
async fn an_external_providers_keys_are_fetched_from_its_jwks_url_and_again_after_a_rotation() {
    let (first, second, forged) = (new_key(), new_key(), new_key());
    let host = JwksHost::start(jwks_of(&[&first])).await;
    let server = TestServer::start_with(|c| {
        c.app_check_propagation_secs = 0;
        c.app_check_jwks_url = Some(host.url.clone());
        c.app_check_jwks_ca_file = Some(host.ca_file.clone());
        c.app_check_issuer = Some("https://appcheck.example".into());
    })
    .await;
    let app = phone(&server).await;
    act(&server, &app, AppCheckAction::Enable).await;
    act(&server, &app, AppCheckAction::Enforce).await;
    let exp = SystemClock.now().0 + 300;
    let sign = |key: &SigningKey| {
        let claims =
            json!({ "iss": "https://appcheck.example", "sub": app.client_id, "aud": app.client_id, "exp": exp });
        key.sign("JWT", &claims, &OsRandom).expect("sign")
    };
    // The server fetches the keys at start-up (in the background; a request arriving meanwhile waits for it).
    for _ in 0..100 {
        if host.fetches.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let status = request(&server, &app, Some(&sign(&first)), None).await.0;
    assert_eq!(status, 400, "a token signed by a published key passes App Check (then fails as a bad grant)");
    let fetched = host.fetches.load(Ordering::SeqCst);

    // The provider rotates: a token naming the new key id makes the server fetch the keys again, at once.
    *host.keys.lock().expect("keys") = jwks_of(&[&first, &second]);
    assert_eq!(request(&server, &app, Some(&sign(&second)), None).await.0, 400);
    assert_eq!(host.fetches.load(Ordering::SeqCst), fetched + 1);

    // Unknown key ids cannot make it hammer the provider: no second fetch within the refetch interval.
    assert_eq!(request(&server, &app, Some(&sign(&forged)), None).await.0, 401);
    assert_eq!(request(&server, &app, Some(&sign(&forged)), None).await.0, 401);
    assert_eq!(host.fetches.load(Ordering::SeqCst), fetched + 1);

    // The provider going down keeps the keys in force.
    host.down.store(true, Ordering::SeqCst);
    assert_eq!(request(&server, &app, Some(&sign(&first)), None).await.0, 400);
    let totals = totals(&server, &app).await;
    assert_eq!((totals["verified"].as_u64(), totals["unverified_invalid"].as_u64()), (Some(3), Some(2)), "{totals}");
}
