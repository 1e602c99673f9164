//! The test harness: a real server on an ephemeral loopback port over TLS, and a scripted browser that fills
//! in the real sign-in and consent forms over HTTP.

#![allow(dead_code)]

use latchkey_admin::Actor;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use latchkey_admin::clock::{OsRandom, SystemClock};
use latchkey_config::Config;
use latchkey_proto::TokenResponse;
use latchkey_server::Running;
use latchkey_store::test_database::TestDatabase;
use reqwest::redirect::Policy;
use std::sync::Arc;
use tempfile::TempDir;
use url::Url;

/// The data-API scope prefix of the default configuration.
pub const BASE: &str = "https://latchkey.dev/auth/";
/// `readonly`.
pub const READONLY: &str = "https://latchkey.dev/auth/readonly";
/// `upload`.
pub const UPLOAD: &str = "https://latchkey.dev/auth/upload";
/// `force-ssl`.
pub const FORCE_SSL: &str = "https://latchkey.dev/auth/force-ssl";
/// The password of every test user.
pub const PASSWORD: &str = "correct horse battery staple";

/// A running server with its own data directory.
pub struct TestServer {
    /// The server.
    pub running: Running,
    /// Its base URL (the issuer).
    pub base: String,
    /// The PEM certificate to trust.
    pub ca: Vec<u8>,
    /// Keeps the data directory alive.
    pub dir: TempDir,
    /// The PostgreSQL database this server made (dropped with it), when the suite runs on PostgreSQL.
    pub db: Option<TestDatabase>,
}

/// The backend the suite runs on: `LATCHKEY_TEST_BACKEND=sqlite|postgres`, default `sqlite`.
pub fn backend() -> &'static str {
    match std::env::var("LATCHKEY_TEST_BACKEND").as_deref() {
        Ok("postgres") => "postgres",
        Ok("sqlite") | Ok("") | Err(_) => "sqlite",
        Ok(other) => panic!("LATCHKEY_TEST_BACKEND is sqlite or postgres, not {other:?}"),
    }
}

/// On PostgreSQL, points `config` at a fresh database, or at the one of the server whose data directory it
/// shares (two instances on one store); the file `<data_dir>/test-database-url` says which.
async fn choose_database(config: &mut Config) -> Option<TestDatabase> {
    if backend() != "postgres" || config.database_url.is_some() {
        return None;
    }
    let marker = config.data_dir.join("test-database-url");
    if let Ok(url) = std::fs::read_to_string(&marker) {
        config.database_url = Some(url);
        return None;
    }
    let db = TestDatabase::create().await.expect("LATCHKEY_TEST_BACKEND=postgres needs a reachable PostgreSQL");
    std::fs::write(&marker, &db.url).expect("database marker");
    config.database_url = Some(db.url.clone());
    Some(db)
}

/// A project with the API enabled and a desktop client.
#[derive(Debug, Clone)]
pub struct App {
    /// The project.
    pub project_id: String,
    /// The client id.
    pub client_id: String,
    /// The client secret.
    pub client_secret: String,
}

impl TestServer {
    /// Starts a server with the default configuration on 127.0.0.1:0.
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts a server after `change` adjusts the configuration.
    pub async fn start_with(change: impl FnOnce(&mut Config)) -> Self {
        Self::start_with_clock(change, Arc::new(SystemClock)).await
    }

    /// Starts a server with its own clock (a [`TestClock`] to move time by hand).
    pub async fn start_with_clock(
        change: impl FnOnce(&mut Config),
        clock: Arc<dyn latchkey_core::time::Clock>,
    ) -> Self {
        // The server's warnings go to the test's output, which the harness shows when the test fails.
        let _ = tracing_subscriber::fmt().with_test_writer().with_env_filter("warn").try_init();
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = Config {
            data_dir: dir.path().to_path_buf(),
            listen: "127.0.0.1:0".parse().expect("addr"),
            // Every test's requests come from one loopback address: no rate limit unless a test sets one.
            rate_limits: latchkey_config::RateLimitsConfig::OFF,
            // Eight tests share two cores and one PostgreSQL: a connection may take longer than production's 3 s
            // to come free (a burst of a thousand sign-ins, an event delivery), which no test is about; a test of
            // the pool's limits sets its own.
            database_acquire_timeout: 20,
            ..Config::default()
        };
        change(&mut config);
        let db = choose_database(&mut config).await;
        let running = latchkey_server::start(config, clock).await.expect("server starts");
        let base = running.urls.issuer.clone();
        let ca = std::fs::read(&running.cert_path).expect("certificate");
        Self { running, base, ca, dir, db }
    }

