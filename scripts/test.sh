#!/usr/bin/env bash
# The whole test suite, as CI runs it. Installs what a fresh machine lacks (Chromium and ChromeDriver from
# Debian's packages, the Python packages of the interop test in a venv under target/).
#
# Suites:
#   - unit tests of every crate, and the store conformance suite on SQLite (no services needed);
#   - the integration suite (crates/latchkey/tests/spec): the real server over HTTPS, including headless Chromium;
#   - the interop suite (tests/interop): authlib + Selenium + Chromium against the real binary.
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

echo "== unit, store conformance (SQLite) and integration tests"
cargo test --workspace --locked

echo "== interop: standard client libraries against the real binary"
LATCHKEY_BIN="$(pwd)/target/debug/latchkey" bash tests/interop/run.sh
