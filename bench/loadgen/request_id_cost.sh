#!/bin/sh
# What exactly-once retries cost a write (docs/performance.md, "Client request
# ids"): one sidecar, the same insert workload with and without client
# request ids (`--no-request-ids`), alternated ROUNDS times, order swapped
# each round; prints each run and the medians. With ids, each EGT also looks
# its id up (two point reads of the requests column family) and writes its
# outcome in the same WriteBatch.
#   bench/loadgen/request_id_cost.sh [BUILD_DIR] [SECONDS] [ROUNDS]
set -eu
BUILD=${1:-build}; SECS=${2:-3}; ROUNDS=${3:-3}
SC=$BUILD/sidecar/sidetable; LG=$BUILD/bench/loadgen/sidetable-loadgen
T=$(mktemp -d); trap 'kill $PID 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
"$SC" --data "$T/db" --listen tcp://127.0.0.1:0 --http "" --durability os --kafka none --log-level warn \
  --ready-file "$T/ready" > "$T/log" 2>&1 &
PID=$!
i=0; until grep -q '^pid' "$T/ready" 2>/dev/null; do i=$((i+1)); [ $i -lt 100 ] || exit 1; sleep 0.1; done
EP=$(sed -n 's/^zmq //p' "$T/ready" | head -1)
run() {  # label, extra args: ops/s of pipelined inserts (4 connections x depth 32), then strict p50
  label=$1; shift
  p=$("$LG" --endpoint "$EP" --table bench --mix insert=100 --duration "$SECS" --warmup 1 \
        --connections 4 --depth 32 "$@" | awk '$1 == "insert" { print $3 }')
  s=$("$LG" --endpoint "$EP" --table bench --mix insert=100 --duration "$SECS" --warmup 1 \
        --strict "$@" | awk '$1 == "insert" { print $5 }')
  echo "$label pipelined ${p} inserts/s, strict p50 ${s} us"
}
ids_p=""; ids_s=""; no_p=""; no_s=""
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then order="ids none"; else order="none ids"; fi
  for m in $order; do
    if [ "$m" = ids ]; then out=$(run "round $r ids:")
    else out=$(run "round $r none:" --no-request-ids); fi
    echo "$out"
    p=$(echo "$out" | awk '{print $5}'); s=$(echo "$out" | awk '{print $9}')
    if [ "$m" = ids ]; then ids_p="$ids_p $p"; ids_s="$ids_s $s"; else no_p="$no_p $p"; no_s="$no_s $s"; fi
  done
done
median() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median pipelined inserts/s: ids $(median $ids_p), none $(median $no_p)"
echo "median strict insert p50 us: ids $(median $ids_s), none $(median $no_s)"
