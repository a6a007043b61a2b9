#!/usr/bin/env bash
# How long a sidecar takes to start after a kill -9 left a write-ahead log to
# replay: the figure behind docs/storage-format.md's cost of the read-only
# look at the format mark (session 43), repeatable.
#
#   bench/loadgen/start_after_kill.sh --a BIN [--b BIN] [--rounds 3] [--seconds 4]
#                                     [--port 27750] [--loadgen L]
#
# 1. BIN A (so give the newer build as A when a build writes files the
#    older one does not) starts on a fresh directory (durability os, the embedded Kafka),
#    takes EGTs of 100 x 1 KiB from sidetable-loadgen for --seconds and is
#    killed with SIGKILL under that load: its WAL is not flushed.
# 2. Each round copies that directory (a copy per start, so no start sees
#    what another's recovery wrote) and starts A and then B on their copies,
#    the order alternating per round, timing from the exec to the ready file
#    (`--ready-file`, written once the sidecar listens). Each is stopped with
#    SIGTERM before the next.
# Prints every start and the medians; with --b, the median of B / A.
# Loopback only (PORT); every process it starts is stopped on exit.
set -euo pipefail
A=""; B=""; ROUNDS=3; SECONDS_LOAD=4; PORT=27750
LOADGEN=build-load/bench/loadgen/sidetable-loadgen
while [[ $# -gt 0 ]]; do
  case "$1" in
    --a) A="$2"; shift 2 ;;
    --b) B="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --seconds) SECONDS_LOAD="$2"; shift 2 ;;
    --port) PORT="$2"; shift 2 ;;
    --loadgen) LOADGEN="$2"; shift 2 ;;
    *) echo "usage: $0 --a BIN [--b BIN] [--rounds N] [--seconds S] [--port P] [--loadgen L]" >&2; exit 2 ;;
  esac
done
[[ -x "$A" ]] || { echo "--a must name a sidecar binary" >&2; exit 2; }
[[ -z "$B" || -x "$B" ]] || { echo "--b must name a sidecar binary" >&2; exit 2; }
[[ -x "$LOADGEN" ]] || { echo "no loadgen at $LOADGEN (--loadgen)" >&2; exit 2; }
W="$(mktemp -d)"; SP=""
cleanup() { [[ -n "$SP" ]] && kill -9 "$SP" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
now_ms() { date +%s%3N; }
wait_ready() {  # $1 ready file: 0 once it is there, 1 after 60 s or when the sidecar ended
  for _ in $(seq 6000); do
    [[ -s "$1" ]] && return 0
    kill -0 "$SP" 2>/dev/null || return 1
    sleep 0.01
  done
  return 1
}

# 1. The directory a kill -9 leaves.
"$A" --listen "tcp://127.0.0.1:$PORT" --data "$W/base" --durability os --http '' \
  --ready-file "$W/base.ready" --log-level warn > "$W/base.log" 2>&1 &
SP=$!
wait_ready "$W/base.ready" || { cat "$W/base.log" >&2; exit 1; }
"$LOADGEN" --endpoint "tcp://127.0.0.1:$PORT" --table egts --mix batch=100 --batch-size 100 --depth 1 \
  --duration "$((SECONDS_LOAD + 5))" --warmup 0 --timeout-ms 1000 > "$W/lg.txt" 2>&1 &
LG=$!
sleep "$SECONDS_LOAD"
kill -9 "$SP"; wait "$SP" 2>/dev/null || true; SP=""
wait "$LG" 2>/dev/null || true
rm -f "$W/base.ready"
echo "directory after kill -9: WAL $(du -cb "$W"/base/*.log 2>/dev/null | tail -1 | cut -f1) bytes," \
  "all $(du -sb "$W/base" | cut -f1) bytes"

# 2. Starts on copies, alternating.
start_once() {  # $1 label, $2 binary: prints the milliseconds to ready
  rm -rf "$W/copy"; cp -a "$W/base" "$W/copy"; rm -f "$W/copy.ready"
  local t0; t0=$(now_ms)
  "$2" --listen "tcp://127.0.0.1:$PORT" --data "$W/copy" --durability os --http '' \
    --ready-file "$W/copy.ready" --log-level warn > "$W/copy.log" 2>&1 &
  SP=$!
  if ! wait_ready "$W/copy.ready"; then cat "$W/copy.log" >&2; exit 1; fi
  local t1; t1=$(now_ms)
  kill "$SP"; wait "$SP" 2>/dev/null || true; SP=""
  echo "$1 $((t1 - t0))" >> "$W/starts"
  echo "$1: $((t1 - t0)) ms"
}
for ((r = 1; r <= ROUNDS; r++)); do
  if [[ -z "$B" ]]; then start_once A "$A"
  elif (( r % 2 )); then start_once A "$A"; start_once B "$B"
  else start_once B "$B"; start_once A "$A"; fi
done
middle() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
median() { awk -v l="$1" '$1==l {print $2}' "$W/starts" | middle; }
ma=$(median A); echo "median A: $ma ms"
if [[ -n "$B" ]]; then
  mb=$(median B); echo "median B: $mb ms"
  echo "B / A (of the medians): $(echo "scale=3; $mb / $ma" | bc)"
  # Each round's pair on its own: a loaded machine moves both starts of a
  # round less than it moves the rounds apart.
  paste <(awk '$1=="A" {print $2}' "$W/starts") <(awk '$1=="B" {print $2}' "$W/starts") |
    awk '{printf "%.3f\n", $2 / $1}' | sort -n > "$W/ratios"
  echo "B / A per round: $(tr '\n' ' ' < "$W/ratios")"
  echo "median of the per-round B / A: $(middle < "$W/ratios")"
fi
