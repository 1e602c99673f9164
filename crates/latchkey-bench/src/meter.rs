//! What is read at both ends of a workload's measured window beside the requests: the server's CPU time, the
//! database's CPU time (its postmaster's and that of every process under it), and the round trips to the database
//! that `latchkey-bench pg-proxy` counted; and their differences per request.

use crate::pg_proxy::{read_totals, WireTotals};
use std::collections::HashMap;

/// Clock ticks per second of /proc/PID/stat (USER_HZ, 100 on Linux).
pub const CLK_TCK: f64 = 100.0;

/// The fields of /proc/PID/stat that are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stat {
    pid: u32,
    ppid: u32,
    /// utime + stime, in clock ticks.
    own: u64,
    /// cutime + cstime: the children it waited for, in clock ticks.
    reaped: u64,
}

/// Parses the text of /proc/PID/stat.
fn parse_stat(stat: &str) -> Option<Stat> {
    let pid = stat.split_whitespace().next()?.parse().ok()?;
    // The command name (field 2) is in parentheses and may hold spaces; `rest` starts at field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        pid,
        ppid: u32::try_from(field(4)?).ok()?,
        own: field(14)? + field(15)?,
        reaped: field(16)? + field(17)?,
    })
}

fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// utime + stime of a process, in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    stat(pid).map(|s| s.own)
}

/// The CPU time of a process and of every process under it, in clock ticks: each one's utime + stime, plus
/// cutime + cstime (the children each has waited for, such as the backends a postmaster reaped). The processes are
/// found by their parent in every /proc/PID/stat (the kernel's `children` files are not always built in).
pub fn tree_cpu_ticks(root: u32) -> Option<u64> {
    let root = stat(root)?;
    let pids = std::fs::read_dir("/proc").ok()?.flatten().filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok());
    // A process may end between the listing and the reading: it is then in its parent's cutime.
    Some(sum_tree(root, pids.filter_map(stat)))
}

/// The CPU time of `root` and of every process of `all` under it.
fn sum_tree(root: Stat, all: impl IntoIterator<Item = Stat>) -> u64 {
    let mut children: HashMap<u32, Vec<Stat>> = HashMap::new();
    for s in all {
        children.entry(s.ppid).or_default().push(s);
    }
    let (mut total, mut stack) = (0, vec![root]);
    while let Some(s) = stack.pop() {
        total += s.own + s.reaped;
        stack.extend(children.remove(&s.pid).unwrap_or_default());
    }
    total
}

/// What to read: the options `--server-pid`, `--database-pid` and `--round-trips-from`.
#[derive(Clone, Default)]
pub struct Meters {
    /// The server's process.
    pub server_pid: Option<u32>,
    /// The database's postmaster.
    pub database_pid: Option<u32>,
    /// The stats address of the `pg-proxy` between the server and its database.
    pub round_trips_from: Option<String>,
}

/// The counters at one moment.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    /// The server's CPU time, in clock ticks.
    server_ticks: Option<u64>,
    /// The database's CPU time, in clock ticks.
    database_ticks: Option<u64>,
    /// The proxy's totals.
    wire: Option<WireTotals>,
}

impl Meters {
    /// Reads every counter asked for; one that cannot be read is None.
    pub async fn read(&self) -> Counters {
        let wire = match &self.round_trips_from {
            Some(addr) => read_totals(addr).await.map_err(|e| eprintln!("latchkey-bench: {e:#}")).ok(),
            None => None,
        };
        Counters {
            server_ticks: self.server_pid.and_then(cpu_ticks),
            database_ticks: self.database_pid.and_then(tree_cpu_ticks),
            wire,
        }
    }
}

/// What a workload cost per request, from the counters at both ends of its window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Costs {
    /// The server's CPU: seconds per request, % of one core.
    pub server_cpu: Option<(f64, f64)>,
    /// The database's CPU: seconds per request, % of one core.
    pub database_cpu: Option<(f64, f64)>,
    /// Round trips per request, `Sync` and `Query` messages per request.
    pub round_trips: Option<(f64, f64)>,
}

impl Costs {
    /// The differences between `from` and `to`, `wall` seconds apart, over `requests` requests.
    pub fn between(from: &Counters, to: &Counters, requests: u64, wall: f64) -> Self {
        let n = requests.max(1) as f64;
        let cpu = |a: Option<u64>, b: Option<u64>| {
            let secs = b?.saturating_sub(a?) as f64 / CLK_TCK;
            Some((secs / n, 100.0 * secs / wall.max(1e-9)))
        };
        let round_trips = match (from.wire, to.wire) {
            (Some(a), Some(b)) => Some((
                b.round_trips.saturating_sub(a.round_trips) as f64 / n,
                b.messages.saturating_sub(a.messages) as f64 / n,
            )),
            _ => None,
        };
        Self {
            server_cpu: cpu(from.server_ticks, to.server_ticks),
            database_cpu: cpu(from.database_ticks, to.database_ticks),
            round_trips,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_parsed_past_a_name_with_spaces_and_parentheses() {
        let line = "4242 (postgres: a (b) c) S 4200 4200 4200 0 -1 4194560 500 0 0 0 \
                    120 30 7 5 20 0 1 0 100 200000000 1000 18446744073709551615";
        assert_eq!(parse_stat(line), Some(Stat { pid: 4242, ppid: 4200, own: 150, reaped: 12 }));
        assert_eq!(parse_stat("1 (init"), None);
    }

    #[test]
    fn the_tree_takes_in_the_processes_under_the_root() {
        let s = |pid, ppid, own, reaped| Stat { pid, ppid, own, reaped };
        // A postmaster (10) under init, two backends, a process under one of them, an unrelated process.
        let all = [s(1, 0, 1000, 0), s(10, 1, 5, 40), s(11, 10, 100, 0), s(12, 10, 200, 1), s(13, 12, 7, 0)];
        let all = [&all[..], &[s(20, 1, 999, 0)]].concat();
        assert_eq!(sum_tree(all[1], all.clone()), 5 + 40 + 100 + 200 + 1 + 7);
        assert_eq!(sum_tree(all[3], all), 200 + 1 + 7);
        // The process's own time is read first: it only grows, so the tree read after it holds at least as much.
        let me = std::process::id();
        let own = cpu_ticks(me).unwrap();
        assert!(tree_cpu_ticks(me).unwrap() >= own);
        assert_eq!(tree_cpu_ticks(u32::MAX), None);
    }

    #[test]
    fn costs_are_per_request_and_absent_where_a_counter_is() {
        let wire = |round_trips, messages| Some(WireTotals { round_trips, messages });
        let from = Counters { server_ticks: Some(100), database_ticks: Some(50), wire: wire(10, 20) };
        let to = Counters { server_ticks: Some(300), database_ticks: None, wire: wire(410, 820) };
        let c = Costs::between(&from, &to, 200, 4.0);
        assert_eq!(c.server_cpu, Some((0.01, 50.0)));
        assert_eq!(c.database_cpu, None);
        assert_eq!(c.round_trips, Some((2.0, 4.0)));
    }
}
