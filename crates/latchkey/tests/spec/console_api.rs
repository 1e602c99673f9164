//! The console's JSON admin API (`/console/api/v1`): every operation and its errors, authenticated by a
//! developer's API key, with the same membership checks as the pages. Runs on the backend the suite runs on
//! (`LATCHKEY_TEST_BACKEND=postgres` for PostgreSQL).

use crate::support::*;
use latchkey_admin::clock::SystemClock;
use latchkey_admin::{self as admin, api_keys};
use latchkey_core::time::Clock;
use latchkey_server::routes::console::api::{openapi, OPENAPI_PATH};
use serde_json::{json, Value};

const ALICE: &str = "alice@example.com";
const BOB: &str = "bob@example.com";

/// A developer calling the API with their key.
pub(crate) struct Api<'s> {
    server: &'s TestServer,
    key: String,
}

impl<'s> Api<'s> {
    pub(crate) async fn new(server: &'s TestServer, email: &str) -> Self {
        server.user(email).await;
        let k = api_keys::api_key_create(server.store(), email, "test", SystemClock.now()).await.expect("key");
        Self { server, key: k.api_key }
    }

    pub(crate) async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self.server.http().request(method, self.server.url(path)).bearer_auth(&self.key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.expect("request");
        let status = r.status().as_u16();
        assert_eq!(r.headers()["cache-control"], "no-store", "{path}");
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, None).await
    }
    pub(crate) async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call("POST", path, Some(body)).await
    }

    pub(crate) async fn project(&self, name: &str) -> String {
        let (status, v) = self.post("/console/api/v1/projects", json!({ "name": name })).await;
        assert_eq!(status, 201, "{v}");
        v["project_id"].as_str().expect("id").to_owned()
    }
}

pub(crate) fn assert_error(got: &(u16, Value), status: u16, error: &str) {
    assert_eq!(got.0, status, "{}", got.1);
    assert_eq!(got.1["error"], error, "{}", got.1);
    assert!(got.1["error_description"].as_str().is_some_and(|d| !d.is_empty()), "{}", got.1);
}

/// The operations of the served OpenAPI document, `(METHOD, path)`.
fn documented(doc: &Value) -> Vec<(String, String)> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        ops.extend(item.as_object().expect("path item").keys().map(|m| (m.to_uppercase(), path.clone())));
    }
    ops
}

#[tokio::test]
async fn every_route_needs_an_api_key_and_the_openapi_document_is_served() {
    let server = TestServer::start().await;
    let http = server.http();
    let r = http.get(server.url(OPENAPI_PATH)).send().await.expect("request");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    let doc: Value = r.json().await.expect("json");
    let expected: Value = serde_json::from_str(openapi()).expect("document");
    assert_eq!(doc, expected, "the served document is the one the routes are declared with");
    let ops = documented(&doc);
    assert_eq!(ops.len(), 78, "{ops:?}");
    for (method, path) in &ops {
        let url = server
            .url(&path.replace("{project}", "p").replace("{client}", "c").replace("{user}", "u").replace("{id}", "k"));
        let m = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let r = http.request(m, &url).send().await.expect("request");
        if *path == OPENAPI_PATH {
            assert_eq!(r.status(), 200);
            continue;
        }
        assert_eq!(r.status(), 401, "{method} {path} is routed and needs a key");
        assert!(r.headers()["www-authenticate"].to_str().expect("h").starts_with("Bearer"));
        let body: Value = r.json().await.expect("json");
        assert_eq!(body["error"], "unauthorized");
    }
    // The router has no operation the document lacks: every other method of a documented path is 405.
    for path in ops.iter().map(|(_, p)| p) {
        let url = server
            .url(&path.replace("{project}", "p").replace("{client}", "c").replace("{user}", "u").replace("{id}", "k"));
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            if ops.iter().any(|(m, p)| m == method && p == path) {
                continue;
            }
            let m = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
            let r = http.request(m, &url).send().await.expect("request");
            assert_eq!(r.status(), 405, "{method} {path} is not an operation");
            let body: Value = r.json().await.expect("json");
            assert_eq!(body["error"], "invalid_request");
        }
    }
    for bad in ["Bearer lk_nope_nope", "Bearer ", "Basic YTpi", "lk_x_y"] {
        let r = http.get(server.url("/console/api/v1/projects")).header("authorization", bad).send().await.expect("r");
        assert_eq!(r.status(), 401, "{bad}");
    }
    let r = http.delete(server.url("/console/api/v1/projects")).send().await.expect("r");
    assert_eq!(r.status(), 405);
}

