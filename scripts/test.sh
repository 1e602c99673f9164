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
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "== installing ${missing[*]} (Debian packages)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "The browser tests need: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

echo "== format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
echo "== the fuzz targets type-check (their runs are scripts/fuzz.sh, out of this suite: they take an hour)"
bash scripts/fuzz.sh --check

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

echo "== unit, store conformance and integration tests (backends: $backends)"
cargo test --workspace --locked

if [ "$backends" != sqlite ]; then
  echo "== the integration suite again, on PostgreSQL"
  # The multi_instance tests (their own binary) ran above: they are on PostgreSQL whatever the backend.
  LATCHKEY_TEST_BACKEND=postgres cargo test --locked -p latchkey --test spec
fi
echo "backends: $backends"

echo "== interop: standard client libraries against the real binary"
LATCHKEY_BIN="$(pwd)/target/debug/latchkey" bash tests/interop/run.sh
