#!/usr/bin/env bash
# Runs the Python interop tests (authlib + Selenium/headless Chromium) against the real latchkey binary.
#
#   bash tests/interop/run.sh
#
# LATCHKEY_BIN: the binary to test (default: `cargo build -p latchkey` and use target/debug/latchkey).
# PYTHON: the interpreter for the venv (default python3). The venv lives in target/interop-venv and is reused.
# CHROMIUM / CHROMEDRIVER: default /usr/bin/chromium and /usr/bin/chromedriver (Debian's packages; no browser is
# ever downloaded).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="$target/interop-venv"

# Versions verified to work together (2026-11).
requirements=(authlib==1.9.9 joserfc==1.8.0 requests==2.34.2 selenium==4.51.0)

export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"

if [[ ! -x "$CHROMIUM" || ! -x "$CHROMEDRIVER" ]]; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        echo "interop: installing chromium and chromium-driver from Debian" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver
    else
        echo "interop: $CHROMIUM and $CHROMEDRIVER are needed; install them with" >&2
        echo "  sudo apt-get install -y chromium chromium-driver" >&2
        exit 1
    fi
fi
for tool in "$CHROMIUM" "$CHROMEDRIVER"; do
    if [[ ! -x "$tool" ]]; then
        echo "interop: $tool is still missing after installing chromium and chromium-driver" >&2
        exit 1
    fi
done

if [[ ! -x "$venv/bin/python" ]]; then
    "${PYTHON:-python3}" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check "${requirements[@]}"

if [[ -z "${LATCHKEY_BIN:-}" ]]; then
    (cd "$root" && cargo build -p latchkey)
    LATCHKEY_BIN="$target/debug/latchkey"
fi
export LATCHKEY_BIN

# Selenium gets explicit browser and driver paths; keep Selenium Manager offline all the same.
export SE_OFFLINE=true SE_AVOID_STATS=true

exec "$venv/bin/python" "$here/python_authlib.py"
