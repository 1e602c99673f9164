#!/usr/bin/env bash
# Runs the interop tests against the real latchkey binary: Python (authlib + Selenium/headless Chromium; the console
# API's OpenAPI document through openapi-spec-validator and schemathesis; PyJWT as a Shared Signals receiver of the
# security events, pushed and polled; google-auth and authlib's AssertionSession with a service account's key
# file), then Node (oauth4webapi with DPoP + playwright-core/headless Chromium; needs
# Node.js 20+ and npm).
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
requirements=(authlib==1.9.9 joserfc==1.8.0 requests==2.34.2 selenium==4.51.0 openapi-spec-validator==0.9.0
    schemathesis==4.32.5 pyjwt==2.15.1 cryptography==50.0.2 google-auth==2.63.0 prometheus-client==0.22.1)

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

python_rc=0
"$venv/bin/python" "$here/python_authlib.py" || python_rc=$?
# The console API's served OpenAPI document: validated, then fuzzed by schemathesis (no 5xx, responses as documented).
openapi_rc=0
"$venv/bin/python" "$here/console_openapi.py" || openapi_rc=$?
# PyJWT (PyJWKClient) verifying the SETs latchkey pushes (HTTPS and loopback HTTP receivers) and serves to polls.
ssf_rc=0
"$venv/bin/python" "$here/python_ssf_receiver.py" || ssf_rc=$?
# google-auth (the best-known provider's library) and authlib's AssertionSession: the JWT bearer grant with a key file.
sa_rc=0
"$venv/bin/python" "$here/python_service_account.py" || sa_rc=$?
ops_rc=0
"$venv/bin/python" "$here/python_operations.py" || ops_rc=$?

# oauth4webapi (DPoP) through playwright-core with the same Chromium; versions pinned in package-lock.json.
# playwright-core ships no browser and has no install script, so `npm ci` downloads none.
if ! command -v node >/dev/null || ! command -v npm >/dev/null \
    || ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
    echo "interop: node_dpop.mjs needs Node.js 20 or newer with npm (e.g. sudo apt-get install -y nodejs npm)" >&2
    exit 1
fi
lock_sum="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)"
stamp="$here/node_modules/.latchkey-lock-sha256"
if [[ ! -d "$here/node_modules" || "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]]; then
    (cd "$here" && npm ci --silent --no-audit --no-fund)
    echo "$lock_sum" >"$stamp"
fi
node_rc=0
node "$here/node_dpop.mjs" || node_rc=$?

echo "interop: python_authlib.py exit $python_rc, console_openapi.py exit $openapi_rc," \
    "python_ssf_receiver.py exit $ssf_rc, python_service_account.py exit $sa_rc," \
    "python_operations.py exit $ops_rc, node_dpop.mjs exit $node_rc"
[[ $python_rc == 0 && $openapi_rc == 0 && $ssf_rc == 0 && $sa_rc == 0 && $ops_rc == 0 && $node_rc == 0 ]]
