//! Organisations (`docs/organisations.md`, `docs/decisions.md`, "Organisations": the authorization endpoint's
//! `org_internal` and `admin_policy_enforced`, trusted apps' all-or-none consent): an internal project's audience,
//! restricted scopes, app access (trusted all or none, limited, specific, blocked), domain-wide delegation, the strict
//! revocation of what a changed policy no longer allows, and the operator CLI.

use crate::login_consent::{exchange, is_consent, page_error_code, scope_checkboxes, url_with, ALICE, REDIRECT};
use crate::support::*;
use latchkey_admin::orgs;
use latchkey_admin::Actor;
use latchkey_core::org::{AppAccess, Audience, OrgChange};
use latchkey_core::scope::ScopeSet;
use latchkey_core::time::UnixTime;

/// A member of the organisation, by its domain.
pub(crate) const CAROL: &str = "carol@corp.example";
const NOW: UnixTime = UnixTime(1_700_000_000);

/// An organisation with the domain `corp.example` (CAROL joins it when created); returns its id.
pub(crate) async fn corp(server: &TestServer) -> String {
    let created = orgs::org_create(server.store(), &Actor::Operator, "Corp", &["corp.example".into()], NOW).await;
    created.expect("org").org_id
}

/// Applies a policy change as the operator.
pub(crate) async fn change(server: &TestServer, org: &str, change: OrgChange) -> u64 {
    orgs::org_change(server.store(), &Actor::Operator, org, change, NOW).await.expect("change").revoked_grants
}

/// The registry's bits for scope identifiers.
fn bits(server: &TestServer, ids: &[&str]) -> ScopeSet {
    server.running.state.scopes.get().parse(&ids.join(" ")).expect("scopes")
}

/// Opens the authorization URL for `scopes` as `email` (signing in); returns the page and the PKCE pair.
async fn authorize(server: &TestServer, app: &App, email: &str, scopes: &[&str]) -> (Page, Pkce, Browser) {
    let browser = server.browser();
    let pkce = Pkce::new();
    let page = browser.consent_page(&url_with(server, app, scopes, &pkce, &[]), email).await;
    (page, pkce, browser)
}

/// Asserts a user-facing refusal: a 403 page with the code, never a redirect to the app.
fn assert_refused(page: &Page, code: &str) {
    assert_eq!((page.status, page_error_code(page).as_deref()), (403, Some(code)), "{}", page.body);
    assert!(page.headers.get("location").is_none(), "never a redirect to the app");
}

#[tokio::test]
async fn an_internal_projects_client_shows_org_internal_to_any_other_account_before_consent() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    server.user(CAROL).await;
    let org = corp(&server).await;
    let placed = orgs::project_place(
        server.store(),
        &Actor::Operator,
        &app.project_id,
        Some(Some(&org)),
        Some(Audience::Internal),
        NOW,
    )
    .await
    .expect("place");
    assert_eq!((placed.org_id.as_deref(), placed.audience), (Some(org.as_str()), "internal"));
    let (outside, ..) = authorize(&server, &app, ALICE, &[READONLY]).await;
    assert_refused(&outside, "org_internal");
    assert!(!is_consent(&outside));
    // Another account may be let in: the page offers the account chooser.
    let another = outside.body.split("id=\"another-account\"").nth(1).expect("a link to use another account");
    assert!(another.contains("prompt=select_account"), "{}", outside.body);
    let (member, ..) = authorize(&server, &app, CAROL, &[READONLY]).await;
    assert!(is_consent(&member), "a member gets the consent page: {}", member.body);
}

