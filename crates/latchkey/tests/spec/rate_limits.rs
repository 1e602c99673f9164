//! Rate limits on `/token`, `/revoke`, `/introspect` and `/device/code` (`docs/security.md`, "Rate limits"): per client address and per client id,
//! answered 429 `temporarily_unavailable` with `Retry-After`, over real HTTP from two loopback addresses.

use crate::support::*;
use latchkey_config::RateLimitsConfig;
use serde_json::Value;
use std::net::IpAddr;
use std::time::Instant;

/// An HTTP client whose connections leave from `local` (Linux answers on all of 127.0.0.0/8).
fn http_from(server: &TestServer, local: &str) -> reqwest::Client {
    server.http_builder().local_address(local.parse::<IpAddr>().expect("address")).build().expect("client")
}

/// A 429's `Retry-After` in seconds and its error code, checking the RFC 6749 form of the body.
async fn too_many(r: reqwest::Response) -> (u64, String) {
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let retry = r.headers()["retry-after"].to_str().expect("ascii").parse().expect("Retry-After in seconds");
    let v: Value = r.json().await.expect("RFC 6749 JSON");
    (retry, format!("{}: {}", v["error"].as_str().expect("error"), v["error_description"].as_str().expect("text")))
}

/// Up to `extra` more admissions than the limit, for the rate at which a limit refills while the test runs.
fn refill(per_minute: u32, since: Instant) -> u64 {
    (since.elapsed().as_secs_f64() * f64::from(per_minute) / 60.0).ceil() as u64 + 1
}

