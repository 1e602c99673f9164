//! `latchkey serve` processes on one database, the admin CLI against it, and the clients a test uses on them.

use crate::support::{Browser, Pkce, PASSWORD, READONLY};
use latchkey_proto::TokenResponse;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_latchkey");
/// The redirect URI of every flow here.
pub const REDIRECT: &str = "http://127.0.0.1:4545/cb";
/// The test user.
pub const EMAIL: &str = "many@example.com";
/// The system secret every instance of a test and the admin CLI share (as an operator sets
/// `LATCHKEY_SECRETS_SYSTEM` on every instance on one database).
pub const SYSTEM_SECRET: &str = "the system secret of the multi-instance tests";

/// The TLS certificate every instance of a test serves (as behind one load balancer).
#[derive(Debug, Clone)]
pub struct Tls {
    /// The certificate (also the trust anchor: it is self-signed).
    pub cert: PathBuf,
    /// Its key.
    pub key: PathBuf,
    /// The certificate, PEM.
    pub ca: Vec<u8>,
}

impl Tls {
    /// A certificate for localhost and 127.0.0.1 in `dir`.
    pub fn generate(dir: &Path) -> Self {
        let files = latchkey_server::tls::ensure_local_certificate(dir).expect("certificate");
        let ca = std::fs::read(&files.cert).expect("read certificate");
        Self { cert: files.cert, key: files.key, ca }
    }
}

/// How to start an instance.
pub struct Spec<'a> {
    /// The database URL.
    pub database_url: &'a str,
    /// Its data directory (logs go there too).
    pub dir: &'a Path,
    /// The certificate.
    pub tls: &'a Tls,
    /// The public URL (the load balancer's), when set.
    pub public_url: Option<&'a str>,
    /// More `LATCHKEY_*` settings.
    pub env: &'a [(&'a str, &'a str)],
}

/// A `latchkey serve` process; killed on drop.
pub struct Instance {
    child: Child,
    /// Its own address, `https://127.0.0.1:PORT`.
    pub base: String,
    /// Its listener.
    pub addr: SocketAddr,
    stderr: PathBuf,
}

impl Instance {
    /// Starts an instance and waits until it serves.
    pub async fn start(spec: &Spec<'_>) -> Self {
        Self::spawn(spec).ready().await
    }

    /// Starts the process; [`Starting::ready`] waits for it.
    pub fn spawn(spec: &Spec<'_>) -> Starting {
        std::fs::create_dir_all(spec.dir).expect("data dir");
        let stdout = spec.dir.join("stdout.log");
        let stderr = spec.dir.join("stderr.log");
        let mut command = Command::new(BIN);
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--database-url", spec.database_url, "--data-dir"])
            .arg(spec.dir)
            .arg("--tls-cert")
            .arg(&spec.tls.cert)
            .arg("--tls-key")
            .arg(&spec.tls.key)
            .env("LATCHKEY_LOG", "info")
            .env("LATCHKEY_SECRETS_SYSTEM", SYSTEM_SECRET)
            // Every test's requests come from one loopback address: no rate limit (`tests/spec/rate_limits.rs` tests
            // them).
            .env("LATCHKEY_RATE_LIMITS_TOKEN_PER_ADDRESS", "0")
            .env("LATCHKEY_RATE_LIMITS_TOKEN_PER_CLIENT", "0")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).expect("stdout file"))
            .stderr(std::fs::File::create(&stderr).expect("stderr file"));
        if let Some(url) = spec.public_url {
            command.args(["--public-url", url]);
        }
        for (k, v) in spec.env {
            command.env(k, v);
        }
        Starting { child: command.spawn().expect("spawn latchkey serve"), stdout, stderr }
    }

    /// Whether the process still runs.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    /// SIGKILL: no shutdown, no flush, nothing.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }

    /// What the process wrote to stderr (its logs).
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// A URL on this instance.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Asserts the process runs and never panicked.
    pub fn assert_healthy(&mut self) {
        assert!(self.is_running(), "the instance is still running: {}", self.logs());
        assert!(!self.logs().contains("panicked"), "no panic: {}", self.logs());
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A process that is starting.
pub struct Starting {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Starting {
    /// Waits (at most 30 s) for the start-up lines; panics with the logs if the process ends first.
    pub async fn ready(mut self) -> Instance {
        let started = Instant::now();
        loop {
            let out = std::fs::read_to_string(&self.stdout).unwrap_or_default();
            if out.contains("Press Ctrl-C") {
                let addr: SocketAddr = out
                    .lines()
                    .find_map(|l| l.strip_prefix("latchkey is serving on https://"))
                    .unwrap_or_else(|| panic!("no address in the start-up output: {out}"))
                    .trim()
                    .parse()
                    .expect("address");
                let Starting { child, stderr, .. } = self;
                return Instance { child, base: format!("https://{addr}"), addr, stderr };
            }
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                let err = std::fs::read_to_string(&self.stderr).unwrap_or_default();
                panic!("latchkey serve exited with {status} before serving: {out}\n{err}");
            }
            assert!(started.elapsed() < Duration::from_secs(30), "latchkey serve did not start in 30 s: {out}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

/// Runs `latchkey admin --database-url URL <args>` (off the async threads); returns (exit code, stdout, stderr).
pub async fn admin(database_url: &str, args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut command = Command::new(BIN);
    command.args(["admin", "--database-url", database_url]).args(args).env("LATCHKEY_SECRETS_SYSTEM", SYSTEM_SECRET);
    let stdin = stdin.to_owned();
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn latchkey admin");
        child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
        let out = child.wait_with_output().expect("admin output");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .expect("join")
}

/// `latchkey admin ...` that must succeed; its JSON output.
pub async fn admin_ok(database_url: &str, args: &[&str], stdin: &str) -> serde_json::Value {
    let (code, out, err) = admin(database_url, args, stdin).await;
    assert_eq!(code, 0, "latchkey admin {args:?}: {err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// A project with the data API on, a desktop client and the user [`EMAIL`], made with the admin CLI; returns the
/// client id.
pub async fn provision(database_url: &str) -> String {
    // Only `migrate` (or `serve`) creates a store; the other admin commands refuse a missing one.
    admin_ok(database_url, &["migrate"], "").await;
    let project = admin_ok(database_url, &["project", "create", "--name", "Many"], "").await;
    let project = project["project_id"].as_str().expect("project_id").to_owned();
    admin_ok(database_url, &["project", "enable-api", "--project", &project], "").await;
    let client =
        admin_ok(database_url, &["client", "create", "--project", &project, "--type", "desktop", "--name", "M"], "")
            .await;
    admin_ok(database_url, &["user", "create", "--email", EMAIL, "--password-stdin"], &format!("{PASSWORD}\n")).await;
    client["client_id"].as_str().expect("client_id").to_owned()
}

/// An HTTP client trusting `tls`, not following redirects; `fresh_connections` opens a new connection for every
/// request (so a load balancer spreads them).
pub fn http(tls: &Tls, fresh_connections: bool) -> reqwest::Client {
    let mut b = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&tls.ca).expect("pem"))
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20));
    if fresh_connections {
        b = b.pool_max_idle_per_host(0);
    }
    b.build().expect("client")
}

/// A browser on `base`, with cookies.
pub fn browser(base: &str, tls: &Tls, fresh_connections: bool) -> Browser {
    let mut b = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&tls.ca).expect("pem"))
        .redirect(reqwest::redirect::Policy::none())
        .cookie_store(true);
    if fresh_connections {
        b = b.pool_max_idle_per_host(0);
    }
    Browser::with_http(base, b.build().expect("client"))
}

/// The authorization URL on `base` for `readonly`.
pub fn authorize_url(base: &str, client_id: &str, pkce: &Pkce) -> String {
    let mut url = url::Url::parse(&format!("{base}/o/oauth2/v2/auth")).expect("url");
    url.query_pairs_mut()
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("response_type", "code")
        .append_pair("scope", READONLY)
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", "s");
    url.into()
}

/// `n` codes of [`EMAIL`], through the browser's sign-in and consent (one sign-in, then consent only).
pub async fn codes(browser: &Browser, base: &str, client_id: &str, n: usize) -> Vec<(String, Pkce)> {
    codes_of(browser, base, client_id, EMAIL, n).await
}

/// `n` codes of the user `email` (whose password is [`PASSWORD`]).
pub async fn codes_of(browser: &Browser, base: &str, client_id: &str, email: &str, n: usize) -> Vec<(String, Pkce)> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let pkce = Pkce::new();
        let consent = browser.consent_page(&authorize_url(base, client_id, &pkce), email).await;
        assert_eq!(consent.status, 200, "consent page: {}", consent.body);
        let done = browser.decide(&consent, &[READONLY], "allow").await;
        assert_eq!(done.status, 303, "consent redirects: {}", done.body);
        out.push((done.redirect_param("code").expect("code"), pkce));
    }
    out
}

