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
# of the load generator with TLS and HTTP. The summary gives a DPoP refresh's CPU beyond a refresh's and the
# signature's, run by run, as it is and net of what the same DPoP traffic costs the trivial server.
# PostgreSQL (--backend postgres): the bench starts a cluster of its own for its whole length (initdb into a
# temporary directory as the `postgres` OS user, binaries from LATCHKEY_BENCH_PG_BIN, default
# /usr/lib/postgresql/15/bin; default settings but for listening on 127.0.0.1 at a free port, its socket in that
# directory), started under `taskset -c 0` so that the postmaster and every backend it forks share the server's core;
# it is stopped and removed at exit. LATCHKEY_BENCH_DATABASE_URL (postgres://user@host:port, no database) uses an
# external server instead, which is not pinned (it shares both cores) and whose CPU is not measured. Either way each
# run has a fresh database, which latchkey reaches through `latchkey-bench pg-proxy` (pinned to core 1, beside the
# load generator): it forwards every byte and counts the round trips on the wire, BEGIN, COMMIT and the connection
# pool's pings included (latchkey's URL to it says sslmode=disable: an encrypted connection cannot be counted). The
# load generator's own setup and seeding connect directly. In each latchkey workload the load generator reads, at
# both ends of the measured window, the proxy's totals (--round-trips-from) and, on the bench's own cluster, the CPU
# time of the postmaster and of every process under it (--database-pid): round trips and database CPU per request,
# beside latchkey's CPU. The server logs at its default level (info, one line per request) to a file, as in
# production; set LATCHKEY_LOG to change it.
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
release=$(cd "${CARGO_TARGET_DIR:-target}/release" && pwd)
bin=$release/latchkey
bench=$release/latchkey-bench
out=target/bench/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
pg_bin=${LATCHKEY_BENCH_PG_BIN:-/usr/lib/postgresql/15/bin}
# The refresh-token limits out of the way; the rate limits on (their cost is measured) at rates no run reaches; the
# sign-in throttle (which counts sign-ins in flight, so a burst of 32 at once from one address would meet it) too.
limits=(LATCHKEY_REFRESH_TOKENS_PER_CLIENT_USER=1000000 LATCHKEY_REFRESH_TOKENS_PER_USER=1000000
  LATCHKEY_RATE_LIMITS_TOKEN_PER_ADDRESS=1000000000 LATCHKEY_RATE_LIMITS_TOKEN_PER_CLIENT=1000000000
  LATCHKEY_LOGIN_MAX_FAILURES=1000000 LATCHKEY_LOGIN_ACCOUNT_MAX_FAILURES=1000000)
server_pid= proxy_pid= pg_dir=