#[tokio::test]
async fn three_hundred_wrong_secrets_from_one_address_meet_429_and_another_address_is_not_slowed() {
    const LIMIT: u32 = 100;
    let server = TestServer::start_with(|c| {
        c.rate_limits = RateLimitsConfig { token_per_address: LIMIT, ..RateLimitsConfig::OFF };
    })
    .await;
    let app = server.app().await;
    server.user("alice@example.com").await;
    let tokens = server.tokens(&app, "alice@example.com", &[READONLY]).await;
    let started = Instant::now();
    let attacker = http_from(&server, "127.0.0.3");
    let wrong = [
        ("grant_type", "refresh_token"),
        ("refresh_token", tokens.refresh_token.as_deref().expect("refresh token")),
        ("client_id", app.client_id.as_str()),
        ("client_secret", "lks_wrong"),
    ];
    // Every third request is a revocation, which shares the address's budget.
    let revoke_wrong = [("token", "lkr_x"), ("client_id", app.client_id.as_str()), ("client_secret", "lks_wrong")];
    let (mut unauthorized, mut limited, mut revocations_limited, mut retry_after) = (0u64, 0u64, 0, Vec::new());
    for i in 0..300 {
        let (path, form) = if i % 3 == 2 { ("/revoke", &revoke_wrong[..]) } else { ("/token", &wrong[..]) };
        let r = attacker.post(server.url(path)).form(form).send().await.expect("answer");
        match r.status().as_u16() {
            401 => unauthorized += 1,
            429 => {
                limited += 1;
                revocations_limited += usize::from(path == "/revoke");
                let (secs, error) = too_many(r).await;
                let expected = format!(
                    "temporarily_unavailable: Too many requests from this address; retry after {secs} seconds."
                );
                assert_eq!(error, expected);
                retry_after.push(secs);
            }
            other => panic!("unexpected status {other} from {path}"),
        }
    }
    assert!(
        (u64::from(LIMIT)..=u64::from(LIMIT) + refill(LIMIT, started)).contains(&unauthorized),
        "the first {LIMIT} (and what refilled meanwhile) are answered: {unauthorized}"
    );
    assert_eq!(unauthorized + limited, 300);
    assert!(revocations_limited > 50, "revocations are held back too: {revocations_limited}");
    assert!(retry_after.iter().all(|s| (1..=60).contains(s)), "{retry_after:?}");
    // The same app's well-behaved client on another address refreshes and revokes at once.
    let good = http_from(&server, "127.0.0.2");
    let refresh = [
        ("grant_type", "refresh_token"),
        ("refresh_token", tokens.refresh_token.as_deref().expect("refresh token")),
        ("client_id", app.client_id.as_str()),
        ("client_secret", app.client_secret.as_str()),
    ];
    let r = good.post(server.url("/token")).form(&refresh).send().await.expect("answer");
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
    let r = good.post(server.url("/revoke")).form(&[("token", "unknown")]).send().await.expect("answer");
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn a_client_over_its_own_limit_gets_429_from_any_address_and_wrong_secrets_or_other_clients_do_not_count() {
    const LIMIT: u32 = 30;
    let server = TestServer::start_with(|c| {
        c.rate_limits = RateLimitsConfig { token_per_client: LIMIT, ..RateLimitsConfig::OFF };
    })
    .await;
    let (busy, quiet) = (server.app().await, server.app().await);
    let started = Instant::now();
    let form = |app: &App| {
        vec![
            ("grant_type".to_owned(), "refresh_token".to_owned()),
            ("refresh_token".to_owned(), "lkr_unknown".to_owned()),
            ("client_id".to_owned(), app.client_id.clone()),
        ]
    };
    // A wrong secret spends none of the client's budget: the address's limit is what holds those back.
    let mut wrong = form(&busy);
    wrong.push(("client_secret".to_owned(), "lks_wrong".to_owned()));
    for _ in 0..2 * LIMIT {
        let r = server.http().post(server.url("/token")).form(&wrong).send().await.expect("answer");
        assert_eq!(r.status(), 401);
    }
    // From two addresses, every third request authenticating by HTTP Basic: the client's own limit holds.
    let (mut answered, mut basic_limited) = (0, 0);
    for (i, from) in ["127.0.0.1", "127.0.0.3"].iter().cycle().take(3 * LIMIT as usize).enumerate() {
        let http = http_from(&server, from);
        let request = if i % 3 == 2 {
            let grant = [("grant_type", "refresh_token"), ("refresh_token", "lkr_unknown")];
            http.post(server.url("/token")).basic_auth(&busy.client_id, Some(&busy.client_secret)).form(&grant)
        } else {
            http.post(server.url("/token")).form(&form(&busy))
        };
        let r = request.send().await.expect("answer");
        if r.status() == 429 {
            basic_limited += usize::from(i % 3 == 2);
            let (_, error) = too_many(r).await;
            assert!(error.contains("for this client"), "{error}");
        } else {
            assert_eq!(r.status(), 400, "invalid_grant: the request was read");
            answered += 1;
        }
    }
    assert!((u64::from(LIMIT)..=u64::from(LIMIT) + refill(LIMIT, started)).contains(&answered), "{answered}");
    assert!(basic_limited > 10, "HTTP Basic names the client as well: {basic_limited}");
    let r = server.http().post(server.url("/token")).form(&form(&quiet)).send().await.expect("answer");
    assert_eq!(r.status(), 400, "another client is answered: invalid_grant");
}

#[tokio::test]
async fn introspection_and_device_codes_share_the_addresss_budget_with_the_token_endpoint() {
    const LIMIT: u32 = 6;
    let server = TestServer::start_with(|c| {
        c.rate_limits = RateLimitsConfig { token_per_address: LIMIT, ..RateLimitsConfig::OFF };
    })
    .await;
    let started = Instant::now();
    let from = http_from(&server, "127.0.0.4");
    let mut limited = Vec::new();
    for i in 0..(LIMIT as usize + 4) {
        let path = if i % 2 == 0 { "/introspect" } else { "/device/code" };
        let r =
            from.post(server.url(path)).form(&[("token", "x"), ("client_id", "nobody")]).send().await.expect("answer");
        if r.status() == 429 {
            let (_, error) = too_many(r).await;
            assert!(error.starts_with("temporarily_unavailable"), "{error}");
            limited.push(path);
        }
    }
    let admitted = LIMIT as usize + 4 - limited.len();
    assert!(admitted as u64 <= u64::from(LIMIT) + refill(LIMIT, started), "{admitted} admitted: {limited:?}");
    assert!(limited.contains(&"/introspect") && limited.contains(&"/device/code"), "{limited:?}");
}
