//! PostgreSQL failover: two instances on a primary with a synchronous standby ([`crate::cluster`]), reached through
//! libpq's multi-host URL (`target_session_attrs=read-write`), work under load; the primary is SIGKILLed, and
//! the standby promoted a few seconds later. Meanwhile every request is answered 503 with `Retry-After`; after the
//! promotion both instances serve again by themselves, with no restart; and nothing they acknowledged is lost:
//! every grant still refreshes, every revocation holds, every queued security event is there, and what was used
//! once (a DPoP proof, a code) is still used.

mod load;

use crate::cluster::Pair;
use crate::instance::*;
use crate::proxy::Forwarder;
use crate::{dpop_post, DpopKey};
use latchkey_admin::clock::OsRandom;
use latchkey_client::events::{Event, Received, SetReceiver, TokenRevoked};
use latchkey_client::ReqwestHttp;
use latchkey_core::secret::random_b64;
use latchkey_store::test_database::Unreachable;
use load::{Grant, Ledger, Load, Seen, Target};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the instances are left without a primary before the standby is promoted.
const OUTAGE: Duration = Duration::from_secs(3);
/// How soon after the promotion both instances must serve again.
const RESUME_WITHIN: Duration = Duration::from_secs(20);
/// The whole test's budget.
const BUDGET: Duration = Duration::from_secs(120);

