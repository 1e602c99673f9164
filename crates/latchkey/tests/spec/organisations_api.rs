//! Organisations through the console's JSON API: an operator creates them and adds domains, their administrators
//! manage members (disabling one ends its tokens) and the API access controls; everyone else is told the
//! organisation does not exist; bad input is refused in the API's format and changes nothing.

use crate::console_api::{assert_error, Api};
use crate::login_consent::{exchange, url_with};
use crate::organisations::CAROL;
use crate::support::*;
use serde_json::json;

const OPS: &str = "ops@corp.example";
const DAVE: &str = "dave@corp.example";
const OUTSIDER: &str = "eve@example.com";

#[tokio::test]
async fn an_operator_creates_an_organisation_and_its_administrator_sets_its_policy() {
    let server = TestServer::start_with(|c| c.operators = vec![OPS.into()]).await;
    let app = server.app().await;
    let ops = Api::new(&server, OPS).await;
    let carol = Api::new(&server, CAROL).await;
    let eve = Api::new(&server, OUTSIDER).await;

    assert_error(&carol.post("/console/api/v1/orgs", json!({ "name": "Corp" })).await, 403, "forbidden");
    let (status, created) =
        ops.post("/console/api/v1/orgs", json!({ "name": "Corp", "domains": ["corp.example"] })).await;
    assert_eq!(status, 201, "{created}");
    let org = created["org_id"].as_str().expect("org_id").to_owned();
    let base = format!("/console/api/v1/orgs/{org}");
    let taken = ops.post("/console/api/v1/orgs", json!({ "name": "Copy", "domains": ["corp.example"] })).await;
    assert_error(&taken, 409, "conflict");

    assert_error(&carol.get(&base).await, 404, "not_found");
    let (status, v) = ops.post(&format!("{base}/members"), json!({ "email": CAROL, "admin": true })).await;
    assert_eq!((status, v["revoked_grants"].as_u64()), (200, Some(0)), "{v}");
    let (status, detail) = carol.get(&base).await;
    assert_eq!(status, 200, "{detail}");
    let emails: Vec<&str> =
        detail["members"].as_array().expect("members").iter().filter_map(|m| m["email"].as_str()).collect();
    assert!(emails.contains(&CAROL) && emails.contains(&OPS), "joined by domain and by name: {detail}");
    assert_eq!(detail["policy"]["default_access"], "limited");
    assert_error(&eve.get(&base).await, 404, "not_found");
    assert_error(&carol.post(&format!("{base}/domains"), json!({ "domain": "corp.test" })).await, 403, "forbidden");

    let put = |who: &'static str, path: String, body| {
        let api = match who {
            "carol" => &carol,
            _ => &eve,
        };
        async move { api.call("PUT", &path, Some(body)).await }
    };
    let upload = "https://latchkey.dev/auth/upload";
    let (status, v) = put("carol", format!("{base}/scopes"), json!({ "scopes": [upload], "restricted": true })).await;
    assert_eq!(status, 200, "{v}");
    let bogus = put(
        "carol",
        format!("{base}/scopes"),
        json!({ "scopes": ["https://latchkey.dev/auth/nope"], "restricted": true }),
    );
    assert_error(&bogus.await, 400, "invalid_request");
    let app_path = format!("{base}/apps/{}", app.client_id);
    assert_error(&put("carol", app_path.clone(), json!({ "access": "sometimes" })).await, 400, "invalid_request");
    assert_error(&put("carol", format!("{base}/apps/nope"), json!({ "access": "blocked" })).await, 404, "not_found");
    assert_error(&put("eve", app_path.clone(), json!({ "access": "blocked" })).await, 404, "not_found");
    let (status, v) = put("carol", app_path, json!({ "access": "specific", "scopes": [upload] })).await;
    assert_eq!(status, 200, "{v}");
    let (status, v) = put("carol", format!("{base}/settings"), json!({ "trust_internal_apps": true })).await;
    assert_eq!(status, 200, "{v}");
    let delegation = format!("{base}/delegations/{}", app.client_id);
    let (status, v) = put("carol", delegation.clone(), json!({ "scopes": [READONLY] })).await;
    assert_eq!(status, 200, "{v}");

    let (_, detail) = carol.get(&base).await;
    assert_eq!(detail["policy"]["restricted_scopes"], json!([upload]));
    assert_eq!(detail["policy"]["trust_internal_apps"], true);
    let listed = &detail["apps"][0];
    assert_eq!((listed["access"].as_str(), &listed["scopes"]), (Some("specific"), &json!([upload])), "{detail}");
    assert_eq!(listed["delegated_scopes"], json!([READONLY]));
    let (status, _) = carol.call("DELETE", &delegation, None).await;
    assert_eq!(status, 200);

    let project = carol.project("Internal tools").await;
    let placement = format!("/console/api/v1/projects/{project}/placement");
    let (status, v) = carol.call("PUT", &placement, Some(json!({ "org_id": org, "audience": "internal" }))).await;
    assert_eq!(
        (status, v["audience"].as_str(), v["org_id"].as_str()),
        (200, Some("internal"), Some(org.as_str())),
        "{v}"
    );
    let bad = carol.call("PUT", &placement, Some(json!({ "org_id": null, "audience": "internal" }))).await;
    assert_error(&bad, 400, "invalid_request");
    let elsewhere = eve.project("Eve's").await;
    let not_hers = format!("/console/api/v1/projects/{elsewhere}/placement");
    let e = eve.call("PUT", &not_hers, Some(json!({ "org_id": org, "audience": "internal" }))).await;
    assert_error(&e, 404, "not_found");
    let (_, shown) = eve.get(&format!("/console/api/v1/projects/{elsewhere}")).await;
    assert_eq!((shown["org_id"].as_str(), shown["audience"].as_str()), (None, Some("external")), "nothing changed");
}

