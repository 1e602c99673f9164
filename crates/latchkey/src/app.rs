//! `latchkey app ...`: the whole installed-app flow in one command, on the client SDK, the way `gcloud auth
//! login` or `oauth2l` do it for their platforms.
//!
//! State lives in one directory (`--state-dir`, `LATCHKEY_APP_DIR`, or `~/.config/latchkey/app`): `app.json`
//! (issuer, client, options), `tokens.json` and `dpop.key`, all mode 0600.

use clap::{Args, Subcommand};
use latchkey_client::{
    browser, write_private, AppConfig, DpopKey, Error, FileKeyStore, FileTokenStore, HttpClient, HttpRequest, KeyStore,
    LoopbackListener, OAuthClient, ReqwestHttp, Session, TokenStore,
};
use serde::{Deserialize, Serialize};
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
    #[command(subcommand)]
    command: AppCommand,
}

#[derive(Subcommand)]
enum AppCommand {
    /// Signs in through the system browser and says what was granted.
    Login(LoginArgs),
    /// Prints a valid access token, refreshing it if needed.
    Token,
    /// Performs an authenticated GET and prints the body.
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
    /// The issuer URL (for example https://127.0.0.1:8443).
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
    /// Bind the refresh token to a DPoP key kept on this device.
    #[arg(long)]
    dpop: bool,
    /// A PEM file of extra CA certificates to trust (for example latchkey-data/tls/cert.pem).
    #[arg(long)]
    ca_file: Option<PathBuf>,
    /// How long to wait for the browser, in seconds.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
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
}

/// Runs one app command.
pub async fn run(args: AppArgs) -> anyhow::Result<ExitCode> {
    let dir = state_dir(args.state_dir)?;
    let result = match args.command {
        AppCommand::Login(login_args) => login(&dir, login_args).await,
        AppCommand::Token => {
            with_session(&dir, |s| async move {
                println!("{}", s.access_token().await?);
                Ok(())
            })
            .await
        }
        AppCommand::Call { url } => call(&dir, &url).await,
        AppCommand::Status => status(&dir).await,
        AppCommand::Revoke => {
            with_session(&dir, |s| async move {
                s.revoke().await?;
                println!("Revoked: the app's access is withdrawn and its tokens are forgotten.");
                Ok(())
            })
            .await
        }
        AppCommand::Logout => logout(&dir),
    };
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(Failure::App(Error::SignInAgain(why))) => {
            eprintln!("Sign in again ({why}): run `latchkey app login ...`.");
            Ok(ExitCode::from(3))
        }
        Err(Failure::App(Error::NotSignedIn)) => {
            eprintln!("Not signed in: run `latchkey app login ...` first.");
            Ok(ExitCode::from(3))
        }
        Err(Failure::App(Error::AccessDenied)) => {
            eprintln!("Access was not granted: the sign-in was cancelled in the browser.");
            Ok(ExitCode::from(4))
        }
        Err(Failure::Cancelled) => {
            eprintln!("Cancelled.");
            Ok(ExitCode::from(130))
        }
        Err(Failure::App(e)) => {
            eprintln!("latchkey app: {e}");
            Ok(ExitCode::FAILURE)
        }
        Err(Failure::Other(e)) => Err(e),
    }
}

/// Why a command stopped.
enum Failure {
    App(Error),
    Cancelled,
    Other(anyhow::Error),
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
    let client = Arc::new(OAuthClient::discover(config, http).await?);
    let key = if saved.dpop {
        Some(Arc::new(DpopKey::load_or_create(&FileKeyStore::new(dir.join("dpop.key")))?))
    } else {
        None
    };
    let session = Session::new(client.clone(), Arc::new(FileTokenStore::new(dir.join("tokens.json"))), key);
    Ok((client, session))
}