/// The code-exchange form.
pub fn exchange_form<'a>(client_id: &'a str, code: &'a str, pkce: &'a Pkce) -> [(&'a str, &'a str); 5] {
    [
        ("grant_type", "authorization_code"),
        ("client_id", client_id),
        ("code", code),
        ("code_verifier", &pkce.verifier),
        ("redirect_uri", REDIRECT),
    ]
}

/// Posts a form to `base`'s `path`; returns status and JSON body (or an error for a transport failure).
pub async fn post(
    http: &reqwest::Client,
    base: &str,
    path: &str,
    form: &[(&str, &str)],
) -> Result<(u16, serde_json::Value), reqwest::Error> {
    let r = http.post(format!("{base}{path}")).form(form).send().await?;
    let status = r.status().as_u16();
    let body = r.json().await.unwrap_or(serde_json::Value::Null);
    Ok((status, body))
}

/// Exchanges a code at `base`; the tokens of a 200.
pub async fn exchange(http: &reqwest::Client, base: &str, client_id: &str, code: &str, pkce: &Pkce) -> TokenResponse {
    let (status, body) = post(http, base, "/token", &exchange_form(client_id, code, pkce)).await.expect("token");
    assert_eq!(status, 200, "code exchange at {base}: {body}");
    serde_json::from_value(body).expect("token response")
}

/// Refreshes at `base`: status and body.
pub async fn refresh(
    http: &reqwest::Client,
    base: &str,
    client_id: &str,
    refresh_token: &str,
) -> Result<(u16, serde_json::Value), reqwest::Error> {
    let form = [("grant_type", "refresh_token"), ("client_id", client_id), ("refresh_token", refresh_token)];
    post(http, base, "/token", &form).await
}

/// Revokes a token at `base`: the status.
pub async fn revoke(http: &reqwest::Client, base: &str, client_id: &str, token: &str) -> Result<u16, reqwest::Error> {
    let r = http.post(format!("{base}/revoke")).form(&[("client_id", client_id), ("token", token)]).send().await?;
    Ok(r.status().as_u16())
}

/// `channels.list` at `base` with an access token: the status.
pub async fn channels(http: &reqwest::Client, base: &str, access_token: &str) -> Result<u16, reqwest::Error> {
    let r = http.get(format!("{base}/video/v3/channels?part=id&mine=true")).bearer_auth(access_token).send().await?;
    Ok(r.status().as_u16())
}