pub async fn a_postgresql_failover_under_load_loses_nothing_acknowledged_and_what_was_used_once_stays_used(
) -> Result<(), Unreachable> {
    let began = Instant::now();
    let pg = Pair::start().await?;
    let url = pg.url();
    let dir = tempfile::tempdir().expect("tempdir");
    let tls = Tls::generate(&dir.path().join("tls"));
    let lb = Forwarder::bind().await;
    let public = format!("https://{}", lb.addr);
    let env = [
        // A request waits at most a second for a connection, then answers 503.
        ("LATCHKEY_DATABASE_ACQUIRE_TIMEOUT", "1"),
        // The load makes more grants of one user and app than the default limits keep (the oldest would be
        // invalidated, and counted lost).
        ("LATCHKEY_REFRESH_TOKENS_PER_CLIENT_USER", "100000"),
        ("LATCHKEY_REFRESH_TOKENS_PER_USER", "100000"),
        // A proof sent again after the failover is refused as a replay, not for its age.
        ("LATCHKEY_DPOP_MAX_AGE", "300"),
    ];
    let (dir_a, dir_b) = (dir.path().join("a"), dir.path().join("b"));
    let spec = |d| Spec { database_url: &url, dir: d, tls: &tls, public_url: Some(&public), env: &env };
    let (starting_a, starting_b) = (Instance::spawn(&spec(&dir_a)), Instance::spawn(&spec(&dir_b)));
    let (mut a, mut b) = (starting_a.ready().await, starting_b.ready().await);
    lb.set_upstreams(vec![a.addr, b.addr]);
    let client_id = provision(&url).await;
    let events = EventsApp::make(&url, &public).await;
    let target = Arc::new(Target {
        bases: [a.base.clone(), b.base.clone()],
        public: public.clone(),
        tls: tls.clone(),
        client_id,
        events_client: events.client_id.clone(),
        api_key: events.api_key.clone(),
        key: DpopKey::new(),
    });

    let load = Load::start(target.clone()).await;
    let enough = |l: &Ledger| {
        l.grants.iter().filter(|g| g.dpop.is_none()).count() >= 6
            && !l.revocations.is_empty()
            && l.proofs.len() >= 2
            && l.removals.len() >= 2
    };
    let loading = Instant::now();
    while !enough(&load.ledger()) {
        load.assert_running();
        assert!(loading.elapsed() < Duration::from_secs(60), "the load is too slow: {:?}", load.failures());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let killed = Instant::now();
    tokio::task::block_in_place(|| pg.kill_primary());
    tokio::time::sleep(OUTAGE).await;
    pg.promote_standby().await;
    let promoted = Instant::now();
    let back = loop {
        let after = |i| load.ledger().answers.iter().find(|s| s.instance == i && s.ok && s.at > promoted).map(|s| s.at);
        if let (Some(x), Some(y)) = (after(0), after(1)) {
            break x.max(y) - promoted;
        }
        load.assert_running();
        if promoted.elapsed() > RESUME_WITHIN {
            panic!("no service {RESUME_WITHIN:?} after the promotion: {:?}\n{}", load.failures(), pg.logs());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // A little more work on the new primary, then the clients stop.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let ledger = load.stop().await;

    let before = |s: &Seen| s.at < killed;
    let early: Vec<_> = ledger.answers.iter().filter(|s| before(s) && !s.ok).collect();
    assert!(early.is_empty(), "failures before the kill: {early:?}");
    let outage: Vec<_> = ledger.answers.iter().filter(|s| s.at >= killed && s.at <= promoted).collect();
    let unavailable = outage.iter().filter(|s| s.status == 503).count();
    assert!(unavailable > 0, "no 503 while there was no primary: {outage:?}");
    let served_or_unavailable = |s: &Seen| s.ok || (s.status == 503 && s.retry_after);
    let wrong: Vec<_> = ledger.answers.iter().filter(|s| !served_or_unavailable(s)).collect();
    assert!(wrong.is_empty(), "every failure is a 503 with Retry-After, never another error: {wrong:?}");

    let check = Check { t: &target, http: http(&tls, false), nonce: None, turn: 0, tally: Tally::default() };
    let tally = check.run(&ledger, killed, &events).await;
    let took = began.elapsed();
    let Tally { grants, revocations, events, proofs, codes, misses } = tally;
    println!(
        "failover: lost {} of {} grants, {} of {} revocations, {} of {} events; replays refused: {} of {} DPoP \
         proofs, {} of {} codes; {unavailable} answers 503 while there was no primary ({OUTAGE:?}), both instances \
         back {back:.1?} after the promotion; {took:.1?} before the teardown",
        grants.lost(),
        grants.of,
        revocations.lost(),
        revocations.of,
        events.lost(),
        events.of,
        proofs.held,
        proofs.of,
        codes.held,
        codes.of,
    );
    assert!(misses.is_empty(), "what did not hold: {misses:#?}");
    assert!([grants, revocations, events, proofs, codes].iter().all(|c| c.of > 0), "something of each was checked");
    a.assert_healthy();
    b.assert_healthy();
    // The teardown (instances, then both servers and their directories) counts too.
    drop((a, b, lb));
    drop(pg);
    let took = began.elapsed();
    println!("failover: {took:.1?} in all");
    assert!(took < BUDGET, "the test took {took:?}");
    Ok(())
}

/// The app whose access the load keeps removing, with a poll stream, and the user's console API key (the user is a
/// member (editor) of its project, so that the key may poll).
struct EventsApp {
    client_id: String,
    api_key: String,
    poll_url: String,
    public: String,
}

impl EventsApp {
    async fn make(url: &str, public: &str) -> Self {
        let project = admin_ok(url, &["project", "create", "--name", "Events"], "").await;
        let project = project["project_id"].as_str().expect("project_id").to_owned();
        admin_ok(url, &["project", "enable-api", "--project", &project], "").await;
        let args = ["client", "create", "--project", &project, "--type", "desktop", "--name", "E"];
        let client_id = admin_ok(url, &args, "").await["client_id"].as_str().expect("client_id").to_owned();
        let args = ["project", "member", "add", "--project", &project, "--email", EMAIL, "--role", "editor"];
        admin_ok(url, &args, "").await;
        let key = admin_ok(url, &["api-key", "create", "--email", EMAIL, "--name", "events"], "").await;
        let api_key = key["api_key"].as_str().expect("api_key").to_owned();
        let stream = admin_ok(url, &["stream", "create", "--client", &client_id, "--poll"], "").await;
        let stream_id = stream["stream_id"].as_str().unwrap_or_else(|| panic!("stream_id: {stream}"));
        let poll_url = format!("{public}/ssf/poll/{stream_id}");
        Self { client_id, api_key, poll_url, public: public.to_owned() }
    }

    /// Every token-revoked event of the stream, read by the app's backend as the SDK does (each SET verified
    /// against the JWKS, acknowledged once read).
    async fn token_revoked(&self, tls: &Tls) -> Vec<TokenRevoked> {
        let http = Arc::new(ReqwestHttp::with_ca_file(Some(&tls.cert)).expect("http"));
        let jwks = format!("{}/oauth2/v3/certs", self.public);
        let receiver = SetReceiver::new(&self.public, &self.client_id, &jwks, http);
        let (mut ack, mut found) = (Vec::new(), Vec::new());
        for _ in 0..100 {
            let polled = receiver.poll(&self.poll_url, &self.api_key, &ack, &[], 100).await.expect("poll");
            ack.clear();
            for set in polled.sets {
                match set.result {
                    Ok(Received::Event(e)) => match e.event {
                        Event::TokenRevoked(r) => found.push(r),
                        other => panic!("only token-revoked events, not {other:?}"),
                    },
                    Ok(Received::Duplicate { .. }) => {}
                    Err(e) => panic!("a SET that does not verify: {e:?}"),
                }
                ack.push(set.jti);
            }
            if ack.is_empty() && !polled.more_available {
                return found;
            }
        }
        panic!("the stream's events never ran out");
    }
}

/// How many things of one kind held, of how many checked.
#[derive(Default, Clone, Copy)]
struct Count {
    held: usize,
    of: usize,
}

impl Count {
    fn lost(&self) -> usize {
        self.of - self.held
    }
}

/// What held after the failover: grants that still work, revocations still in force, events still queued, and
/// replays (DPoP proofs, codes) still refused; and a line for each thing that did not.
#[derive(Default)]
struct Tally {
    grants: Count,
    revocations: Count,
    events: Count,
    proofs: Count,
    codes: Count,
    misses: Vec<String>,
}

/// Counts a thing checked into `count`, and `miss` when it did not hold.
fn tally(count: &mut Count, misses: &mut Vec<String>, held: bool, miss: impl FnOnce() -> String) {
    count.of += 1;
    if held {
        count.held += 1;
    } else {
        misses.push(miss());
    }
}

/// The checks after the failover, each request at the next instance in turn.
struct Check<'a> {
    t: &'a Target,
    http: reqwest::Client,
    /// The latest `DPoP-Nonce`.
    nonce: Option<String>,
    turn: usize,
    tally: Tally,
}

impl Check<'_> {
    async fn run(mut self, ledger: &Ledger, killed: Instant, events: &EventsApp) -> Tally {
        let when = |at: Instant| match at.checked_duration_since(killed) {
            Some(after) => format!("{after:.1?} after the kill"),
            None => format!("{:.1?} before the kill", killed - at),
        };
        // First the proofs, while their `iat` is young.
        for p in ledger.proofs.iter().filter(|p| p.at < killed) {
            let i = self.next();
            let form = self.refresh_form(&p.refresh_token);
            let (status, error, _) = dpop_post(&self.http, &self.t.bases[i], &form, &p.proof).await;
            let refused = status == 400 && (error == "invalid_dpop_proof" || error == "use_dpop_nonce");
            let miss = || format!("a DPoP proof accepted {}, sent again: {status} {error}", when(p.at));
            tally(&mut self.tally.proofs, &mut self.tally.misses, refused, miss);
        }
        for g in ledger.grants.iter().filter(|g| !ledger.revoke_sent.contains(&g.refresh_token)) {
            let (status, error) = match g.dpop {
                Some(_) => self.dpop_refresh(&g.refresh_token).await,
                None => self.refresh(&self.t.client_id, &g.refresh_token).await,
            };
            let dpop = if g.dpop.is_some() { "DPoP-bound " } else { "" };
            let miss = || format!("a {dpop}grant acknowledged {}, refreshed: {status} {error}", when(g.at));
            tally(&mut self.tally.grants, &mut self.tally.misses, status == 200, miss);
        }
        let revoked = ledger.revocations.iter().map(|r| (&self.t.client_id, "revoked", r));
        let removed = ledger.removals.iter().map(|r| (&self.t.events_client, "removed", r));
        for (client_id, how, r) in revoked.chain(removed) {
            let (status, error) = self.refresh(client_id, &r.refresh_token).await;
            let miss = || format!("a grant {how} {}, refreshed: {status} {error}", when(r.at));
            let held = (status, error.as_str()) == (400, "invalid_grant");
            tally(&mut self.tally.revocations, &mut self.tally.misses, held, miss);
        }
        let queued = events.token_revoked(&self.t.tls).await;
        for r in &ledger.removals {
            let held = queued.iter().any(|e| e.token_matches(&r.refresh_token));
            let miss = || format!("no token-revoked event for the access removed {}", when(r.at));
            tally(&mut self.tally.events, &mut self.tally.misses, held, miss);
        }
        // Last, since a code presented again revokes its grant.
        for g in ledger.grants.iter().filter(|g| g.at < killed) {
            let (status, error) = self.redeem_again(g).await;
            let miss = || format!("a code redeemed {}, redeemed again: {status} {error}", when(g.at));
            let refused = (status, error.as_str()) == (400, "invalid_grant");
            tally(&mut self.tally.codes, &mut self.tally.misses, refused, miss);
        }
        self.tally
    }

    fn next(&mut self) -> usize {
        self.turn += 1;
        self.turn % 2
    }

    fn refresh_form<'a>(&'a self, refresh_token: &'a str) -> [(&'a str, &'a str); 3] {
        [("grant_type", "refresh_token"), ("client_id", &self.t.client_id), ("refresh_token", refresh_token)]
    }

    /// A refresh of `client_id`'s token without DPoP: status and error code.
    async fn refresh(&mut self, client_id: &str, refresh_token: &str) -> (u16, String) {
        let i = self.next();
        let (status, body) = refresh(&self.http, &self.t.bases[i], client_id, refresh_token).await.expect("refresh");
        (status, body["error"].as_str().unwrap_or_default().to_owned())
    }

    /// A DPoP refresh with a fresh proof (and, once told, a fresh nonce): status and error code.
    async fn dpop_refresh(&mut self, refresh_token: &str) -> (u16, String) {
        let mut answer = (0, String::new());
        for _ in 0..2 {
            let i = self.next();
            let proof = self.t.key.proof(&self.t.public, &random_b64(16, &OsRandom), self.nonce.as_deref());
            let form = self.refresh_form(refresh_token);
            let (status, error, nonce) = dpop_post(&self.http, &self.t.bases[i], &form, &proof).await;
            self.nonce = Some(nonce).filter(|n| !n.is_empty()).or(self.nonce.take());
            answer = (status, error);
            if answer.1 != "use_dpop_nonce" {
                break;
            }
        }
        answer
    }

    /// The grant's code exchanged again (with its proof for a DPoP-bound grant): status and error code.
    async fn redeem_again(&mut self, g: &Grant) -> (u16, String) {
        let i = self.next();
        let form = exchange_form(&self.t.client_id, &g.code.0, &g.code.1);
        match &g.dpop {
            Some(proof) => {
                let (status, error, _) = dpop_post(&self.http, &self.t.bases[i], &form, proof).await;
                (status, error)
            }
            None => {
                let (status, body) = post(&self.http, &self.t.bases[i], "/token", &form).await.expect("token");
                (status, body["error"].as_str().unwrap_or_default().to_owned())
            }
        }
    }
}
