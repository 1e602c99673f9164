//! `latchkey`: the one binary. `serve` runs the service, `admin` manages its store, `app` is an installed app.

mod admin;
mod app;
mod serve;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc instead of glibc's malloc: 6-16% more requests per second on every hot path (docs/perf-notes.md, fifth
/// session). Built without transparent huge pages, which would otherwise take idle RSS from 19 to 32 MB.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// latchkey: OAuth 2.0 for installed apps, with PKCE and DPoP.
#[derive(Parser)]
#[command(name = "latchkey", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the authorization server, the data API and the pages, over HTTPS.
    Serve(ConfigArgs),
    /// Manages projects, clients, users and keys in the store (also while the server runs).
    Admin(Box<admin::AdminArgs>),
    /// Acts as an installed app: signs in through the system browser, keeps and refreshes tokens, calls APIs.
    App(app::AppArgs),
}

/// Where the configuration comes from; flags win over `LATCHKEY_*` variables, which win over the file.
#[derive(Args, Clone, Default)]
pub struct ConfigArgs {
    /// A TOML configuration file (see docs/configuration.md).
    #[arg(long, env = "LATCHKEY_CONFIG", global = true)]
    config: Option<PathBuf>,
    /// The data directory (SQLite database, generated TLS certificate). Default ./latchkey-data.
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// The database URL: sqlite://PATH or postgres://USER@HOST:PORT/DB. Default sqlite://<data-dir>/latchkey.db.
    #[arg(long, global = true)]
    database_url: Option<String>,
    /// The HTTPS listen address. Default 127.0.0.1:8443.
    #[arg(long)]
    listen: Option<String>,
    /// PEM certificate chain (with --tls-key). Default: a generated self-signed certificate.
    #[arg(long)]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long)]
    tls_key: Option<PathBuf>,
    /// The public base URL and issuer. Default https://<listen>.
    #[arg(long)]
    public_url: Option<String>,
}

impl ConfigArgs {
    /// The configuration these flags, the environment and the file describe.
    pub fn load(&self) -> anyhow::Result<latchkey_server::config::Config> {
        let mut flags = toml::Table::new();
        let mut set = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                flags.insert(k.into(), toml::Value::String(v));
            }
        };
        set("data_dir", self.data_dir.as_ref().map(|p| p.display().to_string()));
        set("database_url", self.database_url.clone());
        set("listen", self.listen.clone());
        set("tls_cert", self.tls_cert.as_ref().map(|p| p.display().to_string()));
        set("tls_key", self.tls_key.as_ref().map(|p| p.display().to_string()));
        set("public_url", self.public_url.clone());
        Ok(latchkey_server::config::Config::load(self.config.as_deref(), std::env::vars(), flags)?)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("latchkey: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve::run(args).await,
            Command::Admin(args) => admin::run(*args).await,
            Command::App(args) => app::run(args).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("latchkey: {e:#}");
            ExitCode::FAILURE
        }
    }
}
