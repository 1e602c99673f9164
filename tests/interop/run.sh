#!/usr/bin/env bash
# Runs the interop tests against the real latchkey binary: Python (authlib + Selenium/headless Chromium; the console
# API's OpenAPI document through openapi-spec-validator and schemathesis; PyJWT as a Shared Signals receiver of the
# security events, pushed and polled; google-auth and authlib's AssertionSession with a service account's key
# file; the MCP Python SDK's OAuth client registering itself), then Node (oauth4webapi with DPoP +
# playwright-core/headless Chromium; needs Node.js 20+ and npm).
#
#   bash tests/interop/run.sh             install what is missing, then run every test, all at once (each starts its
#                                         own server on a free port, in a directory of its own); each one's output
#                                         is shown when it ends, with its exit code and time
#   bash tests/interop/run.sh --prepare   only install the Python and Node packages (scripts/test.sh does this in the
#                                         background while it builds)
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
    schemathesis==4.32.5 pyjwt==2.15.1 cryptography==50.0.2 google-auth==2.63.0 prometheus-client==0.22.1
    mcp==2.3.0)

export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"

if [[ ! -x "$venv/bin/python" ]]; then
    "${PYTHON:-python3}" -m venv "$venv"
fi
# Their dependencies are pinned too (constraints.txt), so that the venv is the same on every machine.
"$venv/bin/python" -m pip install -q --disable-pip-version-check -c "$here/constraints.txt" "${requirements[@]}"

# node_dpop.mjs: oauth4webapi (DPoP) and node_device.mjs: openid-client 6 (the device grant), both driving
# playwright-core with the same Chromium; versions pinned in package-lock.json.
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
if [[ "${1:-}" == "--prepare" ]]; then
    exit 0
fi

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

if [[ -z "${LATCHKEY_BIN:-}" ]]; then
    (cd "$root" && cargo build -p latchkey)
    LATCHKEY_BIN="$target/debug/latchkey"
fi
export LATCHKEY_BIN

# Selenium gets explicit browser and driver paths; keep Selenium Manager offline all the same.
export SE_OFFLINE=true SE_AVOID_STATS=true

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
# Starts test $1 (the rest: its command) in the background, its output to a log of its own.
start() {
    local name=$1
    shift
    (
        started=$SECONDS
        rc=0
        "$@" >"$logs/$name.log" 2>&1 || rc=$?
        echo "$rc $((SECONDS - started))" >"$logs/$name.rc"
    ) &
}
# authlib's OAuth2Session through Selenium and Chromium: the code flow, PKCE, refresh, revocation, id_tokens.
start python_authlib.py "$venv/bin/python" "$here/python_authlib.py"
# The console API's served OpenAPI document: validated, then fuzzed by schemathesis (no 5xx, responses as documented).
start console_openapi.py "$venv/bin/python" "$here/console_openapi.py"
# PyJWT (PyJWKClient) verifying the SETs latchkey pushes (HTTPS and loopback HTTP receivers) and serves to polls.
start python_ssf_receiver.py "$venv/bin/python" "$here/python_ssf_receiver.py"
# google-auth (the best-known provider's library) and authlib's AssertionSession: the JWT bearer grant with a key file.
start python_service_account.py "$venv/bin/python" "$here/python_service_account.py"
start python_operations.py "$venv/bin/python" "$here/python_operations.py"
# An API registered with latchkey: authlib with resource (RFC 8707), PyJWT verifying its at+jwt (RFC 9068), authlib
# introspecting as the API (RFC 7662).
start python_resources.py "$venv/bin/python" "$here/python_resources.py"
# The official MCP Python SDK's client (OAuthClientProvider): RFC 9728 and RFC 8414 discovery from an MCP server (the
# SDK's own) trusting latchkey, dynamic registration (RFC 7591), Chromium as the person, a tool call, a rotated refresh.
start python_mcp.py "$venv/bin/python" "$here/python_mcp.py"
start node_dpop.mjs node "$here/node_dpop.mjs"
# oauth4webapi's device authorization grant (RFC 8628), Chromium as the person typing the code.
start node_device.mjs node "$here/node_device.mjs"
wait

summary=()
failed=0
for name in python_authlib.py console_openapi.py python_ssf_receiver.py python_service_account.py \
    python_operations.py python_resources.py python_mcp.py node_dpop.mjs node_device.mjs; do
    read -r rc secs <"$logs/$name.rc"
    echo "---- interop: $name (exit $rc, $secs s)"
    cat "$logs/$name.log"
    summary+=("$name exit $rc ($secs s)")
    [[ $rc == 0 ]] || failed=1
done
echo "interop: $(IFS=,; echo "${summary[*]}" | sed 's/,/, /g')"
[[ $failed == 0 ]]
