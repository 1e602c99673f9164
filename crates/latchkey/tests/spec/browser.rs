//! "What the service does", steps 2 to 5, in a real browser: headless Chromium, driven over WebDriver
//! (ChromeDriver), plays the user, and the test plays an installed app with its own loopback listener
//! (RFC 8252 §7.3, the loopback redirect). The pages are also photographed into `target/screenshots/`.
//!
//! Needs `/usr/bin/chromium` and `/usr/bin/chromedriver` (Debian: `chromium`, `chromium-driver`; elsewhere set
//! `LATCHKEY_CHROMIUM` and `LATCHKEY_CHROMEDRIVER`). Without them the tests are skipped, except under `CI=true`,
//! where they fail.

use crate::support::*;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use latchkey_admin::clock::OsRandom;
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use url::Url;

/// The browser binary, unless `LATCHKEY_CHROMIUM` names another.
const CHROMIUM: &str = "/usr/bin/chromium";
/// The driver binary, unless `LATCHKEY_CHROMEDRIVER` names another.
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// The longest wait for a page element, a redirect or the driver.
pub(crate) const WAIT: Duration = Duration::from_secs(15);
const EMAIL: &str = "alice@example.com";

#[tokio::test]
async fn a_user_signs_in_and_allows_some_scopes_in_chromium_and_the_app_gets_only_those() {
    with_chrome(|browser| async move {
        let server = TestServer::start().await;
        let app = server.app().await;
        server.user(EMAIL).await;
        let mut loopback = Loopback::bind().await;
        let pkce = Pkce::new();
        let state = latchkey_core::secret::random_b64(16, &OsRandom);
        let url = authorize_url(&server, &app, &[READONLY, UPLOAD, "openid"], &pkce, &loopback.redirect_uri, &state);

        browser.goto(&url).await.expect("open the authorization URL");
        let email = find(&browser, "input[name=email]").await;
        screenshot(&browser, "sign-in").await;
        email.send_keys(EMAIL).await.expect("type the email");
        find(&browser, "input[name=password]").await.send_keys(PASSWORD).await.expect("type the password");
        find(&browser, "form button[type=submit]").await.click().await.expect("submit the sign-in form");

        let readonly = find(&browser, &scope_box(READONLY)).await;
        let upload = find(&browser, &scope_box(UPLOAD)).await;
        let openid = find(&browser, &scope_box("openid")).await;
        for (name, b) in [("readonly", &readonly), ("upload", &upload), ("openid", &openid)] {
            assert!(!b.is_selected().await.expect("checkbox state"), "{name} is unticked by default");
        }
        screenshot(&browser, "consent").await;
        readonly.click().await.expect("tick readonly");
        openid.click().await.expect("tick openid");
        assert!(readonly.is_selected().await.expect("state") && openid.is_selected().await.expect("state"));
        assert!(!upload.is_selected().await.expect("state"), "upload stays unticked");
        find(&browser, "button[name=decision][value=allow]").await.click().await.expect("click Allow");

        let callback = loopback.callback().await;
        assert_eq!(callback.get("state"), Some(&state), "state comes back unchanged: {callback:?}");
        assert_eq!(callback.get("iss"), Some(&server.base), "iss names the issuer (RFC 9207)");
        assert!(!callback.contains_key("error"), "no error: {callback:?}");
        let code = callback.get("code").expect("a code in the redirect");
        assert!(code.starts_with("lkc_"), "code {code}");
        let done = find(&browser, "#app-done").await.text().await.expect("text");
        assert!(done.contains("close this window"), "the app's page tells the user what to do: {done}");

        let t = server.exchange(&app, code, &pkce, &loopback.redirect_uri).await;
        let mut granted: Vec<&str> = t.scope.split(' ').collect();
        granted.sort_unstable();
        assert_eq!(granted, vec![READONLY, "openid"], "only the ticked scopes are granted");
        assert!(!t.scope.contains(UPLOAD), "upload is reported as not granted: {}", t.scope);
        assert!(t.access_token.starts_with("lka_"));
        assert!(t.refresh_token.as_deref().is_some_and(|r| r.starts_with("lkr_")), "a refresh token");
        let id_token = t.id_token.expect("an id_token for openid");
        let claims = jwt_claims(&id_token);
        assert_eq!(claims["iss"], server.base.as_str());
        assert_eq!(claims["aud"], app.client_id.as_str());
        assert_eq!(channels(&server, &t.access_token).await.status(), 200, "the access token works");
    })
    .await;
}

