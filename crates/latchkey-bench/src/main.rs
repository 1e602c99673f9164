//! `latchkey-bench`: a closed-loop load generator against a running server, over HTTPS keep-alive connections,
//! and the bulk loading of a store for load tests (`seed-grants`). See docs/benchmarks.md.
//!
//! Every connection is its own `reqwest::Client` (HTTP/1.1, one socket) with its own signed-in browser session.
//! Tokens and codes come from the real endpoints (sign-in and consent pages, `/token`), never from the store.
//! Whatever a workload needs (a grant, a pool of codes or tokens) is obtained before the warm-up starts, so only
//! the measured request is timed. With `--target oidc-provider` it drives node-oidc-provider (bench/oidc-provider)
//! through the same steps, for the side-by-side figures. On PostgreSQL, `pg-proxy` between the server and its
//! database counts the round trips to it (`--round-trips-from`), and `--database-pid` adds the database's CPU time.

mod conn;
mod es256;
mod html;
mod meter;
mod passkey;
mod pg_proxy;
mod report;
mod seed;
mod setup;
mod trivial;
mod workload;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// latchkey-bench: drives a running server and reports throughput, latency, CPU and memory (and its database's CPU
/// and round trips).
#[derive(Parser)]
#[command(name = "latchkey-bench", version, about, args_conflicts_with_subcommands = true)]
#[command(subcommand_negates_reqs = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    bench: BenchArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Load tests: stores COUNT grants (and a user for every PER_USER of them) under a client of their own,
    /// through the store in batches; their refresh tokens are held by no one.
    SeedGrants(seed::SeedArgs),
    /// ES256 verifications per second on this thread, with the functions latchkey's DPoP check calls: the
    /// signature alone, and every stateless check of a proof.
    Es256(es256::Es256Args),
    /// latchkey's HTTPS listener with handlers that answer at once (`--target trivial`): the load generator's
    /// and the TLS and HTTP layers' ceiling.
    TrivialServer(trivial::TrivialArgs),
    /// A TCP proxy in front of PostgreSQL that forwards every byte and counts the round trips made through it
    /// (`--round-trips-from` reads its totals).
    PgProxy(pg_proxy::PgProxyArgs),
}

/// The kind of server driven.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TargetKind {
    /// latchkey.
    Latchkey,
    /// node-oidc-provider (bench/oidc-provider/server.mjs): endpoints from its discovery document, its dev
    /// sign-in and consent forms, scope `openid offline_access`, the API call is its userinfo endpoint;
    /// --client-id defaults to `bench`, --ca-file is needed.
    OidcProvider,
    /// `latchkey-bench trivial-server`: fixed answers, no sign-in; --ca-file is needed.
    Trivial,
}

/// What is measured.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// A refresh-token grant.
    Refresh,
    /// A refresh-token grant with a DPoP proof.
    RefreshDpop,
    /// A code exchange.
    Exchange,
    /// A data-API call with the access token.
    Api,
    /// A revocation of a refresh token.
    Revoke,
    /// An introspection (RFC 7662) of the connection's access token by its client (latchkey only).
    Introspect,
    /// The five above, in this order.
    All,
    /// The sign-in form's POST, whose cost is the password hash (latchkey only).
    Login,
    /// A passkey sign-in: its options, then the signed answer (latchkey with `--setup`, served under a host name).
    LoginPasskey,
}

/// The workloads of `all`.
const ALL: [Workload; 5] =
    [Workload::Refresh, Workload::RefreshDpop, Workload::Exchange, Workload::Api, Workload::Revoke];

impl Workload {
    /// Its name on the command line and in the report.
    pub fn name(self) -> String {
        self.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
    }
}

/// The load generator's options.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// The server's issuer (base URL), e.g. https://localhost:8443.
    #[arg(long, required = true)]
    issuer: Option<String>,
    /// The kind of server.
    #[arg(long, value_enum, default_value = "latchkey")]
    target: TargetKind,
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
    #[command(flatten)]
    store: StoreArgs,
    /// The workload.
    #[arg(long, value_enum, default_value = "all")]
    workload: Workload,
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
    /// The database's postmaster (PostgreSQL), for the database's CPU time: that of the postmaster and of every
    /// process under it, with the children they reaped.
    #[arg(long)]
    database_pid: Option<u32>,
    /// The `--stats` address of a `latchkey-bench pg-proxy` between the server and its database, for the round
    /// trips to the database per request.
    #[arg(long)]
    round_trips_from: Option<String>,
    /// One JSON object per workload on stdout instead of the table.
    #[arg(long)]
    json: bool,
}

/// The server's store, for `--setup` and `seed-grants` (`LATCHKEY_*` variables apply too).
#[derive(clap::Args)]
pub struct StoreArgs {
    /// The server's data directory. Default ./latchkey-data.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// The server's database URL. Default sqlite://<data-dir>/latchkey.db.
    #[arg(long)]
    database_url: Option<String>,
}

/// Runs the benchmark: every workload asked for, one after the other, on the same connections.
async fn bench(args: BenchArgs) -> anyhow::Result<()> {
    let workloads = match args.workload {
        Workload::All => ALL.to_vec(),
        w => vec![w],
    };
    if args.connections == 0 || args.duration <= 0.0 || args.warmup < 0.0 {
        anyhow::bail!("--connections and --duration must be positive, --warmup not negative");
    }
    let target = Arc::new(setup::target(&args).await?);
    let rss_idle = args.server_pid.and_then(report::rss_kb);
    let meters = meter::Meters {
        server_pid: args.server_pid,
        database_pid: args.database_pid,
        round_trips_from: args.round_trips_from.clone(),
    };
    if let Some(stats) = &meters.round_trips_from {
        pg_proxy::read_totals(stats).await?;
    }
    let conns = conn::connect(&target, args.connections).await?;
    for w in workloads {
        let result = workload::run(w, &conns, &args, &meters, rss_idle).await?;
        if args.json {
            println!("{}", result.to_json());
        } else {
            result.print_table_row(&target.issuer);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(Into::into).and_then(|rt| {
        rt.block_on(async {
            match cli.command {
                Some(Command::SeedGrants(args)) => seed::run(args).await,
                Some(Command::Es256(args)) => es256::run(&args),
                Some(Command::TrivialServer(args)) => trivial::serve(&args).await,
                Some(Command::PgProxy(args)) => pg_proxy::run(&args).await,
                None => bench(cli.bench).await,
            }
        })
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("latchkey-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
