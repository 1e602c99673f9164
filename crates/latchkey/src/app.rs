//! `latchkey app ...`: the whole installed-app flow in one command, on the client SDK, the way `gcloud auth
//! login` or `oauth2l` do it for their platforms.
//!
//! State lives in one directory (`--state-dir`, `LATCHKEY_APP_DIR`, or `~/.config/latchkey/app`): `app.json`
//! (issuer, client, options), `tokens.json` and `dpop.key`, all mode 0600.
//!
//! Each command prints one JSON object on stdout the way `admin` does ([`crate::output`]), except `call`, which
//! prints the API's body as it came. A failure is one JSON object on stderr with an exit code of [`Exit`]
//! (`login` also writes the authorization URL and its progress as text on stderr).

use crate::output::{self, Exit};
use clap::{Args, Subcommand};
use latchkey_client::{
    browser, write_private, AppConfig, Authorization, AuthorizationResponse, DpopKey, Error, FileKeyStore,
    FileTokenStore, HttpClient, HttpRequest, KeyStore, LoopbackListener, OAuthClient, ReqwestHttp, Session, TokenSet,
    TokenStore,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// `latchkey app` and its options.
#[derive(Args)]
pub struct AppArgs {
    /// Where the app keeps its settings, tokens and DPoP key.
    #[arg(long, env = "LATCHKEY_APP_DIR", global = true)]
    state_dir: Option<PathBuf>,
    /// Indents the JSON printed (the default on a terminal).
    #[arg(long, global = true)]
    pretty: bool,
    #[command(subcommand)]
    command: AppCommand,
}

#[derive(Subcommand)]
enum AppCommand {
    /// Signs in through the system browser and says what was granted.
    Login(LoginArgs),
    /// Prints a valid access token and its expiry, refreshing it if needed.
    Token,
    /// Performs an authenticated GET and prints the body as it came.
    Call {
        /// The URL to call.
        url: String,
    },
    /// Shows the granted scopes and the expiries.
    Status,
    /// Revokes the grant at the server and forgets the tokens.
    Revoke,
    /// Forgets the tokens and the DPoP key on this device, without contacting the server.
    Logout,
}

#[derive(Args)]
struct LoginArgs {
    /// The issuer URL (for example https://localhost:8443).
    #[arg(long)]
    issuer: String,
    /// The app's client id.
    #[arg(long)]
    client_id: String,
    /// The client secret, if the app has one (never required).
    #[arg(long)]
    client_secret: Option<String>,
    /// A scope to request (repeatable, or space-separated).
    #[arg(long = "scope", required = true)]
    scopes: Vec<String>,
    /// An API to ask tokens for (RFC 8707 `resource`, repeatable): sent on the authorization request, the code
    /// exchange and every refresh.
    #[arg(long = "resource")]
    resources: Vec<String>,
    /// Bind the refresh token to a DPoP key kept on this device.
    #[arg(long)]
    dpop: bool,
    /// A PEM file of extra CA certificates to trust (for example latchkey-data/tls/cert.pem).
    #[arg(long)]
    ca_file: Option<PathBuf>,
    /// How long to wait for the browser, in seconds.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// Open no browser: print the address to open on any machine, then take the address the browser was finally
    /// sent to, pasted on standard input (or the redirect itself, should it reach this machine).
    #[arg(long)]
    no_browser: bool,
    /// The loopback port that receives the redirect (default: any free port), for one forwarded over SSH.
    #[arg(long)]
    port: Option<u16>,
    /// Sign in with the device flow (RFC 8628), for a client of the type TVs and Limited Input devices: print a code
    /// to enter on any phone or computer (and, on a terminal, a QR code of the address), then wait for it.
    #[arg(long, conflicts_with_all = ["no_browser", "port"])]
    device: bool,
}

/// What `login` remembers for the other commands.
#[derive(Serialize, Deserialize)]
struct Saved {
    issuer: String,
    client_id: String,
    client_secret: Option<String>,
    ca_file: Option<PathBuf>,
    dpop: bool,
    requested: Vec<String>,
    /// The APIs named with `--resource` (none in a file written before the option).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    resources: Vec<String>,
}

/// Runs one app command.
pub async fn run(args: AppArgs) -> anyhow::Result<ExitCode> {
    let result = match state_dir(args.state_dir) {
        Ok(dir) => command(&dir, args.command).await,
        Err(e) => Err(Failure::Other(e)),
    };
    Ok(match result {
        Ok(Some(value)) => output::print(value, args.pretty),
        Ok(None) => ExitCode::SUCCESS,
        Err(failure) => {
            let (exit, error, description) = failure.describe();
            output::fail(exit, &error, description)
        }
    })
}

/// Runs one command; its result to print, or none when it printed its own (`call`).
async fn command(dir: &Path, command: AppCommand) -> Result<Option<Value>, Failure> {
    match command {
        AppCommand::Login(login_args) => login(dir, login_args).await.map(Some),
        AppCommand::Token => {
            let (client, session, saved) = open(dir).await?;
            check_grant(&client, &session, &saved).await?;
            let access_token = session.access_token().await?;
            let expires_at = session.tokens().await?.map(|t| t.expires_at);
            Ok(Some(json!({ "access_token": access_token, "token_type": "Bearer", "expires_at": expires_at })))
        }
        AppCommand::Call { url } => call(dir, &url).await.map(|()| None),
        AppCommand::Status => status(dir).await.map(Some),
        AppCommand::Revoke => {
            let (_, session, _) = open(dir).await?;
            session.revoke().await?;
            Ok(Some(json!({ "revoked": true })))
        }
        AppCommand::Logout => logout(dir).map(Some),
    }
}

/// Why a command stopped.
enum Failure {
    App(Error),
    /// The API called answered with this status.
    Status(u16),
    Cancelled,
    Other(anyhow::Error),
}

impl Failure {
    /// The exit code, the `error` code and the `error_description` printed for this failure.
    fn describe(self) -> (Exit, String, String) {
        let login = "run `latchkey app login ...`";
        let (exit, error, description) = match self {
            Self::App(Error::OAuth { code, description }) => {
                let exit = match code.as_str() {
                    "temporarily_unavailable" => Exit::Unreachable,
                    "server_error" => Exit::Failure,
                    _ => Exit::Refused,
                };
                let text = format!("The server answered {code}: {description}");
                return (exit, code, text);
            }
            Self::App(Error::NotSignedIn) => {
                (Exit::NotFound, "not_signed_in", format!("Not signed in: {login} first."))
            }
            Self::App(Error::SignInAgain(why)) => {
                (Exit::Refused, "invalid_grant", format!("Sign in again ({why}): {login}."))
            }
            Self::App(Error::AccessDenied) => (
                Exit::Refused,
                "access_denied",
                "Access was not granted: the sign-in was cancelled in the browser.".into(),
            ),
            Self::App(e @ Error::Transport(_)) => (Exit::Unreachable, "unreachable", e.to_string()),
            Self::App(e @ Error::Timeout(_)) => (Exit::Failure, "timeout", e.to_string()),
            Self::App(e @ (Error::StateMismatch | Error::IssuerMismatch(_))) => {
                (Exit::Failure, "mismatched_response", e.to_string())
            }
            Self::App(e @ Error::Protocol(_)) => (Exit::Failure, "unexpected_response", e.to_string()),
            Self::App(e) => (Exit::Failure, "failure", e.to_string()),
            Self::Status(status) => {
                (Exit::for_status(status), "http_error", format!("The API answered HTTP {status}."))
            }
            Self::Cancelled => (Exit::Interrupted, "cancelled", "Cancelled.".into()),
            Self::Other(e) => (Exit::Failure, "failure", format!("{e:#}")),
        };
        (exit, error.to_owned(), description)
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Self::App(e)
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Self::Other(e)
    }
}

fn state_dir(flag: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(d) = flag {
        return Ok(d);
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .ok_or_else(|| anyhow::anyhow!("no --state-dir, LATCHKEY_APP_DIR, XDG_CONFIG_HOME or HOME"))?;
    Ok(base.join("latchkey").join("app"))
}

fn saved(dir: &Path) -> Result<Saved, Failure> {
    let bytes = std::fs::read(dir.join("app.json")).map_err(|_| Failure::App(Error::NotSignedIn))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| Failure::Other(anyhow::anyhow!("{}: {e}", dir.join("app.json").display())))
}

/// The client and session of the saved app.
async fn open(dir: &Path) -> Result<(Arc<OAuthClient>, Session, Saved), Failure> {
    let saved = saved(dir)?;
    let (client, session) = connect(dir, &saved).await?;
    Ok((client, session, saved))
}

/// The client and session for `saved` settings.
async fn connect(dir: &Path, saved: &Saved) -> Result<(Arc<OAuthClient>, Session), Failure> {
    let http: Arc<dyn HttpClient> = Arc::new(ReqwestHttp::with_ca_file(saved.ca_file.as_deref())?);
    let mut config = AppConfig::new(&saved.issuer, &saved.client_id);
    config.client_secret = saved.client_secret.clone();
    config.resources = saved.resources.clone();
    let client = Arc::new(OAuthClient::discover(config, http).await?);
    let key = if saved.dpop {
        Some(Arc::new(DpopKey::load_or_create(&FileKeyStore::new(dir.join("dpop.key")))?))
    } else {
        None
    };
    let session = Session::new(client.clone(), Arc::new(FileTokenStore::new(dir.join("tokens.json"))), key);
    Ok((client, session))
}

/// Creates the state directory readable by its owner only (0700); its files are 0600.
fn private_dir(dir: &Path) -> Result<(), Failure> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| Failure::Other(anyhow::anyhow!("{}: {e}", dir.display())))
}

