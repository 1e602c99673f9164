//! `latchkey serve`.

use crate::ConfigArgs;
use latchkey_admin::clock::SystemClock;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use tracing_subscriber::EnvFilter;

/// The file a server on a SQLite data directory holds locked while it runs.
const SERVE_LOCK: &str = "serve.lock";

/// Locks the SQLite data directory for this server (the lock goes with the returned file, when the process
/// ends whichever way): a second `serve` on it would serve the same store under another issuer, beside a writer
/// it does not know. Refused with what to do when another server holds it. (PostgreSQL takes many instances.)
fn only_server(data_dir: &std::path::Path) -> anyhow::Result<std::fs::File> {
    use std::io::{Read, Seek, Write};
    std::fs::create_dir_all(data_dir)?;
    let path = data_dir.join(SERVE_LOCK);
    let mut file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path)?;
    if let Err(std::fs::TryLockError::WouldBlock) = file.try_lock() {
        let mut pid = String::new();
        let _ = file.read_to_string(&mut pid);
        anyhow::bail!(
            "another `latchkey serve` (process {}) is running on the data directory {}: stop it first, or give \
             this one another --data-dir (a SQLite store has one server; PostgreSQL takes several)",
            pid.trim(),
            data_dir.display()
        );
    }
    file.set_len(0)?;
    file.rewind()?;
    write!(file, "{}", std::process::id())?;
    Ok(file)
}

/// The log lines that may wait for the log's writer thread.
const LOG_QUEUE_LINES: usize = 4096;

/// Runs the server until SIGINT or SIGTERM.
pub async fn run(args: ConfigArgs) -> anyhow::Result<ExitCode> {
    let config = args.load()?;
    let filter = EnvFilter::try_from_env("LATCHKEY_LOG").unwrap_or_else(|_| EnvFilter::new("info,tokio_postgres=warn"));
    // Log lines are formatted on the request's thread and written by a thread of their own, in batches (one
    // write for every line waiting), so a line per request costs no system call on the hot path. Nothing is
    // dropped: a full queue makes the logger wait. The guard flushes the rest when the server stops. The queue
    // holds 4,096 lines (the writer thread drains it in batches well before): the crate's default of 128,000
    // allocates and touches 4 MiB of slots up front, a sixth of the idle server's memory.
    let (writer, _flush_on_exit) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .lossy(false)
        .thread_name("latchkey-log")
        .finish(std::io::BufWriter::with_capacity(64 * 1024, std::io::stderr()));
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(std::io::stderr().is_terminal());
    if config.log_format == "json" {
        subscriber.json().init();
    } else {
        subscriber.init();
    }
    let data_dir = config.data_dir.clone();
    let _only_server = match config.sqlite_path() {
        Some(_) => Some(only_server(&data_dir)?),
        None => None,
    };
    // The signal handlers are in place before the start-up output says the server is up, so that a SIGTERM
    // sent right after it always stops the server gracefully.
    let signals = Signals::install()?;
    let mut running = latchkey_server::start(config, Arc::new(SystemClock)).await?;
    let issuer = running.urls.issuer.clone();
    println!("latchkey is serving on https://{}", running.addr);
    println!("  issuer:    {issuer}");
    println!("  metadata:  {issuer}/.well-known/openid-configuration");
    println!("  data dir:  {}", data_dir.display());
    let cert = running.cert_path.display().to_string();
    match &running.generated_cert {
        Some(_) => {
            println!("  TLS:       generated a self-signed certificate for localhost, 127.0.0.1 and ::1 at {cert}")
        }
        None => println!("  TLS:       certificate {cert}"),
    }
    println!("  Clients trust it with: curl --cacert {cert}, SSL_CERT_FILE={cert} (OpenSSL, Python),");
    println!("  REQUESTS_CA_BUNDLE={cert} (requests), NODE_EXTRA_CA_CERTS={cert} (Node), or --ca-file {cert}.");
    println!("Press Ctrl-C to stop.");
    let stop = running.take_shutdown();
    signals.wait().await;
    tracing::info!("signal received; shutting down");
    if let Some(tx) = stop {
        let _ = tx.send(());
    }
    running.wait().await;
    Ok(ExitCode::SUCCESS)
}

/// SIGINT and SIGTERM, listened for from the moment they are installed.
struct Signals {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Self { terminate: signal(SignalKind::terminate())?, interrupt: signal(SignalKind::interrupt())? })
        }
        #[cfg(not(unix))]
        {
            Ok(Self {})
        }
    }

    async fn wait(mut self) {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.terminate.recv() => {}
                _ = self.interrupt.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