#[tokio::test]
async fn projects_the_data_api_and_members() {
    let server = TestServer::start().await;
    let alice = Api::new(&server, ALICE).await;
    let bob = Api::new(&server, BOB).await;
    assert_error(&alice.post("/console/api/v1/projects", json!({ "name": "" })).await, 400, "invalid_request");
    assert_eq!(alice.post("/console/api/v1/projects", json!({ "name": "" })).await.1["field"], "name");
    assert_error(&alice.post("/console/api/v1/projects", json!({ "title": "x" })).await, 400, "invalid_request");
    let p = alice.project("Video").await;
    let (status, list) = alice.get("/console/api/v1/projects").await;
    assert_eq!(status, 200);
    assert_eq!(list["projects"][0]["project_id"], p.as_str());
    assert_eq!(list["projects"][0]["role"], "owner");
    let (status, shown) = alice.get(&format!("/console/api/v1/projects/{p}")).await;
    assert_eq!((status, shown["api_enabled"].as_bool()), (200, Some(false)));
    assert_eq!(shown["clients"], json!([]));

    let put = alice.call("PUT", &format!("/console/api/v1/projects/{p}/api"), Some(json!({ "enabled": true }))).await;
    assert_eq!((put.0, &put.1["api_enabled"]), (200, &json!(true)));
    assert!(server.store().project(&p).await.expect("p").expect("p").api_enabled);
    let bad = alice.call("PUT", &format!("/console/api/v1/projects/{p}/api"), Some(json!({ "enabled": "yes" }))).await;
    assert_error(&bad, 400, "invalid_request");

    // Bob is not a member: the project does not exist for him, like one that does not exist at all.
    assert_error(&bob.get(&format!("/console/api/v1/projects/{p}")).await, 404, "not_found");
    assert_error(&bob.get("/console/api/v1/projects/project-none").await, 404, "not_found");
    let put = bob.call("PUT", &format!("/console/api/v1/projects/{p}/api"), Some(json!({ "enabled": false }))).await;
    assert_error(&put, 404, "not_found");
    assert_error(
        &bob.post(&format!("/console/api/v1/projects/{p}/members"), json!({ "email": BOB })).await,
        404,
        "not_found",
    );
    assert_eq!(bob.get("/console/api/v1/projects").await.1["projects"], json!([]));

    let members = format!("/console/api/v1/projects/{p}/members");
    let unknown = alice.post(&members, json!({ "email": "nobody@example.com" })).await;
    assert_error(&unknown, 400, "invalid_request");
    assert_eq!(unknown.1["field"], "email");
    assert_error(&alice.post(&members, json!({ "email": BOB, "role": "admin" })).await, 400, "invalid_request");
    let (status, added) = alice.post(&members, json!({ "email": BOB })).await;
    assert_eq!((status, added["role"].as_str()), (201, Some("editor")));
    assert_error(&alice.post(&members, json!({ "email": BOB })).await, 409, "conflict");
    let (status, listed) = bob.get(&members).await;
    assert_eq!(status, 200);
    assert_eq!(listed["members"].as_array().map(Vec::len), Some(2));
    // An editor manages the project, not its members.
    assert_eq!(bob.get(&format!("/console/api/v1/projects/{p}")).await.1["role"], "editor");
    assert_error(&bob.post(&members, json!({ "email": ALICE, "role": "owner" })).await, 403, "forbidden");
    assert_error(&bob.call("DELETE", &format!("{members}/{ALICE}"), None).await, 403, "forbidden");
    assert_error(
        &bob.call("PATCH", &format!("{members}/{BOB}"), Some(json!({ "role": "owner" }))).await,
        403,
        "forbidden",
    );
    // The last owner stays.
    assert_error(&alice.call("DELETE", &format!("{members}/{ALICE}"), None).await, 409, "conflict");
    assert_error(
        &alice.call("PATCH", &format!("{members}/{ALICE}"), Some(json!({ "role": "editor" }))).await,
        409,
        "conflict",
    );
    assert_error(&alice.call("DELETE", &format!("{members}/carol@example.com"), None).await, 404, "not_found");
    let promoted = alice.call("PATCH", &format!("{members}/{BOB}"), Some(json!({ "role": "owner" }))).await;
    assert_eq!((promoted.0, &promoted.1["role"]), (200, &json!("owner")));
    let removed = bob.call("DELETE", &format!("{members}/{ALICE}"), None).await;
    assert_eq!((removed.0, &removed.1["removed"]), (200, &json!(true)));
    assert_error(&alice.get(&format!("/console/api/v1/projects/{p}")).await, 404, "not_found");
}

