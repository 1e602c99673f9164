//! Throwaway PostgreSQL databases for tests, so that concurrent runs never collide: [`TestDatabase::create`] makes a
//! schema `latchkey_t_<time>_<random>` (cheap: one per server of the integration suite) and points the URL's
//! `search_path` at it; [`TestDatabase::create_database`] makes a whole database of that name (for what must start
//! from an empty database). Either is dropped when the guard goes.
//!
//! The server is `LATCHKEY_TEST_DATABASE_URL`, else the local `postgres://postgres@127.0.0.1:5432/test`. When it
//! cannot be reached, making a database returns [`Unreachable`], except under `CI=true`, where that is a failure.
//! The tests that need PostgreSQL run under a harness of our own ([`trial`], libtest-mimic), which reports a test
//! that got [`Unreachable`] as ignored, with the reason, in the runner's summary: libtest has no way for a test to
//! decide at run time that it is skipped, so there such a test would count as passed (docs/design.md, "Tests").

use latchkey_core::secret::{random_bytes, Random};
use ring::rand::{SecureRandom, SystemRandom};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, OnceLock};
use std::time::Duration;
use tokio_postgres::Client;

#[cfg(feature = "conformance")]
mod harness;
#[cfg(feature = "conformance")]
pub use harness::{run, trial, Trial};

/// The operating system's randomness, for test data: the names of throwaway databases, and the ids and values
/// of the conformance suite, which must not collide between runs on one server. (The server's source,
/// `latchkey_admin::clock::OsRandom`, is out of this crate's reach.)
#[derive(Debug, Default, Clone, Copy)]
pub struct TestRandom;

/// *ring*'s handle on the operating system's generator, for [`Random::ring`] to lend.
static SYSTEM: LazyLock<SystemRandom> = LazyLock::new(SystemRandom::new);

impl Random for TestRandom {
    fn fill(&self, buf: &mut [u8]) {
        SYSTEM.fill(buf).expect("the operating system's random number generator works");
    }

    fn ring(&self) -> &dyn SecureRandom {
        &*SYSTEM
    }
}

/// The server used when `LATCHKEY_TEST_DATABASE_URL` is not set.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
/// Test databases older than this are left over from killed runs and dropped.
const STALE_AFTER_SECS: i64 = 6 * 3600;
const PREFIX: &str = "latchkey_t_";

/// The PostgreSQL server tests use.
pub fn server_url() -> String {
    std::env::var("LATCHKEY_TEST_DATABASE_URL").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| DEFAULT_URL.into())
}

/// Whether a missing PostgreSQL fails the run (`CI=true`) instead of skipping.
pub fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// `url` with its database name replaced by `database` (query parameters kept).
pub fn with_database(url: &str, database: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let (authority, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => match rest.find('?') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        },
    };
    let query = tail.find('?').map_or("", |i| &tail[i..]);
    format!("{scheme}://{authority}/{database}{query}")
}

/// Why a test that needs PostgreSQL cannot run: its server cannot be reached (outside `CI=true`).
#[derive(Debug, Clone)]
pub struct Unreachable(String);

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unreachable {}

impl Unreachable {
    /// Why a test cannot run when what it lacks is not this server: PostgreSQL's own tools, say, for a test that makes
    /// servers of its own. Reported as ignored like the rest; a test decides itself whether `CI=true` ([`required`])
    /// makes it a failure instead.
    pub fn new(why: impl Into<String>) -> Self {
        Self(why.into())
    }
}

/// A fresh schema or database, dropped when this goes.
#[derive(Debug)]
pub struct TestDatabase {
    /// Its URL.
    pub url: String,
    /// Its name.
    pub name: String,
    server: String,
    whole_database: bool,
}

impl TestDatabase {
    /// A fresh schema in the database of [`server_url`]; the URL sets the schema as the `search_path`.
    /// [`Unreachable`] when the server cannot be reached; under `CI=true` that panics instead.
    pub async fn create() -> Result<Self, Unreachable> {
        Self::make(false).await
    }

    /// A fresh, empty database on the server of [`server_url`]; [`Unreachable`] as for [`TestDatabase::create`].
    pub async fn create_database() -> Result<Self, Unreachable> {
        Self::make(true).await
    }