async fn with_session<F, Fut>(dir: &Path, f: F) -> Result<(), Failure>
where
    F: FnOnce(Session) -> Fut,
    Fut: std::future::Future<Output = Result<(), Error>>,
{
    let (_, session, _) = open(dir).await?;
    Ok(f(session).await?)
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

async fn login(dir: &Path, args: LoginArgs) -> Result<(), Failure> {
    let requested: Vec<String> = args.scopes.iter().flat_map(|s| s.split_whitespace()).map(str::to_owned).collect();
    let saved = Saved {
        issuer: args.issuer.trim_end_matches('/').to_owned(),
        client_id: args.client_id,
        client_secret: args.client_secret,
        ca_file: args.ca_file.map(|p| std::fs::canonicalize(&p).unwrap_or(p)),
        dpop: args.dpop,
        requested: requested.clone(),
    };
    private_dir(dir)?;
    // The settings are stored only once the sign-in succeeded: an abandoned or failed login leaves the current
    // sign-in (its issuer, client and DPoP binding) as it was.
    let (client, session) = connect(dir, &saved).await?;
    if saved.dpop && !client.discovery().supports_dpop() {
        eprintln!("Note: the server does not advertise ES256 DPoP; trying anyway.");
    }
    let key = if saved.dpop { Some(DpopKey::load_or_create(&FileKeyStore::new(dir.join("dpop.key")))?) } else { None };
    let listener = LoopbackListener::bind().await?;
    let scope_refs: Vec<&str> = requested.iter().map(String::as_str).collect();
    let pending = client.authorize(&listener.redirect_uri(), &scope_refs)?;
    match browser::open(pending.url()) {
        Ok(()) => eprintln!("Opened your browser to sign in. If nothing appears, open this address yourself:"),
        Err(_) => eprintln!("Could not start a browser. Open this address to sign in:"),
    }
    eprintln!("\n  {}\n", pending.url());
    eprintln!("Waiting for the sign-in (up to {} seconds; Ctrl-C cancels)...", args.timeout);
    let response = tokio::select! {
        r = listener.receive(pending.state(), Duration::from_secs(args.timeout)) => r?,
        _ = tokio::signal::ctrl_c() => return Err(Failure::Cancelled),
    };
    let tokens = client.exchange(pending, &response, key.as_ref()).await?;
    let granted: Vec<&str> = tokens.scopes().collect();
    let denied: Vec<&str> = scope_refs.iter().copied().filter(|s| !tokens.granted(s)).collect();
    let bytes = serde_json::to_vec_pretty(&saved).map_err(|e| Failure::Other(e.into()))?;
    write_private(&dir.join("app.json"), &bytes)?;
    session.save(tokens.clone()).await?;
    println!("Signed in to {}.", saved.issuer);
    println!("Granted: {}", if granted.is_empty() { "(nothing)".into() } else { granted.join(" ") });
    if !denied.is_empty() {
        println!("Not granted: {}", denied.join(" "));
    }
    if let Some(jkt) = &tokens.dpop_jkt {
        println!("The refresh token is bound to this device's DPoP key ({jkt}).");
    }
    Ok(())
}

async fn call(dir: &Path, url: &str) -> Result<(), Failure> {
    let saved = saved(dir)?;
    let (_, session, _) = open(dir).await?;
    let token = session.access_token().await?;
    let http = ReqwestHttp::with_ca_file(saved.ca_file.as_deref())?;
    let response = http
        .send(HttpRequest {
            method: "GET",
            url: url.to_owned(),
            headers: vec![("authorization".into(), format!("Bearer {token}"))],
            body: Vec::new(),
        })
        .await?;
    let body = String::from_utf8_lossy(&response.body);
    println!("{body}");
    if (200..300).contains(&response.status) {
        Ok(())
    } else {
        Err(Failure::App(Error::Protocol(format!("HTTP {}", response.status))))
    }
}

async fn status(dir: &Path) -> Result<(), Failure> {
    let (client, session, saved) = open(dir).await?;
    let tokens = session.tokens().await?.ok_or(Error::NotSignedIn)?;
    let now = client.now();
    let granted: Vec<&str> = tokens.scopes().collect();
    let denied: Vec<&String> = saved.requested.iter().filter(|s| !tokens.granted(s)).collect();
    let report = serde_json::json!({
        "issuer": tokens.issuer,
        "client_id": tokens.client_id,
        "granted": granted,
        "not_granted": denied,
        "access_token_expires_in": (tokens.expires_at - now).max(0),
        "refresh_token": tokens.refresh_token.is_some(),
        "refresh_token_expires_in": tokens.refresh_expires_at.map(|e| (e - now).max(0)),
        "dpop_bound": tokens.dpop_jkt,
    });
    println!("{}", serde_json::to_string_pretty(&report).map_err(|e| Failure::Other(e.into()))?);
    Ok(())
}

fn logout(dir: &Path) -> Result<(), Failure> {
    FileTokenStore::new(dir.join("tokens.json")).clear()?;
    FileKeyStore::new(dir.join("dpop.key")).clear()?;
    let _ = std::fs::remove_file(dir.join("app.json"));
    println!("Signed out on this device (the server was not contacted; use `latchkey app revoke` to withdraw access).");
    Ok(())
}