/// Signs in; the result is the new sign-in's [`report`].
async fn login(dir: &Path, args: LoginArgs) -> Result<Value, Failure> {
    let requested: Vec<String> = args.scopes.iter().flat_map(|s| s.split_whitespace()).map(str::to_owned).collect();
    let saved = Saved {
        issuer: args.issuer.trim_end_matches('/').to_owned(),
        client_id: args.client_id,
        client_secret: args.client_secret,
        ca_file: args.ca_file.map(|p| std::fs::canonicalize(&p).unwrap_or(p)),
        dpop: args.dpop,
        requested: requested.clone(),
        resources: args.resources,
    };
    private_dir(dir)?;
    // The settings are stored only once the sign-in succeeded: an abandoned or failed login leaves the current
    // sign-in (its issuer, client and DPoP binding) as it was.
    let (client, session) = connect(dir, &saved).await?;
    if saved.dpop && !client.discovery().supports_dpop() {
        eprintln!("Note: the server does not advertise ES256 DPoP; trying anyway.");
    }
    let key = if saved.dpop { Some(DpopKey::load_or_create(&FileKeyStore::new(dir.join("dpop.key")))?) } else { None };
    let tokens = if args.device {
        let scope_refs: Vec<&str> = requested.iter().map(String::as_str).collect();
        device_tokens(&client, &scope_refs, key.as_ref()).await?
    } else {
        let wait = Wait { no_browser: args.no_browser, port: args.port, timeout: args.timeout };
        browser_tokens(&client, &requested, key.as_ref(), wait).await?
    };
    let bytes = serde_json::to_vec_pretty(&saved).map_err(|e| Failure::Other(e.into()))?;
    write_private(&dir.join("app.json"), &bytes)?;
    let result = report(&tokens, &saved);
    session.save(tokens).await?;
    Ok(result)
}

