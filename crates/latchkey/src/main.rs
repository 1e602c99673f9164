//! `latchkey`: the one binary. `serve` runs the service, `admin` manages its store, `app` is an installed app.

mod admin;
mod app;
mod output;
mod serve;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc instead of glibc's malloc: 6-16% more requests per second on every hot path (docs/performance.md, "What
/// the figures rest on"). Built without transparent huge pages, which would otherwise take idle RSS from 19 to 32 MB.
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
    /// Prints a shell completion script: `latchkey completions bash > /etc/bash_completion.d/latchkey`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Where the configuration comes from; flags win over `LATCHKEY_*` variables, which win over the file.
#[derive(Args, Clone, Default)]
pub struct ConfigArgs {
    /// The file, the data directory and the database.
    #[command(flatten)]
    store: StoreArgs,
    /// The HTTPS listen address. Default 127.0.0.1:8443.
    #[arg(long)]
    listen: Option<String>,
    /// PEM certificate chain (with --tls-key). Default: a generated self-signed certificate.
    #[arg(long)]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long)]
    tls_key: Option<PathBuf>,
    /// The public base URL and issuer. Default https://localhost:8443 on the default listener, else
    /// https://<listen>.
    #[arg(long)]
    public_url: Option<String>,
}

/// Where the store is, for the commands that only use the store (`admin`).
#[derive(Args, Clone, Default)]
pub struct StoreArgs {
    /// A TOML configuration file (see docs/configuration.md).
    #[arg(long, env = "LATCHKEY_CONFIG", global = true)]
    config: Option<PathBuf>,
    /// The data directory (SQLite database, system secret, generated TLS certificate). Default ./latchkey-data.
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// The database URL: sqlite://PATH or postgres://USER@HOST:PORT/DB. Default sqlite://<data-dir>/latchkey.db.
    #[arg(long, global = true)]
    database_url: Option<String>,
}

impl StoreArgs {
    /// The configuration these flags, the environment and the file describe.
    pub fn load(&self) -> anyhow::Result<latchkey_config::Config> {
        ConfigArgs { store: self.clone(), ..ConfigArgs::default() }.load()
    }
}

impl ConfigArgs {
    /// The configuration these flags, the environment and the file describe.
    pub fn load(&self) -> anyhow::Result<latchkey_config::Config> {
        let mut flags = toml::Table::new();
        let mut set = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                flags.insert(k.into(), toml::Value::String(v));
            }
        };
        set("data_dir", self.store.data_dir.as_ref().map(|p| p.display().to_string()));
        set("database_url", self.store.database_url.clone());
        set("listen", self.listen.clone());
        set("tls_cert", self.tls_cert.as_ref().map(|p| p.display().to_string()));
        set("tls_key", self.tls_key.as_ref().map(|p| p.display().to_string()));
        set("public_url", self.public_url.clone());
        Ok(latchkey_config::Config::load(self.store.config.as_deref(), std::env::vars(), flags)?)
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go to stdout with success; a wrong command line exits with the usage code.
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(output::Exit::Usage as u8) } else { ExitCode::SUCCESS };
        }
    };
    // Blocking-pool threads end after a second idle instead of ten: the allocator gives a finished thread's memory
    // back to the system, so the argon2 arrays of a burst of sign-ins (19 MiB each) leave with their threads.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_keep_alive(std::time::Duration::from_secs(1))
        .build()
    {
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
            Command::Completions { shell } => {
                let mut command = <Cli as clap::CommandFactory>::command();
                let mut script = Vec::new();
                clap_complete::generate(shell, &mut command, "latchkey", &mut script);
                match std::io::Write::write_all(&mut std::io::stdout(), &script) {
                    // The reader stopped early (`latchkey completions bash | head`): what it read is what it wanted.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                    written => written?,
                }
                Ok(ExitCode::SUCCESS)
            }
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
