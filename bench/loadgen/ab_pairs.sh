#!/usr/bin/env bash
# Paired A/B runs of two sidecar builds (or one build with two settings) under
# one sidetable-loadgen workload: the method behind issue 17's "paired runs"
# in docs/performance.md. Each pair runs A then B, or B then A (alternating),
# each on a fresh sidecar in a temporary directory, so that a drift of the
# machine during the pair touches both sides. Prints each run, the per-pair
# ratios B/A and their median: on these noisy machines the median of the
# per-pair ratios is the figure to quote, and an A/A run (the same binary
# both ways) shows the noise.
#
#   bench/loadgen/ab_pairs.sh --a OLD_BIN --b NEW_BIN --load get [--pairs 8]
#   bench/loadgen/ab_pairs.sh --a BIN --b BIN --b-env 'GLIBC_TUNABLES=...' --load insert
#   bench/loadgen/ab_pairs.sh --a BIN --b BIN --b-args '--inline-alone-max-bytes 0' --load egt
#
# Loads (the compare bench's shapes, 1 connection): insert (32 in flight over
# 1,000 partitions), get (32 in flight, 10,000 rows preloaded in 100
# partitions), egt (EGTs of 100 x 1 KiB, one at a time), egt4 (the same
# from 4 connections, so they run on the workers), insert4 (4 connections
# x 8), insertwide (32 in flight, a partition per row), many (WriteManys
# of 100 single-insert EGTs of 300 B over 1,000 partitions, 4 in flight: a
# pattern worker's derived writes), mixed (half point
# reads, half replaces of the preloaded rows, as get), egt-after-insert (the
# compare bench's sequence on one sidecar: the insert load for --duration,
# then egt, whose figures are reported; the inserts leave RocksDB flushing).
# Options: --durability os|fsync (os), --duration S (5, after 1 s of warm-up),
# --loadgen PATH (build-load's), --a-loadgen/--b-loadgen PATH (a side's own
# load generator, to compare two builds of the client library against one
# sidecar), --out FILE (append each run's JSON line).
# Loopback only; every process it starts is stopped on exit.
set -euo pipefail
A=""; B=""; A_ENV=""; B_ENV=""; A_ARGS=""; B_ARGS=""; LOAD=""; PAIRS=6
PRE=(); DUR=os; SECONDS_RUN=5; LOADGEN=build-load/bench/loadgen/sidetable-loadgen; OUT=""
A_LOADGEN=""; B_LOADGEN=""
usage() { sed -n '2,28p' "$0" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --a) A="$2"; shift 2 ;;
    --b) B="$2"; shift 2 ;;
    --a-env) A_ENV="$2"; shift 2 ;;
    --b-env) B_ENV="$2"; shift 2 ;;
    --a-args) A_ARGS="$2"; shift 2 ;;
    --b-args) B_ARGS="$2"; shift 2 ;;
    --load) LOAD="$2"; shift 2 ;;
    --pairs) PAIRS="$2"; shift 2 ;;
    --durability) DUR="$2"; shift 2 ;;
    --duration) SECONDS_RUN="$2"; shift 2 ;;
    --loadgen) LOADGEN="$2"; shift 2 ;;
    --a-loadgen) A_LOADGEN="$2"; shift 2 ;;
    --b-loadgen) B_LOADGEN="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) usage ;;
  esac
done
[[ -n "$A" && -n "$B" && -n "$LOAD" ]] || usage
A_LOADGEN="${A_LOADGEN:-$LOADGEN}"; B_LOADGEN="${B_LOADGEN:-$LOADGEN}"
[[ -x "$A" && -x "$B" && -x "$A_LOADGEN" && -x "$B_LOADGEN" ]] ||
  { echo "not executable: $A, $B, $A_LOADGEN or $B_LOADGEN" >&2; exit 2; }
