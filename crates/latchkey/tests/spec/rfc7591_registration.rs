//! Dynamic client registration (RFC 7591) and its management (RFC 7592): closed until an operator opens it for one
//! project; an app registers itself, signs in and refreshes with rotation; reads, replaces and deletes its
//! registration with its registration access token; every refusal in RFC 7591 §3.2.2 form, and the hourly limit.

use crate::login_consent::{page_error_code, scope_checkboxes};
use crate::organisations::{change, corp, CAROL};
use crate::support::*;
use latchkey_admin::{self as admin, accounts, orgs, Actor, AdminError};
use latchkey_config::RateLimitsConfig;
use latchkey_core::org::OrgChange;
use latchkey_store::ProjectSetting;
use serde_json::{json, Value};

const ALICE: &str = "alice@example.com";
const REDIRECT: &str = "http://127.0.0.1:4711/callback";

/// The body of an MCP host's registration: what the MCP SDK's client sends.
fn mcp_body() -> Value {
    json!({
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "client_name": "Desktop Assistant",
        "client_uri": "https://assistant.example/",
    })
}

async fn register(server: &TestServer, body: &Value) -> reqwest::Response {
    server.http().post(server.url("/register")).json(body).send().await.expect("register")
}

/// Opens registration for a project with the data API on; returns the project.
async fn open(server: &TestServer) -> String {
    let app = server.app().await;
    let setting = ProjectSetting::OpenRegistration;
    let view =
        admin::project_set(server.store(), &Actor::Operator, &app.project_id, setting, true).await.expect("open");
    assert!(view.open_registration);
    app.project_id
}

async fn json_of(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    assert_eq!(r.headers()["cache-control"], "no-store");
    (status, r.json().await.expect("json"))
}

#[tokio::test]
async fn registration_is_closed_until_an_operator_opens_it_for_one_project() {
    let server = TestServer::start().await;
    assert!(discovery(&server).await.get("registration_endpoint").is_none(), "closed: not advertised");
    let (status, body) = json_of(register(&server, &mcp_body()).await).await;
    assert_eq!((status, body["error"].as_str()), (403, Some("access_denied")), "{body}");

    let app = server.app().await;
    let dev = server.user("dev@example.com").await;
    let dev = server.store().user(&dev).await.expect("get").expect("user");
    let setting = ProjectSetting::OpenRegistration;
    let by_developer = admin::project_set(server.store(), &Actor::Developer(dev), &app.project_id, setting, true).await;
    assert!(matches!(by_developer, Err(AdminError::NotFound(_) | AdminError::Forbidden(_))), "{by_developer:?}");
    let project = open(&server).await;
    let endpoint = discovery(&server).await["registration_endpoint"].as_str().expect("advertised").to_owned();
    assert_eq!(endpoint, server.url("/register"));
    let second = admin::project_set(server.store(), &Actor::Operator, &app.project_id, setting, true).await;
    assert!(matches!(second, Err(AdminError::Conflict(ref m)) if m.contains(&project)), "one project: {second:?}");
    admin::project_set(server.store(), &Actor::Operator, &project, setting, false).await.expect("close");
    assert!(discovery(&server).await.get("registration_endpoint").is_none());
}

