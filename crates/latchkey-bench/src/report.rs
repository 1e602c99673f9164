//! What a workload measured: the requests of the window, their latencies, the server's CPU time and memory, the
//! database's CPU time and the round trips to it; as one JSON object or a table row.

use crate::meter::Costs;

/// What one connection measured.
#[derive(Default)]
pub struct ConnResult {
    /// (completion offset from the start, latency), both in microseconds, successes only.
    pub samples: Vec<(u64, u32)>,
    /// Completion offsets of failed requests.
    pub errors: Vec<u64>,
    /// DPoP nonce retries.
    pub retries: u64,
    /// When the pool ran out (offset in microseconds), if it did.
    pub exhausted_at: Option<u64>,
}

/// One workload's figures.
pub struct Report {
    workload: String,
    connections: usize,
    window_s: f64,
    requests: u64,
    errors: u64,
    retries: u64,
    /// Sorted, microseconds.
    latencies: Vec<u32>,
    /// The server's and the database's CPU, and the round trips, per request.
    costs: Costs,
    /// The server's RSS before the first workload and its peak during this one, in KiB.
    rss_kb: (Option<u64>, Option<u64>),
    pool_exhausted: bool,
}

/// VmRSS of a process in KiB.
pub fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

impl Report {
    /// The figures of the connections' results, counted in the window: from the end of the warm-up (`from`,
    /// microseconds from the start) to the deadline (`to`), or to the moment the first connection ran out of its
    /// pool. `costs` are per request, `rss_kb` is (idle, peak).
    pub fn of(
        workload: String,
        results: &[ConnResult],
        (from, to): (u64, u64),
        costs: Costs,
        rss_kb: (Option<u64>, Option<u64>),
    ) -> Self {
        let exhausted = results.iter().filter_map(|r| r.exhausted_at).min();
        let to = exhausted.unwrap_or(to).max(from);
        let in_window = |at: u64| at > from && at <= to;
        let mut latencies: Vec<u32> =
            results.iter().flat_map(|r| r.samples.iter().filter(|s| in_window(s.0)).map(|s| s.1)).collect();
        latencies.sort_unstable();
        Self {
            workload,
            connections: results.len(),
            window_s: (to - from) as f64 / 1e6,
            requests: latencies.len() as u64,
            errors: results.iter().map(|r| r.errors.iter().filter(|&&at| in_window(at)).count() as u64).sum(),
            retries: results.iter().map(|r| r.retries).sum(),
            latencies,
            costs,
            rss_kb,
            pool_exhausted: exhausted.is_some(),
        }
    }

    /// Requests per second of the window (none in an empty window).
    fn rate(&self) -> f64 {
        self.requests as f64 / self.window_s.max(1e-9)
    }

    /// The `q` quantile in milliseconds (nearest rank).
    fn quantile_ms(&self, q: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let rank = ((q * self.latencies.len() as f64).ceil() as usize).clamp(1, self.latencies.len());
        f64::from(self.latencies[rank - 1]) / 1000.0
    }

    /// The figures as one JSON object (the `--json` output).
    pub fn to_json(&self) -> serde_json::Value {
        let round = |x: f64, d: i32| (x * 10f64.powi(d)).round() / 10f64.powi(d);
        serde_json::json!({
            "workload": self.workload,
            "connections": self.connections,
            "window_s": round(self.window_s, 3),
            "requests": self.requests,
            "errors": self.errors,
            "dpop_nonce_retries": self.retries,
            "req_per_s": round(self.rate(), 1),
            "p50_ms": self.quantile_ms(0.50),
            "p90_ms": self.quantile_ms(0.90),
            "p99_ms": self.quantile_ms(0.99),
            "max_ms": self.quantile_ms(1.0),
            "server_cpu_us_per_req": self.costs.server_cpu.map(|c| round(c.0 * 1e6, 1)),
            "server_cpu_pct_of_core": self.costs.server_cpu.map(|c| round(c.1, 1)),
            "database_cpu_us_per_req": self.costs.database_cpu.map(|c| round(c.0 * 1e6, 1)),
            "database_cpu_pct_of_core": self.costs.database_cpu.map(|c| round(c.1, 1)),
            "db_round_trips_per_req": self.costs.round_trips.map(|r| round(r.0, 2)),
            "db_messages_per_req": self.costs.round_trips.map(|r| round(r.1, 2)),
            "server_rss_idle_mb": self.rss_kb.0.map(|k| round(k as f64 / 1024.0, 1)),
            "server_rss_peak_mb": self.rss_kb.1.map(|k| round(k as f64 / 1024.0, 1)),
            "pool_exhausted": self.pool_exhausted,
        })
    }

    /// Prints the figures as a table row, after the table's header the first time.
    pub fn print_table_row(&self, issuer: &str) {
        use std::sync::atomic::{AtomicBool, Ordering};
        static HEADER: AtomicBool = AtomicBool::new(false);
        if !HEADER.swap(true, Ordering::Relaxed) {
            println!("latchkey-bench against {issuer}, {} connections", self.connections);
            println!(
                "workload       requests  errors      req/s   p50 ms   p90 ms   p99 ms cpu us/req   cpu % \
                 db cpu us/req  db rt/req  rss idle  rss peak"
            );
        }
        let opt = |v: Option<f64>, d: usize| v.map_or_else(|| "-".to_owned(), |x| format!("{x:.d$}"));
        let mb = |kb: Option<u64>| kb.map_or_else(|| "-".to_owned(), |k| format!("{:.1} MB", k as f64 / 1024.0));
        println!(
            "{:<13} {:>9} {:>7} {:>10.0} {:>8.2} {:>8.2} {:>8.2} {:>10} {:>7} {:>13} {:>10} {:>9} {:>9}{}",
            self.workload,
            self.requests,
            self.errors,
            self.rate(),
            self.quantile_ms(0.50),
            self.quantile_ms(0.90),
            self.quantile_ms(0.99),
            opt(self.costs.server_cpu.map(|c| c.0 * 1e6), 1),
            opt(self.costs.server_cpu.map(|c| c.1), 0),
            opt(self.costs.database_cpu.map(|c| c.0 * 1e6), 1),
            opt(self.costs.round_trips.map(|r| r.0), 2),
            mb(self.rss_kb.0),
            mb(self.rss_kb.1),
            if self.pool_exhausted { format!("  (pool ran out after {:.1} s)", self.window_s) } else { String::new() },
        );
    }
}