#[tokio::test]
async fn a_member_asking_for_a_restricted_scope_sees_admin_policy_enforced_naming_app_and_permissions() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    server.user(CAROL).await;
    let org = corp(&server).await;
    change(&server, &org, OrgChange::ScopeAccess { scopes: bits(&server, &[UPLOAD]), restricted: true }).await;
    let (refused, ..) = authorize(&server, &app, CAROL, &[READONLY, UPLOAD]).await;
    assert_refused(&refused, "admin_policy_enforced");
    assert!(refused.body.contains(&app.client_id), "names the client: {}", refused.body);
    assert!(refused.body.contains("Manage your videos"), "names the blocked permission: {}", refused.body);
    assert!(!refused.body.contains("View your account"), "and only it: {}", refused.body);
    let (allowed, ..) = authorize(&server, &app, CAROL, &[READONLY]).await;
    assert!(is_consent(&allowed), "an unrestricted scope is fine for a limited app");
    let (outside, ..) = authorize(&server, &app, ALICE, &[READONLY, UPLOAD]).await;
    assert!(is_consent(&outside), "accounts outside the organisation are not concerned");

    let specific = Some(AppAccess::Specific(bits(&server, &[UPLOAD])));
    change(&server, &org, OrgChange::AppAccess { client_id: app.client_id.clone(), access: specific }).await;
    let (listed, ..) = authorize(&server, &app, CAROL, &[UPLOAD]).await;
    assert!(is_consent(&listed), "specifically allowed");
    let (not_listed, ..) = authorize(&server, &app, CAROL, &[READONLY]).await;
    assert_refused(&not_listed, "admin_policy_enforced");
}

#[tokio::test]
async fn a_trusted_apps_consent_page_has_no_checkboxes_and_allow_grants_every_requested_scope() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(CAROL).await;
    let org = corp(&server).await;
    change(&server, &org, OrgChange::ScopeAccess { scopes: bits(&server, &[UPLOAD]), restricted: true }).await;
    let trusted = Some(AppAccess::Trusted);
    change(&server, &org, OrgChange::AppAccess { client_id: app.client_id.clone(), access: trusted }).await;
    let (consent, pkce, browser) = authorize(&server, &app, CAROL, &[READONLY, UPLOAD]).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    assert!(scope_checkboxes(&consent).is_empty(), "no per-scope choice");
    assert!(consent.body.contains("id=\"all-or-none\"") && consent.body.contains("Manage your videos"));
    let done = browser.decide(&consent, &[], "allow").await;
    let code = done.redirect_param("code").expect("Allow with nothing ticked grants all");
    let tokens = exchange(&server, &app, &code, &pkce).await;
    let mut granted: Vec<&str> = tokens.scope.split(' ').collect();
    granted.sort_unstable();
    assert_eq!(granted, vec![READONLY, UPLOAD]);

    let (again, _, browser) = authorize(&server, &app, CAROL, &[READONLY, UPLOAD]).await;
    let denied = browser.decide(&again, &[READONLY], "deny").await;
    assert_eq!(denied.redirect_param("error").as_deref(), Some("access_denied"), "Deny grants none");
}

#[tokio::test]
async fn a_delegated_app_skips_consent_for_its_scopes_and_is_refused_outside_them() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(CAROL).await;
    let org = corp(&server).await;
    // The app is one of the organisation's own projects': its identity is vouched for.
    let external = Some(Audience::External);
    orgs::project_place(server.store(), &Actor::Operator, &app.project_id, Some(Some(&org)), external, NOW)
        .await
        .expect("placed");
    let delegated = Some(bits(&server, &[READONLY]));
    change(&server, &org, OrgChange::Delegate { client_id: app.client_id.clone(), scopes: delegated }).await;
    let (skipped, pkce, browser) = authorize(&server, &app, CAROL, &[READONLY, "openid"]).await;
    assert_eq!(skipped.status, 303, "no consent page after sign-in: {}", skipped.body);
    assert!(skipped.headers["location"].to_str().expect("location").starts_with(REDIRECT));
    let tokens = exchange(&server, &app, &skipped.redirect_param("code").expect("code"), &pkce).await;
    assert!(tokens.scope.contains(READONLY) && tokens.id_token.is_some(), "{}", tokens.scope);
    let silent = browser.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[("prompt", "none")])).await;
    assert!(silent.redirect_param("code").is_some(), "prompt=none needs no consent either: {}", silent.body);
    let (outside, ..) = authorize(&server, &app, CAROL, &[READONLY, UPLOAD]).await;
    assert_refused(&outside, "admin_policy_enforced");
}

