//! The failover test's load: clients that keep working through both instances, whatever they answer, and the
//! ledger of what the instances acknowledged to them and of every answer.
//!
//! Each client takes the instances in turn, one request here and the next there. A failed step ends its piece of
//! work (a code, a DPoP chain) and the client starts a fresh one, so that no answer after an outage depends on
//! what the outage left half done: a code whose exchange failed may have been used, a nonce sent with a failed
//! refresh may be spent.

use crate::instance::*;
use crate::support::{Browser, Pkce, READONLY};
use crate::DpopKey;
use latchkey_admin::clock::OsRandom;
use latchkey_core::dpop::code_jti;
use latchkey_core::secret::random_b64;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// What the clients need: the instances, the apps, the user's console API key and a DPoP key.
pub struct Target {
    /// The two instances' own URLs.
    pub bases: [String; 2],
    /// The public URL (the balancer's): the issuer, and the `htu` of DPoP proofs.
    pub public: String,
    /// Their certificate.
    pub tls: Tls,
    /// The app whose grants the load makes, refreshes and revokes.
    pub client_id: String,
    /// The app whose access the user keeps removing: each removal queues a token-revoked event for its stream.
    pub events_client: String,
    /// The user's console API key (for the removals and the events' poll).
    pub api_key: String,
    /// The key every DPoP-bound grant is bound to.
    pub key: DpopKey,
}

impl Target {
    /// `path` on instance `i`.
    pub fn url(&self, i: usize, path: &str) -> String {
        format!("{}{path}", self.bases[i])
    }
}

/// A grant whose code exchange an instance acknowledged.
pub struct Grant {
    /// Its refresh token.
    pub refresh_token: String,
    /// The code redeemed, and its verifier.
    pub code: (String, Pkce),
    /// The DPoP proof of the exchange, for a grant bound to [`Target::key`].
    pub dpop: Option<String>,
    /// When the exchange was acknowledged.
    pub at: Instant,
}

/// A refresh token whose revocation (or whose app's removal) an instance acknowledged.
pub struct Revoked {
    /// The token.
    pub refresh_token: String,
    /// When.
    pub at: Instant,
}

/// A DPoP-bound refresh an instance accepted: the token and the proof, to be sent again.
pub struct Proved {
    /// The refresh token.
    pub refresh_token: String,
    /// The proof.
    pub proof: String,
    /// When it was accepted.
    pub at: Instant,
}

/// An answer an instance gave the load.
pub struct Seen {
    /// When it arrived.
    pub at: Instant,
    /// Which instance.
    pub instance: usize,
    /// The step.
    pub what: &'static str,
    /// Its status (0: no answer).
    pub status: u16,
    /// Whether it is the step's success.
    pub ok: bool,
    /// Whether it carried `Retry-After`.
    pub retry_after: bool,
    /// The start of its body, for a failure.
    pub detail: String,
}

impl std::fmt::Debug for Seen {
    /// The step, the instance, the status, and the start of the body of a failure.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let retry_after = if self.retry_after { " (Retry-After)" } else { "" };
        write!(f, "\n{} at instance {}: {}{retry_after} {}", self.what, self.instance, self.status, self.detail)
    }
}

/// What the clients were told.
#[derive(Default)]
pub struct Ledger {
    /// Acknowledged code exchanges.
    pub grants: Vec<Grant>,
    /// Refresh tokens whose revocation was sent, acknowledged or not (neither a live grant nor a revoked one).
    pub revoke_sent: HashSet<String>,
    /// Acknowledged revocations (RFC 7009).
    pub revocations: Vec<Revoked>,
    /// Acknowledged removals of the events app's access: each queued a token-revoked event naming the token.
    pub removals: Vec<Revoked>,
    /// Accepted DPoP refreshes.
    pub proofs: Vec<Proved>,
    /// Every answer.
    pub answers: Vec<Seen>,
}

/// The running load; [`Load::stop`] ends it.
pub struct Load {
    ledger: Arc<Mutex<Ledger>>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
}

impl Load {
    /// Signs each client in, then starts them: two making, refreshing and revoking grants, one making DPoP-bound
    /// grants and refreshing them with proofs, one granting the events app and removing its access.
    pub async fn start(target: Arc<Target>) -> Self {
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut workers = Vec::new();
        for kind in [Kind::Grants, Kind::Grants, Kind::Dpop, Kind::Removals] {
            let client = Client::new(target.clone(), ledger.clone(), stop.clone()).await;
            workers.push(tokio::spawn(client.run(kind)));
        }
        Self { ledger, stop, workers }
    }

