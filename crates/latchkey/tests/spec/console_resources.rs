//! Registered APIs (resources, RFC 8707) in the console and its JSON API (`docs/resources.md`, "Register the
//! API"): an editor registers one from the project's page (its introspection secret shown once), sees its scopes
//! and the protected resource metadata (RFC 9728) it should serve, edits it and rotates its secret; only an owner
//! deletes it, after a confirmation. The JSON API does the same with the API's statuses and error format; a
//! refused registration changes nothing; a scope registered either way is asked for at once on the same server.

use crate::console::{code_text, Dev};
use crate::console_api::{assert_error, Api};
use crate::support::*;
use latchkey_admin::clock::SystemClock;
use latchkey_admin::{members, Actor};
use latchkey_core::secret;
use latchkey_core::time::Clock;
use latchkey_store::ProjectRole;
use serde_json::{json, Value};

const ALICE: &str = "alice@example.com";
const BOB: &str = "bob@example.com";
const CAROL: &str = "carol@example.com";

/// Makes the account `email` (which must exist) a member of `project`.
async fn member(server: &TestServer, project: &str, email: &str, role: ProjectRole) {
    members::member_add(server.store(), &Actor::Operator, project, email, role, SystemClock.now())
        .await
        .expect("member");
}

/// Whether the server in hand knows the scope now.
fn known(server: &TestServer, scope: &str) -> bool {
    server.running.state.scopes.get().index_of(scope).is_some()
}

/// The names of a JSON API answer's scopes.
fn scope_names(v: &Value) -> Vec<&str> {
    v["scopes"].as_array().expect("scopes").iter().filter_map(|s| s["name"].as_str()).collect()
}

/// The hashes of the introspection secrets the store holds for an API.
async fn stored_hashes(server: &TestServer, id: &str) -> Vec<Vec<u8>> {
    let r = server.store().resource(id).await.expect("read").expect("the API");
    r.secrets.iter().map(|s| s.hash.clone()).collect()
}