#[tokio::test]
async fn a_delegated_app_whose_identity_is_not_assured_gets_the_all_or_none_page_and_no_silent_code() {
    let server = TestServer::start().await;
    let app = server.app().await; // a desktop client of a project outside the organisation
    server.user(CAROL).await;
    let org = corp(&server).await;
    let delegated = Some(bits(&server, &[READONLY]));
    change(&server, &org, OrgChange::Delegate { client_id: app.client_id.clone(), scopes: delegated }).await;
    let registry = &server.running.state.scopes.get();
    let shown = orgs::org_show(server.store(), &Actor::Operator, &org, registry).await.expect("show");
    assert_eq!((shown.apps[0].delegated_consent, shown.apps[0].assured_by), (Some("all_or_none"), None));
    let (consent, pkce, browser) = authorize(&server, &app, CAROL, &[READONLY]).await;
    assert_eq!(consent.status, 200, "a consent page, not a code: {}", consent.body);
    assert!(consent.body.contains("all-or-none"), "all or none, no per-scope choice");
    let silent = browser.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[("prompt", "none")])).await;
    assert_eq!(silent.redirect_param("error").as_deref(), Some("consent_required"), "{}", silent.body);
    assert!(silent.redirect_param("code").is_none());
    // Allow still grants what was delegated.
    let done = browser.decide(&consent, &[], "allow").await;
    let tokens = exchange(&server, &app, &done.redirect_param("code").expect("code"), &pkce).await;
    assert_eq!(tokens.scope, READONLY);
    // With App Check enforced, the platform vouches for the app: no page.
    let mut client = server.store().client(&app.client_id).await.expect("get").expect("client");
    client.app_check.state = latchkey_core::app_check_setting::AppCheckState::Enforced;
    assert!(server.store().update_client(&client).await.expect("enforce"));
    let shown = orgs::org_show(server.store(), &Actor::Operator, &org, registry).await.expect("show");
    assert_eq!((shown.apps[0].delegated_consent, shown.apps[0].assured_by), (Some("none"), Some("app_check_enforced")));
    let skipped = browser.get(&url_with(&server, &app, &[READONLY], &Pkce::new(), &[("prompt", "none")])).await;
    assert!(skipped.redirect_param("code").is_some(), "{}", skipped.body);
}

#[tokio::test]
async fn blocking_an_app_refuses_new_authorizations_and_revokes_what_it_had() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(CAROL).await;
    let org = corp(&server).await;
    let (consent, pkce, browser) = authorize(&server, &app, CAROL, &[READONLY]).await;
    let done = browser.decide(&consent, &[READONLY], "allow").await;
    let tokens = exchange(&server, &app, &done.redirect_param("code").expect("code"), &pkce).await;
    let rt = tokens.refresh_token.expect("refresh token");
    assert_eq!(server.refresh(&app, &rt).await.status(), 200);
    // The app's backend listens to security events (`docs/events.md`): the policy's revocation is one.
    let streaming = latchkey_admin::streams::Streaming {
        store: server.store(),
        keys: &server.running.state.keys,
        issuer: &server.base,
        allow_loopback_http: false,
        min_verification_interval: 30,
    };
    let settings = latchkey_admin::streams::StreamSettings {
        delivery: Some(latchkey_core::events::stream::Delivery::Poll),
        ..Default::default()
    };
    let stream = streaming.create(&Actor::Operator, &app.client_id, settings, UnixTime(1)).await.expect("stream");

    let blocked = Some(AppAccess::Blocked);
    assert_eq!(
        change(&server, &org, OrgChange::AppAccess { client_id: app.client_id.clone(), access: blocked }).await,
        1
    );
    assert_eq!(error_of(server.refresh(&app, &rt).await).await, (400, "invalid_grant".into()), "revoked at once");
    let (refused, ..) = authorize(&server, &app, CAROL, &[READONLY]).await;
    assert_refused(&refused, "admin_policy_enforced");
    let carol = server.store().user_by_email(CAROL).await.expect("get").expect("carol");
    let events = server.store().account_events(&carol.id).await.expect("events");
    assert!(events.iter().any(|e| e.client_id.as_deref() == Some(&app.client_id)), "a tokens_revoked event");
    let sets = server.store().deliveries(&stream.stream_id, 10).await.expect("deliveries");
    let revoked = sets.iter().find(|d| d.event_type.ends_with("/token-revoked")).expect("a token-revoked SET");
    let payload: serde_json::Value = serde_json::from_str(&revoked.payload).expect("json");
    assert_eq!(payload["token"], rt[..26], "names the grant the policy revoked by its refresh tokens' prefix");
    assert_eq!(revoked.subject, carol.id);
}

