//! The workloads: what each connection prepares before the clock starts, the one request it repeats, and the
//! closed loop that runs them all for the warm-up and the measured window.

use crate::conn::{Conn, Grant, Pkce};
use crate::html::Page;
use crate::meter::{Costs, Meters};
use crate::report::{rss_kb, ConnResult, Report};
use crate::{BenchArgs, TargetKind, Workload};
use anyhow::{bail, Context};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one connection does in the loop, prepared before the clock starts.
enum Work {
    Refresh(Box<Grant>),
    Exchange(Vec<(String, Pkce)>),
    Api(String),
    /// The access token to introspect.
    Introspect(String),
    Revoke(Vec<String>),
    /// The sign-in form's CSRF token (it stays valid for the connection's cookie).
    Login(String),
    /// The same, for a passkey sign-in.
    LoginPasskey(String),
}

async fn prepare(conn: &Conn, workload: Workload, pool: usize) -> anyhow::Result<Work> {
    if conn.target.kind == TargetKind::Trivial {
        return made_up(workload, pool);
    }
    Ok(match workload {
        Workload::Refresh => Work::Refresh(Box::new(retry(|| conn.grant(false)).await?)),
        Workload::RefreshDpop => Work::Refresh(Box::new(retry(|| conn.grant(true)).await?)),
        Workload::Api => Work::Api(retry(|| conn.grant(false)).await?.access),
        Workload::Introspect => {
            if conn.target.kind != TargetKind::Latchkey {
                bail!("the introspect workload is for latchkey only");
            }
            Work::Introspect(retry(|| conn.grant(false)).await?.access)
        }
        Workload::Exchange => {
            let mut codes = Vec::with_capacity(pool);
            for _ in 0..pool {
                let pkce = Pkce::new();
                codes.push((retry(|| conn.code(&pkce)).await?, pkce));
            }
            codes.reverse();
            Work::Exchange(codes)
        }
        Workload::Login | Workload::LoginPasskey => {
            if conn.target.kind == TargetKind::OidcProvider {
                bail!("the login workloads are for latchkey only");
            }
            if workload == Workload::LoginPasskey && conn.target.passkey.is_none() {
                bail!("the login-passkey workload needs --setup (which registers the passkey)");
            }
            let (_, _, body) = conn.page(conn.http.get(format!("{}/signin", conn.target.issuer))).await?;
            let csrf = Page::parse(&body).value("csrf").context("csrf on the sign-in page")?.to_owned();
            if workload == Workload::Login {
                Work::Login(csrf)
            } else {
                Work::LoginPasskey(csrf)
            }
        }
        Workload::All => bail!("`all` is run as its five workloads"),
        Workload::Revoke => {
            let mut tokens = Vec::with_capacity(pool);
            for _ in 0..pool {
                tokens.push(retry(|| conn.grant(false)).await?.refresh);
            }
            tokens.reverse();
            Work::Revoke(tokens)
        }
    })
}

/// The work of `--target trivial`, which takes any token or code: made up, of the real ones' size.
fn made_up(workload: Workload, pool: usize) -> anyhow::Result<Work> {
    let grant = Conn::made_up_grant;
    Ok(match workload {
        Workload::Refresh | Workload::RefreshDpop => Work::Refresh(Box::new(grant(workload == Workload::RefreshDpop)?)),
        Workload::Api => Work::Api(grant(false)?.access),
        Workload::Exchange => {
            Work::Exchange((0..pool).map(|_| Ok((grant(false)?.refresh, Pkce::new()))).collect::<anyhow::Result<_>>()?)
        }
        Workload::Revoke => {
            Work::Revoke((0..pool).map(|_| grant(false).map(|g| g.refresh)).collect::<anyhow::Result<_>>()?)
        }
        Workload::All | Workload::Login | Workload::LoginPasskey | Workload::Introspect => {
            bail!("the trivial server takes refresh, refresh-dpop, exchange, api and revoke")
        }
    })
}

