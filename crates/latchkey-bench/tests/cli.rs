//! `latchkey-bench` against a real server over HTTPS: every workload runs, with no errors; and `seed-grants` loads
//! a store.
//!
//! The server is the one `latchkey serve` runs (`latchkey_server::start`), started in this test's process on a
//! free port: the `latchkey` binary belongs to another package, whose `CARGO_BIN_EXE_latchkey` this one cannot
//! name. `--server-pid` is then this process's id.

use latchkey_admin::clock::SystemClock;
use latchkey_config::{Config, RateLimitsConfig};
use std::process::{Command, Output};
use std::sync::Arc;

const BIN: &str = env!("CARGO_BIN_EXE_latchkey-bench");

/// Runs the binary with `args` off the runtime's threads (the server answers on them meanwhile).
async fn run(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || Command::new(BIN).args(args).output().expect("latchkey-bench"))
        .await
        .expect("join")
}

#[tokio::test(flavor = "multi_thread")]
async fn bench_runs_every_workload_against_a_running_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().display().to_string();
    // Every workload comes from one loopback address, faster than any default rate limit allows.
    let config = Config {
        data_dir: dir.path().into(),
        listen: "127.0.0.1:0".parse().expect("addr"),
        rate_limits: RateLimitsConfig::OFF,
        ..Config::default()
    };
    let running = latchkey_server::start(config, Arc::new(SystemClock)).await.expect("server starts");
    let base = running.urls.issuer.clone();
    let pid = std::process::id().to_string();
    let bench = |workload: &str| {
        let args = ["--setup", "--issuer", &base, "--data-dir", &data_dir, "--workload", workload]
            .into_iter()
            .chain(["--connections", "2", "--warmup", "0", "--duration", "1", "--pool", "150"])
            .chain(["--server-pid", &pid, "--json"])
            .map(str::to_owned)
            .collect();
        async move {
            let out = run(args).await;
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(out.status.success(), "bench failed: {}{stdout}", String::from_utf8_lossy(&out.stderr));
            let reports: Vec<serde_json::Value> =
                stdout.lines().map(|l| serde_json::from_str(l).expect("one JSON object per line")).collect();
            reports
        }
    };
    let mut reports = bench("all").await;
    let names: Vec<&str> = reports.iter().map(|r| r["workload"].as_str().expect("workload")).collect();
    assert_eq!(names, ["refresh", "refresh-dpop", "exchange", "api", "revoke"]);
    for single in ["introspect", "login"] {
        let report = bench(single).await;
        assert_eq!(report.len(), 1);
        assert_eq!(report[0]["workload"], single);
        reports.extend(report);
    }
    for r in &reports {
        assert!(r["req_per_s"].as_f64().expect("req/s") > 0.0, "{r}");
        assert_eq!(r["errors"], 0, "{r}");
        assert!(r["p99_ms"].as_f64().expect("p99") > 0.0, "{r}");
        assert!(r["server_rss_peak_mb"].as_f64().expect("rss") > 0.0, "{r}");
    }
    drop(running);
}

#[tokio::test(flavor = "multi_thread")]
async fn seed_grants_stores_the_grants_and_a_user_for_every_per_user_of_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = ["seed-grants", "--count", "25", "--per-user", "10", "--data-dir"].map(str::to_owned);
    let out = run(args.into_iter().chain([dir.path().display().to_string()]).collect()).await;
    assert!(out.status.success(), "seed-grants failed: {}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!((report["grants"].as_u64(), report["users"].as_u64()), (Some(25), Some(3)), "{report}");
    let url = format!("sqlite://{}/latchkey.db", dir.path().display());
    let store = latchkey_store::open_with(&url, Default::default()).await.expect("store");
    assert_eq!(store.users().await.expect("users").len(), 3);
    let client_id = report["client_id"].as_str().expect("client_id");
    assert!(store.client(client_id).await.expect("client").is_some(), "{report}");
}

#[test]
fn an_unknown_workload_is_a_usage_error() {
    let out = Command::new(BIN).args(["--issuer", "https://127.0.0.1:1", "--workload", "nap"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("refresh-dpop"), "the valid workloads are listed");
}