#[tokio::test]
async fn an_editor_registers_edits_and_rotates_an_api_in_the_console_and_only_an_owner_deletes_it() {
    let server = TestServer::start().await;
    let alice = Dev::sign_in(&server, ALICE).await;
    let p = alice.project("Notes").await;
    let bob = Dev::sign_in(&server, BOB).await;
    member(&server, &p, BOB, ProjectRole::Editor).await;

    let made = bob
        .post(
            &format!("/console/projects/{p}/resources"),
            &[
                ("uri", "https://notes.example.com/mcp"),
                ("name", "Notes"),
                ("scopes", "notes:read|Read your notes\r\nnotes:write|Change your notes\r\n"),
                ("visibility", "project"),
                ("token_format", "opaque"),
            ],
        )
        .await;
    assert_eq!(made.status, 200, "{}", made.body);
    let id = code_text(&made, "resource-id").expect("the API's id shown");
    let first = code_text(&made, "resource-secret").expect("the secret shown");
    assert_eq!(stored_hashes(&server, &id).await, vec![secret::hash(&first)], "only the hash is stored");
    assert!(known(&server, "notes:read") && known(&server, "notes:write"), "this server knows the scopes at once");

    let project = bob.get(&format!("/console/projects/{p}")).await;
    assert_eq!(project.status, 200);
    assert!(project.body.contains(&format!("/console/projects/{p}/resources/{id}")), "listed with a link");
    assert!(project.body.contains("https://notes.example.com/mcp") && project.body.contains("notes:write"));
    assert!(!project.body.contains(&first), "the secret is never shown again");

    let api = format!("/console/projects/{p}/resources/{id}");
    let shown = bob.get(&api).await;
    assert_eq!(shown.status, 200, "{}", shown.body);
    assert!(shown.body.contains("Read your notes") && shown.body.contains("Change your notes"), "its scopes");
    assert!(!shown.body.contains(&first), "the secret is never shown again");
    assert!(!shown.body.contains(&format!("{api}/delete")), "an editor is not offered deletion");
    let url = code_text(&shown, "metadata-url").expect("where to serve the metadata");
    assert_eq!(url, "https://notes.example.com/.well-known/oauth-protected-resource/mcp");
    let metadata: Value = serde_json::from_str(&code_text(&shown, "resource-metadata").expect("shown")).expect("JSON");
    assert_eq!(metadata["resource"], "https://notes.example.com/mcp");
    assert_eq!(metadata["authorization_servers"], json!([server.base]));
    assert_eq!(metadata["scopes_supported"], json!(["notes:read", "notes:write"]));

    // Edited: a new name, public, JWT, a scope added and one described anew; then a scope removed.
    let edit = [
        ("name", "Notes API"),
        ("visibility", "public"),
        ("token_format", "jwt"),
        ("scopes", "notes:admin|Administer your notes\nnotes:read|Read all your notes"),
    ];
    let saved = bob.post(&format!("{api}/edit"), &edit).await;
    assert_eq!(
        (saved.status, saved.headers["location"].to_str().ok()),
        (303, Some(&*format!("{api}?done=resource-saved")))
    );
    let removed = bob.post(&format!("{api}/scopes/remove"), &[("scope", "notes:write")]).await;
    assert_eq!(removed.status, 303, "{}", removed.body);
    assert!(!known(&server, "notes:write") && known(&server, "notes:admin"), "known at once");
    let shown = bob.get(&format!("{api}?done=scope-removed")).await;
    assert!(shown.body.contains("Scope removed"), "{}", shown.body);
    assert!(shown.body.contains("Notes API") && shown.body.contains("Read all your notes"));
    assert!(shown.body.contains("Administer your notes") && !shown.body.contains("Change your notes"));
    let r = server.store().resource(&id).await.expect("read").expect("the API");
    assert_eq!((r.visibility.as_str(), r.token_format.as_str()), ("public", "jwt"));
    let names: Vec<&str> = r.scopes.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["notes:read", "notes:admin"]);

    // A refused edit shows the page again with the reason, and changes nothing.
    let refused =
        bob.post(&format!("{api}/edit"), &[("name", ""), ("visibility", "public"), ("token_format", "jwt")]).await;
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains("An API needs a name"), "{}", refused.body);
    assert_eq!(server.store().resource(&id).await.expect("read").expect("the API").name, "Notes API");

    // Rotated: a second secret shown once, the first disabled, then deleted.
    let added = bob.post(&format!("{api}/secrets"), &[]).await;
    assert_eq!(added.status, 200, "{}", added.body);
    let second = code_text(&added, "resource-secret").expect("the new secret shown");
    let old = r.secrets[0].id.clone();
    assert_eq!(stored_hashes(&server, &id).await, vec![secret::hash(&first), secret::hash(&second)]);
    let disabled = bob.post(&format!("{api}/secrets/{old}/disable"), &[]).await;
    assert_eq!(disabled.headers["location"], format!("{api}?done=secret-disable#secrets").as_str());
    let deleted = bob.post(&format!("{api}/secrets/{old}/delete"), &[]).await;
    assert_eq!(deleted.status, 303);
    assert_eq!(stored_hashes(&server, &id).await, vec![secret::hash(&second)]);
    let last = server.store().resource(&id).await.expect("read").expect("the API").secrets[0].id.clone();
    let kept = bob.post(&format!("{api}/secrets/{last}/disable"), &[]).await;
    assert_eq!(kept.status, 409, "the only enabled secret stays: {}", kept.body);

    // An editor cannot delete it; an owner can, after confirming.
    let refused = bob.post(&format!("{api}/delete"), &[]).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("owners"), "{}", refused.body);
    assert!(known(&server, "notes:read"), "still registered");
    let confirm = alice.get(&format!("{api}/delete")).await;
    assert_eq!(confirm.status, 200);
    assert!(confirm.body.contains("Delete Notes API?") && confirm.body.contains(&format!("action=\"{api}/delete\"")));
    let gone = alice.post(&format!("{api}/delete"), &[]).await;
    assert_eq!(gone.headers["location"], format!("/console/projects/{p}?done=resource-deleted#resources").as_str());
    assert!(server.store().resource(&id).await.expect("read").is_none());
    assert!(!known(&server, "notes:read"), "forgotten at once");
    assert_eq!(alice.get(&api).await.status, 404);
    assert!(!alice.get(&format!("/console/projects/{p}")).await.body.contains(&api));
}