/// Preparation is not measured: a failure (such as a 503 while the store is busy) is tried again, 5 times.
async fn retry<T, F: std::future::Future<Output = anyhow::Result<T>>>(f: impl Fn() -> F) -> anyhow::Result<T> {
    let mut tries = 0;
    loop {
        match f().await {
            Ok(t) => return Ok(t),
            Err(e) if tries >= 5 => return Err(e),
            Err(_) => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100 * tries)).await;
            }
        }
    }
}

/// One request of the loop: Some(ok) when done, None when the pool is empty.
async fn step(conn: &Conn, work: &mut Work, retries: &mut u64) -> Option<bool> {
    let success = |r: &reqwest::Response| r.status().is_success();
    let t = &conn.target;
    let result = match work {
        Work::Refresh(grant) => conn.refresh(grant, retries).await,
        Work::Exchange(codes) => {
            let (code, pkce) = codes.pop()?;
            conn.exchange(&code, &pkce, None).await.map(|(status, _)| status.is_success())
        }
        Work::Api(access) => drain(conn.http.get(&t.endpoints.api).bearer_auth(&*access).send().await, success).await,
        Work::Introspect(access) => {
            let form = [("token", access.as_str()), ("client_id", &t.client_id)];
            introspected(conn.http.post(&t.endpoints.introspect).form(&form).send().await).await
        }
        Work::Revoke(tokens) => {
            let token = tokens.pop()?;
            let form = [("token", token.as_str()), ("client_id", &t.client_id)];
            drain(conn.http.post(&t.endpoints.revoke).form(&form).send().await, success).await
        }
        Work::Login(csrf) => {
            let form =
                [("csrf", csrf.as_str()), ("continue", "/"), ("email", t.email(conn.index)), ("password", &t.password)];
            let signed_in = |r: &reqwest::Response| r.status() == reqwest::StatusCode::SEE_OTHER;
            drain(conn.http.post(format!("{}/signin", t.issuer)).form(&form).send().await, signed_in).await
        }
        Work::LoginPasskey(csrf) => passkey_sign_in(conn, csrf).await,
    };
    Some(result.unwrap_or(false))
}

/// One passkey sign-in: the ceremony's options, then the answer the software passkey signs; true when the server
/// says where to go next.
async fn passkey_sign_in(conn: &Conn, csrf: &str) -> anyhow::Result<bool> {
    let t = &conn.target;
    let passkey = t.passkey.as_ref().context("no passkey")?;
    let options = conn.http.post(format!("{}/signin/passkey/options", t.issuer)).form(&[("csrf", csrf)]).send();
    let started: serde_json::Value = options.await?.json().await?;
    let ceremony = started["ceremony"].as_str().with_context(|| format!("no ceremony: {started}"))?;
    let answer = passkey.answer(&t.issuer, &started["options"]["publicKey"])?;
    let form = [("csrf", csrf), ("ceremony", ceremony), ("credential", answer.as_str()), ("continue", "/")];
    let finished = conn.http.post(format!("{}/signin/passkey", t.issuer)).form(&form).send().await?;
    let ok = finished.status().is_success();
    let body: serde_json::Value = finished.json().await?;
    Ok(ok && body["next"].is_string())
}

/// Whether an introspection answered that the token is active.
async fn introspected(response: reqwest::Result<reqwest::Response>) -> anyhow::Result<bool> {
    let r = response?;
    let ok = r.status().is_success();
    let body = r.bytes().await?;
    const ACTIVE: &[u8] = b"\"active\":true";
    Ok(ok && body.windows(ACTIVE.len()).any(|w| w == ACTIVE))
}

/// Whether a response is what the workload expects, after reading its body (so the connection is reused).
async fn drain<E: Into<anyhow::Error>>(
    response: Result<reqwest::Response, E>,
    expected: impl Fn(&reqwest::Response) -> bool,
) -> anyhow::Result<bool> {
    let r = response.map_err(Into::into)?;
    let ok = expected(&r);
    r.bytes().await?;
    Ok(ok)
}

