//! `latchkey bench`: a closed-loop load generator against a running server, over HTTPS keep-alive connections.
//!
//! Every connection is its own `reqwest::Client` (HTTP/1.1, one socket) with its own signed-in browser session.
//! Tokens and codes come from the real endpoints (sign-in and consent pages, `/token`), never from the store.
//! Whatever a workload needs (a grant, a pool of codes or tokens) is obtained before the warm-up starts, so only
//! the measured request is timed. With `--target oidc-provider` it drives node-oidc-provider (bench/oidc-provider)
//! through the same steps, for the side-by-side figures. See docs/benchmarks.md.

use crate::ConfigArgs;
use anyhow::{anyhow, bail, Context};
use clap::Args;
use latchkey_client::{DpopKey, KeyStore};
use latchkey_core::client::{ClientDetails, ClientType};
use latchkey_core::time::Clock;
use latchkey_server::clock::SystemClock;
use reqwest::redirect::Policy;
use reqwest::Url;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

const REDIRECT_URI: &str = "http://127.0.0.1:8765/callback";
const LATCHKEY_SCOPE: &str = "https://latchkey.dev/auth/readonly";
const CHROME_UA: &str =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
const WORKLOADS: [&str; 5] = ["refresh", "refresh-dpop", "exchange", "api", "revoke"];

/// `latchkey bench`: drives a running server and reports throughput, latency, CPU and memory.
#[derive(Args)]
pub struct BenchArgs {
    /// The server's issuer (base URL), e.g. https://127.0.0.1:8443.
    #[arg(long)]
    issuer: String,
    /// The kind of server: latchkey, or oidc-provider (bench/oidc-provider/server.mjs: endpoints from its
    /// discovery document, its dev sign-in and consent forms, scope `openid offline_access`, the API call is
    /// its userinfo endpoint; --client-id defaults to `bench`, --ca-file is needed).
    #[arg(long, default_value = "latchkey")]
    target: String,
    /// The PEM certificate to trust. Default with --setup: <data-dir>/tls/cert.pem.
    #[arg(long)]
    ca_file: Option<PathBuf>,
    /// A desktop client of a project with the data API enabled (not needed with --setup).
    #[arg(long)]
    client_id: Option<String>,
    /// The user to sign in as (not needed with --setup).
    #[arg(long)]
    email: Option<String>,
    /// Reads the user's password from the first line of stdin.
    #[arg(long)]
    password_stdin: bool,
    /// Creates a project, a desktop client and a user in the server's store first (--data-dir/--database-url).
    #[arg(long)]
    setup: bool,
    /// With --setup: the server's data directory.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// With --setup: the server's database URL.
    #[arg(long)]
    database_url: Option<String>,
    /// refresh, refresh-dpop, exchange, api, revoke or all (these five); or login (the sign-in form's POST, whose
    /// cost is the password hash; latchkey only).
    #[arg(long, default_value = "all")]
    workload: String,
    /// Concurrent keep-alive connections (one request in flight on each).
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Warm-up seconds (not measured).
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// Measured seconds.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Per connection: codes (exchange) or grants (revoke) obtained before the warm-up (which is then at most
    /// 0.5 s). The window ends early (and says so) when a connection runs out.
    #[arg(long, default_value_t = 1000)]
    pool: usize,
    /// The server's process id, for its CPU time and memory (/proc/PID/stat and /proc/PID/status).
    #[arg(long)]
    server_pid: Option<u32>,
    /// One JSON object per workload on stdout instead of the table.
    #[arg(long)]
    json: bool,
}

/// Where to send requests and as whom.
struct Target {
    issuer: String,
    client_id: String,
    email: String,
    password: String,
    ca: Vec<u8>,
    /// Whether it is node-oidc-provider rather than latchkey.
    oidc_provider: bool,
    endpoints: Endpoints,
}

/// The URLs a workload uses.
struct Endpoints {
    authorize: String,
    token: String,
    revoke: String,
    api: String,
    scope: &'static str,
}