    /// The ledger so far.
    pub fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().expect("ledger")
    }

    /// Panics when a client stopped before it was told to (a panic of its own, which [`Load::stop`] shows).
    pub fn assert_running(&self) {
        assert!(self.workers.iter().all(|w| !w.is_finished()), "a client of the load stopped by itself");
    }

    /// The latest answers that were not a success, for a failure's message.
    pub fn failures(&self) -> Vec<String> {
        let l = self.ledger();
        let failed: Vec<_> = l.answers.iter().filter(|s| !s.ok).map(|s| format!("{s:?}")).collect();
        failed[failed.len().saturating_sub(10)..].to_vec()
    }

    /// Stops the clients after their current step; the ledger.
    pub async fn stop(self) -> Ledger {
        self.stop.store(true, Ordering::SeqCst);
        for w in self.workers {
            w.await.expect("a client of the load panicked");
        }
        std::mem::take(&mut *self.ledger.lock().expect("ledger"))
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Grants,
    Dpop,
    Removals,
}

/// A client: a browser signed in as [`EMAIL`] (one cookie jar for both instances) and an HTTP client.
struct Client {
    t: Arc<Target>,
    ledger: Arc<Mutex<Ledger>>,
    stop: Arc<AtomicBool>,
    browsers: [Browser; 2],
    http: reqwest::Client,
    turn: usize,
}

/// A success's `DPoP-Nonce` and JSON body.
struct Answer {
    nonce: Option<String>,
    body: Value,
}

impl Client {
    async fn new(t: Arc<Target>, ledger: Arc<Mutex<Ledger>>, stop: Arc<AtomicBool>) -> Self {
        let first = browser(&t.bases[0], &t.tls, false);
        // Sign in (the code is left unused).
        codes(&first, &t.bases[0], &t.client_id, 1).await;
        let second = Browser::with_http(&t.bases[1], first.http.clone());
        let http = http(&t.tls, false);
        Self { t, ledger, stop, browsers: [first, second], http, turn: 0 }
    }