#[tokio::test]
async fn bad_input_gets_a_clear_error_and_changes_nothing() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(CAROL).await;
    let store = server.store();
    let org = corp(&server).await;
    let taken = orgs::org_create(store, &Actor::Operator, "Other", &["CORP.example".into()], NOW).await;
    assert!(taken.unwrap_err().to_string().contains("another organisation"), "a domain claimed elsewhere");
    assert_eq!(orgs::org_list(store, &Actor::Operator).await.expect("list").orgs.len(), 1, "nothing was created");
    let bad = orgs::org_create(store, &Actor::Operator, "Bad", &["not a domain".into()], NOW).await;
    assert!(bad.unwrap_err().to_string().starts_with("invalid"));
    let unknown = orgs::org_change(store, &Actor::Operator, "org_nope", OrgChange::TrustInternalApps(true), NOW).await;
    assert!(unknown.unwrap_err().to_string().starts_with("not found: organisation"));
    let no_client = OrgChange::AppAccess { client_id: "nope".into(), access: Some(AppAccess::Blocked) };
    let e = orgs::org_change(store, &Actor::Operator, &org, no_client, NOW).await.unwrap_err();
    assert_eq!(e.to_string(), "not found: client nope");
    let registry = &server.running.state.scopes.get();
    assert!(orgs::data_scopes(registry, &["https://latchkey.dev/auth/nope".into()]).is_err(), "no such scope");
    assert!(orgs::data_scopes(registry, &["openid".into()]).is_err(), "identity scopes are not controlled");
    assert!(orgs::app_access(registry, "specific", &[]).is_err(), "specific lists its scopes");

    server.user(ALICE).await;
    let alice = store.user_by_email(ALICE).await.expect("get").expect("alice");
    let not_admin = Actor::Developer(alice);
    let e = orgs::org_change(store, &not_admin, &org, OrgChange::TrustInternalApps(true), NOW).await.unwrap_err();
    assert_eq!(e.to_string(), format!("not found: organisation {org}"), "a non-admin is told it does not exist");
    let e = orgs::project_place(store, &Actor::Operator, &app.project_id, Some(None), Some(Audience::Internal), NOW);
    assert!(e.await.unwrap_err().to_string().contains("needs an organisation"));
    let detail = orgs::org_show(store, &Actor::Operator, &org, registry).await.expect("show");
    assert!(!detail.policy.trust_internal_apps && detail.apps.is_empty(), "nothing changed");

    // A project in an organisation is its administrators' to move or open up, not any editor's.
    let editor = latchkey_admin::members::parse_role("editor").expect("role");
    latchkey_admin::members::member_add(store, &Actor::Operator, &app.project_id, ALICE, editor, NOW)
        .await
        .expect("alice edits the project");
    let internal = Some(Audience::Internal);
    orgs::project_place(store, &Actor::Operator, &app.project_id, Some(Some(&org)), internal, NOW)
        .await
        .expect("place");
    let alice = Actor::Developer(store.user_by_email(ALICE).await.expect("get").expect("alice"));
    let opened = orgs::project_place(store, &alice, &app.project_id, None, Some(Audience::External), NOW).await;
    assert_eq!(opened.unwrap_err().to_string(), format!("not found: organisation {org}"));
    assert_eq!(store.project(&app.project_id).await.expect("get").expect("project").audience, Audience::Internal);
}