    /// The store behind the server.
    pub fn store(&self) -> &dyn latchkey_store::Store {
        &*self.running.state.store
    }

    /// A URL on the server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// An HTTP client that trusts the server's certificate and does not follow redirects.
    pub fn http(&self) -> reqwest::Client {
        self.http_builder().build().expect("client")
    }

    /// The builder of [`TestServer::http`], to adjust.
    pub fn http_builder(&self) -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(&self.ca).expect("pem"))
            .redirect(Policy::none())
    }

    /// A browser: cookies kept, redirects not followed.
    pub fn browser(&self) -> Browser {
        Browser { http: self.http_builder().cookie_store(true).build().expect("client"), base: self.base.clone() }
    }

    /// A project with the data API enabled and a desktop client.
    pub async fn app(&self) -> App {
        self.app_with(true, &[]).await
    }

    /// A project (data API on or off) with a desktop client registering `redirect_uris`.
    pub async fn app_with(&self, api_enabled: bool, redirect_uris: &[&str]) -> App {
        let now = latchkey_core::time::UnixTime(1_700_000_000);
        let p = latchkey_admin::project_create(self.store(), &Actor::Operator, "Test project", None, now)
            .await
            .expect("project");
        let project_id = p.project_id;
        latchkey_admin::project_set_api(self.store(), &Actor::Operator, &project_id, api_enabled).await.expect("api");
        let c = latchkey_admin::client_create(
            self.store(),
            &Actor::Operator,
            latchkey_admin::NewClient {
                project_id: project_id.clone(),
                client_type: latchkey_core::client::ClientType::Desktop,
                name: "Test App".into(),
                redirect_uris: redirect_uris.iter().map(|s| s.to_string()).collect(),
                details: Default::default(),
            },
            now,
        )
        .await
        .expect("client");
        App { project_id, client_id: c.client_id, client_secret: c.client_secret.expect("secret") }
    }

    /// A user with [`PASSWORD`]; returns the user id.
    pub async fn user(&self, email: &str) -> String {
        let now = latchkey_core::time::UnixTime(1_700_000_000);
        let u = latchkey_admin::user_create(self.store(), email, PASSWORD, Some("Test User"), now).await.expect("user");
        u.user_id
    }

    /// Posts a form to the token endpoint.
    pub async fn token(&self, form: &[(&str, &str)]) -> reqwest::Response {
        self.http().post(self.url("/token")).form(form).send().await.expect("token request")
    }

    /// The whole flow for `scopes` (all granted): returns the token response.
    pub async fn tokens(&self, app: &App, email: &str, scopes: &[&str]) -> TokenResponse {
        let pkce = Pkce::new();
        let redirect = "http://127.0.0.1:5555/callback";
        let code = self.browser().code(self, app, email, scopes, scopes, &pkce, redirect).await;
        self.exchange(app, &code, &pkce, redirect).await
    }

    /// Exchanges a code, which must succeed: returns the token response.
    pub async fn exchange(&self, app: &App, code: &str, pkce: &Pkce, redirect_uri: &str) -> TokenResponse {
        let response = self
            .token(&[
                ("grant_type", "authorization_code"),
                ("client_id", &app.client_id),
                ("code", code),
                ("code_verifier", &pkce.verifier),
                ("redirect_uri", redirect_uri),
            ])
            .await;
        assert_eq!(response.status(), 200, "code exchange");
        response.json().await.expect("token response")
    }

    /// A refresh of a (public) client with its refresh token.
    pub async fn refresh(&self, app: &App, refresh_token: &str) -> reqwest::Response {
        self.token(&[("grant_type", "refresh_token"), ("client_id", &app.client_id), ("refresh_token", refresh_token)])
            .await
    }
}

