//! Operations (`docs/operations.md`): `/metrics` behind its bearer token, its counters moving with the requests sent;
//! the authorization endpoint's error page with its request details and request id; the id on refused responses. (The
//! metrics are parsed with Prometheus's own Python parser, and the log line of a refusal found by the id its page shows
//! in Chromium, in `tests/interop/python_operations.py`.)

use crate::support::*;
use latchkey_config::SecretList;
use std::collections::BTreeMap;

const METRICS_TOKEN: &str = "metrics-token-for-the-spec-tests-0001";

async fn with_metrics() -> TestServer {
    TestServer::start_with(|c| c.metrics.token = Some(SecretList::new(vec![METRICS_TOKEN.into()]))).await
}

/// One sample: its name and labels.
type Series = (String, BTreeMap<String, String>);

/// The samples of the text format, checking each line's shape: `# HELP`/`# TYPE` comments, or
/// `name{label="value",...} number`.
fn samples(text: &str) -> BTreeMap<Series, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        if let Some(comment) = line.strip_prefix("# ") {
            assert!(comment.starts_with("HELP ") || comment.starts_with("TYPE "), "comment: {line}");
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("no value: {line}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("value: {line}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name, rest.strip_suffix('}').unwrap_or_else(|| panic!("labels: {line}"))),
            None => (series, ""),
        };
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'), "name: {line}");
        let labels = labels
            .split("\",")
            .filter(|l| !l.is_empty())
            .map(|pair| {
                let (k, v) = pair.split_once("=\"").unwrap_or_else(|| panic!("label: {line}"));
                (k.to_owned(), v.trim_end_matches('"').to_owned())
            })
            .collect();
        out.insert((name.to_owned(), labels), value);
    }
    out
}

/// The value of `name` with exactly `labels` (0 when absent).
fn value(samples: &BTreeMap<Series, f64>, name: &str, labels: &[(&str, &str)]) -> f64 {
    let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    samples.get(&(name.to_owned(), labels)).copied().unwrap_or(0.0)
}

async fn scrape(server: &TestServer) -> BTreeMap<Series, f64> {
    let r = server.http().get(server.url("/metrics")).bearer_auth(METRICS_TOKEN).send().await.expect("scrape");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    samples(&r.text().await.expect("text"))
}

#[tokio::test]
async fn metrics_are_off_without_a_token_and_refused_without_the_right_one() {
    let off = TestServer::start().await;
    let r = off.http().get(off.url("/metrics")).bearer_auth(METRICS_TOKEN).send().await.expect("answer");
    assert_eq!(error_of(r).await, (404, "invalid_request".into()), "off until a token is configured");

    let server = with_metrics().await;
    let r = server.http().get(server.url("/metrics")).send().await.expect("answer");
    assert_eq!(r.headers()["www-authenticate"], "Bearer realm=\"latchkey-metrics\"");
    assert_eq!(error_of(r).await, (401, "invalid_request".into()));
    let wrong = server.http().get(server.url("/metrics")).bearer_auth("metrics-token-for-the-spec-tests-0002");
    assert_eq!(wrong.send().await.expect("answer").status(), 401);
}