#[tokio::test]
async fn an_administrator_disables_a_member_and_its_tokens_stop() {
    let server = TestServer::start_with(|c| c.operators = vec![OPS.into()]).await;
    let app = server.app().await;
    let ops = Api::new(&server, OPS).await;
    let (_, created) = ops.post("/console/api/v1/orgs", json!({ "name": "Corp", "domains": ["corp.example"] })).await;
    let base = format!("/console/api/v1/orgs/{}", created["org_id"].as_str().expect("org"));
    let carol = Api::new(&server, CAROL).await;
    ops.post(&format!("{base}/members"), json!({ "email": CAROL, "admin": true })).await;
    server.user(DAVE).await;
    server.user(OUTSIDER).await;

    let browser = server.browser();
    let pkce = Pkce::new();
    let consent = browser.consent_page(&url_with(&server, &app, &[READONLY], &pkce, &[]), DAVE).await;
    let done = browser.decide(&consent, &[READONLY], "allow").await;
    let tokens = exchange(&server, &app, &done.redirect_param("code").expect("code"), &pkce).await;
    let rt = tokens.refresh_token.expect("rt");

    assert_error(&carol.post(&format!("{base}/members/{OUTSIDER}/disable"), json!({})).await, 404, "not_found");
    let outside = carol.post(&format!("{base}/members"), json!({ "email": OUTSIDER })).await;
    assert_error(&outside, 403, "forbidden");
    assert!(outside.1["error_description"].as_str().is_some_and(|d| d.contains("verified domains")), "{}", outside.1);
    let (status, _) = ops.post(&format!("{base}/members"), json!({ "email": OUTSIDER })).await;
    assert_eq!(status, 200, "the operator adds an account from elsewhere");
    let not_managed = carol.post(&format!("{base}/members/{OUTSIDER}/disable"), json!({})).await;
    assert_error(&not_managed, 403, "forbidden");
    assert_error(&carol.post(&format!("{base}/members/{CAROL}/disable"), json!({})).await, 400, "invalid_request");
    let (status, v) = carol.post(&format!("{base}/members/{DAVE}/disable"), json!({})).await;
    assert_eq!((status, v["disabled"].as_bool()), (200, Some(true)), "{v}");
    assert_eq!(error_of(server.refresh(&app, &rt).await).await, (400, "invalid_grant".into()));
    assert_eq!(channels(&server, &tokens.access_token).await.status(), 401);
    let (status, _) = carol.post(&format!("{base}/members/{DAVE}/enable"), json!({})).await;
    assert_eq!(status, 200);
    let (status, v) = carol.call("DELETE", &format!("{base}/members/{DAVE}"), None).await;
    assert_eq!(status, 200, "{v}");
    assert_error(&carol.call("DELETE", &format!("{base}/members/{DAVE}"), None).await, 404, "not_found");
}
