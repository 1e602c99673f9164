//! The figures `docs/scaling.md` extrapolates from: token-endpoint and data-API throughput of real `latchkey serve`
//! processes, on PostgreSQL (one and two instances) and on SQLite, with the load generator on the same machine.
//! Not a check, so ignored by default:
//!
//! ```sh
//! cargo test --release -p latchkey --test multi_instance -- --ignored measure
//! ```

use super::instance::*;
use super::Cluster;
use crate::support::{Pkce, PASSWORD};
use latchkey_store::test_database::Unreachable;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Concurrent clients, each with its own keep-alive connection.
const CLIENTS: usize = 16;
const CODES: usize = 400;
/// Users the grants are spread over (issuances for one user are serialized by the refresh-token limits).
const USERS: usize = 16;
const REFRESHES: usize = 4000;
const API_CALLS: usize = 8000;

/// CPU seconds used so far by `latchkey` processes, by PostgreSQL processes, and by this test (the load generator),
/// from `/proc` (Linux; zeros elsewhere). Process CPU times are in USER_HZ ticks, 100 per second.
fn cpu_seconds() -> [f64; 3] {
    let ticks = |stat: &str| -> Option<(String, f64)> {
        let name = stat[stat.find('(')? + 1..stat.rfind(')')?].to_owned();
        let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
        let t: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
        Some((name, t / 100.0))
    };
    let mut out = [0.0; 3];
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        match ticks(&stat) {
            Some((name, t)) if name == "latchkey" => out[0] += t,
            Some((name, t)) if name.starts_with("postgres") => out[1] += t,
            _ => {}
        }
    }
    if let Some((_, t)) = std::fs::read_to_string("/proc/self/stat").ok().as_deref().and_then(ticks) {
        out[2] = t;
    }
    out
}

/// Runs `total` requests made by `one(i)` over [`CLIENTS`] clients; prints rate, latency percentiles and the CPU
/// time per request of each tier.
async fn run<F, Fut>(what: &str, total: usize, tls: &Tls, one: F)
where
    F: Fn(usize, reqwest::Client) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    let one = Arc::new(one);
    let next = Arc::new(AtomicUsize::new(0));
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let workers: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (one, next, http) = (one.clone(), next.clone(), http(tls, false));
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        return latencies;
                    }
                    let t = Instant::now();
                    assert!(one(i, http.clone()).await, "{i}");
                    latencies.push(t.elapsed());
                }
            })
        })
        .collect();
    let mut all: Vec<Duration> = Vec::new();
    for w in workers {
        all.extend(w.await.expect("worker"));
    }
    let elapsed = started.elapsed();
    let cpu_after = cpu_seconds();
    let per_request_ms = |i: usize| (cpu_after[i] - cpu_before[i]) * 1000.0 / total as f64;
    all.sort();
    let pct = |p: usize| all[(all.len() * p / 100).min(all.len() - 1)];
    println!(
        "{what}: {total} in {elapsed:.2?} = {:.0}/s; p50 {:.1?}, p99 {:.1?}; CPU ms per request: latchkey {:.2}, \
         PostgreSQL {:.2}, load generator {:.2}",
        total as f64 / elapsed.as_secs_f64(),
        pct(50),
        pct(99),
        per_request_ms(0),
        per_request_ms(1),
        per_request_ms(2),
    );
}

/// Makes [`USERS`] more users; returns every user's e-mail address, [`EMAIL`] first.
async fn users(database_url: &str) -> Vec<String> {
    let mut emails = vec![EMAIL.to_owned()];
    for i in 1..USERS {
        let email = format!("many{i}@example.com");
        admin_ok(database_url, &["user", "create", "--email", &email, "--password-stdin"], &format!("{PASSWORD}\n"))
            .await;
        emails.push(email);
    }
    emails
}

/// Exchanges, refreshes and data-API calls spread over `bases`, with codes of every user in `emails`.
async fn measure(label: &str, bases: Vec<String>, codes_at: &str, tls: &Tls, client_id: &str, emails: &[String]) {
    println!("== {label}");
    let mut codes = Vec::with_capacity(CODES);
    let per_user = CODES / emails.len();
    let mut browsers: Vec<_> = emails.iter().map(|e| (browser(codes_at, tls, false), e)).collect();
    for _ in 0..per_user {
        for (b, email) in &mut browsers {
            codes.extend(codes_of(b, codes_at, client_id, email, 1).await);
        }
    }
    let codes: Arc<Vec<(String, Pkce)>> = Arc::new(codes);
    let bases = Arc::new(bases);
    let refresh_tokens = Arc::new(std::sync::Mutex::new(vec![String::new(); codes.len()]));
    let access = Arc::new(std::sync::Mutex::new(String::new()));
    let (c, b, r, a, id) = (codes.clone(), bases.clone(), refresh_tokens.clone(), access.clone(), client_id.to_owned());
    run("code exchanges", codes.len(), tls, move |i, http| {
        let (c, b, r, a, id) = (c.clone(), b.clone(), r.clone(), a.clone(), id.clone());
        async move {
            let (code, pkce) = &c[i];
            let base = &b[i % b.len()];
            let Ok((200, body)) = post(&http, base, "/token", &exchange_form(&id, code, pkce)).await else {
                return false;
            };
            r.lock().expect("lock")[i] = body["refresh_token"].as_str().unwrap_or_default().to_owned();
            *a.lock().expect("lock") = body["access_token"].as_str().unwrap_or_default().to_owned();
            true
        }
    })
    .await;
    let (b, r, id) = (bases.clone(), refresh_tokens.clone(), client_id.to_owned());
    run("refreshes", REFRESHES, tls, move |i, http| {
        let (b, r, id) = (b.clone(), r.clone(), id.clone());
        async move {
            let rt = {
                let tokens = r.lock().expect("lock");
                tokens[i % tokens.len()].clone()
            };
            matches!(refresh(&http, &b[i % b.len()], &id, &rt).await, Ok((200, _)))
        }
    })
    .await;
    let b = bases.clone();
    let token = access.lock().expect("lock").clone();
    run("data-API calls", API_CALLS, tls, move |i, http| {
        let (b, token) = (b.clone(), token.clone());
        async move { matches!(channels(&http, &b[i % b.len()], &token).await, Ok(200)) }
    })
    .await;
}

pub async fn measure_token_and_data_api_throughput_for_the_capacity_plan() -> Result<(), Unreachable> {
    // Refresh-token limits out of the way: one user holds every grant here.
    let env = [("LATCHKEY_REFRESH_TOKENS_PER_CLIENT_USER", "100000"), ("LATCHKEY_REFRESH_TOKENS_PER_USER", "100000")];
    let c = Cluster::start(&env).await?;
    let emails = users(&c.db.url).await;
    let (a, b) = (c.a.base.clone(), c.b.base.clone());
    measure("PostgreSQL, one instance", vec![a.clone()], &a, &c.tls, &c.client_id, &emails).await;
    measure("PostgreSQL, two instances", vec![a.clone(), b], &a, &c.tls, &c.client_id, &emails).await;
    measure("PostgreSQL, one instance, one user", vec![a.clone()], &a, &c.tls, &c.client_id, &emails[..1]).await;

    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let url = format!("sqlite://{}", data.join("latchkey.db").display());
    let client_id = provision(&url).await;
    let emails = users(&url).await;
    let spec = Spec { database_url: &url, dir: &data, tls: &c.tls, public_url: None, env: &env };
    let one = Instance::start(&spec).await;
    measure("SQLite, one instance", vec![one.base.clone()], &one.base, &c.tls, &client_id, &emails).await;
    Ok(())
}