#[tokio::test]
async fn the_counters_and_histograms_move_with_the_requests_sent() {
    let server = with_metrics().await;
    let app = server.app().await;
    server.user("alice@example.com").await;
    let tokens = server.tokens(&app, "alice@example.com", &[READONLY]).await;
    let before = scrape(&server).await;

    for _ in 0..3 {
        let r = server.refresh(&app, tokens.refresh_token.as_deref().expect("refresh token")).await;
        assert_eq!(r.status(), 200);
    }
    for _ in 0..2 {
        let r = server.refresh(&app, "lkr_not_a_refresh_token").await;
        assert_eq!(error_of(r).await, (400, "invalid_grant".into()));
    }
    let r = channels(&server, tokens.access_token.as_str()).await;
    assert_eq!(r.status(), 200);
    let r = channels(&server, "not-a-token").await;
    assert_eq!(r.status(), 401);
    // A revocation writes (a refresh writes nothing on the request's path: its last use is noted in batches).
    let revoke =
        [("token", tokens.refresh_token.as_deref().expect("refresh token")), ("client_id", app.client_id.as_str())];
    let r = server.http().post(server.url("/revoke")).form(&revoke).send().await.expect("revoke");
    assert_eq!(r.status(), 200);

    let after = scrape(&server).await;
    let moved = |name: &str, labels: &[(&str, &str)]| value(&after, name, labels) - value(&before, name, labels);
    let requests = "latchkey_http_requests_total";
    assert!(moved(requests, &[("route", "/token"), ("status", "200")]) >= 3.0);
    assert!(moved(requests, &[("route", "/token"), ("status", "400")]) >= 2.0);
    assert!(moved(requests, &[("route", "/video/v3/channels"), ("status", "200")]) >= 1.0);
    assert!(moved(requests, &[("route", "/video/v3/channels"), ("status", "401")]) >= 1.0);
    let errors = "latchkey_oauth_errors_total";
    assert!(moved(errors, &[("error", "invalid_grant"), ("route", "/token")]) >= 2.0);
    assert!(moved(errors, &[("error", "authError"), ("route", "/video/v3/channels")]) >= 1.0);
    let refreshes = [("grant_type", "refresh_token")];
    assert!(moved("latchkey_token_request_duration_seconds_count", &refreshes) >= 5.0);
    assert!(moved("latchkey_http_request_duration_seconds_count", &[("route", "/video/v3/channels")]) >= 2.0);
    let backend = backend();
    assert!(moved("latchkey_store_operation_duration_seconds_count", &[("backend", backend), ("op", "read")]) >= 1.0);
    let read_time = moved("latchkey_store_operation_duration_seconds_sum", &[("backend", backend), ("op", "read")]);
    assert!(read_time > 0.0, "reads take time (the clock starts before the engine runs them): {read_time}");
    let writes = ["write", "unit"]
        .map(|op| moved("latchkey_store_operation_duration_seconds_count", &[("backend", backend), ("op", op)]));
    assert!(writes.iter().sum::<f64>() >= 1.0, "the revocation wrote: {writes:?}");
    if backend == "sqlite" {
        // The revocation went through the writer: a batch of at least one, and the queue's gauge is there.
        assert!(moved("latchkey_sqlite_group_commit_size_count", &[]) >= 1.0);
        assert!(after.contains_key(&("latchkey_sqlite_writer_queue_depth".to_owned(), BTreeMap::new())));
    }
    // Series no request here moved exist from the start, at their known label values.
    assert!(after.contains_key(&("latchkey_events_outbox_depth".to_owned(), BTreeMap::new())), "counted at scrape");
    let verified = [("verdict".to_owned(), "verified".to_owned())].into_iter().collect();
    assert!(after.contains_key(&("latchkey_app_check_verdicts_total".to_owned(), verified)));
    assert!(after.contains_key(&("latchkey_dpop_nonces_issued_total".to_owned(), BTreeMap::new())));
    // A histogram's buckets are cumulative and end with +Inf, equal to its count.
    let inf = value(
        &after,
        "latchkey_token_request_duration_seconds_bucket",
        &[("grant_type", "refresh_token"), ("le", "+Inf")],
    );
    assert_eq!(inf, value(&after, "latchkey_token_request_duration_seconds_count", &refreshes));
    // The process's own metrics are there too.
    assert!(value(&after, "process_resident_memory_bytes", &[]) > 0.0);
}

#[tokio::test]
async fn no_secret_reaches_the_metrics() {
    let server = with_metrics().await;
    let app = server.app().await;
    server.user("alice@example.com").await;
    let tokens = server.tokens(&app, "alice@example.com", &[READONLY]).await;
    let refresh = tokens.refresh_token.clone().expect("refresh token");
    assert_eq!(server.refresh(&app, &refresh).await.status(), 200);
    let r = server.http().get(server.url("/metrics")).bearer_auth(METRICS_TOKEN).send().await.expect("scrape");
    let text = r.text().await.expect("text");
    for secret in [refresh.as_str(), tokens.access_token.as_str(), app.client_secret.as_str(), METRICS_TOKEN] {
        assert!(!text.contains(secret), "a secret in /metrics");
    }
    assert!(!text.contains(&app.client_id), "no client id either: labels come from fixed lists");
}

#[tokio::test]
async fn a_redirect_uri_mismatch_page_shows_the_request_details_and_its_request_id() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let pkce = Pkce::new();
    let url = authorize_url(&server, &app, &[READONLY], &pkce, "com.example.app:/oauth2redirect", "s");
    let r = server.http().get(url).send().await.expect("page");
    assert_eq!(r.status(), 400);
    let id = r.headers()["x-request-id"].to_str().expect("ascii").to_owned();
    assert_eq!(id.len(), 16, "16 hexadecimal digits: {id}");
    let html = r.text().await.expect("html");
    assert!(html.contains("redirect_uri_mismatch"));
    assert!(html.contains("Request details"));
    assert!(html.contains(&app.client_id), "the client id is shown");
    assert!(html.contains("com.example.app:/oauth2redirect"), "the redirect URI sent is shown");
    assert!(html.contains("Test App"), "the client's name is shown");
    assert!(
        html.contains("http://127.0.0.1:&#60;any port&#62;/&#60;any path&#62;"),
        "the forms a desktop client takes"
    );
    assert!(html.contains("Desktop clients use a loopback redirect"), "the hint for a custom scheme on desktop");
    assert!(html.contains(&format!("<code id=\"request-id\">{id}</code>")), "the page shows the request id");
    assert!(!html.contains(&app.client_secret), "never the secret");

    // An unknown client: the id sent, a hint, nothing about any client.
    let mut unknown =
        url::Url::parse(&authorize_url(&server, &app, &[READONLY], &pkce, "http://127.0.0.1:1/", "s")).expect("url");
    let query: Vec<(String, String)> = unknown
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == "client_id" { "no-such-client".into() } else { v.into_owned() };
            (k.into_owned(), v)
        })
        .collect();
    unknown.query_pairs_mut().clear().extend_pairs(query);
    let r = server.http().get(unknown).send().await.expect("page");
    assert_eq!(r.status(), 401);
    let html = r.text().await.expect("html");
    assert!(html.contains("no-such-client") && html.contains("No client has this client_id"));
    assert!(!html.contains("Test App") && !html.contains("This client accepts"));
}