#[tokio::test]
async fn an_owner_deletes_a_project_and_its_clients_go_with_it_for_good() {
    let server = TestServer::start().await;
    let alice = Api::new(&server, ALICE).await;
    let bob = Api::new(&server, BOB).await;
    let carol = Api::new(&server, "carol@example.com").await;
    let p = alice.project("Doomed").await;
    let clients = format!("/console/api/v1/projects/{p}/clients");
    let mut ids = Vec::new();
    for name in ["Live", "Deleted"] {
        let (status, c) = alice.post(&clients, json!({ "type": "desktop", "name": name })).await;
        assert_eq!(status, 201, "{c}");
        ids.push(c["client_id"].as_str().expect("id").to_owned());
    }
    assert_eq!(alice.call("DELETE", &format!("{clients}/{}", ids[1]), None).await.0, 200);
    let (status, _) = alice.post(&format!("/console/api/v1/projects/{p}/members"), json!({ "email": BOB })).await;
    assert_eq!(status, 201);

    let project = format!("/console/api/v1/projects/{p}");
    let refused = bob.call("DELETE", &project, None).await;
    assert_error(&refused, 403, "forbidden");
    assert!(refused.1["error_description"].as_str().expect("d").contains("owners"), "{}", refused.1);
    assert_error(&carol.call("DELETE", &project, None).await, 404, "not_found");
    assert!(server.store().project(&p).await.expect("p").is_some(), "an editor or a stranger deletes nothing");

    let (status, done) = alice.call("DELETE", &project, None).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done, json!({ "project_id": p, "deleted": true, "clients_deleted": 2 }));
    assert!(server.store().project(&p).await.expect("p").is_none());
    for id in &ids {
        assert!(server.store().client(id).await.expect("c").is_none(), "{id} is gone for good, deleted or not");
    }
    assert_error(&alice.get(&project).await, 404, "not_found");
    assert_error(&alice.post(&format!("{clients}/{}/restore", ids[1]), json!({})).await, 404, "not_found");
    assert_error(&alice.call("DELETE", &project, None).await, 404, "not_found");
    assert_eq!(bob.get("/console/api/v1/projects").await.1["projects"], json!([]));
}

