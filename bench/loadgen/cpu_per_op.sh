#!/usr/bin/env bash
# CPU per operation on both ends: the sidecar's single inserts (client and
# server), the bare ZeroMQ echo at the same depth (client and server), and raw
# RocksDB's Put in process. Three rounds of each, in that order. The figures
# behind "where an insert's CPU goes" in docs/performance.md (issue 17).
#   bench/loadgen/cpu_per_op.sh [--build build-load] [--rounds 3]
# Run it on a quiet machine; it starts and stops its own processes on
# 127.0.0.1 (the sidecar on a free port, the echo on 27702) and works in a
# temporary directory.
set -euo pipefail
BUILD=build-load; ROUNDS=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--rounds N]" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/../.."
W="$(mktemp -d)"; SP=""; EP=""
cleanup() { [[ -n "$SP" ]] && kill "$SP" 2>/dev/null; [[ -n "$EP" ]] && kill "$EP" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
# shellcheck source=bench/loadgen/sidecar_run.sh
source bench/loadgen/sidecar_run.sh

start_sidecar "$BUILD/sidecar/sidetable" "" "" "$W/d" os "$W"
for ((r = 1; r <= ROUNDS; r++)); do
  s0="$(proc_cpu "$SPID")"
  /usr/bin/time -f "%U %S" -o "$W/t" "$BUILD/bench/loadgen/sidetable-loadgen" --endpoint "$ENDPOINT" \
    --table "ins$r" "${INSERT_SHAPE[@]}" --duration 5 --warmup 0 > "$W/o" 2>&1
  s1="$(proc_cpu "$SPID")"; read -r u s < "$W/t"
  n="$(awk '$1=="insert"{print $2}' "$W/o")"; rate="$(awk '$1=="insert"{print $3}' "$W/o")"
  echo "insert round $r: $rate /s, client $(us_per_op "$u+$s" "$n") µs, server $(us_per_op "$s1-$s0" "$n") µs per insert"
done
kill "$SP"; wait "$SP" 2>/dev/null || true; SP=""

"$BUILD/bench/loadgen/sidetable-zmq-echo" --serve --endpoint tcp://127.0.0.1:27702 --max-seconds 120 > /dev/null 2>&1 &
EP=$!; sleep 0.5
for ((r = 1; r <= ROUNDS; r++)); do
  s0="$(proc_cpu "$EP")"
  /usr/bin/time -f "%U %S" -o "$W/t" "$BUILD/bench/loadgen/sidetable-zmq-echo" --endpoint tcp://127.0.0.1:27702 \
    --bytes 1024 --requests 200000 --warmup 0 --depth 32 > "$W/o" 2>&1
  s1="$(proc_cpu "$EP")"; read -r u s < "$W/t"
  echo "echo round $r: $(grep -o '[0-9,]* /s' "$W/o" | head -1), client $(us_per_op "$u+$s" 200000) µs, server $(us_per_op "$s1-$s0" 200000) µs per message"
done
kill "$EP"; wait "$EP" 2>/dev/null || true; EP=""

for ((r = 1; r <= ROUNDS; r++)); do
  rm -rf "$W/raw"; mkdir -p "$W/raw"
  /usr/bin/time -f "%U %S" -o "$W/t" "$BUILD/bench/loadgen/sidetable-rawref" --workload single --n 200000 \
    --threads 1 --dir "$W/raw" > "$W/o" 2>&1
  read -r u s < "$W/t"
  echo "raw RocksDB Put round $r: $(grep -o '[0-9]* ops/s' "$W/o" | head -1), $(us_per_op "$u+$s" 200000) µs per Put"
done