    async fn run(mut self, kind: Kind) {
        while !self.stop.load(Ordering::SeqCst) {
            let done = match kind {
                Kind::Grants => self.grant().await,
                Kind::Dpop => self.dpop_chain().await,
                Kind::Removals => self.removal().await,
            };
            if done.is_none() {
                // A step failed: the instances are (or were) without their database; try again shortly.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().expect("ledger")
    }

    /// The next instance in turn.
    fn next(&mut self) -> usize {
        self.turn += 1;
        self.turn % 2
    }

    fn note(&self, instance: usize, what: &'static str, status: u16, ok: bool, retry_after: bool, detail: &str) {
        let detail = if ok { String::new() } else { detail.chars().take(300).collect() };
        let seen = Seen { at: Instant::now(), instance, what, status, ok, retry_after, detail };
        self.ledger().answers.push(seen);
    }

    /// Sends a request to instance `i` and notes the answer (`ok` when its status is `expect`).
    async fn call(
        &self,
        i: usize,
        what: &'static str,
        expect: u16,
        request: reqwest::RequestBuilder,
    ) -> Option<Answer> {
        let sent = send(request).await;
        self.judge(i, what, expect, sent)
    }

    /// Notes an answer (`ok` when its status is `expect`).
    fn judge(&self, i: usize, what: &'static str, expect: u16, sent: Sent) -> Option<Answer> {
        let Sent { status, retry_after, nonce, text } = sent;
        let ok = status == expect;
        self.note(i, what, status, ok, retry_after, &text);
        ok.then(|| Answer { nonce, body: serde_json::from_str(&text).unwrap_or(Value::Null) })
    }

    /// A DPoP request to instance `i` with a proof carrying `nonce` (`request` makes the proof and the request for a
    /// nonce), sent again with the answer's new nonce when it is `use_dpop_nonce`, as RFC 9449 §8 asks of a client
    /// (after a loss of the proof records the server asks for a nonce newer than them). The proof used, and the
    /// answer.
    async fn dpop_call(
        &self,
        i: usize,
        what: &'static str,
        nonce: Option<&str>,
        request: impl Fn(Option<&str>) -> (String, reqwest::RequestBuilder),
    ) -> Option<(String, Answer)> {
        let (proof, first) = request(nonce);
        let sent = send(first).await;
        let asks_nonce = sent.status == 400 && sent.text.contains("\"use_dpop_nonce\"") && sent.nonce.is_some();
        if !asks_nonce {
            return self.judge(i, what, 200, sent).map(|a| (proof, a));
        }
        let (proof, again) = request(sent.nonce.as_deref());
        self.call(i, what, 200, again).await.map(|a| (proof, a))
    }

    /// A code for `client_id`: the authorization request at instance `i`, the consent decided at the other.
    async fn authorize(&self, client_id: &str, i: usize) -> Option<(String, Pkce)> {
        let pkce = Pkce::new();
        let consent = self.browsers[i].get(&authorize_url(&self.t.bases[i], client_id, &pkce)).await;
        let is_consent = consent.status == 200 && consent.input("request").is_some();
        let retry_after = consent.headers.contains_key("retry-after");
        self.note(i, "authorization", consent.status, is_consent, retry_after, &consent.body);
        if !is_consent {
            return None;
        }
        let done = self.browsers[1 - i].decide(&consent, &[READONLY], "allow").await;
        let code = done.redirect_param("code").filter(|_| done.status == 303);
        let retry_after = done.headers.contains_key("retry-after");
        self.note(1 - i, "consent", done.status, code.is_some(), retry_after, &done.body);
        Some((code?, pkce))
    }

    fn token(&self, i: usize) -> reqwest::RequestBuilder {
        self.http.post(self.t.url(i, "/token"))
    }

    fn refresh_form<'a>(&'a self, refresh_token: &'a str) -> [(&'a str, &'a str); 3] {
        [("grant_type", "refresh_token"), ("client_id", &self.t.client_id), ("refresh_token", refresh_token)]
    }

    /// A grant: authorization, exchange, one refresh; every third is revoked.
    async fn grant(&mut self) -> Option<()> {
        let i = self.next();
        let (code, pkce) = self.authorize(&self.t.client_id, i).await?;
        let form = exchange_form(&self.t.client_id, &code, &pkce);
        let answer = self.call(1 - i, "exchange", 200, self.token(1 - i).form(&form)).await?;
        let refresh_token = answer.body["refresh_token"].as_str().expect("refresh_token").to_owned();
        let grant = Grant { refresh_token: refresh_token.clone(), code: (code, pkce), dpop: None, at: Instant::now() };
        let n = {
            let mut l = self.ledger();
            l.grants.push(grant);
            l.grants.len()
        };
        self.call(i, "refresh", 200, self.token(i).form(&self.refresh_form(&refresh_token))).await?;
        if n % 3 == 0 {
            self.ledger().revoke_sent.insert(refresh_token.clone());
            let form = [("client_id", self.t.client_id.as_str()), ("token", &refresh_token)];
            self.call(1 - i, "revocation", 200, self.http.post(self.t.url(1 - i, "/revoke")).form(&form)).await?;
            self.ledger().revocations.push(Revoked { refresh_token, at: Instant::now() });
        }
        Some(())
    }

    /// A DPoP-bound grant (the exchange's proof carries the code's hash as its `jti`), refreshed up to three times,
    /// each with a fresh proof and the nonce of the answer before.
    async fn dpop_chain(&mut self) -> Option<()> {
        let i = self.next();
        let (code, pkce) = self.authorize(&self.t.client_id, i).await?;
        let form = exchange_form(&self.t.client_id, &code, &pkce);
        let (proof, answer) = self
            .dpop_call(1 - i, "DPoP exchange", None, |nonce| {
                let proof = self.t.key.proof(&self.t.public, &code_jti(&code), nonce);
                (proof.clone(), self.token(1 - i).form(&form).header("DPoP", proof))
            })
            .await?;
        let refresh_token = answer.body["refresh_token"].as_str().expect("refresh_token").to_owned();
        let mut nonce = answer.nonce.expect("a DPoP-Nonce with the tokens");
        let grant =
            Grant { refresh_token: refresh_token.clone(), code: (code, pkce), dpop: Some(proof), at: Instant::now() };
        self.ledger().grants.push(grant);
        for _ in 0..3 {
            let j = self.next();
            let form = self.refresh_form(&refresh_token);
            let (proof, answer) = self
                .dpop_call(j, "DPoP refresh", Some(&nonce), |nonce| {
                    let proof = self.t.key.proof(&self.t.public, &random_b64(16, &OsRandom), nonce);
                    (proof.clone(), self.token(j).form(&form).header("DPoP", proof))
                })
                .await?;
            let proved = Proved { refresh_token: refresh_token.clone(), proof, at: Instant::now() };
            self.ledger().proofs.push(proved);
            nonce = answer.nonce.expect("a DPoP-Nonce with the tokens");
        }
        Some(())
    }

    /// A grant of the events app, then its access removed by the user through the console API.
    async fn removal(&mut self) -> Option<()> {
        let i = self.next();
        let client = &self.t.events_client;
        let (code, pkce) = self.authorize(client, i).await?;
        let form = exchange_form(client, &code, &pkce);
        let answer = self.call(1 - i, "exchange (events app)", 200, self.token(1 - i).form(&form)).await?;
        let refresh_token = answer.body["refresh_token"].as_str().expect("refresh_token").to_owned();
        let path = format!("/console/api/v1/users/{EMAIL}/apps/{client}");
        let request = self.http.delete(self.t.url(i, &path)).bearer_auth(&self.t.api_key);
        self.call(i, "access removal", 200, request).await?;
        self.ledger().removals.push(Revoked { refresh_token, at: Instant::now() });
        Some(())
    }
}

/// An answer as it came.
struct Sent {
    status: u16,
    retry_after: bool,
    nonce: Option<String>,
    text: String,
}

/// Sends a request; a request that got no answer has status 0 and the error as its text.
async fn send(request: reqwest::RequestBuilder) -> Sent {
    match request.send().await {
        Ok(r) => {
            let header = |name: &str| r.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let (retry_after, nonce) = (header("retry-after").is_some(), header("dpop-nonce"));
            Sent { status: r.status().as_u16(), retry_after, nonce, text: r.text().await.unwrap_or_default() }
        }
        Err(e) => Sent { status: 0, retry_after: false, nonce: None, text: e.to_string() },
    }
}