#[tokio::test]
async fn clients_of_every_type_their_rules_delete_and_restore() {
    let server = TestServer::start().await;
    let alice = Api::new(&server, ALICE).await;
    let bob = Api::new(&server, BOB).await;
    let p = alice.project("P").await;
    let clients = format!("/console/api/v1/projects/{p}/clients");
    let bad = alice.post(&clients, json!({ "type": "mobile", "name": "M", "store_id": "12x" })).await;
    assert_error(&bad, 400, "invalid_request");
    let fields: Vec<&str> =
        bad.1["fields"].as_array().expect("fields").iter().filter_map(|f| f["field"].as_str()).collect();
    assert_eq!(fields, vec!["bundle_id", "store_id"], "{}", bad.1);
    assert_eq!(bad.1["field"], "bundle_id");
    for (body, field) in [
        (json!({ "type": "smart-fridge", "name": "F" }), "type"),
        (json!({ "type": "tv", "name": "T", "redirect_uris": ["http://127.0.0.1:5/cb"] }), "redirect_uri"),
        (json!({ "type": "desktop", "name": "D", "bundle_id": "com.x" }), "bundle_id"),
        (json!({ "type": "desktop", "name": "D", "app_check": true }), "app_check"),
        (json!({ "type": "universal-desktop", "name": "U", "uwp_store_id": "short" }), "uwp_store_id"),
        (json!({ "type": "browser-extension", "name": "E" }), "extension_item_id"),
        (json!({ "type": "mobile", "name": "M", "bundle_id": "a.*", "app_check": true, "team_id": "T" }), "bundle_id"),
        (json!({ "type": "mobile", "name": "M", "bundle_id": "a.b", "app_check": true }), "team_id"),
        (
            json!({ "type": "mobile", "name": "M", "bundle_id": "a.b", "redirect_uris": ["http://[::1]:5/"] }),
            "redirect_uri",
        ),
    ] {
        let r = alice.post(&clients, body.clone()).await;
        assert_error(&r, 400, "invalid_request");
        assert_eq!(r.1["field"], field, "{body}: {}", r.1);
    }
    let r = alice
        .server
        .http()
        .post(alice.server.url(&clients))
        .bearer_auth(&alice.key)
        .body("{}")
        .send()
        .await
        .expect("r");
    assert_eq!(r.status(), 400, "a JSON body needs its content type");

    let mut ids = Vec::new();
    for body in [
        json!({ "type": "desktop", "name": "Desk" }),
        json!({ "type": "mobile", "name": "Phone", "bundle_id": "com.example.p", "team_id": "T1", "store_id": "99", "redirect_uris": ["com.example.p:/cb"] }),
        json!({ "type": "universal-desktop", "name": "Uwp", "uwp_store_id": "9NBLGGH4NNS1", "package_sid": "s-1-15-2-1", "redirect_uris": ["ms-app://s-1-15-2-1"] }),
        json!({ "type": "browser-extension", "name": "Ext", "extension_item_id": "itemid" }),
    ] {
        let (status, c) = alice.post(&clients, body.clone()).await;
        assert_eq!(status, 201, "{c}");
        assert_eq!(c["type"], body["type"]);
        let secret = c["client_secret"].as_str().expect("secret shown once");
        let id = c["client_id"].as_str().expect("id").to_owned();
        let (status, shown) = alice.get(&format!("{clients}/{id}")).await;
        assert_eq!(status, 200);
        assert!(shown.get("client_secret").is_none() && !shown.to_string().contains(secret), "never again");
        ids.push(id);
    }
    let (status, list) = alice.get(&clients).await;
    assert_eq!((status, list["clients"].as_array().map(Vec::len)), (200, Some(4)));

    // Edit: the rules again; fields of another type are refused.
    let phone = format!("{clients}/{}", ids[1]);
    let r = alice.call("PATCH", &phone, Some(json!({ "name": "Phone 2", "store_id": "" }))).await;
    assert_eq!((r.0, &r.1["name"], &r.1["store_id"]), (200, &json!("Phone 2"), &Value::Null));
    assert_error(&alice.call("PATCH", &phone, Some(json!({ "store_id": "abc" }))).await, 400, "invalid_request");
    let r = alice.call("PATCH", &phone, Some(json!({ "uwp_store_id": "9NBLGGH4NNS1" }))).await;
    assert_eq!((r.0, &r.1["field"]), (400, &json!("uwp_store_id")));
    assert_eq!(r.1["fields"][0]["message"], "Mobile platform app clients have no uwp_store_id.", "{}", r.1);

    // Another developer, or another project's path, finds nothing.
    assert_error(&bob.get(&phone).await, 404, "not_found");
    let bobs = bob.project("Bob's").await;
    assert_error(&bob.get(&format!("/console/api/v1/projects/{bobs}/clients/{}", ids[1])).await, 404, "not_found");
    assert_error(
        &bob.call("DELETE", &format!("/console/api/v1/projects/{bobs}/clients/{}", ids[1]), None).await,
        404,
        "not_found",
    );

    // Delete and restore.
    assert_error(&alice.post(&format!("{phone}/restore"), json!({})).await, 409, "conflict");
    let r = alice.call("DELETE", &phone, None).await;
    assert_eq!((r.0, &r.1["deleted"]), (200, &json!(true)));
    assert_error(&alice.call("DELETE", &phone, None).await, 409, "conflict");
    assert!(alice.get(&phone).await.1["deleted_at"].is_i64());
    let r = alice.post(&format!("{phone}/restore"), json!({})).await;
    assert_eq!((r.0, &r.1["restored"]), (200, &json!(true)));
    assert_error(&alice.get(&format!("{clients}/lkapp-none")).await, 404, "not_found");
}