/// A clock that tests move by hand: the system's time plus an offset, so that nothing sleeps.
#[derive(Debug, Default)]
pub struct TestClock(std::sync::atomic::AtomicI64);

impl TestClock {
    /// Moves the clock forward by `secs`.
    pub fn advance(&self, secs: i64) {
        self.0.fetch_add(secs, std::sync::atomic::Ordering::SeqCst);
    }
}

impl latchkey_core::time::Clock for TestClock {
    fn now(&self) -> latchkey_core::time::UnixTime {
        SystemClock.now().plus(self.0.load(std::sync::atomic::Ordering::SeqCst))
    }
}

/// A PKCE pair.
pub struct Pkce {
    /// The verifier.
    pub verifier: String,
    /// Its S256 challenge.
    pub challenge: String,
}

impl Pkce {
    /// A fresh pair.
    pub fn new() -> Self {
        let verifier = latchkey_core::secret::random_b64(32, &OsRandom);
        let challenge = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()));
        Self { verifier, challenge }
    }
}

/// A scripted browser.
pub struct Browser {
    /// Its HTTP client (with cookies).
    pub http: reqwest::Client,
    base: String,
}

/// A page: status, headers and body.
pub struct Page {
    /// The status.
    pub status: u16,
    /// The headers.
    pub headers: reqwest::header::HeaderMap,
    /// The body.
    pub body: String,
}

impl Page {
    /// The Location header.
    pub fn location(&self) -> Option<Url> {
        let loc = self.headers.get("location")?.to_str().ok()?;
        Url::parse(loc).ok()
    }

    /// A query parameter of the Location.
    pub fn redirect_param(&self, name: &str) -> Option<String> {
        let loc = self.location()?;
        let v = loc.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
        v
    }

    /// The value of the form input named `name`.
    pub fn input(&self, name: &str) -> Option<String> {
        let needle = format!("name=\"{name}\" value=\"");
        let start = self.body.find(&needle)? + needle.len();
        let end = self.body[start..].find('"')? + start;
        Some(unescape(&self.body[start..end]))
    }
}

/// Decodes the HTML character references a template writes (named and numeric).
pub fn unescape(s: &str) -> String {
    html_escape::decode_html_entities(s).into_owned()
}