#[tokio::test]
async fn an_app_registers_itself_signs_in_refreshes_with_rotation_and_shows_as_unverified() {
    let server = TestServer::start().await;
    let project = open(&server).await;
    server.user(ALICE).await;
    let (status, reg) = json_of(register(&server, &mcp_body()).await).await;
    assert_eq!(status, 201, "{reg}");
    let client_id = reg["client_id"].as_str().expect("client_id").to_owned();
    assert!(reg["registration_access_token"].as_str().expect("token").starts_with("lkreg_"));
    assert_eq!(reg["registration_client_uri"], server.url(&format!("/register/{client_id}")));
    assert_eq!(reg["token_endpoint_auth_method"], "none");
    assert_eq!(reg["redirect_uris"], json!([REDIRECT]));
    assert_eq!(reg["grant_types"], json!(["authorization_code", "refresh_token"]));
    assert_eq!(reg["client_name"], "Desktop Assistant");
    assert!(reg.get("client_secret").is_none(), "a public client: no secret");
    assert!(reg["client_id_issued_at"].as_i64().expect("issued at") > 1_700_000_000);
    let client = server.store().client(&client_id).await.expect("get").expect("stored");
    assert_eq!(client.project_id, project);
    let stored = client.registration.expect("marked").token_hash.expect("hash");
    assert_ne!(stored, reg["registration_access_token"].as_str().expect("t").as_bytes(), "stored as its hash");

    let app = App { project_id: project.clone(), client_id: client_id.clone(), client_secret: String::new() };
    let pkce = Pkce::new();
    let browser = server.browser();
    let url = authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "st4te");
    let consent = browser.consent_page(&url, ALICE).await;
    assert!(consent.body.contains("id=\"unverified-app\""), "the consent page says it is unverified");
    assert!(consent.body.contains("Unverified app</strong> (registered itself)"), "{}", consent.body);
    let code = browser.code(&server, &app, ALICE, &[READONLY], &[READONLY], &pkce, REDIRECT).await;
    let tokens = server.exchange(&app, &code, &pkce, REDIRECT).await;
    let first = tokens.refresh_token.expect("refresh token");
    let registry = &server.running.state.scopes.get();
    let now = latchkey_core::time::Clock::now(&latchkey_admin::clock::SystemClock);
    let apps = serde_json::to_value(accounts::user_grants(server.store(), ALICE, registry, now).await.expect("apps"));
    let apps = apps.expect("json");
    assert_eq!(apps["apps"][0]["origin"], "registered itself", "{apps}");
    let page = browser.get(&server.url("/account")).await;
    assert!(page.body.contains("Unverified app: registered itself"), "the account page says so: {}", page.body);
    let r = server.refresh(&app, &first).await;
    let (status, refreshed) = (r.status().as_u16(), r.json::<Value>().await.expect("json"));
    assert_eq!(status, 200, "{refreshed}");
    let second = refreshed["refresh_token"].as_str().expect("self-registered: rotated");
    assert_ne!(second, first);
    assert_eq!(error_of(server.refresh(&app, &first).await).await.1, "invalid_grant", "reuse detected");
    let apps = accounts::user_grants(server.store(), ALICE, registry, now).await.expect("apps").apps;
    assert!(apps.is_empty(), "the reuse revoked the grant");
}

