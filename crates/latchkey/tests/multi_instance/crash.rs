//! Crash safety: a token response is sent only once its grant is durable, and a revocation is acknowledged only
//! once it is. Workers exchange codes, refresh and revoke against an instance that is SIGKILLed in the middle of
//! the load; afterwards every token a client received still works and every acknowledged revocation holds, on
//! another instance (PostgreSQL) or on the same data directory restarted (SQLite).

use super::instance::*;
use super::Cluster;
use crate::support::Pkce;
use latchkey_store::test_database::Unreachable;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Concurrent clients.
const WORKERS: usize = 6;
/// Codes ready for the load; far more than are used before the kill.
const CODES: usize = 60;
/// Grants received before the kill (and at least one acknowledged revocation).
const KILL_AFTER: usize = 15;

/// A grant as a client saw it.
#[derive(Debug, Clone)]
struct Received {
    refresh_token: String,
    access_tokens: Vec<String>,
}

/// What the clients were told.
#[derive(Debug, Default)]
struct Ledger {
    grants: Vec<Received>,
    /// Refresh tokens whose revocation was sent (acknowledged or not).
    revoke_sent: HashSet<String>,
    /// Refresh tokens whose revocation was acknowledged.
    revoked: HashSet<String>,
    /// Answers other than success before the kill (there should be none).
    unexpected: Vec<String>,
    /// Requests that failed for want of a server (the kill).
    cut_off: usize,
}

/// Runs the load against `base` until it fails; returns the ledger once every worker stopped.
async fn load_and_kill(
    base: &str,
    tls: &Tls,
    client_id: &str,
    codes: Vec<(String, Pkce)>,
    kill: impl FnOnce(),
) -> Ledger {
    let queue = Arc::new(Mutex::new(codes));
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (queue, ledger) = (queue.clone(), ledger.clone());
            let (base, client_id, http) = (base.to_owned(), client_id.to_owned(), http(tls, false));
            tokio::spawn(async move { work(&base, &client_id, &http, &queue, &ledger).await })
        })
        .collect();
    let started = Instant::now();
    let enough = |l: &Ledger| l.grants.len() >= KILL_AFTER && !l.revoked.is_empty();
    while !enough(&ledger.lock().expect("lock")) {
        assert!(started.elapsed() < Duration::from_secs(30), "the load is too slow: {:?}", ledger.lock());
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    kill();
    for w in workers {
        w.await.expect("worker");
    }
    let left = queue.lock().expect("lock").len();
    let ledger = std::mem::take(&mut *ledger.lock().expect("lock"));
    assert!(ledger.unexpected.is_empty(), "unexpected answers: {:?}", ledger.unexpected);
    assert!(ledger.cut_off > 0 && left > 0, "the kill came in the middle of the load ({left} codes left)");
    assert!(!ledger.revoked.is_empty(), "some revocations were acknowledged");
    ledger
}

/// One client: exchange a code, refresh once, revoke every third grant; stops when the server is gone.
async fn work(
    base: &str,
    client_id: &str,
    http: &reqwest::Client,
    queue: &Mutex<Vec<(String, Pkce)>>,
    ledger: &Mutex<Ledger>,
) {
    loop {
        let Some((code, pkce)) = queue.lock().expect("lock").pop() else { return };
        let note = |what: String| ledger.lock().expect("lock").unexpected.push(what);
        let cut = || ledger.lock().expect("lock").cut_off += 1;
        let (refresh_token, access) = match post(http, base, "/token", &exchange_form(client_id, &code, &pkce)).await {
            Ok((200, body)) => (
                body["refresh_token"].as_str().expect("refresh token").to_owned(),
                body["access_token"].as_str().expect("access token").to_owned(),
            ),
            Ok((status, body)) => return note(format!("exchange: {status} {body}")),
            Err(_) => return cut(),
        };
        let index = {
            let mut l = ledger.lock().expect("lock");
            l.grants.push(Received { refresh_token: refresh_token.clone(), access_tokens: vec![access] });
            l.grants.len() - 1
        };
        match refresh(http, base, client_id, &refresh_token).await {
            Ok((200, body)) => {
                let access = body["access_token"].as_str().expect("access token").to_owned();
                ledger.lock().expect("lock").grants[index].access_tokens.push(access);
            }
            Ok((status, body)) => return note(format!("refresh: {status} {body}")),
            Err(_) => return cut(),
        }
        if index % 3 == 0 {
            ledger.lock().expect("lock").revoke_sent.insert(refresh_token.clone());
            match revoke(http, base, client_id, &refresh_token).await {
                Ok(200) => {
                    ledger.lock().expect("lock").revoked.insert(refresh_token);
                }
                Ok(status) => return note(format!("revoke: {status}")),
                Err(_) => return cut(),
            }
        }
    }
}

/// Every token received works at `base`, and every acknowledged revocation holds there.
async fn verify(base: &str, tls: &Tls, client_id: &str, ledger: &Ledger) {
    let http = http(tls, false);
    let (mut working, mut revoked) = (0, 0);
    for g in &ledger.grants {
        let (status, body) = refresh(&http, base, client_id, &g.refresh_token).await.expect("refresh");
        if ledger.revoked.contains(&g.refresh_token) {
            assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "an acknowledged revocation");
            for a in &g.access_tokens {
                assert_eq!(channels(&http, base, a).await.expect("api"), 401, "an access token of a revoked grant");
            }
            revoked += 1;
        } else if !ledger.revoke_sent.contains(&g.refresh_token) {
            assert_eq!(status, 200, "a refresh token the client received still works: {body}");
            for a in &g.access_tokens {
                assert_eq!(channels(&http, base, a).await.expect("api"), 200, "an access token the client received");
            }
            working += 1;
        }
    }
    assert!(working >= KILL_AFTER / 2 && revoked > 0, "{working} grants checked working, {revoked} revoked");
}

pub async fn on_postgresql_an_instance_killed_under_load_loses_no_token_it_sent_nor_a_revocation_it_acknowledged(
) -> Result<(), Unreachable> {
    let mut c = Cluster::start(&[]).await?;
    let codes = codes(&browser(&c.a.base, &c.tls, false), &c.a.base, &c.client_id, CODES).await;
    let (base, tls, client_id) = (c.a.base.clone(), c.tls.clone(), c.client_id.clone());
    let a = &mut c.a;
    let ledger = load_and_kill(&base, &tls, &client_id, codes, || a.kill()).await;
    verify(&c.b.base, &c.tls, &c.client_id, &ledger).await;
    c.b.assert_healthy();
    Ok(())
}

pub async fn on_sqlite_an_instance_killed_under_load_and_restarted_loses_no_token_it_sent_nor_a_revocation_it_acknowledged(
) -> Result<(), Unreachable> {
    let dir = tempfile::tempdir().expect("tempdir");
    let tls = Tls::generate(&dir.path().join("tls"));
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let url = format!("sqlite://{}", data.join("latchkey.db").display());
    let client_id = provision(&url).await;
    let spec = Spec { database_url: &url, dir: &data, tls: &tls, public_url: None, env: &[] };
    let mut first = Instance::start(&spec).await;
    let codes = codes(&browser(&first.base, &tls, false), &first.base, &client_id, CODES).await;
    let base = first.base.clone();
    let ledger = load_and_kill(&base, &tls, &client_id, codes, || first.kill()).await;
    let mut again = Instance::start(&spec).await;
    verify(&again.base, &tls, &client_id, &ledger).await;
    again.assert_healthy();
    Ok(())
}
