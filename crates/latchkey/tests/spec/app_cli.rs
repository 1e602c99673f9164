//! The installed-app side, end to end: the real `latchkey app` binary is the installed app, the real
//! server runs over HTTPS, and headless Chromium is the system browser. The CLI "opens the browser" through
//! `$BROWSER`, set to a script that writes the URL to a file; the test then drives Chromium to that URL, signs in,
//! ticks scopes and decides, and Chromium's redirect reaches the CLI's own loopback listener.
//!
//! Needs Chromium and ChromeDriver like `browser.rs` (skipped without them, except under `CI=true`).

#![cfg(unix)]

use crate::browser::{find, scope_box, with_chrome, WAIT};
use crate::support::*;
use fantoccini::Client;
use latchkey_admin::clock::{OsRandom, SystemClock};
use latchkey_client::{DpopKey, FileKeyStore};
use latchkey_core::time::Clock;
use serde_json::Value;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;
use time::format_description::well_known::Rfc3339;

mod device;
mod no_browser;
mod output;

const BIN: &str = env!("CARGO_BIN_EXE_latchkey");
const EMAIL: &str = "app-user@example.com";
/// The longest a CLI command may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(20);

/// What a finished CLI command left: exit code, stdout, stderr.
#[derive(Debug)]
struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Out {
    /// Asserts success and returns stdout.
    fn ok(&self, what: &str) -> &str {
        assert_eq!(self.code, Some(0), "{what} succeeds: {self:?}");
        &self.stdout
    }

    /// Asserts success and returns stdout's one JSON object, printed compact on one line (stdout is no terminal).
    fn json(&self, what: &str) -> Value {
        let stdout = self.ok(what);
        assert_eq!(stdout.matches('\n').collect::<Vec<_>>(), ["\n"], "{what} prints one line: {stdout}");
        serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{what} prints JSON ({e}): {self:?}"))
    }

    /// Asserts a failure with exit code `code`, nothing on stdout, and stderr's only line the JSON error `error`
    /// (`{"error", "error_description"}`, as `admin` prints it); returns the description.
    fn failure(&self, code: i32, error: &str) -> String {
        assert_eq!(self.stderr.lines().count(), 1, "one line on stderr: {self:?}");
        self.login_failure(code, error)
    }

    /// Like [`Out::failure`] for `login`, whose stderr starts with the authorization URL and its progress as text:
    /// the JSON error is the last line and the only JSON one.
    fn login_failure(&self, code: i32, error: &str) -> String {
        assert_eq!(self.code, Some(code), "exit code {code}: {self:?}");
        assert_eq!(self.stdout, "", "nothing on stdout: {self:?}");
        let lines: Vec<&str> = self.stderr.lines().collect();
        let (last, before) = lines.split_last().unwrap_or_else(|| panic!("an error on stderr: {self:?}"));
        assert!(!before.iter().any(|l| l.starts_with('{')), "one JSON line: {self:?}");
        let body: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("a JSON error ({e}): {self:?}"));
        let description = body["error_description"].as_str().expect("an error_description").to_owned();
        assert_eq!(body, serde_json::json!({ "error": error, "error_description": description }), "{self:?}");
        description
    }
}

/// An RFC 3339 time in UTC as `output` prints it (`2026-01-01T00:00:00Z`), in Unix seconds.
fn rfc3339(value: &Value) -> i64 {
    let text = value.as_str().unwrap_or_else(|| panic!("an RFC 3339 string: {value}"));
    let field = |range: std::ops::Range<usize>| -> i32 {
        text.get(range).and_then(|f| f.parse().ok()).unwrap_or_else(|| panic!("RFC 3339: {text}"))
    };
    let month = time::Month::try_from(field(5..7) as u8).expect("a month");
    let date = time::Date::from_calendar_date(field(0..4), month, field(8..10) as u8).expect("a date");
    let at = time::Time::from_hms(field(11..13) as u8, field(14..16) as u8, field(17..19) as u8).expect("a time");
    let time = date.with_time(at).assume_utc();
    assert_eq!(time.format(&Rfc3339).ok().as_deref(), Some(text), "RFC 3339 in UTC, to the second");
    time.unix_timestamp()
}

