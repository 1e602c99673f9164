//! A registered API on many instances: registered with the admin CLI, it is known to every instance within the
//! scope reload's five seconds; a token for it issued at one instance is introspected by the API at the other,
//! and a revocation at the first shows in the second's answer at once.

use crate::instance::*;
use crate::Cluster;
use latchkey_store::test_database::Unreachable;
use std::time::{Duration, Instant};

const NOTES: &str = "https://notes.example.com/mcp";

pub(crate) async fn an_api_registered_with_the_cli_introspects_at_one_instance_what_the_other_issued_and_revoked(
) -> Result<(), Unreachable> {
    let c = Cluster::start(&[]).await?;
    let url = &c.db.url;
    let project = admin_ok(url, &["project", "create", "--name", "APIs"], "").await["project_id"].clone();
    let args = ["resource", "create", "--project", project.as_str().expect("id"), "--uri", NOTES, "--name", "Notes"];
    let api =
        admin_ok(url, &[&args[..], &["--scope", "notes:read|Read your notes", "--visibility", "public"]].concat(), "")
            .await;
    let (id, secret) = (api["resource_id"].as_str().expect("id"), api["secret"].as_str().expect("secret"));
    let http = http(&c.tls, false);
    let registered = Instant::now();
    for base in [&c.a.base, &c.b.base] {
        loop {
            let doc: serde_json::Value = http
                .get(format!("{base}/.well-known/openid-configuration"))
                .send()
                .await
                .expect("discovery")
                .json()
                .await
                .expect("json");
            if doc["scopes_supported"].as_array().expect("scopes").iter().any(|s| s == "notes:read") {
                break;
            }
            assert!(registered.elapsed() < Duration::from_secs(8), "{base} learns the API within five seconds");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    let person = browser(&c.a.base, &c.tls, false);
    let pkce = crate::support::Pkce::new();
    let mut authorize = url::Url::parse(&authorize_url(&c.a.base, &c.client_id, &pkce)).expect("url");
    let pairs: Vec<(String, String)> = authorize
        .query_pairs()
        .into_owned()
        .map(|(k, v)| if k == "scope" { (k, "notes:read".to_owned()) } else { (k, v) })
        .collect();
    authorize.query_pairs_mut().clear().extend_pairs(pairs);
    let consent = person.consent_page(authorize.as_str(), EMAIL).await;
    assert!(consent.body.contains("Read your notes"), "{}", consent.body);
    let done = person.decide(&consent, &["notes:read"], "allow").await;
    let code = done.redirect_param("code").expect("code");
    let t = exchange(&http, &c.a.base, &c.client_id, &code, &pkce).await;

    let introspect = |token: String| {
        let (http, base) = (&http, &c.b.base);
        async move {
            let r = http
                .post(format!("{base}/introspect"))
                .basic_auth(id, Some(secret))
                .form(&[("token", token.as_str())])
                .send()
                .await
                .expect("introspect");
            r.json::<serde_json::Value>().await.expect("json")
        }
    };
    let answer = introspect(t.access_token.clone()).await;
    assert_eq!((answer["active"].as_bool(), answer["aud"].as_str()), (Some(true), Some(NOTES)), "{answer}");
    let refresh_token = t.refresh_token.expect("refresh token");
    assert_eq!(revoke(&http, &c.a.base, &c.client_id, &refresh_token).await.expect("revoke"), 200);
    assert_eq!(
        introspect(t.access_token).await,
        serde_json::json!({"active": false}),
        "at the other instance, at once"
    );
    Ok(())
}
