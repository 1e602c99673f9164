//! A PostgreSQL primary and its synchronous streaming standby, made for one test with the installed server's own
//! tools (`initdb`, `pg_ctl`, `pg_basebackup`) in a temporary directory: the deployment that docs/scaling.md asks
//! for when a failover must not lose a committed grant. Every commit on the primary waits until the standby has
//! it, so the standby, promoted after the primary dies, holds every transaction a client was told of.
//!
//! The tools are looked for in `LATCHKEY_TEST_PG_BIN`, then in Debian's `/usr/lib/postgresql/<version>/bin` (the
//! newest), then on `PATH`. Without them the test is ignored (as the PostgreSQL tests are without a server), except
//! under `CI=true`, where that fails it. `initdb` refuses to run as root: as root, the tools run as the `postgres`
//! OS user, which then owns the directory.

use latchkey_store::test_database::{required, Unreachable};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The database the test's instances use, made on the primary before the standby is copied from it.
pub const DATABASE: &str = "latchkey";
/// The standby's `application_name`, which the primary's `synchronous_standby_names` waits for.
const STANDBY_NAME: &str = "standby";

/// One server of the pair: its data directory and port.
pub struct Node {
    /// Its TCP port on 127.0.0.1.
    pub port: u16,
    data: PathBuf,
}

/// A primary and a synchronous standby streaming from it; both stopped (immediately) and removed on drop.
pub struct Pair {
    /// The primary, until it is killed.
    pub primary: Node,
    /// The standby, until it is promoted.
    pub standby: Node,
    tools: Tools,
    dir: TempDir,
}

impl Pair {
    /// Makes and starts both servers, with the database [`DATABASE`] on them, and waits until the primary's commits
    /// wait for the standby (`pg_stat_replication.sync_state = 'sync'`). [`Unreachable`] when PostgreSQL's tools are
    /// not installed (outside `CI=true`).
    pub async fn start() -> Result<Self, Unreachable> {
        let tools = match Tools::find() {
            Ok(t) => t,
            Err(why) if required() => panic!("under CI=true this test must run: {why}"),
            Err(why) => return Err(Unreachable::new(why)),
        };
        Ok(tokio::task::spawn_blocking(move || Self::make(tools)).await.expect("join"))
    }

