//! Limits on the Shared Signals endpoints (`docs/events.md`, "Limits"): one long poll at a time per stream, polls
//! that write only to record acknowledgements, and a rate limit per console API key.

use crate::cross_account_protection::Ssf;
use crate::support::*;
use serde_json::json;

const DANA: &str = "dana@example.com";

#[tokio::test]
async fn a_second_long_poll_of_a_stream_is_refused_while_the_first_waits() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let ssf = Ssf::member_of(&server, &app, DANA).await;
    let created = ssf.create(json!({"aud": app.client_id, "delivery": {"method": "urn:ietf:rfc:8936"}})).await;
    let path = created["delivery"]["endpoint_url"].as_str().expect("poll url").replace(&server.base, "");
    let first = ssf.call("POST", &path, Some(json!({})));
    let second = async {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let refused = ssf.call("POST", &path, Some(json!({}))).await;
        let immediate = ssf.call("POST", &path, Some(json!({"returnImmediately": true}))).await;
        (refused, immediate)
    };
    let ((status, waited), ((refused, why), (now, _))) = tokio::join!(first, second);
    assert_eq!(status, 200, "the first long poll waited and answered: {waited}");
    assert_eq!((refused, why["error"].as_str()), (429, Some("too_many_requests")), "{why}");
    assert_eq!(now, 200, "a poll that does not wait is answered meanwhile");
    let (again, v) = ssf.call("POST", &path, Some(json!({"returnImmediately": true}))).await;
    assert_eq!(again, 200, "{v}");
}

#[tokio::test]
async fn an_api_key_over_its_rate_limit_gets_429_with_retry_after() {
    let server = TestServer::start_with(|c| c.rate_limits.api_per_key = 5).await;
    let app = server.app().await;
    let ssf = Ssf::member_of(&server, &app, DANA).await;
    let statuses: Vec<u16> = {
        let mut out = Vec::new();
        for _ in 0..8 {
            out.push(ssf.call("GET", "/ssf/stream", None).await.0);
        }
        out
    };
    assert_eq!(&statuses[..5], &[200; 5], "{statuses:?}");
    assert!(statuses[5..].iter().all(|s| *s == 429), "{statuses:?}");
    let r = server.http().get(server.url("/ssf/stream")).bearer_auth(&ssf.key).send().await.expect("get");
    assert_eq!(r.status(), 429);
    let secs: u64 = r.headers()["retry-after"].to_str().expect("text").parse().expect("seconds");
    assert!((1..=60).contains(&secs), "{secs}");
    // A key it does not know spends nothing of the key's: it is refused as unknown, not as over the limit.
    let r = server.http().get(server.url("/ssf/stream")).bearer_auth("lk_nobody_secret").send().await.expect("get");
    assert_eq!(r.status(), 401);
}

/// A receiver that accepts connections and never answers: each push to it waits for the push timeout.
async fn hanging_receiver() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = listener.accept().await {
            held.push(conn);
        }
    });
    (format!("https://127.0.0.1:{port}"), task)
}

