//! `latchkey serve`.

use crate::ConfigArgs;
use latchkey_core::time::SystemClock;
use std::process::ExitCode;
use std::sync::Arc;
use tracing_subscriber::EnvFilter;

/// Runs the server until SIGINT or SIGTERM.
pub async fn run(args: ConfigArgs) -> anyhow::Result<ExitCode> {
    let config = args.load()?;
    let filter = EnvFilter::try_from_env("LATCHKEY_LOG").unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let subscriber = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if config.log_format == "json" {
        subscriber.json().init();
    } else {
        subscriber.init();
    }
    let data_dir = config.data_dir.clone();
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
    wait_for_signal().await;
    tracing::info!("signal received; shutting down");
    if let Some(tx) = stop {
        let _ = tx.send(());
    }
    running.wait().await;
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
