#!/usr/bin/env bash
# The whole test suite, as CI runs it. Installs what a fresh machine lacks (Chromium and ChromeDriver from
# Debian's packages, the Python packages of the interop test in a venv under target/).
#
# Suites:
#   - unit tests of every crate, and the store conformance suite on SQLite and on PostgreSQL (one test per check per
#     backend, crates/latchkey-store/tests/backends);
#   - the integration suite (crates/latchkey/tests/spec): the real server over HTTPS, including headless Chromium,
#     on SQLite, then again on PostgreSQL;
#   - the multi_instance tests (crates/latchkey/tests/multi_instance): `latchkey serve` processes on PostgreSQL;
#   - the interop suite (tests/interop): authlib + Selenium + Chromium against the real binary;
#   - the fuzz targets (fuzz/) are type-checked, not run (scripts/fuzz.sh runs them).
#
# Clippy lints the workspace as the tests are built (RUSTC_WORKSPACE_WRAPPER, below). Tests run under
# cargo-nextest (each test a process of its own, eight at a time across test binaries: .config/nextest.toml),
# installed with `cargo install --locked cargo-nextest` when the machine lacks it. Both backends' passes use one
# build. Each stage prints how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
stage_started=$SECONDS
stage_name=""
# Ends the stage running (printing its time) and starts the next one.
stage() {
  if [ -n "$stage_name" ]; then
    echo "-- $stage_name: $((SECONDS - stage_started)) s"
  fi
  stage_name="$1"
  stage_started=$SECONDS
  [ -n "$1" ] && echo "== $1"
  return 0
}

# Work that needs little CPU runs in the background while the build does (each waited for, and its time shown,
# where its result is needed): Chromium's Debian packages, the interop suite's Python and Node packages, and later
# the fuzz targets' type check, which fills the cores the tests leave idle.
mkdir -p target
background_failed=0
# Waits for background job $1 named $2, printing its log ($3) when it failed.
await() {
  local waited=$SECONDS
  if wait "$1"; then
    echo "-- $2: done ($((SECONDS - waited)) s waited)"
  else
    echo "-- $2: FAILED; its log:"
    cat "$3"
    background_failed=1
  fi
}

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
installing=""
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "== installing ${missing[*]} (Debian packages), in the background"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") \
      >target/install-chromium.log 2>&1 &
    installing=$!
  else
    echo "The browser tests need: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
bash tests/interop/run.sh --prepare >target/interop-prepare.log 2>&1 &
preparing=$!

if ! cargo nextest --version >/dev/null 2>&1; then
  stage "installing cargo-nextest"
  cargo install --locked cargo-nextest
fi

stage "format"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check

# Clippy's lints come with the build of the tests instead of from a check of their own: clippy-driver compiles the
# workspace's crates (what `cargo clippy` does in check mode, here with code generation) under `-D warnings`, and
# nextest's `--all-targets` builds what `cargo clippy --all-targets` checks (criterion's benchmarks then run once,
# in test mode). A separate `cargo clippy` checked every dependency a second time: five minutes of a clean build on
# two cores. Every cargo command below builds with the same wrapper, so none rebuilds what another built.
RUSTC_WORKSPACE_WRAPPER="$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver || true)"
if [ -z "$RUSTC_WORKSPACE_WRAPPER" ]; then
  echo "clippy is needed (rustup component add clippy)" >&2
  exit 1
fi
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