#[tokio::test]
async fn a_registration_is_read_replaced_and_deleted_with_its_token_only() {
    let server = TestServer::start().await;
    open(&server).await;
    let (_, reg) = json_of(register(&server, &mcp_body()).await).await;
    let (client_id, token) =
        (reg["client_id"].as_str().expect("id"), reg["registration_access_token"].as_str().expect("t"));
    let uri = server.url(&format!("/register/{client_id}"));
    let http = server.http();

    let (status, read) = json_of(http.get(&uri).bearer_auth(token).send().await.expect("get")).await;
    assert_eq!((status, read["client_id"].as_str()), (200, Some(client_id)));
    let old = token;
    let token = read["registration_access_token"].as_str().expect("a new token (RFC 7592 §3)");
    assert_ne!(token, old);
    let r = http.get(&uri).bearer_auth(old).send().await.expect("get");
    assert_eq!(json_of(r).await.0, 401, "the token read replaced is no longer valid");
    for (wrong, why) in [(Some("lkreg_wrong"), "a wrong token"), (None, "no token")] {
        let mut request = http.get(&uri);
        if let Some(t) = wrong {
            request = request.bearer_auth(t);
        }
        let r = request.send().await.expect("get");
        assert!(r.headers()["www-authenticate"].to_str().expect("challenge").starts_with("Bearer"), "{why}");
        assert_eq!(json_of(r).await.1["error"], "invalid_token", "{why}");
    }
    let other = server.url("/register/lkapp-nosuchclient");
    assert_eq!(json_of(http.get(&other).bearer_auth(token).send().await.expect("get")).await.0, 401, "another id");

    let mut update = mcp_body();
    update["client_id"] = json!(client_id);
    update["client_name"] = json!("Renamed Assistant");
    update["redirect_uris"] = json!(["http://localhost:9000/cb", "com.example.assistant:/cb"]);
    let (status, replaced) = json_of(http.put(&uri).bearer_auth(token).json(&update).send().await.expect("put")).await;
    assert_eq!((status, replaced["client_name"].as_str()), (200, Some("Renamed Assistant")), "{replaced}");
    let token = replaced["registration_access_token"].as_str().expect("a new token again");
    assert_eq!(server.store().client(client_id).await.expect("get").expect("c").redirect_uris.len(), 2);
    update["client_id"] = json!("lkapp-someone-else");
    let (status, refused) = json_of(http.put(&uri).bearer_auth(token).json(&update).send().await.expect("put")).await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_client_metadata")));
    assert_eq!(server.store().client(client_id).await.expect("get").expect("c").name, "Renamed Assistant");

    let r = http.delete(&uri).bearer_auth(token).send().await.expect("delete");
    assert_eq!(r.status(), 204);
    assert!(server.store().client(client_id).await.expect("get").expect("kept").deleted_at.is_some());
    assert_eq!(json_of(http.get(&uri).bearer_auth(token).send().await.expect("get")).await.0, 401, "gone");
}

#[tokio::test]
async fn bad_metadata_is_refused_in_rfc_7591_form_and_registers_nothing() {
    let server = TestServer::start().await;
    let project = open(&server).await;
    let meta = "invalid_client_metadata";
    for (change, code) in [
        (json!({"token_endpoint_auth_method": "client_secret_basic"}), meta),
        (json!({"grant_types": ["client_credentials"]}), meta),
        (json!({"response_types": ["token"]}), meta),
        (json!({"logo_uri": "http://insecure.example/logo.png"}), meta),
        (json!({"redirect_uris": ["https://assistant.example/callback"]}), "invalid_redirect_uri"),
        (json!({"redirect_uris": ["http://assistant.example/callback"]}), "invalid_redirect_uri"),
        (json!({"redirect_uris": []}), "invalid_redirect_uri"),
    ] {
        let mut body = mcp_body();
        for (k, v) in change.as_object().expect("object") {
            body[k] = v.clone();
        }
        let (status, answer) = json_of(register(&server, &body).await).await;
        assert_eq!((status, answer["error"].as_str()), (400, Some(code)), "{change}: {answer}");
        assert!(answer["error_description"].as_str().is_some_and(|d| !d.is_empty()));
    }
    let r = server.http().post(server.url("/register")).body("redirect_uris=x").send().await.expect("form");
    assert_eq!(json_of(r).await, (415, json_of_code(meta)), "not JSON");
    let r = server.http().post(server.url("/register")).header("content-type", "application/json").body("{").send();
    assert_eq!(json_of(r.await.expect("post")).await.1["error"], meta);
    let clients = server.store().clients(Some(&project)).await.expect("clients");
    assert_eq!(clients.iter().filter(|c| c.registration.is_some()).count(), 0, "nothing registered");
}

fn json_of_code(code: &str) -> Value {
    json!({"error": code, "error_description": "The body is JSON (Content-Type: application/json)."})
}

#[tokio::test]
async fn registrations_from_one_address_are_limited_by_the_hour() {
    let server = TestServer::start_with(|c| {
        c.rate_limits = RateLimitsConfig { register_per_address: 2, ..RateLimitsConfig::OFF };
    })
    .await;
    open(&server).await;
    for _ in 0..2 {
        assert_eq!(register(&server, &mcp_body()).await.status(), 201);
    }
    let r = register(&server, &mcp_body()).await;
    assert_eq!(r.status(), 429);
    let wait: u64 = r.headers()["retry-after"].to_str().expect("ascii").parse().expect("seconds");
    assert!((1..=1800).contains(&wait), "{wait}");
    assert_eq!(r.json::<Value>().await.expect("json")["error"], "temporarily_unavailable");
}