#[tokio::test]
async fn a_refused_registration_in_the_console_shows_the_form_again_and_others_see_nothing() {
    let server = TestServer::start().await;
    let alice = Dev::sign_in(&server, ALICE).await;
    let p = alice.project("Notes").await;
    let form = |uri: &'static str, scopes: &'static str| {
        [("uri", uri), ("name", "Notes <b>"), ("scopes", scopes), ("visibility", "public"), ("token_format", "jwt")]
    };
    let refused =
        alice.post(&format!("/console/projects/{p}/resources"), &form("http://notes.example.com", "a:b")).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("id=\"resource-error\""), "the reason is next to the form");
    assert!(refused.body.contains("absolute https URI"), "{}", refused.body);
    assert!(refused.body.contains("value=\"http://notes.example.com\""), "the values typed are kept");
    assert!(refused.body.contains("Notes &#60;b&#62;") || refused.body.contains("Notes &lt;b&gt;"), "escaped");
    assert!(!refused.body.contains("Notes <b>"));
    let twice = alice
        .post(&format!("/console/projects/{p}/resources"), &form("https://n.example.com", "a:b|One\na:b|Two"))
        .await;
    assert_eq!(twice.status, 409, "{}", twice.body);
    assert!(twice.body.contains("already defined"), "{}", twice.body);
    let r = server.store().project_resources(&p).await.expect("list");
    assert!(r.is_empty(), "nothing registered");

    let made = alice.post(&format!("/console/projects/{p}/resources"), &form("https://n.example.com", "a:b")).await;
    let id = code_text(&made, "resource-id").expect("registered");
    // Carol is no member: for her the API does not exist, and she changes nothing.
    let carol = Dev::sign_in(&server, CAROL).await;
    assert_eq!(carol.get(&format!("/console/projects/{p}/resources/{id}")).await.status, 404);
    let r = carol.post(&format!("/console/projects/{p}/resources/{id}/secrets"), &[]).await;
    assert_eq!(r.status, 404);
    // Nor is an API reached through another project than its own.
    let other = alice.project("Other").await;
    assert_eq!(alice.get(&format!("/console/projects/{other}/resources/{id}")).await.status, 404);
    assert_eq!(stored_hashes(&server, &id).await.len(), 1);
}