#[tokio::test]
async fn app_check_actions_metrics_debug_secret_and_ownership() {
    let server = TestServer::start().await;
    let alice = Api::new(&server, ALICE).await;
    let p = alice.project("P").await;
    let clients = format!("/console/api/v1/projects/{p}/clients");
    let (_, phone) =
        alice.post(&clients, json!({ "type": "mobile", "name": "Phone", "bundle_id": "com.example.p" })).await;
    let phone = format!("{clients}/{}", phone["client_id"].as_str().expect("id"));
    let ac = format!("{phone}/app-check");
    assert_eq!(alice.get(&ac).await.1["state"], "disabled");
    let r = alice.post(&ac, json!({ "action": "enable" })).await;
    assert_error(&r, 400, "invalid_request");
    assert!(r.1["error_description"].as_str().expect("d").contains("team ID"));
    assert_error(&alice.post(&ac, json!({ "action": "explode" })).await, 400, "invalid_request");
    alice.call("PATCH", &phone, Some(json!({ "team_id": "TEAM1" }))).await;
    let (status, st) = alice.post(&ac, json!({ "action": "enable" })).await;
    assert_eq!(status, 200, "{st}");
    assert_eq!(st["state"], "disabled", "in force after the propagation delay");
    assert_eq!(st["pending"]["state"], "enabled");
    let r = alice.post(&ac, json!({ "action": "enforce" })).await;
    assert_error(&r, 400, "invalid_request");
    assert!(r.1["error_description"].as_str().expect("d").contains("\"confirm\": true"), "{}", r.1);
    let (status, st) = alice.post(&ac, json!({ "action": "enforce", "confirm": true })).await;
    assert_eq!((status, &st["pending"]["state"]), (200, &json!("enforced")));
    assert_error(&alice.post(&ac, json!({ "action": "enable" })).await, 400, "invalid_request");
    let (status, st) = alice.post(&ac, json!({ "action": "unenforce", "confirm": true })).await;
    assert_eq!((status, &st["pending"]["state"]), (200, &json!("enabled")));
    // Never in force, the whole change is called off at once.
    let (status, st) = alice.post(&ac, json!({ "action": "disable" })).await;
    assert_eq!((status, &st["state"], &st["pending"]), (200, &json!("disabled"), &Value::Null));

    let id = phone.rsplit('/').next().expect("id");
    let hour = latchkey_core::time::UnixTime(SystemClock.now().0 / 3600 * 3600);
    server.store().count_app_check(id, hour, latchkey_core::app_check::Category::UnverifiedInvalid).await.expect("n");
    let (status, m) = alice.get(&format!("{ac}/metrics?hours=2")).await;
    assert_eq!(status, 200);
    assert_eq!(m["totals"]["unverified_invalid"], 1);
    assert_eq!(m["totals"]["verified"], 0);
    assert_eq!(m["hourly"][0]["hour"], hour.0);
    let (status, s) = alice.post(&format!("{ac}/debug-secret"), json!({})).await;
    assert_eq!(status, 201);
    assert!(s["debug_secret"].as_str().is_some_and(|s| s.starts_with("lkd_")));

    // Owner verification, for browser-extension clients only.
    assert_error(&alice.post(&format!("{phone}/verify-ownership"), json!({})).await, 400, "invalid_request");
    let (_, ext) = alice
        .post(&clients, json!({ "type": "browser-extension", "name": "Ext", "extension_item_id": "apiitem" }))
        .await;
    let ext = format!("{clients}/{}", ext["client_id"].as_str().expect("id"));
    let r = alice.post(&format!("{ext}/verify-ownership"), json!({})).await;
    assert_error(&r, 400, "invalid_request");
    assert!(r.1["error_description"].as_str().expect("d").contains("must be registered"));
    admin::listing_add(server.store(), "apiitem", Some(ALICE), None, SystemClock.now()).await.expect("listing");
    let (status, v) = alice.post(&format!("{ext}/verify-ownership"), json!({})).await;
    assert_eq!((status, &v["ownership_verified"]), (200, &json!(true)));
    assert!(alice.get(&ext).await.1["ownership_verified_at"].is_i64());
}