/// Prepares every connection, then runs the closed loop through the warm-up and the measured window; `meters` are
/// read at both ends of the window.
pub async fn run(
    workload: Workload,
    conns: &[Conn],
    args: &BenchArgs,
    meters: &Meters,
    rss_idle: Option<u64>,
) -> anyhow::Result<Report> {
    let mut set = tokio::task::JoinSet::new();
    for (i, conn) in conns.iter().enumerate() {
        let (conn, pool) = (conn.clone(), args.pool);
        set.spawn(async move { (i, prepare(&conn, workload, pool).await) });
    }
    let mut works: Vec<Option<Work>> = (0..conns.len()).map(|_| None).collect();
    while let Some(r) = set.join_next().await {
        let (i, work) = r?;
        works[i] = Some(work.with_context(|| format!("preparing {}", workload.name()))?);
    }

    // Progress on stderr (stdout carries the results): a profiler can start on this line.
    eprintln!("{}: prepared; warming up, then measuring", workload.name());
    // A pool workload warms up for half a second at most, so that the pool lasts into the window.
    let pooled = matches!(workload, Workload::Exchange | Workload::Revoke);
    let warmup = Duration::from_secs_f64(if pooled { args.warmup.min(0.5) } else { args.warmup });
    let duration = Duration::from_secs_f64(args.duration);
    let start = Instant::now();
    let end = start + warmup + duration;
    let pid = args.server_pid;
    let finished = Arc::new(AtomicBool::new(false));
    let done_flag = finished.clone();
    // Samples the server's RSS every 50 ms, and the meters (CPU times, round trips) once at the end of the warm-up.
    let sampler_meters = meters.clone();
    let sampler = tokio::spawn(async move {
        let mut peak = 0u64;
        let mut at_window = None;
        while Instant::now() < end && !done_flag.load(Ordering::Relaxed) {
            if let Some(kb) = pid.and_then(rss_kb) {
                peak = peak.max(kb);
            }
            if at_window.is_none() && start.elapsed() >= warmup {
                at_window = Some((start.elapsed(), sampler_meters.read().await));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (peak, at_window)
    });
    let mut set = tokio::task::JoinSet::new();
    for (conn, work) in conns.iter().cloned().zip(works) {
        let Some(mut work) = work else { bail!("a connection was not prepared") };
        set.spawn(async move {
            let mut out = ConnResult::default();
            loop {
                let t0 = Instant::now();
                if t0 >= end {
                    break;
                }
                let Some(ok) = step(&conn, &mut work, &mut out.retries).await else {
                    out.exhausted_at = Some(micros(t0 - start));
                    break;
                };
                let done = Instant::now();
                let at = micros(done - start);
                if ok {
                    out.samples.push((at, u32::try_from(micros(done - t0)).unwrap_or(u32::MAX)));
                } else {
                    out.errors.push(at);
                }
            }
            out
        });
    }
    let mut results = Vec::with_capacity(conns.len());
    while let Some(r) = set.join_next().await {
        results.push(r?);
    }
    let counters_end = meters.read().await;
    let ended_at = start.elapsed();
    finished.store(true, Ordering::Relaxed);
    let (rss_peak, at_window) = sampler.await?;
    // Costs are measured from the end of the warm-up to the end of the run (the whole measured window), over the
    // requests that succeeded in that time.
    let costs = match at_window {
        Some((at, counters_start)) => {
            let wall = ended_at.saturating_sub(at).as_secs_f64();
            let total: u64 =
                results.iter().map(|r| r.samples.iter().filter(|s| s.0 >= micros(at)).count() as u64).sum();
            Costs::between(&counters_start, &counters_end, total, wall)
        }
        None => Costs::default(),
    };
    let window = (micros(warmup), micros(warmup + duration));
    Ok(Report::of(workload.name(), &results, window, costs, (rss_idle, pid.map(|_| rss_peak))))
}

/// A duration in microseconds.
fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