#[tokio::test]
async fn the_json_api_registers_lists_shows_changes_rotates_and_deletes_an_api() {
    let server = TestServer::start().await;
    let alice = Api::new(&server, ALICE).await;
    let bob = Api::new(&server, BOB).await;
    let carol = Api::new(&server, CAROL).await;
    let p = alice.project("Notes").await;
    member(&server, &p, BOB, ProjectRole::Editor).await;
    let list = format!("/console/api/v1/projects/{p}/resources");
    let body = json!({
        "uri": "https://notes.example.com/mcp",
        "name": "Notes",
        "scopes": [{ "name": "notes:read", "description": "Read your notes" }, { "name": "notes:write" }],
        "token_format": "jwt",
    });
    let (status, made) = bob.post(&list, body).await;
    assert_eq!(status, 201, "{made}");
    let id = made["resource_id"].as_str().expect("resource_id").to_owned();
    let first = made["secret"].as_str().expect("the secret, this once").to_owned();
    assert_eq!((made["visibility"].as_str(), made["token_format"].as_str()), (Some("project"), Some("jwt")));
    assert_eq!(stored_hashes(&server, &id).await, vec![secret::hash(&first)]);
    assert!(known(&server, "notes:write"), "known at once");

    let (status, listed) = bob.get(&list).await;
    assert_eq!((status, listed["resources"][0]["resource_id"].as_str()), (200, Some(&*id)));
    assert!(listed["resources"][0].get("secret").is_none(), "never shown again: {listed}");
    let one = format!("{list}/{id}");
    let (status, shown) = bob.get(&one).await;
    assert_eq!((status, scope_names(&shown)), (200, vec!["notes:read", "notes:write"]));
    assert_eq!(shown["secrets"].as_array().map(Vec::len), Some(1));

    let patch = json!({
        "name": "Notes API",
        "visibility": "public",
        "scopes": [{ "name": "notes:admin", "description": "Administer" }],
        "remove_scopes": ["notes:write"],
    });
    let (status, changed) = bob.call("PATCH", &one, Some(patch)).await;
    assert_eq!((status, scope_names(&changed)), (200, vec!["notes:read", "notes:admin"]), "{changed}");
    assert_eq!((changed["name"].as_str(), changed["visibility"].as_str()), (Some("Notes API"), Some("public")));
    assert!(known(&server, "notes:admin") && !known(&server, "notes:write"), "known at once");

    let (status, metadata) = bob.get(&format!("{one}/metadata")).await;
    assert_eq!(status, 200);
    assert_eq!(metadata["resource"], "https://notes.example.com/mcp");
    assert_eq!(metadata["authorization_servers"], json!([server.base]));
    assert_eq!(metadata["scopes_supported"], json!(["notes:read", "notes:admin"]));
    assert_eq!(metadata["resource_name"], "Notes API");

    let (status, added) = bob.post(&format!("{one}/secrets"), json!({})).await;
    assert_eq!(status, 201, "{added}");
    let second = added["secret"].as_str().expect("the new secret, this once");
    let old = shown["secrets"][0]["secret_id"].as_str().expect("secret_id");
    assert_eq!(stored_hashes(&server, &id).await, vec![secret::hash(&first), secret::hash(second)]);
    let (status, after) = bob.post(&format!("{one}/secrets/{old}/disable"), json!({})).await;
    assert_eq!((status, after["secrets"][0]["disabled"].as_bool()), (200, Some(true)));
    let (status, after) = bob.post(&format!("{one}/secrets/{old}/enable"), json!({})).await;
    assert_eq!((status, after["secrets"][0]["disabled"].as_bool()), (200, Some(false)));
    assert_error(&bob.call("DELETE", &format!("{one}/secrets/{old}"), None).await, 409, "conflict");
    bob.post(&format!("{one}/secrets/{old}/disable"), json!({})).await;
    let (status, _) = bob.call("DELETE", &format!("{one}/secrets/{old}"), None).await;
    assert_eq!(status, 200);
    assert_eq!(stored_hashes(&server, &id).await, vec![secret::hash(second)]);

    // Carol is no member: not found, whatever she asks; an API is not reached through another project.
    assert_error(&carol.get(&list).await, 404, "not_found");
    assert_error(&carol.get(&one).await, 404, "not_found");
    assert_error(&carol.call("DELETE", &one, None).await, 404, "not_found");
    let other = alice.project("Other").await;
    assert_error(&alice.get(&format!("/console/api/v1/projects/{other}/resources/{id}")).await, 404, "not_found");

    // An editor cannot delete it; an owner can.
    assert_error(&bob.call("DELETE", &one, None).await, 403, "forbidden");
    let (status, deleted) = alice.call("DELETE", &one, None).await;
    assert_eq!((status, deleted["resource_id"].as_str()), (200, Some(&*id)));
    assert!(!known(&server, "notes:read"), "forgotten at once");
    assert_error(&alice.get(&one).await, 404, "not_found");
    assert_eq!(alice.get(&list).await.1["resources"], json!([]));
}

