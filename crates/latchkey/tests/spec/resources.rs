//! APIs as resources with the admin CLI (`latchkey admin resource`): registered with scopes, a token format and an
//! introspection secret shown once; changed, listed, shown and deleted; refused, in the CLI's error form, for an
//! identifier that is no https URI or is taken, and for a scope name that is taken.

use crate::cli::{admin, json};
use serde_json::Value;
use std::path::Path;

fn project(d: &Path) -> String {
    assert_eq!(admin(d, &["migrate"], "").0, 0);
    json(&admin(d, &["project", "create", "--name", "APIs"], "").1)["project_id"].as_str().expect("id").to_owned()
}

fn ok(d: &Path, args: &[&str]) -> Value {
    let (code, out, err) = admin(d, args, "");
    assert_eq!(code, 0, "{args:?}: {err}");
    json(&out)
}

/// The exit code and the `error` of a refused command.
fn refused(d: &Path, args: &[&str]) -> (i32, String) {
    let (code, out, err) = admin(d, args, "");
    assert!(out.trim().is_empty(), "nothing on stdout: {out}");
    (code, json(&err)["error"].as_str().unwrap_or_default().to_owned())
}

#[test]
fn an_api_is_registered_changed_listed_and_deleted_with_the_cli() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let p = project(d);
    let made = ok(
        d,
        &[
            "resource",
            "create",
            "--project",
            &p,
            "--uri",
            "https://notes.example.com/mcp",
            "--name",
            "Notes",
            "--scope",
            "notes:read|Read your notes",
            "--scope",
            "https://notes.example.com/write|Write | and delete",
            "--token-format",
            "jwt",
        ],
    );
    let id = made["resource_id"].as_str().expect("resource_id").to_owned();
    assert!(id.starts_with("res_"), "{made}");
    assert_eq!(made["uri"], "https://notes.example.com/mcp");
    assert!(made["secret"].as_str().is_some_and(|s| s.len() > 40), "the secret, shown once: {made}");
    assert_eq!((made["visibility"].as_str(), made["token_format"].as_str()), (Some("project"), Some("jwt")));
    assert_eq!(made["scopes"][1]["name"], "https://notes.example.com/write");
    assert_eq!(made["scopes"][1]["description"], "Write | and delete", "the text after the first bar");

    let shown = ok(d, &["resource", "show", "--resource-id", &id]);
    assert!(shown.get("secret").is_none(), "never shown again: {shown}");
    assert_eq!(shown["secrets"].as_array().map(Vec::len), Some(1));

    let changed = ok(
        d,
        &[
            "resource",
            "update",
            "--resource-id",
            &id,
            "--scope",
            "notes:admin|Administer",
            "--remove-scope",
            "notes:read",
            "--visibility",
            "public",
            "--token-format",
            "opaque",
        ],
    );
    let names: Vec<&str> =
        changed["scopes"].as_array().expect("scopes").iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["https://notes.example.com/write", "notes:admin"], "{changed}");
    assert_eq!((changed["visibility"].as_str(), changed["token_format"].as_str()), (Some("public"), Some("opaque")));

    let metadata = ok(d, &["resource", "metadata", "--resource-id", &id]);
    assert_eq!(metadata["resource"], "https://notes.example.com/mcp", "RFC 9728: the API's own identifier");
    assert_eq!(metadata["authorization_servers"], serde_json::json!(["https://localhost:8443"]));
    assert_eq!(metadata["scopes_supported"], serde_json::json!(["https://notes.example.com/write", "notes:admin"]));
    assert_eq!(metadata["resource_name"], "Notes");

    let rotated = ok(d, &["resource", "secret", "add", "--resource-id", &id]);
    assert!(rotated["secret"].is_string());
    let listed = ok(d, &["resource", "list", "--project", &p]);
    assert_eq!(listed["resources"][0]["secrets"].as_array().map(Vec::len), Some(2), "{listed}");

    ok(d, &["resource", "delete", "--resource-id", &id]);
    assert_eq!(refused(d, &["resource", "show", "--resource-id", &id]).0, 3, "not found");
    assert_eq!(ok(d, &["resource", "list", "--project", &p])["resources"], serde_json::json!([]));
}

#[test]
fn a_registration_that_breaks_a_rule_is_refused_and_leaves_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let p = project(d);
    let create = |uri: &str, scope: &str| {
        vec!["resource", "create", "--project", &p, "--uri", uri, "--name", "N", "--scope", scope]
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| refused(d, &args.iter().map(String::as_str).collect::<Vec<_>>());
    for bad in ["http://notes.example.com", "https://notes.example.com/#frag", "notes"] {
        let (code, error) = run(create(bad, "a:b"));
        assert_eq!((code, error.as_str()), (5, "invalid_request"), "{bad}");
    }
    // The data API's own identifier is taken (the default public URL's).
    let (_, error) = run(create("https://localhost:8443/video/v3", "a:b"));
    assert_eq!(error, "conflict");
    let (_, error) = run(create("https://notes.example.com", "openid"));
    assert_eq!(error, "conflict", "a well-known scope's name");
    let (_, error) = run(create("https://notes.example.com", "two words"));
    assert_eq!(error, "invalid_request");
    ok(
        d,
        &["resource", "create", "--project", &p, "--uri", "https://notes.example.com", "--name", "N", "--scope", "a:b"],
    );
    assert_eq!(run(create("https://notes.example.com", "c:d")).1, "conflict", "the identifier is taken");
    assert_eq!(run(create("https://other.example.com", "a:b")).1, "conflict", "the scope is taken");
    assert_eq!(ok(d, &["resource", "list", "--project", &p])["resources"].as_array().map(Vec::len), Some(1));
    let (code, _) = run(vec![
        "resource".into(),
        "create".into(),
        "--project".into(),
        p.clone(),
        "--uri".into(),
        "https://x.example.com".into(),
        "--name".into(),
        "N".into(),
        "--visibility".into(),
        "everyone".into(),
    ]);
    assert_eq!(code, 5);
}