/// The device flow: the code and where to enter it (with a QR code of the address on a terminal), then polling at
/// the server's interval until the person decides or the code expires.
async fn device_tokens(client: &OAuthClient, scopes: &[&str], key: Option<&DpopKey>) -> Result<TokenSet, Failure> {
    let auth = client.device_authorization(scopes).await?;
    eprintln!(
        "On a phone or computer, open\n\n  {}\n\nand enter the code\n\n  {}\n",
        auth.verification_uri, auth.user_code
    );
    if let Some(complete) = auth.verification_uri_complete.as_deref().filter(|_| std::io::stderr().is_terminal()) {
        if let Ok(code) = qrcode::QrCode::new(complete.as_bytes()) {
            eprintln!(
                "or scan this code:\n{}",
                code.render::<qrcode::render::unicode::Dense1x2>().quiet_zone(true).build()
            );
        }
    }
    eprintln!(
        "Waiting for you to allow access (the code works for {} minutes; Ctrl-C cancels)...",
        auth.expires_in / 60
    );
    tokio::select! {
        r = client.wait_for_device(&auth, key) => Ok(r?),
        _ = tokio::signal::ctrl_c() => Err(Failure::Cancelled),
    }
}

/// How a code-flow login waits for its browser.
struct Wait {
    no_browser: bool,
    port: Option<u16>,
    timeout: u64,
}