# PostgreSQL: LATCHKEY_TEST_DATABASE_URL, else the local server when it is reachable. Tests make their own
# databases (or schemas) there and drop them. Without it, the tests that need it show as ignored in cargo test's
# summaries; under CI=true a missing PostgreSQL fails the run.
export LATCHKEY_TEST_DATABASE_URL="${LATCHKEY_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
pg_hostport=$(printf '%s' "$LATCHKEY_TEST_DATABASE_URL" | sed -E 's|^[a-z]+://([^@/]*@)?([^/?]*).*|\2|')
pg_host=${pg_hostport%:*}
pg_port=${pg_hostport##*:}
[ "$pg_port" = "$pg_hostport" ] && pg_port=5432
backends=sqlite
if timeout 5 bash -c "exec 3<>/dev/tcp/${pg_host:-127.0.0.1}/$pg_port" 2>/dev/null; then
  backends="sqlite, postgres"
elif [ "${CI:-}" = true ]; then
  echo "PostgreSQL is required under CI=true and is not reachable at $LATCHKEY_TEST_DATABASE_URL" >&2
  exit 1
else
  echo "== PostgreSQL is not reachable at $LATCHKEY_TEST_DATABASE_URL: its tests are reported as ignored"
fi

# Each run makes and drops some 1,300 throwaway schemas (one per test on PostgreSQL). PostgreSQL reuses their catalog
# rows' space but never gives it back: a day of runs grew the test database's catalogs to 1.2 GB (pg_attribute alone
# 554 MB). Compacting them first takes about 2 s, so that every run, CI's on a machine earlier runs used included,
# starts from small catalogs.
if [ "$backends" != sqlite ] && command -v psql >/dev/null 2>&1; then
  psql "$LATCHKEY_TEST_DATABASE_URL" -qc "VACUUM FULL pg_catalog.pg_attribute, pg_catalog.pg_depend, \
    pg_catalog.pg_class, pg_catalog.pg_trigger, pg_catalog.pg_constraint, pg_catalog.pg_index, pg_catalog.pg_type, \
    pg_catalog.pg_attrdef, pg_catalog.pg_namespace, pg_catalog.pg_proc, pg_catalog.pg_statistic" >/dev/null 2>&1 || true
fi

stage "build, with clippy's lints"
# A clean checkout builds once: incremental compilation's bookkeeping would only slow it (CI's case).
[ "${CI:-}" = true ] && export CARGO_INCREMENTAL=0
cargo nextest run --workspace --all-targets --locked --no-run
# Chromium is needed from the tests on: its install ran beside the build.
if [ -n "$installing" ]; then
  await "$installing" "installing ${missing[*]}" target/install-chromium.log
  [ "$background_failed" = 0 ] || exit 1
fi
# The fuzz targets type-check (their runs are scripts/fuzz.sh, out of this suite: they take an hour) on the CPU
# time nothing else wants (SCHED_IDLE where `chrt` exists), in a target directory of their own (the fuzz workspace
# is apart from this one).
idle=(nice -n 19)
command -v chrt >/dev/null 2>&1 && idle=(chrt --idle 0 nice -n 19)
"${idle[@]}" bash scripts/fuzz.sh --check >target/fuzz-check.log 2>&1 &
fuzz_checking=$!

stage "unit, store conformance and integration tests (backends: $backends)"
# The PostgreSQL failover test (two clusters of its own, two instances under load) runs in the PostgreSQL stage below,
# not beside the multi_instance tests whose timing it would crowd (their pushes time out at 2 s).
cargo nextest run --workspace --all-targets --locked --no-fail-fast -E 'not test(/^failover::/)'
stage "documentation examples"
cargo test --workspace --locked --doc

if [ "$backends" != sqlite ]; then
  stage "the integration suite again, on PostgreSQL"
  # Selected from the workspace's build (`-p latchkey` alone would unify features apart and build it all again).
  # Left out: the tests that use no store of the suite's backend, which ran above (`cli::` runs the binary on a
  # SQLite data directory of its own; `connections::` tests the listener). The multi_instance tests (their own
  # binary) ran above: they are on PostgreSQL whatever the backend. Not beside the first pass: side by side they
  # took as long from a clean checkout (879 s against 890 s in all), and sixteen tests at once on two cores made
  # the event-delivery tests miss their deadlines.
  LATCHKEY_TEST_BACKEND=postgres cargo nextest run --workspace --locked --no-fail-fast \
    -E '(binary_id(latchkey::spec) and not test(/^cli::|^connections::/)) or (binary_id(latchkey::multi_instance) and test(/^failover::/))'
fi

stage "interop: standard client libraries against the real binary"
await "$preparing" "the interop suite's packages" target/interop-prepare.log
LATCHKEY_BIN="$(pwd)/target/debug/latchkey" bash tests/interop/run.sh

echo "backends: $backends"
stage "the fuzz targets type-check (in the background since the build)"
await "$fuzz_checking" "the fuzz targets' type check" target/fuzz-check.log
stage ""
[ "$background_failed" = 0 ] || exit 1
echo "== all stages: $((SECONDS - started)) s"
