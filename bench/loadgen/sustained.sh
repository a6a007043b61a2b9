#!/usr/bin/env bash
# A sustained load on one sidecar: the same sidetable-loadgen workload run
# back to back as --windows windows of --window seconds, with each window's
# rate, the server's CPU per operation, its RSS, and the CPU of each kind of
# server thread (the frontend, ZeroMQ's I/O thread, RocksDB's flush and
# compaction threads, the workers) from /proc/<pid>/task. The compare bench
# and ab_pairs.sh measure 5 s on a fresh sidecar; this shows what a longer
# load settles at once flushes and compactions of the first memtables share
# the cores (docs/performance.md, issue 17, session 27).
#
#   bench/loadgen/sustained.sh --load insert [--windows 8] [--window 5] [--repeats 1]
#   bench/loadgen/sustained.sh --load egt --bin build-load/sidecar/sidetable --env 'K=V'
#
# Loads: insert (32 in flight over 1,000 partitions, as the compare bench)
# and egt (EGTs of 100 x 1 KiB, one at a time). Each window is a new
# loadgen process (a new client, 0.2 s unmeasured first), so each window's
# figures are its own. Options: --bin PATH (build-load's sidetable),
# --env 'K=V ...' and --args '...' for the sidecar, --durability os|fsync
# (os), --loadgen PATH, --repeats R (a fresh sidecar each), --out FILE
# (append each window's JSON line). Prints, per repeat, the first window's
# rate, the median of the windows from the third on ("settled") and their
# ratio; with several repeats, the medians of those.
# Loopback only; every process it starts is stopped on exit.
set -euo pipefail
BIN=build-load/sidecar/sidetable; ENVS=""; ARGS=""; LOAD=""; WINDOWS=8; WINDOW=5; REPEATS=1
DUR=os; LOADGEN=build-load/bench/loadgen/sidetable-loadgen; OUT=""
usage() { sed -n '2,23p' "$0" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) BIN="$2"; shift 2 ;;
    --env) ENVS="$2"; shift 2 ;;
    --args) ARGS="$2"; shift 2 ;;
    --load) LOAD="$2"; shift 2 ;;
    --windows) WINDOWS="$2"; shift 2 ;;
    --window) WINDOW="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --durability) DUR="$2"; shift 2 ;;
    --loadgen) LOADGEN="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) usage ;;
  esac
done
# shellcheck source=bench/loadgen/sidecar_run.sh
source "$(dirname "$0")/sidecar_run.sh"
case "$LOAD" in
  insert) FLAGS=("${LOAD_INSERT[@]}") ;;
  egt) FLAGS=("${LOAD_EGT[@]}") ;;
  *) usage ;;
esac
[[ "$WINDOWS" =~ ^[0-9]+$ && "$WINDOWS" -ge 3 ]] || { echo "--windows must be 3 or more" >&2; exit 2; }
[[ -x "$BIN" && -x "$LOADGEN" ]] || { echo "not executable: $BIN or $LOADGEN" >&2; exit 2; }

W="$(mktemp -d)"; SP=""
cleanup() { [[ -n "$SP" ]] && kill -KILL "$SP" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT

# CPU seconds of each of the server's threads, by thread name, as JSON.
snap() {
  python3 - "$1" <<'PY'
import json, os, sys
pid, tick, out = sys.argv[1], os.sysconf("SC_CLK_TCK"), {}
for t in os.listdir(f"/proc/{pid}/task"):
    try:
        s = open(f"/proc/{pid}/task/{t}/stat").read()
    except OSError:
        continue  # a thread that ended meanwhile
    name, f = s[s.index("(") + 1:s.rindex(")")], s[s.rindex(")") + 2:].split()
    out[t] = [name, (int(f[11]) + int(f[12])) / tick]
print(json.dumps(out))
PY
}

RESULTS="$W/results.jsonl"
for ((r = 1; r <= REPEATS; r++)); do
  data="$W/data-$r"
  start_sidecar "$BIN" "$ENVS" "$ARGS" "$data" "$DUR" "$W"
  for ((w = 1; w <= WINDOWS; w++)); do
    rm -f "$W/r.json"
    snap "$SPID" > "$W/before.json"; t0="$(date +%s.%N)"
    "$LOADGEN" --endpoint "$ENDPOINT" --server-pid "$SPID" "${FLAGS[@]}" --duration "$WINDOW" \
      --warmup 0.2 --json "$W/r.json" > "$W/lg.log" 2>&1 ||
      { echo "the loadgen failed:" >&2; cat "$W/lg.log" >&2; exit 1; }
    t1="$(date +%s.%N)"; snap "$SPID" > "$W/after.json"
    python3 - "$W/r.json" "$W/before.json" "$W/after.json" "$t0" "$t1" "$r" "$w" "$LOAD" "$(du -sm "$data" | cut -f1)" "$SPID" \
      <<'PY' | tee -a "$RESULTS"
import json, sys
rec = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
before, after = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
wall = float(sys.argv[5]) - float(sys.argv[4])
# Thread names: the frontend keeps the process's name; ZeroMQ's I/O threads
# are ZMQbg/IO/n, RocksDB's rocksdb:high (flush) and rocksdb:low (compaction).
def kind(name):
    if name.startswith("ZMQbg"): return "zmq_io"
    if name == "rocksdb:high": return "flush"
    if name == "rocksdb:low": return "compaction"
    if name.startswith("st-worker"): return "workers"
    return "other"
cores = {}
main_tid = sys.argv[10]  # the main thread's id is the process's
for tid, (name, cpu) in after.items():
    k = "frontend" if tid == main_tid else kind(name)
    cores[k] = cores.get(k, 0.0) + (cpu - before.get(tid, [name, 0.0])[1]) / wall
key = "entities_per_s" if sys.argv[8] == "egt" else "ops_per_s"
out = {"repeat": int(sys.argv[6]), "window": int(sys.argv[7]), "per_s": round(rec[key], 1),
       "server_cpu_us_per_op": round(rec.get("server_cpu_us_per_op", float("nan")), 1),
       "server_rss_mb": round(rec.get("server_rss_kb", 0) / 1024), "data_mb": int(sys.argv[9]),
       "cores": {k: round(v, 2) for k, v in sorted(cores.items())}}
print(json.dumps(out))
PY
    [[ -n "$OUT" ]] && tail -1 "$RESULTS" >> "$OUT"
  done
  kill -TERM "$SP"; wait "$SP" 2>/dev/null || true; SP=""
  rm -rf "$data" "$W/ready"
done

python3 - "$RESULTS" "$LOAD" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in runs: by.setdefault(r["repeat"], []).append(r)
firsts, settled, ratios = [], [], []
for rep, ws in sorted(by.items()):
    ws.sort(key=lambda r: r["window"])
    first, rest = ws[0]["per_s"], [w["per_s"] for w in ws[2:]]
    s = statistics.median(rest)
    firsts.append(first); settled.append(s); ratios.append(s / first)
    print(f"repeat {rep}: first window {first:,.0f}/s, settled (median of windows 3-{len(ws)}) "
          f"{s:,.0f}/s, ratio {s / first:.2f}")
if len(by) > 1:
    print(f"{sys.argv[2]}: medians over {len(by)} repeats: first {statistics.median(firsts):,.0f}/s, "
          f"settled {statistics.median(settled):,.0f}/s, ratio {statistics.median(ratios):.2f}")
PY