stop_server() {
  if [ -n "$server_pid" ]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
  fi
}
cleanup() {
  stop_server
  if [ -n "$proxy_pid" ]; then
    kill -TERM "$proxy_pid" 2>/dev/null || true
    wait "$proxy_pid" 2>/dev/null || true
  fi
  if [ -n "$pg_dir" ]; then
    as_postgres "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$pg_dir"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Runs a command as the `postgres` OS user (initdb refuses root) in the cluster's directory (its own to read).
as_postgres() { (cd "$pg_dir" && runuser -u postgres -- "$@"); }
# A TCP port free on 127.0.0.1 at the time of asking.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Waits until something answers HTTPS on 127.0.0.1:$1.
wait_for() {
  for _ in $(seq 1 100); do
    if curl -sk -o /dev/null "https://127.0.0.1:$1/"; then return 0; fi
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}

# PostgreSQL: the bench's own cluster pinned to core 0 (or the external server), and the counting proxy on core 1.
# pg_base is the server's URL, proxy_base the proxy's.
db_meters=()
if [ "$backend" = postgres ]; then
  if [ -n "${LATCHKEY_BENCH_DATABASE_URL:-}" ]; then
    pg_base=$LATCHKEY_BENCH_DATABASE_URL
  else
    pg_dir=$(mktemp -d)
    chown postgres: "$pg_dir"
    pg_port=$(free_port)
    as_postgres "$pg_bin/initdb" -D "$pg_dir/data" --auth=trust -U postgres >"$pg_dir/initdb.log"
    (cd "$pg_dir" && taskset -c 0 runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/postgres.log" -w \
      -o "-c listen_addresses=127.0.0.1 -c port=$pg_port -c unix_socket_directories=$pg_dir" start >/dev/null)
    pg_base=postgres://postgres@127.0.0.1:$pg_port
    db_meters=(--database-pid "$(head -1 "$pg_dir/data/postmaster.pid")")
  fi
  proxy_port=$(free_port)
  stats_port=$(free_port)
  # The server's host:port, and the same URL with the proxy's address instead.
  read -r pg_upstream proxy_base < <(python3 - "$pg_base" "$proxy_port" <<'PY'
import sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname
user = u.netloc.rpartition("@")[0]
print(f"{host}:{u.port or 5432}", f"{u.scheme}://{user + '@' if user else ''}127.0.0.1:{sys.argv[2]}")
PY
  )
  taskset -c 1 "$bench" pg-proxy --listen "127.0.0.1:$proxy_port" --upstream "$pg_upstream" \
    --stats "127.0.0.1:$stats_port" >"$out/pg-proxy.log" 2>&1 &
  proxy_pid=$!
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$stats_port") 2>/dev/null; then break; fi
    sleep 0.1
  done
  db_meters+=(--round-trips-from "127.0.0.1:$stats_port")
fi

for run in $(seq 1 "$runs"); do
  data=$(mktemp -d)
  db_args=() serve_db_args=()
  if [ "$backend" = postgres ]; then
    db="latchkey_bench_$$_$run"
    psql "$pg_base/postgres" -qc "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    db_args=(--database-url "$pg_base/$db")
    serve_db_args=(--database-url "$proxy_base/$db?sslmode=disable")
  fi
  if [ "$seed" -gt 0 ]; then
    echo "== run $run: seeding $seed grants"
    "$bench" seed-grants --count "$seed" --data-dir "$data" "${db_args[@]}" >/dev/null
  fi
  # Dirty pages written back now, not during a workload: a write-back in flight (a build's, the last run's) slows
  # every commit's WAL flush several times over (revocations at a third of their rate on PostgreSQL, seen here).
  sync
  echo "== run $run: ES256 verification on core 0"
  taskset -c 0 "$bench" es256 --duration 5 --json | sed "s/^{/{\"server\":\"es256\",\"run\":$run,/" |
    tee -a "$out/results.jsonl"
  echo "== run $run: latchkey ($backend)"
  # Served as localhost, a host name, so that passkeys (the login-passkey workload) work.
  env "${limits[@]}" taskset -c 0 "$bin" serve --listen 127.0.0.1:9443 --public-url https://localhost:9443 --data-dir "$data" \
    "${serve_db_args[@]}" >"$data/serve.log" 2>&1 &
  server_pid=$!
  wait_for 9443
  for workload in all introspect login login-passkey; do
    taskset -c 1 "$bench" --setup --issuer https://localhost:9443 --data-dir "$data" "${db_args[@]}" \
      --server-pid "$server_pid" "${db_meters[@]}" --workload "$workload" --duration "$duration" --json |
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
def per_run(server, workload, key):
    """A figure of one server and workload, by run."""
    return {r["run"]: r[key] for r in rows
            if r["server"] == server and r["workload"] == workload and r.get(key) is not None}
def median(server, workload, key):
    vals = per_run(server, workload, key).values()
    return statistics.median(vals) if vals else None
fmt = lambda v, d=0: "-" if v is None else f"{v:,.{d}f}"
ratio = lambda a, b: f"{a / b:.1f}×" if a and b else "-"
print(f"Medians of {max(r['run'] for r in rows)} runs, latchkey on {backend}" + (f" with {seed:,} seeded grants" if seed else ""))
print()
# The database's columns (CPU, round trips counted by pg-proxy) where some latchkey run measured them.
has = lambda key: any(r.get(key) is not None for r in rows if r["server"] == "latchkey")
db_cols = [(label, key) for label, key in [("DB CPU µs/req", "database_cpu_us_per_req"),
                                          ("DB round trips/req", "db_round_trips_per_req")] if has(key)]
print("| workload | latchkey req/s | p50 ms | p99 ms | max ms | CPU µs/req | "
      + "".join(f"{label} | " for label, _ in db_cols)
      + "RSS peak MB | trivial req/s | trivial CPU µs/req | oidc-provider req/s | p99 ms | RSS peak MB | req/s ratio |")
print("|---|" + "---:|" * (12 + len(db_cols)))
for w in ["refresh", "refresh-dpop", "exchange", "api", "revoke", "introspect", "login", "login-passkey"]:
    l = lambda k: median("latchkey", w, k)
    t = lambda k: median("trivial", w, k)
    o = lambda k: median("oidc-provider", w, k)
    db = "".join(f"{fmt(l(key), 2 if key == 'db_round_trips_per_req' else 1)} | " for _, key in db_cols)
    print(f"| {w} | {fmt(l('req_per_s'))} | {fmt(l('p50_ms'), 2)} | {fmt(l('p99_ms'), 2)} | {fmt(l('max_ms'), 1)} "
          f"| {fmt(l('server_cpu_us_per_req'), 1)} | {db}{fmt(l('server_rss_peak_mb'), 1)} | {fmt(t('req_per_s'))} "
          f"| {fmt(t('server_cpu_us_per_req'), 1)} | {fmt(o('req_per_s'))} | {fmt(o('p99_ms'), 2)} "
          f"| {fmt(o('server_rss_peak_mb'), 1)} | {ratio(l('req_per_s'), o('req_per_s'))} |")
es256, proof = median("es256", "es256-verify", "req_per_s"), median("es256", "dpop-proof-verify", "req_per_s")
dpop = median("latchkey", "refresh-dpop", "req_per_s")
if es256:
    share = f"; refresh-dpop at {100 * dpop / es256:.0f}% of it" if dpop else ""
    print(f"\nES256 verifications on the server's core (ring): {es256:,.0f}/s; a proof's stateless checks: "
          f"{fmt(proof)}/s{share}")
# DPoP's own cost: a DPoP refresh's CPU beyond a refresh's and the signature's, run by run. Then the same net of
# what the load generator's DPoP traffic costs a server that does no work (the trivial server's DPoP refresh beyond
# its refresh, in the same run): a larger request, and a load generator that signs a proof per request and so sleeps
# between answers more often, each answer then paying the kernel for waking it.
cpu = lambda server, workload: per_run(server, workload, "server_cpu_us_per_req")
ld, lr = cpu("latchkey", "refresh-dpop"), cpu("latchkey", "refresh")
td, tr = cpu("trivial", "refresh-dpop"), cpu("trivial", "refresh")
sig = per_run("es256", "es256-verify", "us_per_op")
runs = sorted(set(ld) & set(lr) & set(sig))
if runs:
    beyond = {r: ld[r] - lr[r] - sig[r] for r in runs}
    net = {r: beyond[r] - (td[r] - tr[r]) for r in runs if r in td and r in tr}
    each = lambda d: ", ".join(f"{d[r]:.1f}" for r in sorted(d))
    print(f"\nDPoP refresh beyond refresh + ES256, CPU µs: median {statistics.median(beyond.values()):.1f} "
          f"(runs: {each(beyond)})" + (f"; net of the load generator's DPoP traffic (the trivial server's DPoP "
          f"refresh beyond its refresh): median {statistics.median(net.values()):.1f} (runs: {each(net)})" if net else ""))
idle = median("latchkey", "refresh", "server_rss_idle_mb")
after = median("latchkey", "idle-after-login", "server_rss_idle_mb")
if idle is not None:
    print(f"\nlatchkey idle RSS: before the first workload, median {idle:.1f} MB; "
          f"3 s after the sign-in burst, {fmt(after, 1)} MB")
PY
echo "results: $out"