#[tokio::test]
async fn a_user_who_clicks_cancel_in_chromium_sends_access_denied_with_the_state_to_the_app() {
    with_chrome(|browser| async move {
        let server = TestServer::start().await;
        let app = server.app().await;
        server.user(EMAIL).await;
        let mut loopback = Loopback::bind().await;
        let state = latchkey_core::secret::random_b64(16, &OsRandom);
        let url = authorize_url(&server, &app, &[READONLY], &Pkce::new(), &loopback.redirect_uri, &state);

        browser.goto(&url).await.expect("open the authorization URL");
        find(&browser, "input[name=email]").await.send_keys(EMAIL).await.expect("type the email");
        find(&browser, "input[name=password]").await.send_keys(PASSWORD).await.expect("type the password");
        find(&browser, "form button[type=submit]").await.click().await.expect("submit the sign-in form");
        find(&browser, &scope_box(READONLY)).await.click().await.expect("tick readonly");
        find(&browser, "button[name=decision][value=deny]").await.click().await.expect("click Cancel");

        let callback = loopback.callback().await;
        assert_eq!(callback.get("error").map(String::as_str), Some("access_denied"), "{callback:?}");
        assert_eq!(callback.get("state"), Some(&state));
        assert_eq!(callback.get("iss"), Some(&server.base));
        assert!(!callback.contains_key("code"), "no code after Cancel: {callback:?}");
        find(&browser, "#app-done").await;
    })
    .await;
}

#[tokio::test]
async fn an_unknown_client_or_a_bad_redirect_uri_shows_an_error_page_in_chromium_and_never_redirects() {
    with_chrome(|browser| async move {
        let server = TestServer::start().await;
        let app = server.app().await;
        let mut loopback = Loopback::bind().await;

        let unknown = App { client_id: "no-such-client.apps.latchkey.dev".into(), ..app.clone() };
        let url = authorize_url(&server, &unknown, &[READONLY], &Pkce::new(), &loopback.redirect_uri, "s1");
        browser.goto(&url).await.expect("open the authorization URL");
        let code = find(&browser, "#error-code").await.text().await.expect("text");
        assert_eq!(code, "invalid_client");
        assert_stays_on_the_server(&browser, &server).await;

        let url = authorize_url(&server, &app, &[READONLY], &Pkce::new(), "urn:ietf:wg:oauth:2.0:oob", "s2");
        browser.goto(&url).await.expect("open the authorization URL");
        let code = find(&browser, "#error-code").await.text().await.expect("text");
        assert_eq!(code, "redirect_uri_mismatch");
        assert_stays_on_the_server(&browser, &server).await;
        screenshot(&browser, "error-redirect-uri-mismatch").await;

        assert!(loopback.hits.try_recv().is_err(), "the app's listener was never called");
    })
    .await;
}

/// The page is still the authorization endpoint's: no redirect happened.
async fn assert_stays_on_the_server(browser: &Client, server: &TestServer) {
    let now = browser.current_url().await.expect("current URL");
    assert_eq!(now.origin().ascii_serialization(), server.base, "the browser stays on the server: {now}");
    assert_eq!(now.path(), "/o/oauth2/v2/auth");
}

/// The consent checkbox of `scope`.
pub(crate) fn scope_box(scope: &str) -> String {
    format!("input[name=scope][value=\"{scope}\"]")
}

/// Waits for an element to appear.
pub(crate) async fn find(browser: &Client, css: &str) -> fantoccini::elements::Element {
    let started = std::time::Instant::now();
    loop {
        match browser.wait().at_most(WAIT).for_element(Locator::Css(css)).await {
            Ok(e) => return e,
            // A navigation still landing (a form just sent, on a busy machine) aborts the lookup, which the wait
            // does not retry: look again on the page it lands on.
            Err(e) if e.to_string().contains("aborted by navigation") && started.elapsed() < WAIT => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => {
                let url = browser.current_url().await.map(String::from).unwrap_or_default();
                let source = browser.source().await.unwrap_or_default();
                panic!("no element {css} on {url}: {e}\n{source}");
            }
        }
    }
}

/// The claims of a JWT, unverified (the id_token tests check signatures).
fn jwt_claims(jwt: &str) -> serde_json::Value {
    use base64::Engine;
    let payload = jwt.split('.').nth(1).expect("a JWT payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).expect("base64url payload");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

/// Writes a screenshot of the browser's window to `target/screenshots/<name>.png`.
async fn screenshot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.expect("screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let dir = target_dir().join("screenshots");
    std::fs::create_dir_all(&dir).expect("create target/screenshots");
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).expect("write the screenshot");
    eprintln!("screenshot: {}", path.display());
}

fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
    }
}

/// Runs `body` with a fresh headless Chromium, then ends the browser session whatever happened; skips (or, under
/// `CI=true`, fails) when Chromium or ChromeDriver is not installed.
pub(crate) async fn with_chrome<F, Fut>(body: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let chromium = std::env::var("LATCHKEY_CHROMIUM").unwrap_or_else(|_| CHROMIUM.into());
    let chromedriver = std::env::var("LATCHKEY_CHROMEDRIVER").unwrap_or_else(|_| CHROMEDRIVER.into());
    let missing: Vec<&str> =
        [chromium.as_str(), chromedriver.as_str()].into_iter().filter(|p| !Path::new(p).is_file()).collect();
    if !missing.is_empty() {
        let msg = format!(
            "the browser tests need {} (Debian: apt-get install chromium chromium-driver)",
            missing.join(" and ")
        );
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg}");
        }
        eprintln!("SKIPPED: {msg}");
        return;
    }
    let chrome = Chrome::start(&chromium, &chromedriver).await;
    let outcome = tokio::spawn(body(chrome.client.clone())).await;
    chrome.close().await;
    if let Err(e) = outcome {
        match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(e) => panic!("the browser test did not finish: {e}"),
        }
    }
}

