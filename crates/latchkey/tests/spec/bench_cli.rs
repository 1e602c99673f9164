//! `latchkey bench` against a real `latchkey serve` child process: every workload runs, with no errors.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_latchkey");

/// A `latchkey serve` child on a free port; killed on drop.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn bench_runs_every_workload_against_a_served_binary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env("LATCHKEY_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let stdout = child.stdout.take().expect("stdout");
    let served = Served(child);
    let mut base = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("line");
        if let Some(rest) = line.strip_prefix("  issuer:") {
            base = Some(rest.trim().to_owned());
        }
        if line.starts_with("Press Ctrl-C") {
            break;
        }
    }
    let base = base.expect("issuer line");
    let pid = served.0.id().to_string();
    let bench = |workload: &str| {
        let out = Command::new(BIN)
            .args(["bench", "--setup", "--issuer", &base, "--data-dir"])
            .arg(dir.path())
            .args(["--workload", workload, "--connections", "2", "--warmup", "0", "--duration", "1", "--pool", "150"])
            .args(["--server-pid", &pid, "--json"])
            .output()
            .expect("bench");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "bench failed: {}{stdout}", String::from_utf8_lossy(&out.stderr));
        let reports: Vec<serde_json::Value> =
            stdout.lines().map(|l| serde_json::from_str(l).expect("one JSON object per line")).collect();
        reports
    };
    let mut reports = bench("all");
    let names: Vec<&str> = reports.iter().map(|r| r["workload"].as_str().expect("workload")).collect();
    assert_eq!(names, ["refresh", "refresh-dpop", "exchange", "api", "revoke"]);
    let login = bench("login");
    assert_eq!(login.len(), 1);
    assert_eq!(login[0]["workload"], "login");
    reports.extend(login);
    for r in &reports {
        assert!(r["req_per_s"].as_f64().expect("req/s") > 0.0, "{r}");
        assert_eq!(r["errors"], 0, "{r}");
        assert!(r["p99_ms"].as_f64().expect("p99") > 0.0, "{r}");
        assert!(r["server_rss_peak_mb"].as_f64().expect("rss") > 0.0, "{r}");
    }
    drop(served);
}