# shellcheck source=bench/loadgen/sidecar_run.sh
source "$(dirname "$0")/sidecar_run.sh"
case "$LOAD" in
  insert) FLAGS=("${LOAD_INSERT[@]}") ;;
  get) FLAGS=(--table reads --mix get=100 --connections 1 --depth 32 --partitions 100 --preload 10000) ;;
  egt) FLAGS=("${LOAD_EGT[@]}") ;;
  egt4) FLAGS=(--table egt --mix batch=100 --batch-size 100 --connections 4 --depth 1 --partitions 1000) ;;
  insert4) FLAGS=(--table ins --mix insert=100 --connections 4 --depth 8 --partitions 1000) ;;
  insertwide) FLAGS=(--table ins --mix insert=100 --connections 1 --depth 32 --partitions 10000000) ;;
  many) FLAGS=(--table many --mix many=100 --batch-size 100 --entity-bytes 300 --connections 1 --depth 4 --partitions 1000) ;;
  mixed) FLAGS=(--table reads --mix get=50,upsert=50 --connections 1 --depth 32 --partitions 100 --preload 10000) ;;
  egt-after-insert) PRE=("${LOAD_INSERT[@]}"); FLAGS=("${LOAD_EGT[@]}") ;;
  *) echo "unknown --load '$LOAD'" >&2; exit 2 ;;
esac

W="$(mktemp -d)"; SP=""
cleanup() { [[ -n "$SP" ]] && kill -KILL "$SP" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT

# One run: a fresh sidecar ($1 binary, $2 environment, $3 extra arguments),
# the load ($6's load generator), the result's JSON line (with "side" and
# "pair") on stdout.
run_one() {
  local bin="$1" envs="$2" args="$3" side="$4" pair="$5" loadgen="$6" data
  data="$W/data-$side-$pair"
  start_sidecar "$bin" "$envs" "$args" "$data" "$DUR" "$W"
  load() {
    "$loadgen" --endpoint "$ENDPOINT" --server-pid "$SPID" "$@" --duration "$SECONDS_RUN" \
      --warmup 1 > "$W/lg.log" 2>&1 || { echo "the loadgen failed:" >&2; cat "$W/lg.log" >&2; exit 1; }
  }
  rm -f "$W/r.json"
  if ((${#PRE[@]})); then load "${PRE[@]}"; fi
  load --json "$W/r.json" "${FLAGS[@]}"
  kill -TERM "$SP"; wait "$SP" 2>/dev/null || true; SP=""
  rm -rf "$data" "$W/ready"
  python3 - "$W/r.json" "$side" "$pair" <<'PY'
import json, sys
rec = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
keep = {k: v for k, v in rec.items() if "per_s" in k or "cpu" in k or "rss" in k}
keep.update(side=sys.argv[2], pair=int(sys.argv[3]))
print(json.dumps(keep))
PY
}

RESULTS="$W/results.jsonl"
for ((p = 1; p <= PAIRS; p++)); do
  if ((p % 2)); then order=(a b); else order=(b a); fi
  for side in "${order[@]}"; do
    if [[ "$side" == a ]]; then line="$(run_one "$A" "$A_ENV" "$A_ARGS" a "$p" "$A_LOADGEN")"
    else line="$(run_one "$B" "$B_ENV" "$B_ARGS" b "$p" "$B_LOADGEN")"; fi
    echo "$line" | tee -a "$RESULTS"
    [[ -n "$OUT" ]] && echo "$line" >> "$OUT"
  done
done

python3 - "$RESULTS" "$LOAD" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
key = "entities_per_s" if sys.argv[2].startswith("egt") else "ops_per_s"
by = {}
for r in runs:
    by.setdefault(r["pair"], {})[r["side"]] = r
pairs = [v for _, v in sorted(by.items()) if "a" in v and "b" in v]
ratios = [v["b"][key] / v["a"][key] for v in pairs]
med = lambda xs: statistics.median(xs) if xs else float("nan")
cpu = lambda s: [v[s].get("server_cpu_us_per_op", float("nan")) for v in pairs]
print(f"{sys.argv[2]}: A median {med([v['a'][key] for v in pairs]):,.0f}/s, "
      f"B median {med([v['b'][key] for v in pairs]):,.0f}/s ({key})")
print(f"server CPU per op: A {med(cpu('a')):.1f} us, B {med(cpu('b')):.1f} us")
peak = lambda s: [v[s].get("server_rss_peak_kb", float("nan")) / 1024 for v in pairs]
print(f"server peak RSS: A {med(peak('a')):.0f} MB, B {med(peak('b')):.0f} MB")
print("per-pair ratios B/A: " + " ".join(f"{r:.2f}" for r in ratios))
print(f"median ratio: {med(ratios):.3f} over {len(ratios)} pairs")
PY
