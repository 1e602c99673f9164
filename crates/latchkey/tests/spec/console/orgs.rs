//! The console's organisation pages over HTTPS: an administrator's page with members, scopes and apps; each form
//! changes what it says (scope restriction, app access, trust of internal apps, delegation, a member disabled and
//! enabled, a project made internal); a developer who does not administer the organisation is told it does not
//! exist; a form without its CSRF token changes nothing.

use super::Dev;
use crate::organisations::{corp, CAROL};
use crate::support::*;
use latchkey_admin::{orgs, Actor};

const DAVE: &str = "dave@corp.example";

#[tokio::test]
async fn an_administrator_manages_members_and_policy_on_the_organisation_page() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let dave = server.user(DAVE).await;
    let org = corp(&server).await;
    let carol = Dev::sign_in(&server, CAROL).await;
    let page = carol.get(&format!("/console/orgs/{org}")).await;
    assert_eq!(page.status, 404, "a member who does not administer it: {}", page.body);
    let now = latchkey_core::time::UnixTime(1_700_000_000);
    orgs::org_add_member(server.store(), &Actor::Operator, &org, CAROL, true, now).await.expect("admin");

    let list = carol.get("/console/orgs").await;
    assert!(list.body.contains(&format!("/console/orgs/{org}")), "{}", list.body);
    let page = carol.get(&format!("/console/orgs/{org}")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains(DAVE) && page.body.contains("id=\"strict-note\""), "{}", page.body);
    let base = format!("/console/orgs/{org}");
    let ok = |p: &Page| assert_eq!(p.status, 303, "{}", p.body);
    ok(&carol.post(&format!("{base}/scopes"), &[("scope", UPLOAD), ("restricted", "true")]).await);
    ok(&carol
        .post(&format!("{base}/apps"), &[("client", &app.client_id), ("access", "specific"), ("scope", READONLY)])
        .await);
    ok(&carol.post(&format!("{base}/settings"), &[("trust_internal_apps", "true")]).await);
    ok(&carol.post(&format!("{base}/delegations"), &[("client", &app.client_id), ("scope", READONLY)]).await);
    let registry = &server.running.state.scopes.get();
    let detail = orgs::org_show(server.store(), &Actor::Operator, &org, registry).await.expect("show");
    assert_eq!(detail.policy.restricted_scopes, vec![UPLOAD.to_string()]);
    assert!(detail.policy.trust_internal_apps);
    assert_eq!((detail.apps[0].access, detail.apps[0].scopes.clone()), (Some("specific"), vec![READONLY.to_string()]));
    assert_eq!(detail.apps[0].delegated_scopes, Some(vec![READONLY.to_string()]));
    let shown = carol.get(&format!("{base}?done=org-policy-saved")).await;
    assert!(shown.body.contains("revoked"), "the notice says what happens to access given: {}", shown.body);

    let bad = carol.post(&format!("{base}/apps"), &[("client", &app.client_id), ("access", "specific")]).await;
    assert_eq!(bad.status, 400, "specific without scopes: {}", bad.body);
    ok(&carol.post(&format!("{base}/delegations/{}/remove", app.client_id), &[]).await);
    ok(&carol.post(&format!("{base}/members/{dave}/disable"), &[]).await);
    assert!(server.store().user(&dave).await.expect("get").expect("dave").disabled_at.is_some());
    ok(&carol.post(&format!("{base}/members/{dave}/enable"), &[]).await);
    assert!(server.store().user(&dave).await.expect("get").expect("dave").disabled_at.is_none());
    let no_csrf = carol.browser.post(&format!("{base}/members/{dave}/disable"), &[]).await;
    assert_eq!(no_csrf.status, 403, "no CSRF token: {}", no_csrf.body);
    assert!(server.store().user(&dave).await.expect("get").expect("dave").disabled_at.is_none(), "nothing changed");
    ok(&carol.post(&format!("{base}/members/{dave}/remove"), &[]).await);
    assert_eq!(server.store().membership_of(&dave).await.expect("get"), None);

    let project = carol.project("Internal tools").await;
    let panel = carol.get(&format!("/console/projects/{project}")).await;
    assert!(panel.body.contains("id=\"placement\""), "an administrator may place the project: {}", panel.body);
    ok(&carol
        .post(&format!("/console/projects/{project}/placement"), &[("org", &org), ("audience", "internal")])
        .await);
    let placed = server.store().project(&project).await.expect("get").expect("project");
    assert_eq!((placed.org_id.as_deref(), placed.audience.as_str()), (Some(org.as_str()), "internal"));
}
