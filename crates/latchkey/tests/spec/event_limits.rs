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
