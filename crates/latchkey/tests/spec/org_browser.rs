//! Organisations in a real browser (headless Chromium): an outside account on an internal project's client sees
//! `org_internal`; a member whose organisation restricts a scope sees `admin_policy_enforced`; a trusted client's
//! consent page has no per-scope checkboxes and grants all; a domain-wide-delegated client skips the consent page;
//! and after the administrator blocks a client on the console's organisation page, a new authorization is refused.

use crate::account_browser::sign_in;
use crate::browser::{find, with_chrome, Loopback};
use crate::console_browser::shot;
use crate::organisations::{change, corp, CAROL};
use crate::support::*;
use fantoccini::{Client, Locator};
use latchkey_admin::{orgs, Actor};
use latchkey_core::org::{AppAccess, Audience, OrgChange};
use latchkey_core::time::UnixTime;

const ALICE: &str = "alice@example.com";

/// The error code of the error page the browser shows.
async fn error_code(browser: &Client) -> String {
    find(browser, "#error-code").await.text().await.expect("text")
}

#[tokio::test]
async fn organisation_policies_in_chromium_internal_restricted_trusted_delegated_and_blocked() {
    with_chrome(|browser| async move {
        let server = TestServer::start().await;
        let (internal, photos, sync) = (server.app().await, server.app().await, server.app().await);
        server.user(ALICE).await;
        server.user(CAROL).await;
        let org = corp(&server).await;
        let now = UnixTime(1_700_000_000);
        let store = server.store();
        orgs::org_add_member(store, &Actor::Operator, &org, CAROL, true, now).await.expect("admin");
        let to_org = Some(Some(org.as_str()));
        orgs::project_place(store, &Actor::Operator, &internal.project_id, to_org, Some(Audience::Internal), now)
            .await
            .expect("internal");
        let upload = server.running.state.scopes.get().parse(UPLOAD).expect("upload");
        change(&server, &org, OrgChange::ScopeAccess { scopes: upload, restricted: true }).await;
        let readonly = server.running.state.scopes.get().parse(READONLY).expect("readonly");
        change(&server, &org, OrgChange::Delegate { client_id: sync.client_id.clone(), scopes: Some(readonly) }).await;
        // The delegated app is one of the organisation's own projects': its identity is vouched for.
        orgs::project_place(store, &Actor::Operator, &sync.project_id, to_org, Some(Audience::External), now)
            .await
            .expect("placed");
        let mut loopback = Loopback::bind().await;
        let redirect_uri = loopback.redirect_uri.clone();
        let url = |app: &App, scopes: &[&str], pkce: &Pkce, extra: &str| {
            format!("{}{extra}", authorize_url(&server, app, scopes, pkce, &redirect_uri, "s"))
        };

        // An outside account on the internal project's client: org_internal, before any consent.
        browser.goto(&url(&internal, &[READONLY], &Pkce::new(), "")).await.expect("open");
        sign_in(&browser, ALICE).await;
        assert_eq!(error_code(&browser).await, "org_internal");
        let heading = find(&browser, "#heading").await.text().await.expect("heading");
        assert_eq!(heading, "Access blocked: this app is for its organisation's accounts");
        assert!(browser.find(Locator::Css("button[name=decision]")).await.is_err(), "no consent page");

        // A member asking for a restricted scope: admin_policy_enforced, naming the app and the permission.
        browser.goto(&url(&photos, &[READONLY, UPLOAD], &Pkce::new(), "&prompt=login")).await.expect("open");
        sign_in(&browser, CAROL).await;
        assert_eq!(error_code(&browser).await, "admin_policy_enforced");
        shot(&browser, "admin-policy-enforced").await;
        let heading = find(&browser, "#heading").await.text().await.expect("heading");
        assert_eq!(heading, "Access blocked: your organisation's policy", "not an invalid request");
        let said = find(&browser, "#error-description").await.text().await.expect("text");
        assert!(said.contains(&photos.client_id) && said.contains("Manage your videos"), "{said}");

        // Trusted: no checkboxes, Allow grants every requested scope.
        change(
            &server,
            &org,
            OrgChange::AppAccess { client_id: photos.client_id.clone(), access: Some(AppAccess::Trusted) },
        )
        .await;
        let pkce = Pkce::new();
        browser
            .goto(&url(&photos, &[READONLY, UPLOAD], &pkce, "&login_hint=carol%40corp.example"))
            .await
            .expect("open");
        find(&browser, "#all-or-none").await;
        shot(&browser, "consent-trusted").await;
        let boxes = browser.find_all(Locator::Css("input[type=checkbox][name=scope]")).await.expect("find");
        assert!(boxes.is_empty(), "no per-scope checkboxes");
        find(&browser, "button[name=decision][value=allow]").await.click().await.expect("Allow");
        let callback = loopback.callback().await;
        let granted = server.exchange(&photos, callback.get("code").expect("code"), &pkce, &redirect_uri).await;
        assert!(granted.scope.contains(READONLY) && granted.scope.contains(UPLOAD), "all of them: {}", granted.scope);

        // Domain-wide delegation: straight back to the app after sign-in, no consent page.
        let pkce = Pkce::new();
        browser.goto(&url(&sync, &[READONLY], &pkce, "&login_hint=carol%40corp.example")).await.expect("open");
        let callback = loopback.callback().await;
        let tokens = server.exchange(&sync, callback.get("code").expect("code"), &pkce, &redirect_uri).await;
        assert_eq!(tokens.scope, READONLY);

        // The administrator blocks the trusted app on the console's organisation page.
        browser.goto(&server.url(&format!("/console/orgs/{org}"))).await.expect("open the organisation");
        find(&browser, "#app-client").await.send_keys(&photos.client_id).await.expect("type the client");
        find(&browser, "#app-access-select").await.select_by_value("blocked").await.expect("choose blocked");
        find(&browser, "#app-access button[type=submit]").await.click().await.expect("save");
        let notice = find(&browser, "#notice").await.text().await.expect("notice");
        shot(&browser, "organisation").await;
        assert!(notice.contains("revoked"), "{notice}");
        let row = find(&browser, "#apps").await.text().await.expect("apps");
        assert!(row.contains(&photos.client_id) && row.contains("blocked"), "{row}");
        let rt = granted.refresh_token.as_deref().expect("refresh token");
        assert_eq!(error_of(server.refresh(&photos, rt).await).await.1, "invalid_grant", "its access was revoked");
        browser.goto(&url(&photos, &[READONLY], &Pkce::new(), "&login_hint=carol%40corp.example")).await.expect("open");
        assert_eq!(error_code(&browser).await, "admin_policy_enforced", "a new authorization is refused");
    })
    .await;
}