/// The code flow in the system browser (or, with `--no-browser`, on any machine), back through the loopback redirect.
async fn browser_tokens(
    client: &OAuthClient,
    requested: &[String],
    key: Option<&DpopKey>,
    args: Wait,
) -> Result<TokenSet, Failure> {
    let listener = LoopbackListener::bind_port(args.port.unwrap_or(0)).await?;
    let scope_refs: Vec<&str> = requested.iter().map(String::as_str).collect();
    let pending = client.authorize(&listener.redirect_uri(), &scope_refs)?;
    if args.no_browser {
        eprintln!("Open this address in a browser on any machine to sign in:");
    } else if browser::open(pending.url()).is_ok() {
        eprintln!("Opened your browser to sign in. If nothing appears, open this address yourself:");
    } else {
        eprintln!("Could not start a browser. Open this address to sign in:");
    }
    eprintln!("\n  {}\n", pending.url());
    if args.no_browser {
        eprintln!(
            "After you allow access the browser goes to {} (which fails to load on another machine):\n\
             copy that whole address from its address bar and paste it here.",
            pending.redirect_uri()
        );
    }
    eprintln!("Waiting for the sign-in (up to {} seconds; Ctrl-C cancels)...", args.timeout);
    eprintln!(
        "If the browser shows an error page instead of the sign-in (an unknown client id, a redirect the client does \
         not accept), it cannot come back here: read what the page says, press Ctrl-C, and run app login again with \
         the settings corrected."
    );
    let timeout = Duration::from_secs(args.timeout);
    let response = tokio::select! {
        r = listener.receive(pending.state(), timeout) => r?,
        r = pasted(&pending), if args.no_browser => r?,
        _ = tokio::signal::ctrl_c() => return Err(Failure::Cancelled),
    };
    Ok(client.exchange(pending, &response, key).await?)
}

/// The authorization response pasted on standard input: the redirect URI's address, whose `state` is checked as the
/// loopback listener checks it. Lines that are not that address are answered on stderr and skipped; at the end of
/// the input the redirect itself may still arrive, until the timeout.
async fn pasted(pending: &Authorization) -> Result<AuthorizationResponse, Failure> {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let prefix = format!("{}?", pending.redirect_uri());
    while let Some(line) = lines.next_line().await.map_err(|e| Failure::Other(e.into()))? {
        let line = line.trim();
        if line.starts_with(&prefix) {
            return Ok(pending.finish(line)?);
        }
        if !line.is_empty() {
            eprintln!("That is not an address starting with {prefix}; paste the whole address from the address bar.");
        }
    }
    std::future::pending().await
}