/// The installed app's side of a test: its state directory, the server's certificate, and a `$BROWSER` script.
struct AppSide {
    dir: TempDir,
    issuer: String,
    client_id: String,
}

impl AppSide {
    fn new(server: &TestServer, app: &App) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("ca.pem"), &server.ca).expect("write the certificate");
        let script = dir.path().join("browser.sh");
        // Written under another name first, so the test never reads half a URL.
        let body = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$1\" > '{0}.tmp' && mv '{0}.tmp' '{0}'\n",
            dir.path().join("url.txt").display()
        );
        std::fs::write(&script, body).expect("write the browser script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod the script");
        Self { dir, issuer: server.base.clone(), client_id: app.client_id.clone() }
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    fn browser_script(&self) -> String {
        self.dir.path().join("browser.sh").display().to_string()
    }

    /// `latchkey app --state-dir <state> <args>`, with `$BROWSER` set to the script.
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("app")
            .arg("--state-dir")
            .arg(self.state())
            .args(args)
            .env("BROWSER", self.browser_script())
            .env_remove("LATCHKEY_APP_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Runs a command to its end.
    async fn run(&self, args: &[&str]) -> Out {
        finish(self.command(args).spawn().expect("spawn latchkey app"), COMMAND_LIMIT).await
    }

    /// Starts `app login` for `scopes` (plus `extra` options); it waits for the browser.
    fn login(&self, scopes: &[&str], extra: &[&str]) -> Login {
        self.login_with(scopes, extra, &self.browser_script())
    }

    /// Starts `app login` with `$BROWSER` set to `browser`.
    fn login_with(&self, scopes: &[&str], extra: &[&str], browser: &str) -> Login {
        let ca = self.ca().display().to_string();
        let mut args = vec!["login", "--issuer", &self.issuer, "--client-id", &self.client_id, "--ca-file", &ca];
        for s in scopes {
            args.extend(["--scope", *s]);
        }
        args.extend(extra);
        let _ = std::fs::remove_file(self.dir.path().join("url.txt"));
        let child = self.command(&args).env("BROWSER", browser).spawn().expect("spawn latchkey app login");
        Login { child: Some(child), url_file: self.dir.path().join("url.txt") }
    }

    /// The stored tokens, as the app keeps them.
    fn tokens(&self) -> Value {
        let text = std::fs::read_to_string(self.state().join("tokens.json")).expect("tokens.json");
        serde_json::from_str(&text).expect("tokens.json is JSON")
    }

    /// `app status`, parsed.
    async fn status(&self) -> Value {
        self.run(&["status"]).await.json("app status")
    }

    /// `app token`, which must succeed and print an access token, its type and its expiry, in the stored tokens.
    async fn token(&self) -> String {
        let out = self.run(&["token"]).await.json("app token");
        let token = out["access_token"].as_str().unwrap_or_else(|| panic!("an access token: {out}")).to_owned();
        assert!(token.starts_with("lka_"), "an access token: {token}");
        let stored = self.tokens();
        assert_eq!(rfc3339(&out["expires_at"]), stored["expires_at"], "the stored expiry: {out}");
        assert_eq!(
            out,
            serde_json::json!({ "access_token": token, "token_type": "Bearer", "expires_at": out["expires_at"] })
        );
        token
    }
}

/// A running `app login`.
struct Login {
    child: Option<Child>,
    url_file: PathBuf,
}

impl Login {
    /// Waits for the CLI to "open the browser"; returns the URL it opened.
    async fn url(&mut self) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(text) = std::fs::read_to_string(&self.url_file) {
                return text.trim().to_owned();
            }
            let child = self.child.as_mut().expect("running");
            if child.try_wait().expect("wait").is_some() {
                let out = finish(self.child.take().expect("child"), COMMAND_LIMIT).await;
                panic!("the login ended before opening the browser: {out:?}");
            }
            assert!(Instant::now() < deadline, "the login never opened the browser");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits for the login to end.
    async fn finish(mut self) -> Out {
        finish(self.child.take().expect("child"), COMMAND_LIMIT).await
    }
}

