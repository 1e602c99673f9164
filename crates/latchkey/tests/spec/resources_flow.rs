//! A registered API's scopes in the code flow: asked for by a client of its project (or any client, when the API
//! is public), shown on the consent page with the API's name and each scope's description, granted, and named by
//! the token response and introspection; `invalid_scope` for a client of another project; listed in the metadata
//! only when public.

use crate::support::*;
use latchkey_admin::resources::{resource_create, Builtin, CreatedResource, NewResource};
use latchkey_admin::Actor;
use latchkey_core::resource::{TokenFormat, Visibility};
use latchkey_core::time::UnixTime;

const ALICE: &str = "alice@example.com";

/// Registers an API in `project` with the scope `name|description`, and has the server read it.
async fn register(server: &TestServer, project: &str, uri: &str, scope: &str, visibility: Visibility) {
    register_with(server, project, uri, scope, visibility, TokenFormat::Opaque).await;
}

/// Registers an API in `project` with the scope `name|description`, its visibility and token format, and has the
/// server read it.
pub(crate) async fn register_with(
    server: &TestServer,
    project: &str,
    uri: &str,
    scope: &str,
    visibility: Visibility,
    token_format: TokenFormat,
) -> CreatedResource {
    let registry = latchkey_core::scope::ScopeRegistry::new("https://latchkey.dev");
    let data_api = server.url("/video/v3");
    let new = NewResource {
        project_id: project.into(),
        uri: uri.into(),
        name: "Notes".into(),
        scopes: vec![scope.into()],
        visibility,
        token_format,
    };
    let builtin = Builtin { scopes: &registry, data_api: &data_api };
    let created = resource_create(server.store(), &Actor::Operator, new, &builtin, UnixTime(1_700_000_000))
        .await
        .expect("register");
    server.running.state.scopes.reload(server.store()).await.expect("reload");
    created
}

#[tokio::test]
async fn a_client_of_the_apis_project_gets_its_scope_after_consent_and_introspection_names_it() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    register(
        &server,
        &app.project_id,
        "https://notes.example.com/mcp",
        "notes:read|Read your notes",
        Visibility::Project,
    )
    .await;
    let pkce = Pkce::new();
    let redirect = "http://127.0.0.1:5555/callback";
    let url = authorize_url(&server, &app, &["notes:read", "openid"], &pkce, redirect, "s");
    let browser = server.browser();
    let consent = browser.consent_page(&url, ALICE).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    assert!(consent.body.contains("Read your notes") && consent.body.contains("Notes"), "{}", consent.body);
    let t = server.tokens(&app, ALICE, &["notes:read", "openid"]).await;
    assert_eq!(t.scope, "openid notes:read", "the registry's order: well-known scopes first");
    let answer = crate::rfc7662_introspection::introspect(&server, &app, &t.access_token).await;
    assert_eq!((answer["active"].as_bool(), answer["scope"].as_str()), (Some(true), Some("openid notes:read")));
    assert_eq!(answer["aud"], "https://notes.example.com/mcp", "no data-API scope: the API's alone: {answer}");
    let listed = scopes_supported(&discovery(&server).await);
    assert!(!listed.iter().any(|s| s == "notes:read"), "a project's API is not advertised: {listed:?}");
}

#[tokio::test]
async fn another_projects_client_gets_invalid_scope_unless_the_api_is_public() {
    let server = TestServer::start().await;
    let (owner, other) = (server.app().await, server.app().await);
    server.user(ALICE).await;
    register(&server, &owner.project_id, "https://notes.example.com", "notes:read|Read", Visibility::Project).await;
    register(&server, &owner.project_id, "https://wiki.example.com", "wiki:read|Read the wiki", Visibility::Public)
        .await;
    let pkce = Pkce::new();
    let redirect = "http://127.0.0.1:5555/callback";
    let refused = server.browser().get(&authorize_url(&server, &other, &["notes:read"], &pkce, redirect, "s")).await;
    assert_eq!(refused.status, 303, "an error redirect: {}", refused.body);
    assert_eq!(refused.redirect_param("error").as_deref(), Some("invalid_scope"));
    let t = server.tokens(&other, ALICE, &["wiki:read"]).await;
    assert_eq!(t.scope, "wiki:read");
    let doc = discovery(&server).await;
    let listed = scopes_supported(&doc);
    assert!(listed.iter().any(|s| s == "wiki:read") && !listed.iter().any(|s| s == "notes:read"), "{listed:?}");
    let resources = serde_json::json!([server.url("/video/v3"), "https://wiki.example.com"]);
    assert_eq!(doc["protected_resources"], resources, "RFC 9728 §4: the data API and the public APIs");
}