    fn make(tools: Tools) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        tools.own(dir.path());
        let [primary, standby] = free_ports();
        let pair = Self {
            primary: Node { port: primary, data: dir.path().join("primary") },
            standby: Node { port: standby, data: dir.path().join("standby") },
            tools,
            dir,
        };
        let (p, s) = (&pair.primary, &pair.standby);
        pair.tools.run("initdb", &[path(&p.data), "-U", "postgres", "--auth=trust", "--no-sync", "--no-instructions"]);
        let sockets = pair.dir.path().display();
        append(
            &p.data.join("postgresql.conf"),
            &format!(
                "listen_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{sockets}'\n\
                 wal_level = replica\nmax_wal_senders = 4\nsynchronous_commit = on\n",
                p.port
            ),
        );
        append(&p.data.join("pg_hba.conf"), "host replication all 127.0.0.1/32 trust\n");
        pair.start_node(p, "primary");
        pair.psql(p.port, "postgres", &format!("CREATE DATABASE {DATABASE}"));
        // The standby's `primary_conninfo` (written by -R) names it, for `synchronous_standby_names`.
        let conninfo = format!("host=127.0.0.1 port={} user=postgres application_name={STANDBY_NAME}", p.port);
        let args = ["-d", &conninfo, "-D", path(&s.data), "-R", "-X", "stream", "-c", "fast", "--no-sync"];
        pair.tools.run("pg_basebackup", &args);
        append(&s.data.join("postgresql.conf"), &format!("port = {}\n", s.port));
        pair.start_node(s, "standby");
        // Set on the primary only (ALTER SYSTEM, after the copy): a promoted standby waits for no one.
        pair.psql(p.port, "postgres", &format!("ALTER SYSTEM SET synchronous_standby_names = '{STANDBY_NAME}'"));
        pair.psql(p.port, "postgres", "SELECT pg_reload_conf()");
        let started = Instant::now();
        let sync = format!("SELECT sync_state FROM pg_stat_replication WHERE application_name = '{STANDBY_NAME}'");
        while pair.psql(p.port, "postgres", &sync) != "sync" {
            assert!(started.elapsed() < Duration::from_secs(20), "the standby is not synchronous after 20 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        pair
    }

    /// The database URL in libpq's multi-host form, primary first: a client connects to whichever of the two takes
    /// writes (`target_session_attrs=read-write`), so that it follows the promotion by itself.
    pub fn url(&self) -> String {
        let (p, s) = (self.primary.port, self.standby.port);
        format!("postgres://postgres@127.0.0.1:{p},127.0.0.1:{s}/{DATABASE}?target_session_attrs=read-write")
    }

    /// Runs `sql` with `psql` on `database` of the server on `port`; its output, trimmed (tuples only, unaligned).
    pub fn psql(&self, port: u16, database: &str, sql: &str) -> String {
        let port = port.to_string();
        let args = ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", &port, "-U", "postgres"];
        let out = Command::new(self.tools.bin.join("psql"))
            .args(args)
            .args(["-d", database, "-c", sql])
            .output()
            .expect("run psql");
        assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// SIGKILLs the primary's postmaster and every process it started, as when its machine dies: no shutdown, no
    /// checkpoint, connections reset. Returns once none of them runs.
    pub fn kill_primary(&self) {
        let pid_file = self.primary.data.join("postmaster.pid");
        let pid = std::fs::read_to_string(&pid_file).expect("postmaster.pid");
        let pid: u32 = pid.lines().next().and_then(|l| l.trim().parse().ok()).expect("the postmaster's pid");
        let mut pids = vec![pid];
        pids.extend(children(pid));
        let status = Command::new("kill").arg("-9").args(pids.iter().map(u32::to_string)).status().expect("kill");
        assert!(status.success(), "kill -9 {pids:?}");
        let started = Instant::now();
        while pids.iter().any(|p| alive(*p)) {
            assert!(started.elapsed() < Duration::from_secs(10), "the primary's processes outlived SIGKILL");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Promotes the standby (`pg_ctl promote`), returning once it takes writes.
    pub async fn promote_standby(&self) {
        let (tools, data) = (self.tools.clone(), self.standby.data.clone());
        tokio::task::spawn_blocking(move || tools.run("pg_ctl", &["promote", "-w", "-D", path(&data)]))
            .await
            .expect("join");
    }

    /// What the servers logged, for a failure's message.
    pub fn logs(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        format!("primary:\n{}\nstandby:\n{}", read("primary.log"), read("standby.log"))
    }

    fn start_node(&self, node: &Node, name: &str) {
        let log = self.dir.path().join(format!("{name}.log"));
        self.tools.run("pg_ctl", &["start", "-w", "-t", "30", "-D", path(&node.data), "-l", path(&log)]);
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for node in [&self.primary, &self.standby] {
            if node.data.join("postmaster.pid").exists() {
                // A primary already killed leaves its pid file: pg_ctl then finds no process and says so.
                let _ =
                    self.tools.command("pg_ctl", &["stop", "-m", "immediate", "-w", "-D", path(&node.data)]).output();
            }
        }
    }
}

/// Where PostgreSQL's programs are, and whether to run them as the `postgres` OS user (we are root).
#[derive(Clone)]
struct Tools {
    bin: PathBuf,
    as_postgres: bool,
}

impl Tools {
    fn find() -> Result<Self, String> {
        let has = |dir: &Path| ["initdb", "pg_ctl", "pg_basebackup", "psql"].iter().all(|t| dir.join(t).is_file());
        let from_env = std::env::var_os("LATCHKEY_TEST_PG_BIN").map(PathBuf::from);
        let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
            .collect();
        debian.sort();
        let on_path =
            std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default();
        let bin = from_env
            .into_iter()
            .chain(debian.into_iter().rev().map(|(_, b)| b))
            .chain(on_path)
            .find(|d| has(d))
            .ok_or("PostgreSQL's server tools (initdb, pg_ctl, pg_basebackup, psql) are not installed")?;
        let root =
            std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").map_err(|e| e.to_string())?) == 0;
        if root && !Command::new("id").args(["-u", "postgres"]).output().is_ok_and(|o| o.status.success()) {
            return Err("running as root, and there is no postgres OS user to run initdb as".into());
        }
        Ok(Self { bin, as_postgres: root })
    }

    /// `tool args`, as the `postgres` user when we are root.
    fn command(&self, tool: &str, args: &[&str]) -> Command {
        let program = self.bin.join(tool);
        let mut c = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        // The tools' own working directory must be one the postgres user may enter.
        c.args(args).current_dir("/").stdin(std::process::Stdio::null());
        c
    }

    /// Runs a tool that must succeed.
    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let out = self.command(tool, args).output().unwrap_or_else(|e| panic!("running {tool}: {e}"));
        assert!(
            out.status.success(),
            "{tool} {args:?}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Gives `dir` to the user the tools run as.
    fn own(&self, dir: &Path) {
        if self.as_postgres {
            let status = Command::new("chown").arg("postgres:").arg(dir).status().expect("chown");
            assert!(status.success(), "chown postgres {}", dir.display());
        }
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

fn append(file: &Path, text: &str) {
    use std::io::Write;
    let mut f =
        std::fs::OpenOptions::new().append(true).open(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    f.write_all(text.as_bytes()).expect("append");
}

/// Two free loopback ports (both held until both are known, then released for the servers).
fn free_ports() -> [u16; 2] {
    let listeners = [0, 1].map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"));
    listeners.map(|l| l.local_addr().expect("addr").port())
}

/// The processes whose parent is `pid` (from /proc).
fn children(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| stat(*child).is_some_and(|(_, parent)| parent == pid))
        .collect()
}

/// Whether `pid` runs (a zombie, waiting for its reaper, does not).
fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// A process's state letter and parent, from `/proc/<pid>/stat` (after the command name, which may hold spaces).
fn stat(pid: u32) -> Option<(char, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = s[s.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    Some((state, rest.next()?.parse().ok()?))
}