impl Drop for Login {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Waits (without blocking the runtime the in-process server runs on) for `child` to exit, then collects its
/// output; kills it after `limit`.
async fn finish(mut child: Child, limit: Duration) -> Out {
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`latchkey app` did not finish within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child.stdout.take().expect("stdout").read_to_string(&mut stdout).expect("read stdout");
    child.stderr.take().expect("stderr").read_to_string(&mut stderr).expect("read stderr");
    Out { code: status.code(), stdout, stderr }
}

/// Plays the user in Chromium: opens `url`, signs in, ticks `tick`, clicks `decision` (`allow` or `deny`), and
/// waits until the browser shows the app's loopback page; returns that page's heading and text.
async fn sign_in_and_decide(browser: &Client, url: &str, tick: &[&str], decision: &str) -> String {
    browser.goto(url).await.expect("open the URL the app printed");
    find(browser, "input[name=email]").await.send_keys(EMAIL).await.expect("type the email");
    find(browser, "input[name=password]").await.send_keys(PASSWORD).await.expect("type the password");
    find(browser, "form button[type=submit]").await.click().await.expect("submit the sign-in form");
    for scope in tick {
        find(browser, &scope_box(scope)).await.click().await.expect("tick a scope");
    }
    let button = format!("button[name=decision][value={decision}]");
    find(browser, &button).await.click().await.expect("click the decision");
    let deadline = Instant::now() + WAIT;
    loop {
        let now = browser.current_url().await.expect("current URL");
        if now.scheme() == "http" && now.host_str() == Some("127.0.0.1") && now.path() == "/callback" {
            break;
        }
        assert!(Instant::now() < deadline, "the browser never reached the app's loopback listener: {now}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    find(browser, "body").await.text().await.expect("the app's page")
}

/// The permission bits of a file.
fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

/// A query parameter of a URL.
fn param(url: &str, name: &str) -> Option<String> {
    let u = url::Url::parse(url).expect("a URL");
    let v = u.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    v
}

async fn server_with_user(change: impl FnOnce(&mut latchkey_config::Config)) -> (TestServer, App) {
    let server = TestServer::start_with(change).await;
    let app = server.app().await;
    server.user(EMAIL).await;
    (server, app)
}

/// Signs in through the CLI, ticking `tick` of `scopes`; returns the login's output.
async fn login(browser: &Client, side: &AppSide, scopes: &[&str], tick: &[&str], extra: &[&str]) -> Out {
    let mut login = side.login(scopes, extra);
    let url = login.url().await;
    let page = sign_in_and_decide(browser, &url, tick, "allow").await;
    assert!(page.contains("return to the app"), "the listener tells the user to go back: {page}");
    login.finish().await
}

#[tokio::test]
async fn an_app_without_dpop_signs_in_hears_that_an_unticked_scope_was_not_granted_calls_the_api_and_revokes() {
    with_chrome(|browser| async move {
        let (server, app) = server_with_user(|_| {}).await;
        let side = AppSide::new(&server, &app);
        let mut login = side.login(&[READONLY, UPLOAD], &[]);
        let url = login.url().await;
        assert!(url.starts_with(&server.url("/o/oauth2/v2/auth?")), "the authorization endpoint: {url}");
        assert_eq!(param(&url, "code_challenge_method").as_deref(), Some("S256"));
        assert_eq!(param(&url, "scope"), Some(format!("{READONLY} {UPLOAD}")));
        let redirect_uri = param(&url, "redirect_uri").expect("a redirect_uri");
        assert!(redirect_uri.starts_with("http://127.0.0.1:"), "a loopback redirect: {redirect_uri}");

        // A forged response with another state is refused, and the real one is still awaited.
        let forged = reqwest::get(format!("{redirect_uri}?code=lkc_forged&state=wrong")).await.expect("forged");
        assert_eq!(forged.status(), 400, "a response with another state is refused");

        let page = sign_in_and_decide(&browser, &url, &[READONLY], "allow").await;
        assert!(page.contains("return to the app"), "{page}");
        let out = login.finish().await;
        let signed_in = out.json("login");
        assert!(out.stderr.contains(&url), "the login prints the URL on stderr: {}", out.stderr);
        assert_eq!(signed_in["granted"], serde_json::json!([READONLY]), "{signed_in}");
        assert_eq!(
            signed_in["not_granted"],
            serde_json::json!([UPLOAD]),
            "the unticked scope is reported: {signed_in}"
        );
        assert_eq!(signed_in["dpop_bound"], Value::Null, "no DPoP without --dpop: {signed_in}");
        for file in ["tokens.json", "app.json"] {
            assert_eq!(mode(&side.state().join(file)), 0o600, "{file} is private");
        }
        assert_eq!(mode(&side.state()), 0o700, "the state directory is private");
        assert!(!side.state().join("dpop.key").exists(), "no key without --dpop");

        let status = side.status().await;
        assert_eq!(status["granted"], serde_json::json!([READONLY]), "{status}");
        assert_eq!(status["not_granted"], serde_json::json!([UPLOAD]), "{status}");
        assert_eq!(status["dpop_bound"], Value::Null);
        assert_eq!(status["refresh_token"], true);
        assert_eq!(
            (status["issuer"].as_str(), status["client_id"].as_str()),
            (Some(&*server.base), Some(&*app.client_id))
        );
        let left = rfc3339(&status["access_token_expires_at"]) - SystemClock.now().0;
        assert!((3500..=3600).contains(&left), "an hour's access token: {left}");
        assert_eq!(status, signed_in, "status says what login said");

        let token = side.token().await;
        assert_eq!(token, side.tokens()["access_token"], "a fresh token is reused, not refreshed");
        assert_eq!(side.token().await, token, "and reused again");
        assert_eq!(channels(&server, &token).await.status(), 200, "the printed token works");

        let out = side.run(&["call", &server.url("/video/v3/channels?part=snippet&mine=true")]).await;
        let body: Value = serde_json::from_str(out.ok("app call")).expect("the channel JSON");
        assert_eq!(body["kind"], "video#channelListResponse", "{body}");
        assert_eq!(body["items"][0]["snippet"]["title"], "Test User", "{body}");

        let refresh_token = side.tokens()["refresh_token"].as_str().expect("a refresh token").to_owned();
        let out = side.run(&["revoke"]).await;
        assert_eq!(out.json("revoke"), serde_json::json!({ "revoked": true }), "{out:?}");
        assert!(!side.state().join("tokens.json").exists(), "the tokens are forgotten");
        assert_eq!(channels(&server, &token).await.status(), 401, "the access token is revoked at the server");
        let refreshed = server
            .token(&[("grant_type", "refresh_token"), ("client_id", &app.client_id), ("refresh_token", &refresh_token)])
            .await;
        assert_eq!(error_of(refreshed).await, (400, "invalid_grant".to_owned()), "so is the refresh token");
        let out = side.run(&["token"]).await;
        let why = out.failure(3, "not_signed_in");
        assert!(why.starts_with("Not signed in"), "no token after revoking: {why}");
    })
    .await;
}

#[tokio::test]
async fn with_30_second_access_tokens_app_token_refreshes_each_time_until_a_revocation_elsewhere_means_sign_in_again() {
    with_chrome(|browser| async move {
        let (server, app) = server_with_user(|c| c.access_token_lifetime = 30).await;
        let side = AppSide::new(&server, &app);
        let out = login(&browser, &side, &[READONLY], &[READONLY], &[]).await.json("login");
        assert_eq!(out["granted"], serde_json::json!([READONLY]), "{out}");
        assert_eq!(out["not_granted"], serde_json::json!([]), "{out}");
        let first = side.tokens()["access_token"].as_str().expect("access token").to_owned();
        let left = rfc3339(&side.status().await["access_token_expires_at"]) - SystemClock.now().0;
        assert!((0..=30).contains(&left), "the configured lifetime: {left}");

        // Less than the SDK's 60-second margin is left, so every call refreshes.
        let second = side.token().await;
        assert_ne!(second, first, "a refreshed token");
        assert_eq!(side.tokens()["access_token"], second.as_str(), "the new token is stored");
        assert_eq!(mode(&side.state().join("tokens.json")), 0o600, "still private after the rewrite");
        assert_eq!(channels(&server, &second).await.status(), 200, "the refreshed token works");
        let third = side.token().await;
        assert!(third != second && third != first, "refreshed again");
        assert_eq!(channels(&server, &third).await.status(), 200);

        // The user withdraws access elsewhere (revoking the refresh token revokes the grant).
        let refresh_token = side.tokens()["refresh_token"].as_str().expect("refresh token").to_owned();
        let r = server.http().post(server.url("/revoke")).form(&[("token", &refresh_token)]).send().await;
        assert_eq!(r.expect("revoke").status(), 200);
        let out = side.run(&["token"]).await;
        let why = out.failure(5, "invalid_grant");
        assert!(why.starts_with("Sign in again"), "the user is told to sign in again: {why}");
        assert!(!side.state().join("tokens.json").exists(), "the dead tokens are forgotten");
        let out = side.run(&["status"]).await;
        out.failure(3, "not_signed_in");
    })
    .await;
}

#[tokio::test]
async fn an_app_with_dpop_keeps_a_private_key_refreshes_with_proofs_and_its_refresh_token_is_useless_without_the_key() {
    with_chrome(|browser| async move {
        let (server, app) = server_with_user(|c| c.access_token_lifetime = 30).await;
        let side = AppSide::new(&server, &app);
        let out = login(&browser, &side, &[READONLY], &[READONLY], &["--dpop"]).await;
        let signed_in = out.json("login with --dpop");
        let key_file = side.state().join("dpop.key");
        assert_eq!(mode(&key_file), 0o600, "the key file is private");
        assert_eq!(mode(&side.state().join("tokens.json")), 0o600, "the token file is private");
        let key = DpopKey::from_pkcs8(&std::fs::read(&key_file).expect("key")).expect("a P-256 key");
        assert_eq!(signed_in["dpop_bound"], key.thumbprint(), "bound to this device's DPoP key: {signed_in}");
        let status = side.status().await;
        assert_eq!(status["dpop_bound"], key.thumbprint(), "status names the key: {status}");
        assert_eq!(status["granted"], serde_json::json!([READONLY]));

        // Each `app token` is a new process with no cached nonce: use_dpop_nonce, then the retry with it.
        let first = side.tokens()["access_token"].as_str().expect("access token").to_owned();
        let second = side.token().await;
        assert_ne!(second, first, "refreshed with a DPoP proof");
        assert_eq!(channels(&server, &second).await.status(), 200, "the access token is a plain bearer token");
        let third = side.token().await;
        assert!(third != second && third != first, "refreshed again");

        // The refresh token alone, as a thief would have it, is refused.
        let rt = side.tokens()["refresh_token"].as_str().expect("refresh token").to_owned();
        let form = [("grant_type", "refresh_token"), ("client_id", app.client_id.as_str()), ("refresh_token", &rt)];
        let stolen = server.token(&form).await;
        assert_eq!(error_of(stolen).await, (400, "invalid_dpop_proof".to_owned()), "no proof, no token");
        // And so it is with a proof by another key, even one carrying a fresh nonce of the server.
        let dir = tempfile::tempdir().expect("tempdir");
        let other = DpopKey::load_or_create(&FileKeyStore::new(dir.path().join("other.key"))).expect("key");
        let mut nonce = None;
        let mut answer = (0, String::new());
        for _ in 0..2 {
            let jti = latchkey_core::secret::random_b64(16, &OsRandom);
            let proof = other.proof("POST", &server.url("/token"), &jti, nonce.as_deref(), SystemClock.now().0);
            let r = server.http().post(server.url("/token")).form(&form).header("DPoP", proof.expect("proof"));
            let r = r.send().await.expect("token request");
            nonce = r.headers().get("dpop-nonce").and_then(|v| v.to_str().ok()).map(str::to_owned);
            answer = error_of(r).await;
            if answer.1 != "use_dpop_nonce" {
                break;
            }
        }
        assert_eq!(answer, (400, "invalid_grant".to_owned()), "another key's proof is refused");
        let fourth = side.token().await;
        assert!(fourth != third, "the app with its key still refreshes");
        assert_eq!(channels(&server, &fourth).await.status(), 200);

        // A second login that is abandoned (here without --dpop) leaves the working sign-in as it was.
        let out = side.login(&[READONLY, UPLOAD], &["--timeout", "1"]).finish().await;
        out.login_failure(1, "timeout");
        let fifth = side.token().await;
        assert!(fifth != fourth, "the DPoP-bound session still refreshes after the abandoned login");
        let status = side.status().await;
        assert_eq!(status["dpop_bound"], key.thumbprint(), "{status}");
        assert_eq!(status["not_granted"], serde_json::json!([]), "the request of the session, not the abandoned one");

        let out = side.run(&["logout"]).await;
        assert_eq!(out.json("logout"), serde_json::json!({ "signed_out": true }), "{out:?}");
        for file in ["tokens.json", "dpop.key", "app.json"] {
            assert!(!side.state().join(file).exists(), "logout removes {file}");
        }
        let out = side.run(&["token"]).await;
        let why = out.failure(3, "not_signed_in");
        assert!(why.starts_with("Not signed in"), "signed out: {why}");
    })
    .await;
}

#[tokio::test]
async fn a_user_who_clicks_cancel_makes_the_login_exit_5_access_denied_with_nothing_stored() {
    with_chrome(|browser| async move {
        let (server, app) = server_with_user(|_| {}).await;
        let side = AppSide::new(&server, &app);
        // `$BROWSER` is a list: a command that cannot start is skipped for the next.
        let list = format!("/nonexistent/browser:{}", side.browser_script());
        let mut login = side.login_with(&[READONLY], &[], &list);
        let url = login.url().await;
        let page = sign_in_and_decide(&browser, &url, &[READONLY], "deny").await;
        assert!(page.contains("not completed"), "the listener says access was not granted: {page}");
        let out = login.finish().await;
        let why = out.login_failure(5, "access_denied");
        assert!(why.starts_with("Access was not granted"), "{why}");
        assert!(!side.state().join("tokens.json").exists(), "no tokens after Cancel");
        side.run(&["token"]).await.failure(3, "not_signed_in");
    })
    .await;
}

#[tokio::test]
async fn a_login_nobody_completes_times_out_with_a_clear_message() {
    let (server, app) = server_with_user(|_| {}).await;
    let side = AppSide::new(&server, &app);
    let started = Instant::now();
    let mut login = side.login(&[READONLY], &["--timeout", "2"]);
    login.url().await;
    let out = login.finish().await;
    assert!(started.elapsed() < Duration::from_secs(15), "it gives up after about 2 s: {:?}", started.elapsed());
    let why = out.login_failure(1, "timeout");
    assert_eq!(why, "no authorization response arrived within 2 seconds", "a plain failure");
    assert!(!side.state().join("tokens.json").exists());
}

#[tokio::test]
async fn ctrl_c_during_the_login_exits_130() {
    let (server, app) = server_with_user(|_| {}).await;
    let side = AppSide::new(&server, &app);
    let mut login = side.login(&[READONLY], &[]);
    login.url().await;
    // The CLI starts listening for Ctrl-C right after opening the browser.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pid = login.child.as_ref().expect("child").id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().expect("kill").success());
    let out = login.finish().await;
    assert_eq!(out.login_failure(130, "cancelled"), "Cancelled.");
}
