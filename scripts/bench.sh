#!/usr/bin/env bash
# The figures of docs/benchmarks.md, side by side with node-oidc-provider, in one run.
#
#   scripts/bench.sh [--runs N] [--duration S] [--backend sqlite|postgres] [--seed-grants N] [--skip-oidc-provider]
#
# Builds the release binaries (latchkey, latchkey-bench), then for each of N runs (default 3) starts a fresh
# `latchkey serve` pinned to core 0 and drives it with `latchkey-bench` pinned to core 1 (every workload, then
# introspect, login and login-passkey), and does the same with node-oidc-provider (bench/oidc-provider, `npm ci` on first use) in production mode
# (`NODE_ENV=production`, as its documentation asks of a deployment). Prints the per-run JSON lines to
# target/bench/<timestamp>/ and a Markdown table of the medians with the latchkey/oidc-provider ratios.
# Each run also measures, on the server's core: the ES256 verification rate of the library latchkey uses
# (`latchkey-bench es256`: the signature alone and a proof's every stateless check), the ceiling of DPoP; and
# every workload against `latchkey-bench trivial-server` (latchkey's HTTPS listener, fixed answers), the ceiling
# of the load generator with TLS and HTTP.
# PostgreSQL (--backend postgres) uses LATCHKEY_BENCH_DATABASE_URL (default the local server's `test` database's
# host) with a fresh database per run; it is not pinned, so it shares both cores. The server logs at its default
# level (info, one line per request) to a file, as in production; set LATCHKEY_LOG to change it.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3 duration=10 backend=sqlite seed=0 oidc=1
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --seed-grants) seed=$2; shift 2 ;;
    --skip-oidc-provider) oidc=0; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (server on core 0, load generator on core 1)" >&2; exit 1; }

cargo build --release --locked -p latchkey -p latchkey-bench
bin=$(pwd)/target/release/latchkey
bench=$(pwd)/target/release/latchkey-bench
out=target/bench/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
pg_base=${LATCHKEY_BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432}
# The refresh-token limits out of the way; the rate limits on (their cost is measured) at rates no run reaches; the
# sign-in throttle (which counts sign-ins in flight, so a burst of 32 at once from one address would meet it) too.
limits=(LATCHKEY_REFRESH_TOKENS_PER_CLIENT_USER=1000000 LATCHKEY_REFRESH_TOKENS_PER_USER=1000000
  LATCHKEY_RATE_LIMITS_TOKEN_PER_ADDRESS=1000000000 LATCHKEY_RATE_LIMITS_TOKEN_PER_CLIENT=1000000000
  LATCHKEY_LOGIN_MAX_FAILURES=1000000 LATCHKEY_LOGIN_ACCOUNT_MAX_FAILURES=1000000)
server_pid=

stop_server() {
  if [ -n "$server_pid" ]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
  fi
}
trap stop_server EXIT

# Waits until something answers HTTPS on 127.0.0.1:$1.
wait_for() {
  for _ in $(seq 1 100); do
    if curl -sk -o /dev/null "https://127.0.0.1:$1/"; then return 0; fi
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}

