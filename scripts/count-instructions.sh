#!/usr/bin/env bash
# scripts/count-instructions.sh LABEL SERVER_BIN BENCH_CMD WORKLOAD [PORT]
# The instruction count is the same on a busy machine as on a quiet one, so an A/B of two builds is exact where
# timed runs spread by 10-50% (docs/performance.md, "How to measure"). Needs valgrind (apt-get install valgrind).
# Set CG_KEEP=FILE to keep the callgrind profile (callgrind_annotate FILE).
# Instructions per request of `SERVER_BIN serve` under callgrind (deterministic: usable on a busy machine).
# BENCH_CMD is the load generator's command prefix, e.g. "/path/latchkey bench" or "/path/latchkey-bench".
# Prints: LABEL WORKLOAD requests N Ir TOTAL per-req X
# The exchange and revoke workloads' pools (codes, grants) run out within a second at full speed: for them,
# instrumentation starts as soon as the bench has prepared the pool (it says so on stderr; no warm-up) and lasts 3 s
# (8 connections x 300).
label=$1 bin=$2 benchcmd=$3 w=$4 port=${5:-9543}
tmp=$(mktemp -d)
env LATCHKEY_REFRESH_TOKENS_PER_CLIENT_USER=1000000 LATCHKEY_REFRESH_TOKENS_PER_USER=1000000 LATCHKEY_RATE_LIMITS_TOKEN_PER_ADDRESS=1000000000 LATCHKEY_RATE_LIMITS_TOKEN_PER_CLIENT=1000000000 LATCHKEY_LOGIN_MAX_FAILURES=1000000 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$tmp/cg.out $bin serve --listen 127.0.0.1:$port --data-dir $tmp > $tmp/serve.log 2>$tmp/vg.log &
pid=$!
for i in $(seq 600); do curl -sk -o /dev/null https://127.0.0.1:$port/ && break; sleep 0.2; done
pooled=0; case "$w" in exchange|revoke) pooled=1 ;; esac
load="--warmup 5 --duration 25" window=10
if [ "$pooled" = 1 ]; then load="--pool 300 --warmup 0 --duration 30" window=3; fi
$benchcmd --setup --issuer https://127.0.0.1:$port --data-dir $tmp --workload $w --connections 8 $load --json 2>$tmp/bench.err > $tmp/bench.json &
bpid=$!
if [ "$pooled" = 1 ]; then
  for i in $(seq 1200); do grep -q "prepared" $tmp/bench.err && break; sleep 0.1; done
else
  sleep 12
fi
a=$(cat $tmp/serve.log $tmp/vg.log | grep -c "routes: request")
callgrind_control -i on $pid >/dev/null
sleep $window
callgrind_control -i off $pid >/dev/null
z=$(cat $tmp/serve.log $tmp/vg.log | grep -c "routes: request")
wait $bpid
callgrind_control -d $pid >/dev/null
sleep 1
kill -TERM $pid; wait $pid 2>/dev/null
f=$(ls -S $tmp/cg.out* | head -1)
ir=$(callgrind_annotate $f 2>/dev/null | grep -m1 "PROGRAM TOTALS" | awk '{print $1}' | tr -d ,)
n=$((z-a))
if [ "$n" -gt 0 ] && [ -n "$ir" ]; then echo "$label $w requests $n Ir $ir per-req $((ir/n))"; else echo "$label $w: no measurement (requests $n)"; cat $tmp/bench.json; fi
cp $f "${CG_KEEP:-/dev/null}" 2>/dev/null
rm -rf $tmp
