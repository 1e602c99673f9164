#!/usr/bin/env bash
# scripts/count-instructions-exchange.sh LABEL SERVER_BIN BENCH_CMD [PORT]: scripts/count-instructions.sh for the
# exchange workload, whose pool of codes runs out in a second at full speed: instrumentation starts once the pool is prepared
# (the bench says so on stderr; no warm-up) and lasts 3 s, inside the pool's life (8 connections x 300 codes).
label=$1 bin=$2 benchcmd=$3 port=${4:-9543}
w=exchange
tmp=$(mktemp -d)
env LATCHKEY_REFRESH_TOKENS_PER_CLIENT_USER=1000000 LATCHKEY_REFRESH_TOKENS_PER_USER=1000000 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$tmp/cg.out $bin serve --listen 127.0.0.1:$port --data-dir $tmp > $tmp/serve.log 2>$tmp/vg.log &
pid=$!
for i in $(seq 600); do curl -sk -o /dev/null https://127.0.0.1:$port/ && break; sleep 0.2; done
$benchcmd --setup --issuer https://127.0.0.1:$port --data-dir $tmp --workload $w --connections 8 --pool 300 --warmup 0 --duration 30 --json 2>$tmp/bench.err > $tmp/bench.json &
bpid=$!
for i in $(seq 1200); do grep -q "prepared" $tmp/bench.err && break; sleep 0.1; done
sleep 0.05
a=$(cat $tmp/serve.log $tmp/vg.log | grep -c "routes: request")
callgrind_control -i on $pid >/dev/null
sleep 3
callgrind_control -i off $pid >/dev/null
z=$(cat $tmp/serve.log $tmp/vg.log | grep -c "routes: request")
wait $bpid
callgrind_control -d $pid >/dev/null
sleep 1
kill -TERM $pid; wait $pid 2>/dev/null
f=$(ls -S $tmp/cg.out* | head -1)
ir=$(callgrind_annotate $f 2>/dev/null | grep -m1 "PROGRAM TOTALS" | awk '{print $1}' | tr -d ,)
n=$((z-a))
ok=$(grep -o '"errors":[0-9]*' $tmp/bench.json | head -1)
if [ "$n" -gt 0 ] && [ -n "$ir" ]; then echo "$label $w requests $n Ir $ir per-req $((ir/n)) $ok"; else echo "$label $w: no measurement (requests $n)"; cat $tmp/bench.json; fi