/// A headless Chromium session behind its own ChromeDriver.
struct Chrome {
    client: Client,
    driver: Driver,
    _profile: TempDir,
}

impl Chrome {
    async fn start(chromium: &str, chromedriver: &str) -> Self {
        let driver = Driver::start(chromedriver).await;
        let profile = tempfile::tempdir().expect("profile directory");
        let args = [
            "--headless=new".to_owned(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-background-networking".into(),
            "--disable-dev-shm-usage".into(),
            "--ignore-certificate-errors".into(),
            "--no-first-run".into(),
            "--no-default-browser-check".into(),
            "--lang=en-US".into(),
            "--window-size=1024,900".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), "chrome".into());
        caps.insert("acceptInsecureCerts".into(), true.into());
        caps.insert("pageLoadStrategy".into(), "normal".into());
        caps.insert("timeouts".into(), serde_json::json!({ "pageLoad": 15_000, "script": 5_000 }));
        caps.insert("goog:chromeOptions".into(), serde_json::json!({ "binary": chromium, "args": args }));
        let started = Instant::now();
        let client = match ClientBuilder::new(HttpConnector::new()).capabilities(caps).connect(&driver.url()).await {
            Ok(c) => c,
            Err(e) => panic!("starting headless Chromium through ChromeDriver: {e}\n{}", driver.log()),
        };
        eprintln!("headless Chromium ready in {:?}", started.elapsed());
        Self { client, driver, _profile: profile }
    }

    /// Ends the session, which quits Chromium; ChromeDriver goes when `self` is dropped.
    async fn close(self) {
        if let Err(e) = self.client.close().await {
            eprintln!("closing the browser session: {e}\n{}", self.driver.log());
        }
    }
}

/// A ChromeDriver child process on a free loopback port, killed on drop.
struct Driver {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: TempDir,
}

impl Driver {
    async fn start(chromedriver: &str) -> Self {
        let dir = tempfile::tempdir().expect("driver directory");
        let log = dir.path().join("chromedriver.log");
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let mut driver = Self { child, port, log, _dir: dir };
        driver.wait_until_ready().await;
        driver
    }

    /// Polls `GET /status` until ChromeDriver answers ready.
    async fn wait_until_ready(&mut self) {
        let http = reqwest::Client::new();
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("chromedriver exited with {status}\n{}", self.log());
            }
            if let Ok(r) = http.get(format!("{}/status", self.url())).send().await {
                let body: serde_json::Value = r.json().await.unwrap_or_default();
                if body["value"]["ready"] == true {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "chromedriver did not answer on port {}\n{}", self.port, self.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The installed app's loopback redirect listener (RFC 8252 §7.3): answers `GET /callback` with a page telling
/// the user to go back to the app, and hands the query to the test.
pub(crate) struct Loopback {
    pub(crate) redirect_uri: String,
    hits: mpsc::UnboundedReceiver<HashMap<String, String>>,
    task: tokio::task::JoinHandle<()>,
}

impl Loopback {
    pub(crate) async fn bind() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("loopback listener");
        let port = listener.local_addr().expect("address").port();
        let (tx, hits) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(answer(stream, tx.clone()));
            }
        });
        Self { redirect_uri: format!("http://127.0.0.1:{port}/callback"), hits, task }
    }

    /// Waits for the browser to arrive at the redirect URI; returns its query.
    pub(crate) async fn callback(&mut self) -> HashMap<String, String> {
        match tokio::time::timeout(WAIT, self.hits.recv()).await {
            Ok(Some(query)) => query,
            _ => panic!("the browser never reached {}", self.redirect_uri),
        }
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const DONE_PAGE: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Test App</title></head>\
<body><h1 id=\"app-done\">You can close this window and return to Test App.</h1></body></html>";

/// Answers one HTTP/1.1 request on the loopback listener.
async fn answer(mut stream: TcpStream, hits: mpsc::UnboundedSender<HashMap<String, String>>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        match tokio::time::timeout(WAIT, stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => head.extend_from_slice(&buf[..n]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head);
    let target = head.lines().next().and_then(|l| l.split(' ').nth(1)).unwrap_or("");
    let (status, body) = match Url::parse(&format!("http://127.0.0.1{target}")) {
        Ok(u) if u.path() == "/callback" => {
            let _ = hits.send(u.query_pairs().into_owned().collect());
            ("200 OK", DONE_PAGE)
        }
        _ => ("404 Not Found", "not found"),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}