impl Browser {
    /// A browser for any server at `base` whose certificate is `ca` (PEM).
    pub fn new(base: &str, ca: &[u8]) -> Self {
        let http = reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(ca).expect("pem"))
            .redirect(Policy::none())
            .cookie_store(true)
            .build()
            .expect("client");
        Self { http, base: base.to_owned() }
    }

    /// A browser for any server at `base` that uses `http` (which should keep cookies and not follow redirects).
    pub fn with_http(base: &str, http: reqwest::Client) -> Self {
        Self { http, base: base.to_owned() }
    }

    /// GET a URL.
    pub async fn get(&self, url: &str) -> Page {
        page(self.http.get(url).header("user-agent", CHROME_UA).send().await.expect("GET")).await
    }

    /// POST a form to a path of the server.
    pub async fn post(&self, path: &str, form: &[(&str, &str)]) -> Page {
        let url = format!("{}{path}", self.base);
        page(self.http.post(url).header("user-agent", CHROME_UA).form(form).send().await.expect("POST")).await
    }

    /// Signs in on a sign-in page; returns the response (a redirect on success).
    pub async fn sign_in(&self, login_page: &Page, email: &str, password: &str) -> Page {
        let csrf = login_page.input("csrf").expect("csrf on the sign-in page");
        let cont = login_page.input("continue").expect("continue on the sign-in page");
        self.post("/signin", &[("csrf", &csrf), ("continue", &cont), ("email", email), ("password", password)]).await
    }

    /// Submits the consent page with `granted` ticked and `decision`.
    pub async fn decide(&self, consent: &Page, granted: &[&str], decision: &str) -> Page {
        let csrf = consent.input("csrf").expect("csrf on the consent page");
        let request = consent.input("request").expect("request on the consent page");
        let mode = consent.input("mode");
        let mut form = vec![("csrf", csrf.as_str()), ("request", request.as_str())];
        if let Some(m) = &mode {
            form.push(("mode", m.as_str())); // the page's hidden input, sent as a browser sends it
        }
        for s in granted {
            form.push(("scope", s));
        }
        form.push(("decision", decision));
        self.post("/o/oauth2/v2/auth", &form).await
    }

    /// Opens the authorization URL, signs in if asked, and returns the consent page.
    pub async fn consent_page(&self, authorize_url: &str, email: &str) -> Page {
        let first = self.get(authorize_url).await;
        if first.body.contains("name=\"password\"") {
            let after = self.sign_in(&first, email, PASSWORD).await;
            assert_eq!(after.status, 303, "sign-in redirects: {}", after.body);
            let back = after.headers["location"].to_str().expect("location").to_owned();
            return self.get(&format!("{}{back}", self.base)).await;
        }
        first
    }

    /// Runs authorization up to the code: signs in, grants `granted` of `requested`, returns the code.
    #[allow(clippy::too_many_arguments)]
    pub async fn code(
        &self,
        server: &TestServer,
        app: &App,
        email: &str,
        requested: &[&str],
        granted: &[&str],
        pkce: &Pkce,
        redirect_uri: &str,
    ) -> String {
        let url = authorize_url(server, app, requested, pkce, redirect_uri, "st4te");
        let consent = self.consent_page(&url, email).await;
        assert_eq!(consent.status, 200, "consent page: {}", consent.body);
        let done = self.decide(&consent, granted, "allow").await;
        assert_eq!(done.status, 303, "consent redirects: {}", done.body);
        assert_eq!(done.redirect_param("state").as_deref(), Some("st4te"));
        done.redirect_param("code").expect("code in the redirect")
    }
}

/// A desktop Chrome user agent (not an embedded web view).
pub const CHROME_UA: &str =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";

async fn page(r: reqwest::Response) -> Page {
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let body = r.text().await.expect("body");
    Page { status, headers, body }
}

/// An authorization URL with PKCE S256.
pub fn authorize_url(
    server: &TestServer,
    app: &App,
    scopes: &[&str],
    pkce: &Pkce,
    redirect_uri: &str,
    state: &str,
) -> String {
    let mut url = Url::parse(&server.url("/o/oauth2/v2/auth")).expect("url");
    url.query_pairs_mut()
        .append_pair("client_id", &app.client_id)
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("response_type", "code")
        .append_pair("scope", &scopes.join(" "))
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", state);
    url.into()
}

/// The server's OpenID Connect discovery document.
pub async fn discovery(server: &TestServer) -> serde_json::Value {
    let r = server.http().get(server.url("/.well-known/openid-configuration")).send().await.expect("discovery");
    r.json().await.expect("discovery JSON")
}

/// The scopes a discovery document lists.
pub fn scopes_supported(doc: &serde_json::Value) -> Vec<String> {
    doc["scopes_supported"]
        .as_array()
        .expect("scopes_supported")
        .iter()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// Calls `channels.list` with a bearer token.
pub async fn channels(server: &TestServer, token: &str) -> reqwest::Response {
    server
        .http()
        .get(server.url("/video/v3/channels?part=snippet,id&mine=true"))
        .bearer_auth(token)
        .send()
        .await
        .expect("channels")
}

/// The JSON body of an error response, with its status.
pub async fn error_of(r: reqwest::Response) -> (u16, String) {
    let status = r.status().as_u16();
    let body: serde_json::Value = r.json().await.expect("json error");
    (status, body["error"].as_str().unwrap_or_default().to_owned())
}

/// A refresh token with `real`'s grant id and another secret (its last 43 characters replaced): it names the same
/// grant, and must not be taken for the real one.
pub fn forged_refresh_token(real: &str) -> String {
    let forged = format!("{}{}", &real[..real.len() - 43], "A".repeat(43));
    assert_ne!(forged, real, "the forged token differs from the real one");
    forged
}