    async fn make(whole_database: bool) -> Result<Self, Unreachable> {
        // Once the server was found unreachable, the other tests of the run do not wait for it again.
        static UNREACHABLE: OnceLock<Unreachable> = OnceLock::new();
        if let Some(why) = UNREACHABLE.get() {
            return Err(why.clone());
        }
        let server = server_url();
        let admin = match connect(&server).await {
            Ok(c) => c,
            Err(e) if required() => panic!("PostgreSQL at {server} is required under CI=true: {e}"),
            Err(e) => {
                let why = UNREACHABLE.get_or_init(|| {
                    eprintln!("PostgreSQL at {server} is not reachable ({e}): the tests that need it are skipped");
                    Unreachable(format!("PostgreSQL at {server} is not reachable"))
                });
                return Err(why.clone());
            }
        };
        static SWEPT: AtomicBool = AtomicBool::new(false);
        // Test glue: throwaway databases are named by the wall clock, so that stale ones can be swept.
        #[allow(clippy::disallowed_methods)]
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        if !SWEPT.swap(true, Ordering::SeqCst) {
            drop_stale(&admin, now).await;
        }
        let suffix: String = random_bytes(6, &TestRandom).iter().map(|b| format!("{b:02x}")).collect();
        let name = format!("{PREFIX}{now}_{suffix}");
        let (sql, url) = if whole_database {
            (format!("CREATE DATABASE \"{name}\""), with_database(&server, &name))
        } else {
            let sep = if server.contains('?') { '&' } else { '?' };
            (format!("CREATE SCHEMA \"{name}\""), format!("{server}{sep}options=-c%20search_path%3D{name}"))
        };
        admin.batch_execute(&sql).await.unwrap_or_else(|e| panic!("{sql} on {server}: {e}"));
        Ok(Self { url, name, server, whole_database })
    }
}

impl TestDatabase {
    /// Runs `sql` as the server's administrator, on the server's own database (not this one): what an operator
    /// does to this database from outside (refuse its connections, end its sessions, drop it).
    pub async fn administer(&self, sql: &str) {
        let admin = connect(&self.server).await.unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", self.server));
        admin.batch_execute(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let (server, name) = (self.server.clone(), self.name.clone());
        let sql = if self.whole_database {
            format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")
        } else {
            format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE")
        };
        // Drop runs inside a test's runtime: use a thread with a runtime of its own. That runtime is blocked
        // meanwhile, so the server it ran cannot finish a transaction it holds open: the drop waits for locks only
        // so long, then ends the sessions that hold locks in the schema, and tries again.
        let done = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            rt.block_on(async {
                let Ok(admin) = connect(&server).await else { return };
                let _ = admin.batch_execute("SET lock_timeout = '2s'").await;
                for attempt in 1..=5 {
                    match admin.batch_execute(&sql).await {
                        Ok(()) => break,
                        Err(e) if attempt == 5 => eprintln!("{sql}: {e}"),
                        Err(_) => end_lock_holders(&admin, &name).await,
                    }
                }
            });
        });
        let _ = done.join();
    }
}

/// Ends the other sessions that hold a lock on a relation of the schema `name`.
async fn end_lock_holders(admin: &Client, name: &str) {
    let sql = "SELECT pg_terminate_backend(l.pid) FROM pg_locks l \
               JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace n ON n.oid = c.relnamespace \
               WHERE n.nspname = $1 AND l.pid <> pg_backend_pid()";
    if let Err(e) = admin.execute(sql, &[&name]).await {
        eprintln!("ending the sessions that hold locks in {name}: {e}");
    }
}

async fn connect(url: &str) -> Result<Client, String> {
    match tokio::time::timeout(Duration::from_secs(5), crate::postgres::connect_one(url)).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err("connection timed out".into()),
    }
}

/// Drops the test databases and schemas that killed runs left behind.
async fn drop_stale(admin: &Client, now: i64) {
    let pattern = "'latchkey\\_t\\_%'";
    for (list, kind, force) in [
        (format!("SELECT datname FROM pg_database WHERE datname LIKE {pattern}"), "DATABASE", " WITH (FORCE)"),
        (format!("SELECT nspname FROM pg_namespace WHERE nspname LIKE {pattern}"), "SCHEMA", " CASCADE"),
    ] {
        let Ok(rows) = admin.query(&list, &[]).await else { continue };
        for row in rows {
            let Ok(name) = row.try_get::<_, String>(0) else { continue };
            let made = name.strip_prefix(PREFIX).and_then(|r| r.split('_').next()).and_then(|t| t.parse::<i64>().ok());
            if made.is_some_and(|t| now - t > STALE_AFTER_SECS) {
                let _ = admin.batch_execute(&format!("DROP {kind} IF EXISTS \"{name}\"{force}")).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn the_database_name_is_replaced_and_the_query_kept() {
        assert_eq!(with_database("postgres://u@h:5432/test", "x"), "postgres://u@h:5432/x");
        assert_eq!(with_database("postgres://u:p@h/test?sslmode=disable", "x"), "postgres://u:p@h/x?sslmode=disable");
        assert_eq!(with_database("postgresql://h:1", "x"), "postgresql://h:1/x");
        assert_eq!(with_database("postgres://h?sslmode=require", "x"), "postgres://h/x?sslmode=require");
    }
}