#[tokio::test]
async fn bad_input_through_the_json_api_is_refused_in_its_error_format_and_changes_nothing() {
    let server = TestServer::start().await;
    let alice = Api::new(&server, ALICE).await;
    let p = alice.project("Notes").await;
    let list = format!("/console/api/v1/projects/{p}/resources");
    let new = |uri: &str, scopes: Value| json!({ "uri": uri, "name": "N", "scopes": scopes });
    let refused = alice.post(&list, new("http://notes.example.com", json!([]))).await;
    assert_error(&refused, 400, "invalid_request");
    assert!(refused.1["error_description"].as_str().is_some_and(|d| d.contains("absolute https URI")), "{}", refused.1);
    let twice = alice.post(&list, new("https://a.example.com", json!([{ "name": "a:b" }, { "name": "a:b" }]))).await;
    assert_error(&twice, 409, "conflict");
    assert!(twice.1["error_description"].as_str().is_some_and(|d| d.contains("\"a:b\" is already defined")));
    assert_error(
        &alice.post(&list, new("https://a.example.com", json!([{ "name": "openid" }]))).await,
        409,
        "conflict",
    );
    let barred = alice.post(&list, new("https://a.example.com", json!([{ "name": "a|b" }]))).await;
    assert_error(&barred, 400, "invalid_request");
    assert_eq!(barred.1["field"], "scopes");
    let everyone = json!({ "uri": "https://a.example.com", "name": "N", "visibility": "everyone" });
    let refused = alice.post(&list, everyone).await;
    assert_error(&refused, 400, "invalid_request");
    assert_eq!(refused.1["field"], "visibility");
    let unknown = json!({ "uri": "https://a.example.com", "name": "N", "audience": "x" });
    assert_error(&alice.post(&list, unknown).await, 400, "invalid_request");
    assert_eq!(alice.get(&list).await.1["resources"], json!([]), "nothing registered");
    assert!(!known(&server, "a:b"));

    let (status, made) = alice.post(&list, new("https://a.example.com", json!([{ "name": "a:b" }]))).await;
    assert_eq!(status, 201, "{made}");
    let one = format!("{list}/{}", made["resource_id"].as_str().expect("id"));
    let taken =
        alice.post(&list, new("https://b.example.com", json!([{ "name": "a:b", "description": "Mine" }]))).await;
    assert_error(&taken, 409, "conflict");
    assert!(taken.1["error_description"].as_str().is_some_and(|d| d.contains("a:b")), "{}", taken.1);
    assert_error(&alice.post(&list, new("https://a.example.com", json!([]))).await, 409, "conflict");
    let missing = alice.call("PATCH", &one, Some(json!({ "remove_scopes": ["nope"] }))).await;
    assert_error(&missing, 400, "invalid_request");
    let bad = alice.call("PATCH", &one, Some(json!({ "name": "", "scopes": [{ "name": "c:d" }] }))).await;
    assert_error(&bad, 400, "invalid_request");
    let (_, listed) = alice.get(&list).await;
    assert_eq!(listed["resources"].as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(
        (listed["resources"][0]["name"].as_str(), scope_names(&listed["resources"][0])),
        (Some("N"), vec!["a:b"])
    );
    assert!(!known(&server, "c:d"));
    assert_error(&alice.get(&format!("{list}/res_nope/metadata")).await, 404, "not_found");
}

#[tokio::test]
async fn a_scope_registered_in_the_console_or_its_api_is_asked_for_at_once_with_its_description() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let dev = Dev::sign_in(&server, BOB).await;
    member(&server, &app.project_id, BOB, ProjectRole::Editor).await;
    let api = Api::new(&server, CAROL).await;
    member(&server, &app.project_id, CAROL, ProjectRole::Editor).await;
    server.user(ALICE).await;

    let form = [
        ("uri", "https://notes.example.com/mcp"),
        ("name", "Team Notes"),
        ("scopes", "notes:read|Read your team notes"),
        ("visibility", "project"),
        ("token_format", "opaque"),
    ];
    let made = dev.post(&format!("/console/projects/{}/resources", app.project_id), &form).await;
    assert_eq!(made.status, 200, "{}", made.body);
    let body = json!({
        "uri": "https://wiki.example.com",
        "name": "Team Wiki",
        "scopes": [{ "name": "wiki:read", "description": "Read the team wiki" }],
    });
    let (status, _) = api.post(&format!("/console/api/v1/projects/{}/resources", app.project_id), body).await;
    assert_eq!(status, 201);

    let pkce = Pkce::new();
    let redirect = "http://127.0.0.1:5555/callback";
    let url = authorize_url(&server, &app, &["notes:read", "wiki:read"], &pkce, redirect, "s");
    let consent = server.browser().consent_page(&url, ALICE).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    for shown in ["Read your team notes", "Team Notes", "Read the team wiki", "Team Wiki"] {
        assert!(consent.body.contains(shown), "{shown} on the consent page: {}", consent.body);
    }
}