#[tokio::test]
async fn a_refused_token_request_carries_its_request_id_and_a_successful_one_does_not() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let r = server.refresh(&app, "lkr_not_a_refresh_token").await;
    assert_eq!(r.headers()["x-request-id"].len(), 16);
    let healthy = server.http().get(server.url("/healthz")).send().await.expect("answer");
    assert!(!healthy.headers().contains_key("x-request-id"), "no header on success");
    // A refused sign-in is a refusal too (logged once, with its reason as the code).
    server.user("alice@example.com").await;
    let browser = server.browser();
    let login = browser.get(&server.url("/signin?continue=%2Fconsole")).await;
    let wrong = browser.sign_in(&login, "alice@example.com", "not her password").await;
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.headers["x-request-id"].len(), 16, "a refused sign-in has its request id");
}

#[tokio::test]
async fn an_online_backup_copies_the_database_while_the_server_serves_and_opens_as_a_store() {
    let server = TestServer::start().await;
    if server.db.is_some() {
        return; // SQLite's command: PostgreSQL is backed up with pg_dump (docs/operations.md).
    }
    let app = server.app().await;
    let dir = server.dir.path();
    let file = dir.join("backup.db");
    let file_text = file.display().to_string();
    let (code, out, err) = crate::cli::admin(dir, &["backup", &file_text], "");
    assert_eq!(code, 0, "{err}");
    assert!(crate::cli::json(&out)["bytes"].as_u64().is_some_and(|n| n > 0), "{out}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).expect("the copy").permissions().mode() & 0o777, 0o600, "private");
    }
    let (code, _, err) = crate::cli::admin(dir, &["backup", &file_text], "");
    assert_ne!(code, 0, "an existing file is never overwritten");
    assert!(err.contains("new file"), "{err}");
    // The copy is a store of its own, holding the client made before the backup.
    let url = format!("sqlite://{file_text}");
    let (code, out, err) =
        crate::cli::admin(dir, &["--database-url", &url, "client", "show", "--client", &app.client_id], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(crate::cli::json(&out)["client_id"], app.client_id.as_str());
    // The server went on serving meanwhile.
    assert_eq!(server.http().get(server.url("/readyz")).send().await.expect("ready").status(), 200);
}

#[tokio::test]
async fn the_console_offers_no_action_bound_to_fail_and_names_each_page() {
    use crate::console::Dev;
    let server = TestServer::start().await;
    let alice = Dev::sign_in(&server, "alice@example.com").await;
    let project = alice.project("Polish").await;
    let page = alice.get(&format!("/console/projects/{project}")).await;
    assert!(page.body.contains("<title>Polish · Project · latchkey console</title>"), "the title names the page");
    for section in ["#clients", "#api", "#members"] {
        assert!(page.body.contains(&format!("/console/projects/{project}{section}\"")), "the project's navigation");
        assert!(page.body.contains(&format!("id=\"{}\"", &section[1..])), "its target {section}");
    }
    assert!(page.body.contains("data-copy=\"project-id\""), "a copy button for the project id");
    assert!(page.body.contains("rel=\"icon\""), "a favicon");
    assert!(!page.body.contains("/remove\""), "the only owner is offered no Remove: it would be refused");
    assert!(page.body.contains("The project's only owner"));

    server.user("bob@example.com").await;
    let added = alice
        .post(&format!("/console/projects/{project}/members"), &[("email", "bob@example.com"), ("role", "owner")])
        .await;
    assert_eq!(added.status, 303, "{}", added.body);
    let page = alice.get(&format!("/console/projects/{project}")).await;
    assert_eq!(page.body.matches("/remove\"").count(), 2, "with two owners, each can be removed");
    let script = server.http().get(server.url("/static/console.js")).send().await.expect("script");
    assert_eq!(script.headers()["content-type"], "text/javascript; charset=utf-8");
}