#[tokio::test]
async fn an_organisation_treats_a_self_registered_app_as_unlisted_and_may_block_them_all() {
    let server = TestServer::start().await;
    let project = open(&server).await;
    server.user(CAROL).await;
    let org = corp(&server).await;
    let now = latchkey_core::time::UnixTime(1_700_000_000);
    orgs::project_place(server.store(), &Actor::Operator, &project, Some(Some(&org)), None, now).await.expect("place");
    change(&server, &org, OrgChange::TrustInternalApps(true)).await;
    let (_, reg) = json_of(register(&server, &mcp_body()).await).await;
    let app =
        App { project_id: project, client_id: reg["client_id"].as_str().expect("id").into(), client_secret: "".into() };

    let pkce = Pkce::new();
    let browser = server.browser();
    let consent = browser.consent_page(&authorize_url(&server, &app, &[READONLY], &pkce, REDIRECT, "s"), CAROL).await;
    assert_eq!(scope_checkboxes(&consent).len(), 1, "granular consent: not trusted as an internal app");
    let code = browser.code(&server, &app, CAROL, &[READONLY], &[READONLY], &pkce, REDIRECT).await;
    let tokens = server.exchange(&app, &code, &pkce, REDIRECT).await;

    assert_eq!(change(&server, &org, OrgChange::BlockSelfRegisteredApps(true)).await, 1, "its grant is revoked");
    let refresh = server.refresh(&app, tokens.refresh_token.as_deref().expect("rt")).await;
    assert_eq!(error_of(refresh).await.1, "invalid_grant");
    let url = authorize_url(&server, &app, &[READONLY], &Pkce::new(), REDIRECT, "s");
    let page = server.browser().consent_page(&url, CAROL).await;
    assert_eq!((page.status, page_error_code(&page).as_deref()), (403, Some("admin_policy_enforced")), "{}", page.body);
}

#[tokio::test]
async fn through_the_json_api_an_owner_switches_rotation_and_only_an_operator_opens_registration() {
    const OPS: &str = "ops@example.com";
    let server = TestServer::start_with(|c| c.operators = vec![OPS.into()]).await;
    let now = latchkey_core::time::UnixTime(1_700_000_000);
    for who in [ALICE, OPS] {
        server.user(who).await;
    }
    let project = admin::project_create(server.store(), &Actor::Operator, "Owned", Some(ALICE), now).await;
    let project = project.expect("project").project_id;
    let store = server.store();
    let key = |who: &'static str| async move {
        admin::api_keys::api_key_create(store, who, "k", now).await.expect("key").api_key
    };
    let (owner, ops) = (key(ALICE).await, key(OPS).await);
    let put = |setting: &str, key: String| {
        let url = server.url(&format!("/console/api/v1/projects/{project}/{setting}"));
        let http = server.http();
        async move { json_of_api(http.put(url).bearer_auth(key).json(&json!({"enabled": true})).send().await).await }
    };
    let (status, view) = put("refresh-token-rotation", owner.clone()).await;
    assert_eq!((status, view["rotate_refresh_tokens"].as_bool()), (200, Some(true)), "{view}");
    assert_eq!(put("open-registration", owner).await.0, 403, "an owner who is no operator");
    assert!(discovery(&server).await.get("registration_endpoint").is_none());
    let (status, view) = put("open-registration", ops).await;
    assert_eq!((status, view["open_registration"].as_bool()), (200, Some(true)), "{view}");
    assert_eq!(discovery(&server).await["registration_endpoint"], server.url("/register"));
}

async fn json_of_api(r: reqwest::Result<reqwest::Response>) -> (u16, Value) {
    let r = r.expect("api");
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}
