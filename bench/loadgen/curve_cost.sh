#!/usr/bin/env bash
# bench/loadgen/curve_cost.sh: what ZeroMQ CURVE costs per request
# (docs/performance.md, "CURVE on vs off"). Two sidecars in one run, one
# plain and one with CURVE (security.curve_secret_key_file), the same data
# and the same loadgen workloads, alternating plain/curve in each round;
# prints medians over the rounds and the curve/plain ratio.
#
#   bench/loadgen/curve_cost.sh [--build DIR] [--rounds 5] [--duration 3]
#
# Everything listens on 127.0.0.1 only; the two sidecars are stopped by PID
# on exit (also on errors and Ctrl-C).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="$ROOT/build"
ROUNDS=5
DURATION=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --duration) DURATION="$2"; shift 2 ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
SIDETABLE="$BUILD/sidecar/sidetable"
LOADGEN="$BUILD/bench/loadgen/sidetable-loadgen"
CLI="$BUILD/tools/cli/sidetable-cli"
for b in "$SIDETABLE" "$LOADGEN" "$CLI"; do
  [[ -x "$b" ]] || { echo "missing $b: build it first" >&2; exit 1; }
done

WORK="$(mktemp -d /tmp/sidetable-curve-cost.XXXXXX)"
RESULTS="$WORK/results.jsonl"
: > "$RESULTS"
PIDS=()
cleanup() {
  local rc=$?
  for p in "${PIDS[@]:-}"; do [[ -n "$p" ]] && kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]:-}"; do [[ -n "$p" ]] && wait "$p" 2>/dev/null || true; done
  exit $rc
}
trap cleanup EXIT INT TERM

"$CLI" curve keygen --out "$WORK/server" >/dev/null
"$CLI" curve keygen --out "$WORK/client" >/dev/null
cp "$WORK/client.pub" "$WORK/clients"
printf 'security:\n  curve_secret_key_file: %s\n  curve_clients_file: %s\n' \
  "$WORK/server.key" "$WORK/clients" > "$WORK/curve.yaml"
: > "$WORK/plain.yaml"

ENDPOINT=()
start() {  # start NAME CONFIG -> ENDPOINT[NAME]
  "$SIDETABLE" --config "$2" --listen 'tcp://127.0.0.1:*' --data "$WORK/data-$1" --durability os \
    --kafka none --http '' --ready-file "$WORK/ready-$1" --log-level warn >>"$WORK/$1.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 300); do
    grep -q '^pid ' "$WORK/ready-$1" 2>/dev/null && break
    sleep 0.1
  done
  grep '^zmq ' "$WORK/ready-$1" | head -1 | cut -d' ' -f2
}
PLAIN_EP="$(start plain "$WORK/plain.yaml")"
CURVE_EP="$(start curve "$WORK/curve.yaml")"
[[ -n "$PLAIN_EP" && -n "$CURVE_EP" ]] || { echo "a sidecar did not start; see $WORK/*.log" >&2; exit 1; }
KEYS=(--curve-server-key "$WORK/server.pub" --curve-key "$WORK/client.key")

load() {  # load MODE LABEL ARGS...
  local mode="$1" label="$2"; shift 2
  local ep="$PLAIN_EP" extra=()
  if [[ "$mode" == curve ]]; then ep="$CURVE_EP"; extra=("${KEYS[@]}"); fi
  # loadgen appends to its --json file: give it a fresh one each run.
  rm -f "$WORK/one.json"
  "$LOADGEN" --endpoint "$ep" "${extra[@]}" --label "$label/$mode" --json "$WORK/one.json" "$@" >/dev/null 2>>"$WORK/loadgen.log"
  cat "$WORK/one.json" >> "$RESULTS"; echo >> "$RESULTS"
}
for mode in plain curve; do
  load "$mode" preload --preload 10000 --partitions 100 --mix get=100 --duration 0.2 --warmup 0
done
for r in $(seq 1 "$ROUNDS"); do
  order=(plain curve); (( r % 2 == 0 )) && order=(curve plain)
  for mode in "${order[@]}"; do
    load "$mode" get-strict --strict --mix get=100 --partitions 100 --preload 10000 --no-load --duration "$DURATION" --warmup 0.5
    load "$mode" insert-strict --strict --mix insert=100 --duration "$DURATION" --warmup 0.5
    load "$mode" get-pipelined --connections 4 --depth 32 --mix get=100 --partitions 100 --preload 10000 --no-load --duration "$DURATION" --warmup 0.5
    load "$mode" insert-pipelined --connections 4 --depth 32 --mix insert=100 --duration "$DURATION" --warmup 0.5
  done
done

/usr/bin/python3 - "$RESULTS" "$ROUNDS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    work, mode = r["label"].rsplit("/", 1)
    if work == "preload":
        continue
    op = next(iter(r["ops"].values()))
    by.setdefault(work, {}).setdefault(mode, []).append((op["p50_us"], op["p99_us"], r["ops_per_s"]))
print("rounds: %s (median of each; every run: %s)" % (sys.argv[2], ", ".join(
    "%s %.0f" % (r["label"], next(iter(r["ops"].values()))["p50_us"]) for r in rows if not r["label"].startswith("preload"))))
print("%-18s %12s %12s %8s %12s %12s %8s" % ("workload", "plain p50us", "curve p50us", "ratio",
                                            "plain ops/s", "curve ops/s", "ratio"))
for work, modes in by.items():
    med = {m: [statistics.median(v[i] for v in vals) for i in range(3)] for m, vals in modes.items()}
    p, c = med["plain"], med["curve"]
    print("%-18s %12.1f %12.1f %8.2f %12.0f %12.0f %8.2f" % (work, p[0], c[0], c[0] / p[0], p[2], c[2], c[2] / p[2]))
PY
echo "raw results: $RESULTS"
