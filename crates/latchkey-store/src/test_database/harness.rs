//! The glue of the test harnesses of our own (`[[test]]` targets with `harness = false`, running libtest-mimic), for
//! the tests that need PostgreSQL: such a test that gets [`Unreachable`] is reported as ignored, with the reason, in
//! the runner's summary. libtest has no way for a test to decide at run time that it is skipped: there it would count
//! as passed (docs/design.md, "Tests").

use super::Unreachable;
use libtest_mimic::Completion;

/// A test of a harness of our own, as [`run`] takes it.
pub use libtest_mimic::Trial;

/// A test whose `body` runs on a fresh multi-threaded runtime of two workers; a panic fails it. A body that returns
/// [`Unreachable`] (from [`TestDatabase::create`](super::TestDatabase::create) or
/// [`TestDatabase::create_database`](super::TestDatabase::create_database), with `?`) is reported as ignored, with the
/// reason, instead of passed.
pub fn trial<F>(name: impl Into<String>, body: impl FnOnce() -> F + Send + 'static) -> Trial
where
    F: std::future::Future<Output = Result<(), Unreachable>>,
{
    Trial::ignorable_test(name, move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
        match runtime.map_err(|e| format!("runtime: {e}"))?.block_on(body()) {
            Ok(()) => Ok(Completion::Completed),
            Err(why) => Ok(Completion::ignored_with(why)),
        }
    })
}

/// Runs a harness's tests as libtest would (the same output and command line, the tests in the order of their names)
/// and returns the exit code. `per_core` tests run at once per core, unless `--test-threads` or `RUST_TEST_THREADS`
/// says how many.
pub fn run(mut tests: Vec<Trial>, per_core: usize) -> std::process::ExitCode {
    let mut args = libtest_mimic::Arguments::from_args();
    let from_env = std::env::var("RUST_TEST_THREADS").ok().and_then(|n| n.parse().ok());
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    args.test_threads = args.test_threads.or(from_env).or(Some(cores * per_core));
    tests.sort_by(|a, b| a.name().cmp(b.name()));
    libtest_mimic::run(&args, tests).exit_code()
}

/// The [`trial`]s of async test functions (that return `Result<(), Unreachable>`), each named by its path after a
/// prefix: `trials!("postgres::"; reopening_a_database_keeps_its_data)` is the test
/// `postgres::reopening_a_database_keeps_its_data`.
#[macro_export]
macro_rules! trials {
    ($prefix:literal; $($test:path),* $(,)?) => {
        vec![$($crate::test_database::trial(concat!($prefix, stringify!($test)), $test)),*]
    };
}