/// Found by schemathesis: a query the metrics cannot read was axum's plain-text 400, not the API's JSON error.
#[tokio::test]
async fn a_metrics_query_that_is_not_a_number_is_a_json_invalid_request() {
    let server = TestServer::start().await;
    let alice = Api::new(&server, ALICE).await;
    let p = alice.project("P").await;
    let clients = format!("/console/api/v1/projects/{p}/clients");
    let (_, c) = alice.post(&clients, json!({ "type": "desktop", "name": "Desk" })).await;
    let metrics = format!("{clients}/{}/app-check/metrics", c["client_id"].as_str().expect("id"));
    for query in ["hours=null&hours=null", "hours=abc", "hours=99999999999999999999"] {
        assert_error(&alice.get(&format!("{metrics}?{query}")).await, 400, "invalid_request");
    }
    // Another developer's client stays 404 whatever the query.
    let bob = Api::new(&server, BOB).await;
    assert_error(&bob.get(&format!("{metrics}?hours=abc")).await, 404, "not_found");
}

#[tokio::test]
async fn a_revoked_key_or_a_disabled_developer_is_refused() {
    let server = TestServer::start().await;
    let alice = Api::new(&server, ALICE).await;
    assert_eq!(alice.get("/console/api/v1/projects").await.0, 200);
    let key_id = alice.key.trim_start_matches("lk_").split('_').next().expect("id").to_owned();
    let listed = api_keys::api_key_list(server.store(), ALICE).await.expect("list");
    assert!(listed.api_keys[0].last_used_at.is_some(), "the last use is recorded");
    assert!(!serde_json::to_string(&listed).expect("json").contains(&alice.key), "never the key itself");
    // A key with the right id and a wrong secret is refused.
    let forged = Api { server: &server, key: format!("lk_{key_id}_{}", "A".repeat(43)) };
    assert_error(&forged.get("/console/api/v1/projects").await, 401, "unauthorized");
    admin::user_set_disabled(server.store(), ALICE, true, SystemClock.now()).await.expect("disable");
    assert_error(&alice.get("/console/api/v1/projects").await, 401, "unauthorized");
    admin::user_set_disabled(server.store(), ALICE, false, SystemClock.now()).await.expect("enable");
    api_keys::api_key_revoke(server.store(), ALICE, &key_id).await.expect("revoke");
    assert_error(&alice.get("/console/api/v1/projects").await, 401, "unauthorized");
    // A key it does not know is told apart from no key: what to do, and RFC 6750's invalid_token.
    let r =
        server.http().get(server.url("/console/api/v1/projects")).bearer_auth(&alice.key).send().await.expect("get");
    let challenge = r.headers()["www-authenticate"].to_str().expect("text").to_owned();
    assert_eq!(challenge, "Bearer realm=\"latchkey-console\", error=\"invalid_token\"");
    let revoked: Value = r.json().await.expect("json");
    assert!(revoked["error_description"].as_str().expect("text").contains("not one the service knows"), "{revoked}");
    let r = server.http().get(server.url("/console/api/v1/projects")).send().await.expect("get");
    assert_eq!(r.headers()["www-authenticate"], "Bearer realm=\"latchkey-console\"", "no key, no error code");
    let none: Value = r.json().await.expect("json");
    assert!(none["error_description"].as_str().expect("text").contains("Send a console API key"), "{none}");
}

