//! Database faults: the link to PostgreSQL is cut (the forwarder stops listening and resets every connection)
//! while an instance serves, then restored. Meanwhile requests fail fast with 503 and `Retry-After`, nothing
//! panics, and service resumes by itself, without a restart.

use super::instance::*;
use super::proxy::Forwarder;
use crate::support::Pkce;
use latchkey_store::test_database::{TestDatabase, Unreachable};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The acquire timeout the instance runs with, in seconds: how long a request may wait for the database.
const ACQUIRE_TIMEOUT: &str = "1";

pub async fn while_postgresql_is_unreachable_requests_fail_fast_with_503_and_service_resumes_without_a_restart(
) -> Result<(), Unreachable> {
    let db = TestDatabase::create_database().await?;
    let mut url = url::Url::parse(&db.url).expect("database URL");
    let upstream = tokio::net::lookup_host((url.host_str().unwrap_or("127.0.0.1"), url.port().unwrap_or(5432)))
        .await
        .expect("resolve the database host")
        .next()
        .expect("an address");
    let link = Forwarder::to(vec![upstream]).await;
    url.set_host(Some("127.0.0.1")).expect("host");
    url.set_port(Some(link.addr.port())).expect("port");
    let dir = tempfile::tempdir().expect("tempdir");
    let tls = Tls::generate(&dir.path().join("tls"));
    let data = dir.path().join("a");
    let env = [("LATCHKEY_DATABASE_ACQUIRE_TIMEOUT", ACQUIRE_TIMEOUT)];
    let spec = Spec { database_url: url.as_str(), dir: &data, tls: &tls, public_url: None, env: &env };
    let mut instance = Instance::start(&spec).await;
    let client_id = provision(&db.url).await;
    let browser = browser(&instance.base, &tls, false);
    let mut codes = codes(&browser, &instance.base, &client_id, 2).await;
    let (later_code, later_pkce) = codes.pop().expect("code");
    let (code, pkce) = codes.pop().expect("code");
    let http = http(&tls, false);
    let t = exchange(&http, &instance.base, &client_id, &code, &pkce).await;
    let rt = t.refresh_token.clone().expect("refresh token");
    let refresh_form = [("grant_type", "refresh_token"), ("client_id", client_id.as_str()), ("refresh_token", &rt)];

    link.cut();

    // The token endpoint: RFC 6749 JSON `temporarily_unavailable`, 503, Retry-After, no-store; fast.
    for form in [&refresh_form[..], &exchange_form(&client_id, &later_code, &later_pkce)[..]] {
        let started = Instant::now();
        let r = http.post(instance.url("/token")).form(form).send().await.expect("an answer");
        let elapsed = started.elapsed();
        assert_eq!(r.status(), 503);
        assert!(r.headers().contains_key("retry-after"), "Retry-After: {:?}", r.headers());
        assert_eq!(r.headers()["cache-control"], "no-store");
        let body: Value = r.json().await.expect("JSON");
        assert_eq!(body["error"], "temporarily_unavailable", "{body}");
        assert!(elapsed < Duration::from_secs(5), "answered in {elapsed:?}, not after hanging");
    }
    // The authorization endpoint: a page for the user, not JSON.
    let r = browser.get(&authorize_url(&instance.base, &client_id, &Pkce::new())).await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.headers.contains_key("retry-after"));
    assert!(r.headers["content-type"].to_str().expect("type").starts_with("text/html"));
    assert!(r.body.contains("temporarily unavailable"), "{}", r.body);
    // The data API: its JSON error, 503, Retry-After.
    let r = http
        .get(instance.url("/video/v3/channels?part=id&mine=true"))
        .bearer_auth(&t.access_token)
        .send()
        .await
        .expect("answer");
    assert_eq!(r.status(), 503);
    assert!(r.headers().contains_key("retry-after"));
    let body: Value = r.json().await.expect("JSON");
    assert_eq!(body["error"]["code"], 503, "{body}");
    // Not ready, but alive.
    let ready = http.get(instance.url("/readyz")).send().await.expect("readyz");
    assert_eq!(ready.status(), 503);
    assert_eq!(http.get(instance.url("/healthz")).send().await.expect("healthz").status(), 200);
    instance.assert_healthy();

    link.restore();

    // Back by itself: ready again, and every request works, the code refused during the outage included.
    let back = Instant::now();
    while http.get(instance.url("/readyz")).send().await.expect("readyz").status() != 200 {
        assert!(back.elapsed() < Duration::from_secs(15), "the instance did not reconnect");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, body) = refresh(&http, &instance.base, &client_id, &rt).await.expect("refresh");
    assert_eq!(status, 200, "{body}");
    exchange(&http, &instance.base, &client_id, &later_code, &later_pkce).await;
    assert_eq!(channels(&http, &instance.base, &t.access_token).await.expect("api"), 200);
    let again = authorize_url(&instance.base, &client_id, &Pkce::new());
    assert_eq!(browser.consent_page(&again, EMAIL).await.status, 200, "the authorization endpoint serves again");
    instance.assert_healthy();
    assert!(instance.logs().contains("store unavailable"), "the outage was logged");
    Ok(())
}