/// Sends an authenticated GET and prints the body as it came, also with an error status.
async fn call(dir: &Path, url: &str) -> Result<(), Failure> {
    let (_, session, saved) = open(dir).await?;
    let http = ReqwestHttp::with_ca_file(saved.ca_file.as_deref())?;
    let get = |token: String| {
        let headers = vec![("authorization".into(), format!("Bearer {token}"))];
        http.send(HttpRequest { method: "GET", url: url.to_owned(), headers, body: Vec::new() })
    };
    let mut response = get(session.access_token().await?).await?;
    if response.status == 401 {
        // The access token was refused before its expiry (its grant revoked elsewhere, the server's keys
        // replaced): one refresh, then one more try. A refused refresh is `invalid_grant`: sign in again.
        let fresh = session.refresh().await?;
        response = get(fresh.access_token).await?;
    }
    let body = String::from_utf8_lossy(&response.body);
    println!("{body}");
    if (200..300).contains(&response.status) {
        Ok(())
    } else {
        Err(Failure::Status(response.status))
    }
}

/// Asks the server whether the grant still stands, so that `status` and `token` never show a sign-in that was
/// ended elsewhere (access removed on the account page, a revocation) as valid: the access token goes to the
/// userinfo endpoint, which answers 401 only for a token it refuses (a 403 is a grant without `openid`: it
/// stands). A refused token is refreshed once; a refused refresh is `invalid_grant` (sign in again). Without a
/// userinfo endpoint in the server's metadata nothing is checked, and stderr says so.
async fn check_grant(client: &OAuthClient, session: &Session, saved: &Saved) -> Result<(), Failure> {
    let Some(userinfo) = client.discovery().userinfo_endpoint.clone() else {
        eprintln!("warning: the server names no userinfo endpoint: the sign-in could not be checked with it");
        return Ok(());
    };
    let token = session.access_token().await?;
    let http = ReqwestHttp::with_ca_file(saved.ca_file.as_deref())?;
    let headers = vec![("authorization".into(), format!("Bearer {token}"))];
    let answer = http.send(HttpRequest { method: "GET", url: userinfo, headers, body: Vec::new() }).await?;
    if answer.status == 401 {
        session.refresh().await?;
    }
    Ok(())
}

/// The stored sign-in's [`report`].
async fn status(dir: &Path) -> Result<Value, Failure> {
    let (client, session, saved) = open(dir).await?;
    check_grant(&client, &session, &saved).await?;
    let tokens = session.tokens().await?.ok_or(Error::NotSignedIn)?;
    Ok(report(&tokens, &saved))
}

/// What `login` and `status` print: the grant, what was asked and not granted, the expiries (Unix seconds, which
/// [`output::print`] writes in RFC 3339) and the DPoP key's thumbprint.
fn report(tokens: &TokenSet, saved: &Saved) -> Value {
    let granted: Vec<&str> = tokens.scopes().collect();
    let denied: Vec<&String> = saved.requested.iter().filter(|s| !tokens.granted(s)).collect();
    json!({
        "issuer": tokens.issuer,
        "client_id": tokens.client_id,
        "granted": granted,
        "not_granted": denied,
        "access_token_expires_at": tokens.expires_at,
        "refresh_token": tokens.refresh_token.is_some(),
        "refresh_token_expires_at": tokens.refresh_expires_at,
        "dpop_bound": tokens.dpop_jkt,
    })
}

/// Forgets the sign-in on this device only.
fn logout(dir: &Path) -> Result<Value, Failure> {
    FileTokenStore::new(dir.join("tokens.json")).clear()?;
    FileKeyStore::new(dir.join("dpop.key")).clear()?;
    let _ = std::fs::remove_file(dir.join("app.json"));
    Ok(json!({ "signed_out": true }))
}