#[tokio::test]
async fn a_key_lists_and_revokes_its_developers_keys_but_cannot_create_one() {
    let server = TestServer::start().await;
    let alice = Api::new(&server, ALICE).await;
    let bob = Api::new(&server, BOB).await;
    let second = api_keys::api_key_create(server.store(), ALICE, "ci", SystemClock.now()).await.expect("key");
    let second_id = second.key.id;
    let second_key = second.api_key;
    let own_id = alice.key.trim_start_matches("lk_").split('_').next().expect("id").to_owned();

    let (status, listed) = alice.get("/console/api/v1/api-keys").await;
    assert_eq!(status, 200, "{listed}");
    let mut names: Vec<&str> =
        listed["api_keys"].as_array().expect("keys").iter().filter_map(|k| k["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, vec!["ci", "test"], "only Alice's keys: {listed}");
    assert!(!listed.to_string().contains(&alice.key) && !listed.to_string().contains(&second_key), "never the keys");
    let (_, bobs) = bob.get("/console/api/v1/api-keys").await;
    assert_eq!(bobs["api_keys"].as_array().map(Vec::len), Some(1), "Bob sees only his own: {bobs}");

    // A key cannot mint keys: creating one is the console page's and the CLI's.
    let r = alice.post("/console/api/v1/api-keys", json!({ "name": "minted" })).await;
    assert_error(&r, 405, "invalid_request");
    assert_eq!(api_keys::api_key_list(server.store(), ALICE).await.expect("l").api_keys.len(), 2);

    // Another developer's key is not found, and stays.
    assert_error(&bob.call("DELETE", &format!("/console/api/v1/api-keys/{second_id}"), None).await, 404, "not_found");
    let other = Api { server: &server, key: second_key.clone() };
    assert_eq!(other.get("/console/api/v1/projects").await.0, 200, "still works");

    let (status, done) = alice.call("DELETE", &format!("/console/api/v1/api-keys/{second_id}"), None).await;
    assert_eq!((status, done), (200, json!({ "id": second_id, "revoked": true })));
    assert_error(&other.get("/console/api/v1/projects").await, 401, "unauthorized");
    assert_error(&alice.call("DELETE", &format!("/console/api/v1/api-keys/{second_id}"), None).await, 404, "not_found");

    // A key may revoke itself; it stops working at once.
    let (status, _) = alice.call("DELETE", &format!("/console/api/v1/api-keys/{own_id}"), None).await;
    assert_eq!(status, 200);
    assert_error(&alice.get("/console/api/v1/api-keys").await, 401, "unauthorized");
}

#[tokio::test]
async fn a_body_over_64_kib_is_a_json_413_and_refusals_before_the_body_is_read_are_json_too() {
    let server = TestServer::start().await;
    let alice = Api::new(&server, ALICE).await;
    let huge = json!({ "name": "x".repeat(70 * 1024) });
    let r = server.http().post(server.url("/console/api/v1/projects")).bearer_auth(&alice.key).json(&huge).send();
    let r = r.await.expect("request");
    assert_eq!(r.status().as_u16(), 413);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["error"], "invalid_request", "{body}");
    // Refused before the body is looked at (a wrong content type, a project not found), over one HTTP/1.1
    // connection, in turn: each answer is the API's JSON error.
    let http = server.http_builder().http1_only().build().expect("client");
    for _ in 0..3 {
        let r = http.post(server.url("/console/api/v1/projects")).bearer_auth(&alice.key).body("{\"name\":\"p\"}");
        let r = r.send().await.expect("request");
        assert_eq!(r.status().as_u16(), 400, "not JSON by its content type");
        assert_eq!(r.json::<Value>().await.expect("json")["error"], "invalid_request");
        let r = http.put(server.url("/console/api/v1/projects/nope/api")).bearer_auth(&alice.key).json(&json!({}));
        let r = r.send().await.expect("request");
        assert_eq!(r.status().as_u16(), 404);
        assert_eq!(r.json::<Value>().await.expect("json")["error"], "not_found");
    }
    assert_eq!(alice.get("/console/api/v1/projects").await.0, 200);
}