impl Endpoints {
    fn latchkey(issuer: &str) -> Self {
        Self {
            authorize: format!("{issuer}/o/oauth2/v2/auth"),
            token: format!("{issuer}/token"),
            revoke: format!("{issuer}/revoke"),
            api: format!("{issuer}/video/v3/channels?part=id&mine=true"),
            scope: LATCHKEY_SCOPE,
        }
    }

    /// node-oidc-provider's endpoints, from its discovery document.
    async fn discover(issuer: &str, ca: &[u8]) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(ca)?)
            .build()?;
        let url = format!("{issuer}/.well-known/openid-configuration");
        let doc: serde_json::Value = http.get(&url).send().await?.error_for_status()?.json().await?;
        let field = |k: &str| doc[k].as_str().map(str::to_owned).with_context(|| format!("no {k} in {url}"));
        Ok(Self {
            authorize: field("authorization_endpoint")?,
            token: field("token_endpoint")?,
            revoke: field("revocation_endpoint")?,
            api: field("userinfo_endpoint")?,
            scope: "openid offline_access",
        })
    }
}

/// Runs the benchmark.
pub async fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let workloads: Vec<&str> = match args.workload.as_str() {
        "all" => WORKLOADS.to_vec(),
        w if WORKLOADS.contains(&w) || w == "login" => vec![w],
        w => bail!("unknown workload {w:?}: refresh, refresh-dpop, exchange, api, revoke, all, or login"),
    };
    if args.connections == 0 || args.duration <= 0.0 || args.warmup < 0.0 {
        bail!("--connections and --duration must be positive, --warmup not negative");
    }
    let target = Arc::new(target(&args).await?);
    let issuer = target.issuer.clone();
    let rss_idle = args.server_pid.and_then(rss_kb);
    let conns = connect(&target, args.connections).await?;
    for w in workloads {
        let result = run_workload(w, &conns, &args, rss_idle).await?;
        if args.json {
            println!("{}", result.to_json());
        } else {
            result.print_table_row(&issuer);
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn target(args: &BenchArgs) -> anyhow::Result<Target> {
    let issuer = args.issuer.trim_end_matches('/').to_owned();
    match args.target.as_str() {
        "latchkey" => {}
        "oidc-provider" => {
            if args.setup {
                bail!("--setup is for latchkey; node-oidc-provider has its client `bench` built in");
            }
            let ca_file = args.ca_file.clone().context("--ca-file is needed")?;
            let ca = std::fs::read(&ca_file).with_context(|| format!("reading {}", ca_file.display()))?;
            let endpoints = Endpoints::discover(&issuer, &ca).await?;
            return Ok(Target {
                issuer,
                client_id: args.client_id.clone().unwrap_or_else(|| "bench".into()),
                email: args.email.clone().unwrap_or_else(|| "bench".into()),
                password: "bench".into(),
                ca,
                oidc_provider: true,
                endpoints,
            });
        }
        t => bail!("unknown target {t:?}: latchkey or oidc-provider"),
    }
    let mut password = String::new();
    if args.password_stdin {
        std::io::stdin().read_to_string(&mut password)?;
        password = password.lines().next().unwrap_or_default().to_owned();
    }
    let (client_id, email, ca_file) = if args.setup {
        let config = ConfigArgs {
            data_dir: args.data_dir.clone(),
            database_url: args.database_url.clone(),
            ..ConfigArgs::default()
        }
        .load()?;
        let store = latchkey_store::open_with(&config.database_url(), config.pool_settings()).await?;
        let store = &*store;
        let now = SystemClock.now();
        let fail = |e: latchkey_server::admin::AdminError| anyhow!("setup: {e}");
        let p = latchkey_server::admin::project_create(store, "bench", now).await.map_err(fail)?;
        let project_id = p["project_id"].as_str().context("project_id")?.to_owned();
        latchkey_server::admin::project_set_api(store, &project_id, true).await.map_err(fail)?;
        let new = latchkey_server::admin::NewClient {
            project_id,
            client_type: ClientType::Desktop,
            name: "bench".into(),
            redirect_uris: vec![],
            details: ClientDetails::default(),
        };
        let c = latchkey_server::admin::client_create(store, new, now).await.map_err(fail)?;
        let client_id = c["client_id"].as_str().context("client_id")?.to_owned();
        let email = format!("bench-{}@example.com", latchkey_core::secret::random_b64(6).to_lowercase());
        if password.is_empty() {
            password = latchkey_core::secret::random_b64(18);
        }
        latchkey_server::admin::user_create(store, &email, &password, Some("Bench"), now).await.map_err(fail)?;
        let ca = args.ca_file.clone().unwrap_or_else(|| config.data_dir.join("tls/cert.pem"));
        (client_id, email, ca)
    } else {
        let client_id = args.client_id.clone().context("--client-id is needed (or --setup)")?;
        let email = args.email.clone().context("--email is needed (or --setup)")?;
        if password.is_empty() {
            bail!("--password-stdin is needed (or --setup)");
        }
        (client_id, email, args.ca_file.clone().context("--ca-file is needed")?)
    };
    let ca = std::fs::read(&ca_file).with_context(|| format!("reading {}", ca_file.display()))?;
    let endpoints = Endpoints::latchkey(&issuer);
    Ok(Target { issuer, client_id, email, password, ca, oidc_provider: false, endpoints })
}

/// One keep-alive connection with a signed-in browser session.
#[derive(Clone)]
struct Conn {
    http: reqwest::Client,
    target: Arc<Target>,
}

async fn connect(target: &Arc<Target>, n: usize) -> anyhow::Result<Vec<Conn>> {
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..n {
        let http = reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(&target.ca)?)
            .redirect(Policy::none())
            .cookie_store(true)
            .http1_only()
            .pool_max_idle_per_host(1)
            .user_agent(CHROME_UA)
            .build()?;
        let conn = Conn { http, target: target.clone() };
        set.spawn(async move {
            conn.code(&Pkce::new()).await?; // signs in once; the session cookie stays
            Ok::<_, anyhow::Error>(conn)
        });
    }
    let mut conns = Vec::with_capacity(n);
    while let Some(r) = set.join_next().await {
        conns.push(r??);
    }
    Ok(conns)
}

struct Pkce {
    verifier: String,
    challenge: String,
}

impl Pkce {
    fn new() -> Self {
        let verifier = latchkey_core::secret::random_b64(32);
        let challenge = latchkey_core::pkce::s256_challenge(&verifier);
        Self { verifier, challenge }
    }
}

/// A DPoP key kept in memory only.
struct MemoryKeys;

impl KeyStore for MemoryKeys {
    fn load(&self) -> Result<Option<Vec<u8>>, latchkey_client::Error> {
        Ok(None)
    }
    fn save(&self, _: &[u8]) -> Result<(), latchkey_client::Error> {
        Ok(())
    }
    fn clear(&self) -> Result<(), latchkey_client::Error> {
        Ok(())
    }
}

/// A prepared refresh token (and, for DPoP, its key and the last nonce).
struct Grant {
    access: String,
    refresh: String,
    dpop: Option<(DpopKey, Option<String>)>,
}

impl Conn {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.target.issuer)
    }

    async fn page(&self, r: reqwest::RequestBuilder) -> anyhow::Result<(u16, Option<String>, String)> {
        let r = r.send().await?;
        let status = r.status().as_u16();
        let location = r.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_owned);
        Ok((status, location, r.text().await?))
    }

    /// The authorization request's URL.
    fn authorize_url(&self, pkce: &Pkce) -> anyhow::Result<Url> {
        let mut url = Url::parse(&self.target.endpoints.authorize)?;
        url.query_pairs_mut()
            .append_pair("client_id", &self.target.client_id)
            .append_pair("redirect_uri", REDIRECT_URI)
            .append_pair("response_type", "code")
            .append_pair("scope", self.target.endpoints.scope)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", "bench");
        if self.target.oidc_provider {
            // Its refresh tokens (offline_access) are only issued with an explicit consent prompt.
            url.query_pairs_mut().append_pair("prompt", "consent");
        }
        Ok(url)
    }

    /// An authorization code through the real pages: sign-in (first time only) and consent.
    async fn code(&self, pkce: &Pkce) -> anyhow::Result<String> {
        if self.target.oidc_provider {
            return self.code_by_forms(pkce).await;
        }
        let url = self.authorize_url(pkce)?;
        let (mut status, _, mut body) = self.page(self.http.get(url.as_str())).await?;
        if body.contains("name=\"password\"") {
            let csrf = input(&body, "csrf").context("csrf on the sign-in page")?;
            let cont = input(&body, "continue").context("continue on the sign-in page")?;
            let form = [
                ("csrf", csrf.as_str()),
                ("continue", &cont),
                ("email", &self.target.email),
                ("password", &self.target.password),
            ];
            let (s, loc, b) = self.page(self.http.post(self.url("/signin")).form(&form)).await?;
            let loc = loc.with_context(|| format!("sign-in failed ({s}): {b}"))?;
            (status, _, body) = self.page(self.http.get(self.url(&loc))).await?;
        }
        let csrf = input(&body, "csrf").with_context(|| format!("no consent page ({status}): {body}"))?;
        let request = input(&body, "request").context("request on the consent page")?;
        let form = [("csrf", csrf.as_str()), ("request", &request), ("scope", LATCHKEY_SCOPE), ("decision", "allow")];
        let (s, loc, b) = self.page(self.http.post(&self.target.endpoints.authorize).form(&form)).await?;
        code_of(&loc.with_context(|| format!("consent did not redirect ({s}): {b}"))?)
    }

    /// An authorization code from node-oidc-provider's dev interactions: follows its redirects, fills its sign-in
    /// form (`login`, `password`) and submits its consent form, until it redirects to the app.
    async fn code_by_forms(&self, pkce: &Pkce) -> anyhow::Result<String> {
        let mut next = self.http.get(self.authorize_url(pkce)?.as_str());
        for _ in 0..12 {
            let (status, location, body) = self.page(next).await?;
            if let Some(loc) = location {
                if loc.starts_with(REDIRECT_URI) {
                    return code_of(&loc);
                }
                next = self.http.get(Url::parse(&self.target.issuer)?.join(&loc)?);
                continue;
            }
            let action = form_action(&body).with_context(|| format!("no form and no redirect ({status}): {body}"))?;
            let mut form = hidden_inputs(&body);
            if body.contains("name=\"password\"") {
                form.push(("login".into(), self.target.email.clone()));
                form.push(("password".into(), self.target.password.clone()));
            }
            next = self.http.post(Url::parse(&self.target.issuer)?.join(&action)?).form(&form);
        }
        bail!("no code after 12 pages")
    }

    /// Exchanges a code; with `dpop`, binds the refresh token to the key.
    async fn exchange(&self, code: &str, pkce: &Pkce, dpop: Option<&DpopKey>) -> anyhow::Result<reqwest::Response> {
        let form = [
            ("grant_type", "authorization_code"),
            ("client_id", &self.target.client_id),
            ("code", code),
            ("code_verifier", &pkce.verifier),
            ("redirect_uri", REDIRECT_URI),
        ];
        let mut nonce = None;
        for attempt in 0..2 {
            let mut req = self.http.post(&self.target.endpoints.token).form(&form);
            if let Some(key) = dpop {
                let jti = latchkey_core::secret::random_b64(16);
                let url = &self.target.endpoints.token;
                req = req.header("DPoP", key.proof("POST", url, &jti, nonce.as_deref(), SystemClock.now().0)?);
            }
            let r = req.send().await?;
            // A server that requires nonces answers the first proof with `use_dpop_nonce` and a nonce.
            if attempt == 0 && dpop.is_some() && r.status() == reqwest::StatusCode::BAD_REQUEST {
                if let Some(n) = dpop_nonce(&r) {
                    nonce = Some(n);
                    continue;
                }
            }
            return Ok(r);
        }
        bail!("the code exchange asked for a DPoP nonce twice")
    }

    async fn grant(&self, dpop: bool) -> anyhow::Result<Grant> {
        let pkce = Pkce::new();
        let code = self.code(&pkce).await?;
        let key = if dpop { Some(DpopKey::load_or_create(&MemoryKeys)?) } else { None };
        let r = self.exchange(&code, &pkce, key.as_ref()).await?;
        let nonce = dpop_nonce(&r);
        let status = r.status();
        let body: serde_json::Value = r.json().await?;
        if !status.is_success() {
            bail!("code exchange failed ({status}): {body}");
        }
        let text = |k: &str| body[k].as_str().map(str::to_owned).with_context(|| format!("no {k}: {body}"));
        Ok(Grant { access: text("access_token")?, refresh: text("refresh_token")?, dpop: key.map(|k| (k, nonce)) })
    }

    /// One refresh; with DPoP, a fresh proof with the last nonce, and one retry on `use_dpop_nonce`.
    async fn refresh(&self, grant: &mut Grant, retries: &mut u64) -> anyhow::Result<bool> {
        for attempt in 0..2 {
            let form = [
                ("grant_type", "refresh_token"),
                ("client_id", &self.target.client_id),
                ("refresh_token", &grant.refresh),
            ];
            let url = &self.target.endpoints.token;
            let mut req = self.http.post(url).form(&form);
            if let Some((key, nonce)) = &grant.dpop {
                let jti = latchkey_core::secret::random_b64(16);
                let proof = key.proof("POST", url, &jti, nonce.as_deref(), SystemClock.now().0)?;
                req = req.header("DPoP", proof);
            }
            let r = req.send().await?;
            if let (Some((_, nonce)), Some(n)) = (&mut grant.dpop, dpop_nonce(&r)) {
                *nonce = Some(n);
            }
            let status = r.status();
            let body = r.bytes().await?;
            if status.is_success() {
                return Ok(true);
            }
            if attempt == 0 && grant.dpop.is_some() && contains(&body, b"use_dpop_nonce") {
                *retries += 1;
                continue;
            }
            return Ok(false);
        }
        Ok(false)
    }
}