for run in $(seq 1 "$runs"); do
  data=$(mktemp -d)
  db_args=()
  if [ "$backend" = postgres ]; then
    db="latchkey_bench_$$_$run"
    psql "$pg_base/postgres" -qc "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    db_args=(--database-url "$pg_base/$db")
  fi
  if [ "$seed" -gt 0 ]; then
    echo "== run $run: seeding $seed grants"
    "$bench" seed-grants --count "$seed" --data-dir "$data" "${db_args[@]}" >/dev/null
  fi
  echo "== run $run: ES256 verification on core 0"
  taskset -c 0 "$bench" es256 --duration 5 --json | sed "s/^{/{\"server\":\"es256\",\"run\":$run,/" |
    tee -a "$out/results.jsonl"
  echo "== run $run: latchkey ($backend)"
  # Served as localhost, a host name, so that passkeys (the login-passkey workload) work.
  env "${limits[@]}" taskset -c 0 "$bin" serve --listen 127.0.0.1:9443 --public-url https://localhost:9443 --data-dir "$data" \
    "${db_args[@]}" >"$data/serve.log" 2>&1 &
  server_pid=$!
  wait_for 9443
  for workload in all introspect login login-passkey; do
    taskset -c 1 "$bench" --setup --issuer https://localhost:9443 --data-dir "$data" "${db_args[@]}" \
      --server-pid "$server_pid" --workload "$workload" --duration "$duration" --json |
      sed "s/^{/{\"server\":\"latchkey\",\"run\":$run,/" | tee -a "$out/results.jsonl"
  done
  # Memory given back: the resident set 3 s after the sign-in burst (hundreds of argon2 hashes) ended.
  sleep 3
  rss=$(awk '/VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$server_pid/status" 2>/dev/null || true)
  echo "{\"server\":\"latchkey\",\"run\":$run,\"workload\":\"idle-after-login\",\"server_rss_idle_mb\":${rss:-null}}" |
    tee -a "$out/results.jsonl"
  stop_server
  echo "== run $run: trivial server"
  taskset -c 0 "$bench" trivial-server --listen 127.0.0.1:9445 --cert "$data/tls/cert.pem" --key "$data/tls/key.pem" \
    >"$data/trivial.log" 2>&1 &
  server_pid=$!
  wait_for 9445
  taskset -c 1 "$bench" --target trivial --issuer https://127.0.0.1:9445 --ca-file "$data/tls/cert.pem" \
    --server-pid "$server_pid" --workload all --duration "$duration" --json |
    sed "s/^{/{\"server\":\"trivial\",\"run\":$run,/" | tee -a "$out/results.jsonl"
  stop_server
  if [ "$oidc" = 1 ]; then
    echo "== run $run: node-oidc-provider"
    [ -d bench/oidc-provider/node_modules ] || (cd bench/oidc-provider && npm ci --silent)
    NODE_ENV=production taskset -c 0 node bench/oidc-provider/server.mjs 9444 "$data/tls/cert.pem" "$data/tls/key.pem" \
      >"$data/oidc-provider.log" 2>&1 &
    server_pid=$!
    wait_for 9444
    taskset -c 1 "$bench" --target oidc-provider --issuer https://127.0.0.1:9444 --ca-file "$data/tls/cert.pem" \
      --server-pid "$server_pid" --workload all --duration "$duration" --json |
      sed "s/^{/{\"server\":\"oidc-provider\",\"run\":$run,/" | tee -a "$out/results.jsonl"
    stop_server
  fi
  if [ "$backend" = postgres ]; then psql "$pg_base/postgres" -qc "DROP DATABASE IF EXISTS $db"; fi
  rm -rf "$data"
done

python3 - "$out/results.jsonl" "$backend" "$seed" <<'PY' | tee "$out/table.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
backend, seed = sys.argv[2], int(sys.argv[3])
def median(server, workload, key):
    vals = [r[key] for r in rows if r["server"] == server and r["workload"] == workload and r.get(key) is not None]
    return statistics.median(vals) if vals else None
fmt = lambda v, d=0: "-" if v is None else f"{v:,.{d}f}"
ratio = lambda a, b: f"{a / b:.1f}×" if a and b else "-"
print(f"Medians of {max(r['run'] for r in rows)} runs, latchkey on {backend}" + (f" with {seed:,} seeded grants" if seed else ""))
print()
print("| workload | latchkey req/s | p50 ms | p99 ms | max ms | CPU µs/req | RSS peak MB | trivial req/s | trivial CPU µs/req "
      "| oidc-provider req/s | p99 ms | RSS peak MB | req/s ratio |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for w in ["refresh", "refresh-dpop", "exchange", "api", "revoke", "introspect", "login", "login-passkey"]:
    l = lambda k: median("latchkey", w, k)
    t = lambda k: median("trivial", w, k)
    o = lambda k: median("oidc-provider", w, k)
    print(f"| {w} | {fmt(l('req_per_s'))} | {fmt(l('p50_ms'), 2)} | {fmt(l('p99_ms'), 2)} | {fmt(l('max_ms'), 1)} "
          f"| {fmt(l('server_cpu_us_per_req'), 1)} | {fmt(l('server_rss_peak_mb'), 1)} | {fmt(t('req_per_s'))} "
          f"| {fmt(t('server_cpu_us_per_req'), 1)} | {fmt(o('req_per_s'))} | {fmt(o('p99_ms'), 2)} "
          f"| {fmt(o('server_rss_peak_mb'), 1)} | {ratio(l('req_per_s'), o('req_per_s'))} |")
es256, proof = median("es256", "es256-verify", "req_per_s"), median("es256", "dpop-proof-verify", "req_per_s")
dpop = median("latchkey", "refresh-dpop", "req_per_s")
if es256:
    share = f"; refresh-dpop at {100 * dpop / es256:.0f}% of it" if dpop else ""
    print(f"\nES256 verifications on the server's core (ring): {es256:,.0f}/s; a proof's stateless checks: "
          f"{fmt(proof)}/s{share}")
idle = [r["server_rss_idle_mb"] for r in rows
        if r["server"] == "latchkey" and r["workload"] == "refresh" and r.get("server_rss_idle_mb") is not None]
after = median("latchkey", "idle-after-login", "server_rss_idle_mb")
if idle:
    print(f"\nlatchkey idle RSS: before the first workload, median {statistics.median(idle):.1f} MB; "
          f"3 s after the sign-in burst, {fmt(after, 1)} MB")
PY
echo "results: $out"