/// A refresh's status and error code, and the data API's status, with `Retry-After` asserted on a 503.
async fn outage_answers(http: &reqwest::Client, base: &str, form: &[(&str, &str)], token: &str) -> (u16, String, u16) {
    let r = http.post(format!("{base}/token")).form(form).send().await.expect("an answer");
    let status = r.status().as_u16();
    if status == 503 {
        assert!(r.headers().contains_key("retry-after"), "Retry-After: {:?}", r.headers());
    }
    let body: Value = r.json().await.expect("JSON");
    let api = http.get(format!("{base}/video/v3/channels?part=id&mine=true")).bearer_auth(token).send().await;
    let api = api.expect("an answer");
    if api.status() == 503 {
        assert!(api.headers().contains_key("retry-after"));
    }
    (status, body["error"].as_str().unwrap_or_default().to_owned(), api.status().as_u16())
}

pub async fn a_database_refusing_connections_or_dropped_is_an_outage_answered_503_until_it_is_back(
) -> Result<(), Unreachable> {
    let db = TestDatabase::create_database().await?;
    let dir = tempfile::tempdir().expect("tempdir");
    let tls = Tls::generate(&dir.path().join("tls"));
    let data = dir.path().join("a");
    let env = [("LATCHKEY_DATABASE_ACQUIRE_TIMEOUT", ACQUIRE_TIMEOUT)];
    let spec = Spec { database_url: &db.url, dir: &data, tls: &tls, public_url: None, env: &env };
    let mut instance = Instance::start(&spec).await;
    let client_id = provision(&db.url).await;
    let (code, pkce) = codes(&browser(&instance.base, &tls, false), &instance.base, &client_id, 1).await.remove(0);
    let http = http(&tls, false);
    let t = exchange(&http, &instance.base, &client_id, &code, &pkce).await;
    let rt = t.refresh_token.clone().expect("refresh token");
    let form = [("grant_type", "refresh_token"), ("client_id", client_id.as_str()), ("refresh_token", &rt)];
    let name = &db.name;

    // SQLSTATE 55000 on every new connection, once the open ones are ended.
    db.administer(&format!("ALTER DATABASE \"{name}\" ALLOW_CONNECTIONS false")).await;
    db.administer(&format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")).await;
    for _ in 0..3 {
        let (status, error, api) = outage_answers(&http, &instance.base, &form, &t.access_token).await;
        assert_eq!((status, error.as_str(), api), (503, "temporarily_unavailable", 503), "connections refused");
    }
    db.administer(&format!("ALTER DATABASE \"{name}\" ALLOW_CONNECTIONS true")).await;
    let back = Instant::now();
    while http.get(instance.url("/readyz")).send().await.expect("readyz").status() != 200 {
        assert!(back.elapsed() < Duration::from_secs(15), "the instance did not reconnect");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, _, api) = outage_answers(&http, &instance.base, &form, &t.access_token).await;
    assert_eq!((status, api), (200, 200), "back by itself, the refresh refused meanwhile works");

    // SQLSTATE 3D000: the database is gone.
    db.administer(&format!("DROP DATABASE \"{name}\" WITH (FORCE)")).await;
    let (status, error, api) = outage_answers(&http, &instance.base, &form, &t.access_token).await;
    assert_eq!((status, error.as_str(), api), (503, "temporarily_unavailable", 503), "database dropped");
    instance.assert_healthy();
    Ok(())
}