#[tokio::test]
async fn an_editor_who_administers_an_organisation_cannot_move_the_owners_project_into_it() {
    let server = TestServer::start().await;
    let store = server.store();
    let app = server.app().await;
    let org = corp(&server).await;
    server.user(CAROL).await;
    orgs::org_add_member(store, &Actor::Operator, &org, CAROL, true, NOW).await.expect("carol administers it");
    let editor = latchkey_admin::members::parse_role("editor").expect("role");
    latchkey_admin::members::member_add(store, &Actor::Operator, &app.project_id, CAROL, editor, NOW)
        .await
        .expect("carol edits the project");
    let carol = Actor::Developer(store.user_by_email(CAROL).await.expect("get").expect("carol"));
    let internal = Some(Audience::Internal);
    let e = orgs::project_place(store, &carol, &app.project_id, Some(Some(&org)), internal, NOW).await.unwrap_err();
    assert!(e.to_string().starts_with("forbidden"), "{e}");
    assert_eq!(store.project(&app.project_id).await.expect("get").expect("project").org_id, None, "not moved");
    // An owner who administers the organisation may.
    let owner = latchkey_admin::members::parse_role("owner").expect("role");
    latchkey_admin::members::member_set_role(store, &Actor::Operator, &app.project_id, CAROL, owner)
        .await
        .expect("carol owns the project");
    let carol = Actor::Developer(store.user_by_email(CAROL).await.expect("get").expect("carol"));
    orgs::project_place(store, &carol, &app.project_id, Some(Some(&org)), internal, NOW).await.expect("placed");
}

#[tokio::test]
async fn a_consent_page_shown_before_the_app_became_trusted_is_shown_again_not_taken_for_all() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(CAROL).await;
    let org = corp(&server).await;
    let (granular, _, browser) = authorize(&server, &app, CAROL, &[READONLY, UPLOAD]).await;
    assert_eq!(scope_checkboxes(&granular).len(), 2);
    let trusted = Some(AppAccess::Trusted);
    change(&server, &org, OrgChange::AppAccess { client_id: app.client_id.clone(), access: trusted }).await;
    let again = browser.decide(&granular, &[READONLY], "allow").await;
    assert_eq!(again.status, 400, "{}", again.body);
    assert!(again.redirect_param("code").is_none() && again.body.contains("changed while the page was open"));
    assert!(again.body.contains("id=\"all-or-none\""), "the page as it stands now");
}