#[tokio::test]
async fn another_projects_event_is_delivered_within_seconds_beside_two_hundred_hanging_receivers() {
    let receiver_dir = tempfile::tempdir().expect("dir");
    let server = crate::cross_account_protection::server_for(receiver_dir.path()).await;
    let store = server.store();
    let now = latchkey_core::time::Clock::now(&latchkey_admin::clock::SystemClock);
    let (busy, quiet) = (server.app().await, server.app().await);
    // Another project's app, whose receiver answers (its stream made through the API, which makes the event key).
    let receiver = crate::set_receiver::TestReceiver::start(
        &server.base,
        &quiet.client_id,
        &crate::cross_account_protection::ca(&server),
        receiver_dir.path(),
    )
    .await;
    let ssf = Ssf::member_of(&server, &quiet, DANA).await;
    let created = ssf
        .create(
            json!({"aud": quiet.client_id, "delivery": {"method": "urn:ietf:rfc:8935", "endpoint_url": receiver.url}}),
        )
        .await;
    let quiet_stream = created["stream_id"].as_str().expect("stream id").to_owned();
    // One project with 200 clients, each with a push stream to a receiver that never answers, and an event each.
    let (hanging, _task) = hanging_receiver().await;
    let template = store.client(&busy.client_id).await.expect("get").expect("client");
    for i in 0..200 {
        let client = latchkey_core::client::Client { client_id: format!("{}-{i}", busy.client_id), ..template.clone() };
        store.create_client(&client).await.expect("client");
        let stream = latchkey_store::StreamRecord {
            method: latchkey_core::events::stream::PUSH.into(),
            endpoint_url: Some(format!("{hanging}/events/{i}")),
            ..latchkey_store::StreamRecord::new(format!("slow-{i}"), client.client_id.clone(), now)
        };
        assert!(store.create_stream(&stream).await.expect("stream"));
        store.request_verification(&stream.stream_id, None, now, 0).await.expect("verify").expect("queued");
    }
    // Let the busy project's pushes take their places first; then the other app asks for its verification event.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    store.request_verification(&quiet_stream, Some("hello"), now, 0).await.expect("verify").expect("queued");
    let asked = std::time::Instant::now();
    // Without turns by project, the 64 places would be held by hanging pushes for the push timeout (10 s) several
    // times over before this event's turn.
    let arrived = tokio::time::timeout(std::time::Duration::from_secs(8), async {
        loop {
            let hello = |e: &latchkey_client::events::SecurityEvent| {
                matches!(&e.event, latchkey_client::events::Event::Verification(v) if v.state.as_deref() == Some("hello"))
            };
            if receiver.seen.lock().expect("seen").events.iter().any(hello) {
                return asked.elapsed();
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    let took = arrived.expect("the other project's event arrived while the hanging pushes waited");
    println!("the other project's event arrived after {took:?}, beside 200 hanging receivers");
}

#[tokio::test]
async fn a_project_has_at_most_a_hundred_streams_and_a_hundred_and_twenty_verifications_an_hour() {
    let server = TestServer::start().await;
    let store = server.store();
    let now = latchkey_core::time::Clock::now(&latchkey_admin::clock::SystemClock);
    let app = server.app().await;
    let ssf = Ssf::member_of(&server, &app, DANA).await;
    let first = ssf.create(json!({"aud": app.client_id, "delivery": {"method": "urn:ietf:rfc:8936"}})).await;
    let first = first["stream_id"].as_str().expect("stream id").to_owned();
    let template = store.client(&app.client_id).await.expect("get").expect("client");
    for i in 1..100 {
        let client = latchkey_core::client::Client { client_id: format!("{}-{i}", app.client_id), ..template.clone() };
        store.create_client(&client).await.expect("client");
        let stream = latchkey_store::StreamRecord::new(format!("s-{i}"), client.client_id.clone(), now);
        assert!(store.create_stream(&stream).await.expect("stream"));
    }
    let last = latchkey_core::client::Client { client_id: format!("{}-last", app.client_id), ..template.clone() };
    store.create_client(&last).await.expect("client");
    let (status, v) = ssf
        .call("POST", "/ssf/stream", Some(json!({"aud": last.client_id, "delivery": {"method": "urn:ietf:rfc:8936"}})))
        .await;
    assert_eq!((status, v["error"].as_str()), (409, Some("conflict")), "the 101st stream: {v}");
    // Verifications: 120 an hour for the project's streams together.
    for i in 1..=120 {
        store.request_verification(&format!("s-{}", i % 99 + 1), None, now, 0).await.expect("verify").expect("queued");
    }
    let (status, v) = ssf.call("POST", "/ssf/verify", Some(json!({"stream_id": first}))).await;
    assert_eq!((status, v["error"].as_str()), (429, Some("too_many_requests")), "{v}");
    // Another project's stream is not held back.
    let other = server.app().await;
    let theirs = Ssf::member_of(&server, &other, "erin@example.com").await;
    let made = theirs.create(json!({"aud": other.client_id, "delivery": {"method": "urn:ietf:rfc:8936"}})).await;
    let (status, v) = theirs.call("POST", "/ssf/verify", Some(json!({"stream_id": made["stream_id"]}))).await;
    assert_eq!(status, 204, "{v}");
}

#[tokio::test]
async fn a_push_authorization_does_not_follow_the_push_url_to_another_origin() {
    let server = TestServer::start_with(|c| c.events.allow_insecure_loopback_push = true).await;
    let app = server.app().await;
    let ssf = Ssf::member_of(&server, &app, DANA).await;
    let delivery = |url: &str| json!({"method": "urn:ietf:rfc:8935", "endpoint_url": url});
    let mut with_secret = delivery("https://127.0.0.1:9443/events");
    with_secret["authorization_header"] = "Bearer receiver-secret".into();
    let made = ssf.create(json!({"aud": app.client_id, "delivery": with_secret})).await;
    let id = made["stream_id"].as_str().expect("id").to_owned();
    let sealed = |s: Option<latchkey_store::StreamRecord>| s.expect("stream").push_auth.is_some();
    // Another path at the same receiver keeps it.
    let body = json!({"stream_id": id, "delivery": delivery("https://127.0.0.1:9443/other")});
    assert_eq!(ssf.call("PATCH", "/ssf/stream", Some(body)).await.0, 200);
    assert!(sealed(server.store().stream(&id).await.expect("get")), "the same origin keeps its secret");
    // Another origin does not: the secret is the old receiver's.
    let body = json!({"stream_id": id, "delivery": delivery("https://localhost:9444/events")});
    assert_eq!(ssf.call("PATCH", "/ssf/stream", Some(body)).await.0, 200);
    assert!(!sealed(server.store().stream(&id).await.expect("get")), "dropped on a move to another origin");
}

/// A waiting long poll reads the outbox again only when its stream gets an event, wherever the event was made, on
/// PostgreSQL (`LISTEN`/`NOTIFY`); on SQLite it looks every 250 ms. Either way an event made while it waits is
/// handed out by it.
#[tokio::test]
async fn a_waiting_long_poll_reads_again_when_its_stream_gets_an_event_and_on_postgres_only_then() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let ssf = Ssf::member_of(&server, &app, DANA).await;
    let created = ssf.create(json!({"aud": app.client_id, "delivery": {"method": "urn:ietf:rfc:8936"}})).await;
    let stream_id = created["stream_id"].as_str().expect("stream id").to_owned();
    let path = created["delivery"]["endpoint_url"].as_str().expect("poll url").replace(&server.base, "");
    let sets = |v: &serde_json::Value| v["sets"].as_object().map(|s| s.keys().cloned().collect::<Vec<_>>());
    // Whatever the stream's creation queued is acknowledged first.
    let (status, v) = ssf.call("POST", &path, Some(json!({"returnImmediately": true}))).await;
    assert_eq!(status, 200, "{v}");
    let (status, v) = ssf.call("POST", &path, Some(json!({"returnImmediately": true, "ack": sets(&v)}))).await;
    assert_eq!((status, sets(&v)), (200, Some(vec![])), "{v}");

    let reads = || latchkey_server::metrics::LONG_POLL_READS.get();
    let before = reads();
    let (status, v) = ssf.call("POST", &path, Some(json!({}))).await;
    assert_eq!((status, sets(&v)), (200, Some(vec![])), "nothing came in its 5 s: {v}");
    let idle = reads() - before;
    if backend() == "postgres" {
        assert!(idle <= 1, "with no notice, the poll read again only at its end: {idle} reads");
    } else {
        assert!(idle >= 10, "on SQLite the poll looks every 250 ms: {idle} reads");
    }

    // On PostgreSQL the event comes from another instance on the same database.
    let second =
        (backend() == "postgres").then(|| TestServer::start_with(|c| c.data_dir = server.dir.path().to_path_buf()));
    let second = match second {
        Some(starting) => Some(starting.await),
        None => None,
    };
    let store = second.as_ref().map_or(server.store(), |s| s.store());
    let now = latchkey_core::time::Clock::now(&latchkey_admin::clock::SystemClock);
    let poll = ssf.call("POST", &path, Some(json!({})));
    let event = async {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        store.request_verification(&stream_id, Some("woken"), now, 0).await.expect("verify").expect("queued");
    };
    let ((status, v), ()) = tokio::join!(poll, event);
    assert_eq!(status, 200, "{v}");
    assert_eq!(sets(&v).map(|s| s.len()), Some(1), "the event made while it waited: {v}");
}