fn dpop_nonce(r: &reqwest::Response) -> Option<String> {
    r.headers().get("dpop-nonce").and_then(|v| v.to_str().ok()).map(str::to_owned)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// What one connection does in the loop, prepared before the clock starts.
enum Work {
    Refresh(Box<Grant>),
    Exchange(Vec<(String, Pkce)>),
    Api(String),
    Revoke(Vec<String>),
    /// The sign-in form's CSRF token (it stays valid for the connection's cookie).
    Login(String),
}

async fn prepare(conn: &Conn, workload: &str, pool: usize) -> anyhow::Result<Work> {
    Ok(match workload {
        "refresh" => Work::Refresh(Box::new(retry(|| conn.grant(false)).await?)),
        "refresh-dpop" => Work::Refresh(Box::new(retry(|| conn.grant(true)).await?)),
        "api" => Work::Api(retry(|| conn.grant(false)).await?.access),
        "exchange" => {
            let mut codes = Vec::with_capacity(pool);
            for _ in 0..pool {
                let pkce = Pkce::new();
                codes.push((retry(|| conn.code(&pkce)).await?, pkce));
            }
            codes.reverse();
            Work::Exchange(codes)
        }
        "login" => {
            if conn.target.oidc_provider {
                bail!("the login workload is for latchkey only");
            }
            let (_, _, body) = conn.page(conn.http.get(conn.url("/signin"))).await?;
            Work::Login(input(&body, "csrf").context("csrf on the sign-in page")?)
        }
        _ => {
            let mut tokens = Vec::with_capacity(pool);
            for _ in 0..pool {
                tokens.push(retry(|| conn.grant(false)).await?.refresh);
            }
            tokens.reverse();
            Work::Revoke(tokens)
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
    let result = match work {
        Work::Refresh(grant) => conn.refresh(grant, retries).await,
        Work::Exchange(codes) => {
            let (code, pkce) = codes.pop()?;
            drain(conn.exchange(&code, &pkce, None).await, success).await
        }
        Work::Api(access) => {
            drain(conn.http.get(&conn.target.endpoints.api).bearer_auth(&*access).send().await, success).await
        }
        Work::Revoke(tokens) => {
            let token = tokens.pop()?;
            let form = [("token", token.as_str()), ("client_id", &conn.target.client_id)];
            drain(conn.http.post(&conn.target.endpoints.revoke).form(&form).send().await, success).await
        }
        Work::Login(csrf) => {
            let t = &conn.target;
            let form = [("csrf", csrf.as_str()), ("continue", "/"), ("email", &t.email), ("password", &t.password)];
            let signed_in = |r: &reqwest::Response| r.status() == reqwest::StatusCode::SEE_OTHER;
            drain(conn.http.post(conn.url("/signin")).form(&form).send().await, signed_in).await
        }
    };
    Some(result.unwrap_or(false))
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

/// What one connection measured.
struct ConnResult {
    /// (completion offset from the start, latency), both in microseconds, successes only.
    samples: Vec<(u64, u32)>,
    /// Completion offsets of failed requests.
    errors: Vec<u64>,
    retries: u64,
    /// When the pool ran out (offset in microseconds), if it did.
    exhausted_at: Option<u64>,
}

async fn run_workload(
    workload: &str,
    conns: &[Conn],
    args: &BenchArgs,
    rss_idle: Option<u64>,
) -> anyhow::Result<Report> {
    let mut set = tokio::task::JoinSet::new();
    for (i, conn) in conns.iter().enumerate() {
        let (conn, workload, pool) = (conn.clone(), workload.to_owned(), args.pool);
        set.spawn(async move { (i, prepare(&conn, &workload, pool).await) });
    }
    let mut works: Vec<Option<Work>> = (0..conns.len()).map(|_| None).collect();
    while let Some(r) = set.join_next().await {
        let (i, work) = r?;
        works[i] = Some(work.with_context(|| format!("preparing {workload}"))?);
    }

    // Progress on stderr (stdout carries the results): a profiler can start on this line.
    eprintln!("{workload}: prepared; warming up, then measuring");
    // A pool workload warms up for half a second at most, so that the pool lasts into the window.
    let pooled = matches!(workload, "exchange" | "revoke");
    let warmup = Duration::from_secs_f64(if pooled { args.warmup.min(0.5) } else { args.warmup });
    let duration = Duration::from_secs_f64(args.duration);
    let start = Instant::now();
    let end = start + warmup + duration;
    let pid = args.server_pid;
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done_flag = finished.clone();
    let sampler = tokio::spawn(async move {
        let mut peak = 0u64;
        let mut cpu_at_window = None;
        while Instant::now() < end && !done_flag.load(std::sync::atomic::Ordering::Relaxed) {
            if let Some(kb) = pid.and_then(rss_kb) {
                peak = peak.max(kb);
            }
            if cpu_at_window.is_none() && start.elapsed() >= warmup {
                cpu_at_window = Some((start.elapsed(), pid.and_then(cpu_ticks)));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (peak, cpu_at_window)
    });
    let mut set = tokio::task::JoinSet::new();
    for (conn, work) in conns.iter().cloned().zip(works) {
        let Some(mut work) = work else { bail!("a connection was not prepared") };
        set.spawn(async move {
            let mut out = ConnResult { samples: Vec::new(), errors: Vec::new(), retries: 0, exhausted_at: None };
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
    let cpu_end = pid.and_then(cpu_ticks);
    let window_end_instant = start.elapsed();
    finished.store(true, std::sync::atomic::Ordering::Relaxed);
    let (rss_peak, cpu_start) = sampler.await?;

    // The window: from the end of the warm-up to the deadline, or to the moment the first connection ran out.
    let from = micros(warmup);
    let exhausted = results.iter().filter_map(|r| r.exhausted_at).min();
    let to = exhausted.unwrap_or(micros(warmup + duration)).max(from);
    let in_window = |at: u64| at > from && at <= to;
    let mut latencies: Vec<u32> =
        results.iter().flat_map(|r| r.samples.iter().filter(|s| in_window(s.0)).map(|s| s.1)).collect();
    latencies.sort_unstable();
    let errors = results.iter().map(|r| r.errors.iter().filter(|&&at| in_window(at)).count() as u64).sum();
    let retries = results.iter().map(|r| r.retries).sum();
    let window_s = (to - from) as f64 / 1e6;
    let requests = latencies.len() as u64;
    // CPU is measured from the end of the warm-up to the end of the run (the whole measured window).
    let cpu = match (cpu_start, cpu_end) {
        (Some((at, Some(t0))), Some(t1)) => {
            let secs = (t1.saturating_sub(t0)) as f64 / CLK_TCK;
            let wall = window_end_instant.saturating_sub(at).as_secs_f64();
            let total: u64 =
                results.iter().map(|r| r.samples.iter().filter(|s| s.0 >= micros(at)).count() as u64).sum();
            Some((secs / total.max(1) as f64, 100.0 * secs / wall.max(1e-9)))
        }
        _ => None,
    };
    Ok(Report {
        workload: workload.to_owned(),
        connections: conns.len(),
        window_s,
        requests,
        errors,
        retries,
        latencies,
        cpu,
        rss_idle_kb: rss_idle,
        rss_peak_kb: pid.map(|_| rss_peak),
        pool_exhausted: exhausted.is_some(),
    })
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Clock ticks per second of /proc/PID/stat (USER_HZ, 100 on Linux).
const CLK_TCK: f64 = 100.0;

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of stat(5); `rest` starts at field 3.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// VmRSS of a process in KiB.
fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

struct Report {
    workload: String,
    connections: usize,
    window_s: f64,
    requests: u64,
    errors: u64,
    retries: u64,
    /// Sorted, microseconds.
    latencies: Vec<u32>,
    /// (server CPU seconds per request, % of one core).
    cpu: Option<(f64, f64)>,
    rss_idle_kb: Option<u64>,
    rss_peak_kb: Option<u64>,
    pool_exhausted: bool,
}

impl Report {
    fn rate(&self) -> f64 {
        if self.window_s > 0.0 {
            self.requests as f64 / self.window_s
        } else {
            0.0
        }
    }

    /// The `q` quantile in milliseconds (nearest rank).
    fn quantile_ms(&self, q: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let rank = ((q * self.latencies.len() as f64).ceil() as usize).clamp(1, self.latencies.len());
        f64::from(self.latencies[rank - 1]) / 1000.0
    }

    fn to_json(&self) -> serde_json::Value {
        let round = |x: f64, d: i32| (x * 10f64.powi(d)).round() / 10f64.powi(d);
        serde_json::json!({
            "workload": self.workload,
            "connections": self.connections,
            "window_s": round(self.window_s, 3),
            "requests": self.requests,
            "errors": self.errors,
            "dpop_nonce_retries": self.retries,
            "req_per_s": round(self.rate(), 1),
            "p50_ms": self.quantile_ms(0.50),
            "p90_ms": self.quantile_ms(0.90),
            "p99_ms": self.quantile_ms(0.99),
            "max_ms": self.quantile_ms(1.0),
            "server_cpu_us_per_req": self.cpu.map(|c| round(c.0 * 1e6, 1)),
            "server_cpu_pct_of_core": self.cpu.map(|c| round(c.1, 1)),
            "server_rss_idle_mb": self.rss_idle_kb.map(|k| round(k as f64 / 1024.0, 1)),
            "server_rss_peak_mb": self.rss_peak_kb.map(|k| round(k as f64 / 1024.0, 1)),
            "pool_exhausted": self.pool_exhausted,
        })
    }

    fn print_table_row(&self, issuer: &str) {
        use std::sync::atomic::{AtomicBool, Ordering};
        static HEADER: AtomicBool = AtomicBool::new(false);
        if !HEADER.swap(true, Ordering::Relaxed) {
            println!("latchkey bench against {issuer}, {} connections", self.connections);
            println!(
                "{:<13} {:>9} {:>7} {:>10} {:>8} {:>8} {:>8} {:>10} {:>7} {:>9} {:>9}",
                "workload",
                "requests",
                "errors",
                "req/s",
                "p50 ms",
                "p90 ms",
                "p99 ms",
                "cpu us/req",
                "cpu %",
                "rss idle",
                "rss peak"
            );
        }
        let opt = |v: Option<f64>, d: usize| v.map_or_else(|| "-".to_owned(), |x| format!("{x:.d$}"));
        let mb = |kb: Option<u64>| kb.map_or_else(|| "-".to_owned(), |k| format!("{:.1} MB", k as f64 / 1024.0));
        println!(
            "{:<13} {:>9} {:>7} {:>10.0} {:>8.2} {:>8.2} {:>8.2} {:>10} {:>7} {:>9} {:>9}{}",
            self.workload,
            self.requests,
            self.errors,
            self.rate(),
            self.quantile_ms(0.50),
            self.quantile_ms(0.90),
            self.quantile_ms(0.99),
            opt(self.cpu.map(|c| c.0 * 1e6), 1),
            opt(self.cpu.map(|c| c.1), 0),
            mb(self.rss_idle_kb),
            mb(self.rss_peak_kb),
            if self.pool_exhausted { format!("  (pool ran out after {:.1} s)", self.window_s) } else { String::new() },
        );
    }
}

/// The code in the redirect to the app.
fn code_of(location: &str) -> anyhow::Result<String> {
    let loc = Url::parse(location)?;
    let code = loc.query_pairs().find(|(k, _)| k == "code").map(|(_, v)| v.into_owned());
    code.with_context(|| format!("no code in the redirect: {loc}"))
}

/// The `action` of the first form of a page, HTML references decoded.
fn form_action(body: &str) -> Option<String> {
    let form = &body[body.find("<form")?..];
    let start = form.find("action=\"")? + "action=\"".len();
    let end = form[start..].find('"')? + start;
    Some(html_escape::decode_html_entities(&form[start..end]).into_owned())
}

/// The name and value of every hidden input of a page.
fn hidden_inputs(body: &str) -> Vec<(String, String)> {
    let attr = |tag: &str, name: &str| {
        let needle = format!("{name}=\"");
        let start = tag.find(&needle)? + needle.len();
        let end = tag[start..].find('"')? + start;
        Some(html_escape::decode_html_entities(&tag[start..end]).into_owned())
    };
    body.split("<input")
        .skip(1)
        .filter_map(|rest| {
            let tag = &rest[..rest.find('>')?];
            if !tag.contains("type=\"hidden\"") {
                return None;
            }
            Some((attr(tag, "name")?, attr(tag, "value").unwrap_or_default()))
        })
        .collect()
}

/// The value of the form input named `name`, HTML references decoded.
fn input(body: &str, name: &str) -> Option<String> {
    let needle = format!("name=\"{name}\" value=\"");
    let start = body.find(&needle)? + needle.len();
    let end = body[start..].find('"')? + start;
    Some(html_escape::decode_html_entities(&body[start..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// node-oidc-provider's dev consent page, as it serves it (abridged).
    const CONSENT: &str = r#"<div class="container"><h1>Authorize</h1>
      <form autocomplete="off" action="/interaction/Ab-1_x/confirm?x=1&amp;y=2" method="post">
        <input type="hidden" name="prompt" value="consent"/>
        <input type="hidden" name="note" value="a &quot;b&quot;">
        <input required type="text" name="login" placeholder="Enter any login">
        <button autofocus type="submit" class="login login-submit">Continue</button>
      </form></div>"#;

    #[test]
    fn a_form_is_read_from_its_page() {
        assert_eq!(form_action(CONSENT).as_deref(), Some("/interaction/Ab-1_x/confirm?x=1&y=2"));
        let hidden = hidden_inputs(CONSENT);
        assert_eq!(hidden, vec![("prompt".into(), "consent".into()), ("note".into(), "a \"b\"".into())]);
        assert_eq!(form_action("<p>no form</p>"), None);
    }

    #[test]
    fn the_code_is_taken_from_the_redirect_to_the_app() {
        let code = code_of("http://127.0.0.1:8765/callback?code=abc%2Fd&state=bench").expect("code");
        assert_eq!(code, "abc/d");
        assert!(code_of("http://127.0.0.1:8765/callback?error=access_denied").is_err());
    }
}