#[test]
fn the_operator_cli_manages_organisations_and_prints_json() {
    use crate::cli::{admin, json};
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    assert_eq!(admin(d, &["migrate"], "").0, 0);
    let carol = json(&admin(d, &["user", "create", "--email", CAROL, "--password-stdin"], "a-passw0rd-of-carol\n").1);
    let carol = carol["user_id"].as_str().expect("user_id").to_owned();
    admin(d, &["user", "create", "--email", ALICE, "--password-stdin"], "a-passw0rd-of-alice\n");
    let (code, out, err) = admin(d, &["org", "create", "--name", "Corp", "--domain", "corp.example"], "");
    assert_eq!(code, 0, "{err}");
    let org = json(&out)["org_id"].as_str().expect("org_id").to_owned();
    let run = |args: &[&str]| {
        let mut full = vec!["org"];
        full.extend_from_slice(args);
        let (code, out, err) = admin(d, &full, "");
        assert_eq!(code, 0, "{args:?}: {err}");
        json(&out)
    };
    assert_eq!(run(&["add-admin", "--org", &org, "--email", CAROL])["revoked_grants"], 0);
    assert_eq!(run(&["add-member", "--org", &org, "--email", ALICE])["org_id"], org.as_str());
    assert_eq!(run(&["remove-member", "--org", &org, "--email", ALICE])["org_id"], org.as_str());
    run(&["add-domain", "--org", &org, "--domain", "corp.test"]);
    let project =
        json(&admin(d, &["project", "create", "--name", "Internal"], "").1)["project_id"].as_str().unwrap().to_owned();
    let client = admin(d, &["client", "create", "--project", &project, "--type", "desktop", "--name", "Tool"], "");
    let client = json(&client.1)["client_id"].as_str().expect("client_id").to_owned();
    let placed = admin(d, &["project", "update", "--project", &project, "--org", &org, "--audience", "internal"], "");
    assert_eq!((json(&placed.1)["audience"].as_str(), placed.0), (Some("internal"), 0), "{}", placed.2);
    run(&["app-access", "--org", &org, "--client", &client, "--access", "specific", "--scope", UPLOAD]);
    run(&["scope-access", "--org", &org, "--scope", UPLOAD, "--restricted"]);
    run(&["trust-internal-apps", "--org", &org, "on"]);
    run(&["delegate", "--org", &org, "--client", &client, "--scope", READONLY]);
    run(&["default-access", "--org", &org, "--access", "blocked"]);
    run(&["policy", "--org", &org, "--require-2sv", "on"]);
    run(&["policy", "--org", &org, "--passkeys-only", "on"]);
    run(&["policy", "--org", &org, "--passkeys-only", "off"]);
    let (code, ..) = admin(d, &["org", "policy", "--org", &org], "");
    assert_eq!(code, 2, "a policy change names at least one flag");
    let shown = run(&["show", "--org", &org]);
    let sign_in = (shown["policy"]["require_2sv"].as_bool(), shown["policy"]["passkeys_only"].as_bool());
    assert_eq!(sign_in, (Some(true), Some(false)), "each flag changes only its own setting");
    assert_eq!(shown["domains"], serde_json::json!(["corp.example", "corp.test"]));
    assert_eq!(shown["members"][0]["user_id"], carol.as_str());
    assert_eq!(shown["members"][0]["admin"], true);
    assert_eq!(shown["policy"]["restricted_scopes"], serde_json::json!([UPLOAD]));
    assert_eq!(
        (shown["policy"]["trust_internal_apps"].as_bool(), shown["policy"]["default_access"].as_str()),
        (Some(true), Some("blocked"))
    );
    assert_eq!(shown["apps"][0]["access"], "specific");
    assert_eq!(shown["apps"][0]["delegated_scopes"], serde_json::json!([READONLY]));
    assert_eq!(run(&["list"])["orgs"].as_array().expect("orgs").len(), 1);

    let (code, _, err) = admin(d, &["org", "show", "--org", "org_nope"], "");
    assert_eq!(code, 3, "not found: {err}");
    assert!(json(&err)["error_description"].as_str().is_some_and(|m| m.contains("organisation")), "{err}");
    let (code, _, err) = admin(d, &["org", "create", "--name", "Copy", "--domain", "CORP.example"], "");
    assert_eq!(code, 4, "a domain claimed by another organisation is a conflict: {err}");
    let (code, _, err) = admin(d, &["org", "scope-access", "--org", &org, "--scope", "nope", "--restricted"], "");
    assert_eq!(code, 5, "a scope that does not exist: {err}");
    let (code, ..) = admin(d, &["org", "app-access", "--org", &org, "--client", &client, "--access", "sometimes"], "");
    assert_eq!(code, 5);
}
