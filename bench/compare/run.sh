#!/usr/bin/env bash
# bench/compare/run.sh: the sidetable sidecar vs raw RocksDB vs Azurite, side
# by side in one run, plus the sidecar's strict round trip vs a bare ZeroMQ
# echo (docs/performance.md, "Sidecar vs raw RocksDB vs Azurite (issue 4)");
# and, when the sidecar has --rest, the same @azure/data-tables client and workloads
# against sidetable's REST gateway as against Azurite (issue 18).
#
#   bench/compare/run.sh [--build DIR] [--repeats 3] [--duration 5] [--out DIR] [--fsync] [--rest|--no-rest]
#                        [--rest-procs N]   (the REST comparison with N client processes on both sides)
#                        [--only-rest]      (each repeat: Azurite and the REST gateway only)
#
# Everything listens on 127.0.0.1 only; every process started here is stopped
# by its PID (process group for Azurite, which npx runs under a shell) on
# exit, including on errors and Ctrl-C. See bench/compare/README.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="$ROOT/build-load"
REPEATS=3
DURATION=5          # measured seconds per throughput workload (after 1 s warm-up)
AZ_DURATION=6
OUT=""
FSYNC=0             # also run the sidecar with --durability fsync (inserts, EGTs)
REST=auto           # the REST gateway through @azure/data-tables: auto = when the sidecar has --rest
REST_PROCS=1        # client processes for the REST comparison (inserts, reads, EGTs), both systems
ONLY_REST=0         # --only-rest: each repeat runs Azurite and the REST gateway only
CLK_TCK="$(getconf CLK_TCK)"  # /proc/<pid>/stat's unit, for the servers' CPU per request
AZURITE_DIR="${AZURITE_DIR:-/tmp/sidetable-azurite}"
PRELOAD=10000       # entities for point reads (all three systems), over 100 partitions
QUERY_ENTITIES=5000

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --duration) DURATION="$2"; AZ_DURATION="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --fsync) FSYNC=1; shift ;;
    --rest) REST=1; shift ;;
    --no-rest) REST=0; shift ;;
    --rest-procs) REST_PROCS="$2"; shift 2 ;;
    --only-rest) ONLY_REST=1; REST=1; shift ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done

# Debian's python3 has python3-zmq (scripts/install-deps.sh); another python3
# first on PATH may not.
PYTHON=/usr/bin/python3
[[ -x "$PYTHON" ]] || PYTHON=python3
SIDETABLE="$BUILD/sidecar/sidetable"
LOADGEN="$BUILD/bench/loadgen/sidetable-loadgen"
ECHO="$BUILD/bench/loadgen/sidetable-zmq-echo"
# The echo with getpid() from memory (common/pid_cache.cc), as the sidecar
# and the loadgen have it; optional, for builds from before it existed.
ECHO_PIDC="$BUILD/bench/loadgen/sidetable-zmq-echo-pidc"
RAWREF="$BUILD/bench/loadgen/sidetable-rawref"
for b in "$SIDETABLE" "$LOADGEN" "$ECHO" "$RAWREF"; do
  [[ -x "$b" ]] || { echo "missing $b: build it (bench/compare/README.md)" >&2; exit 1; }
done
HAS_REST=0
"$SIDETABLE" --help 2>&1 | grep -q -- '--rest' && HAS_REST=1
if [[ "$REST" == auto ]]; then REST=$HAS_REST; fi
if [[ "$REST" == 1 && "$HAS_REST" == 0 ]]; then
  echo "--rest: $SIDETABLE has no --rest option (no REST gateway in this build)" >&2; exit 1
fi
if [[ ! -x "$AZURITE_DIR/node_modules/.bin/azurite-table" ]]; then
  echo "installing Azurite 3.35.0 into $AZURITE_DIR" >&2
  npm install --prefix "$AZURITE_DIR" --no-audit --no-fund azurite@3.35.0 @azure/data-tables@13.3.2 >&2
fi

WORK="$(mktemp -d /tmp/sidetable-compare.XXXXXX)"
OUT="${OUT:-$WORK}"
mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"
: > "$RESULTS"
LOG="$OUT/run.log"

PIDS=()       # plain processes
PGIDS=()      # process groups (Azurite: npx -> sh -> node)
cleanup() {
  local rc=$?
  for p in "${PGIDS[@]:-}"; do [[ -n "$p" ]] && kill -TERM -- "-$p" 2>/dev/null || true; done
  for p in "${PIDS[@]:-}"; do [[ -n "$p" ]] && kill -TERM "$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${PGIDS[@]:-}"; do [[ -n "$p" ]] && kill -KILL -- "-$p" 2>/dev/null || true; done
  for p in "${PIDS[@]:-}"; do [[ -n "$p" ]] && kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK/data"* "$WORK"/ready*
  [[ "$OUT" == "$WORK" ]] || rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
forget() {  # forget a PID/PGID we stopped ourselves
  local p="$1" i
  for i in "${!PIDS[@]}"; do [[ "${PIDS[$i]}" == "$p" ]] && unset 'PIDS[i]'; done
  for i in "${!PGIDS[@]}"; do [[ "${PGIDS[$i]}" == "$p" ]] && unset 'PGIDS[i]'; done
  return 0
}
wait_file() {  # file, seconds
  local i
  for ((i = 0; i < $2 * 10; i++)); do [[ -s "$1" ]] && return 0; sleep 0.1; done
  echo "timed out waiting for $1" >&2; return 1
}

# ---- sidetable ---------------------------------------------------------------
ST_PID=""; ST_EP=""
start_sidetable() {  # durability tag
  local port; port="$(free_port)"
  rm -rf "$WORK/data-$2" "$WORK/ready-$2"
  # Every sidecar starts on a quiet disk: the loads before it (raw RocksDB's
  # 200k rows, Azurite, the last sidecar's SST files) leave dirty pages that the
  # kernel writes back meanwhile, and an `fsync` run, always last in a repeat,
  # would otherwise pay for their write-back inside its own fdatasync calls
  # (docs/performance.md, session 33: 14.7k/s after the other loads, 19-22k/s on
  # a fresh disk). The `os` runs get the same treatment.
  sync
  "$SIDETABLE" --listen "tcp://127.0.0.1:$port" --data "$WORK/data-$2" --durability "$1" \
    --http '' --ready-file "$WORK/ready-$2" --log-level warn >>"$LOG" 2>&1 &
  ST_PID=$!; PIDS+=("$ST_PID")
  wait_file "$WORK/ready-$2" 30
  ST_EP="tcp://127.0.0.1:$port"
}
stop_sidetable() {
  kill -TERM "$ST_PID" 2>/dev/null || true
  local i; for ((i = 0; i < 300; i++)); do kill -0 "$ST_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$ST_PID" 2>/dev/null || true
  wait "$ST_PID" 2>/dev/null || true
  forget "$ST_PID"; rm -rf "$WORK/data-"*
}
lg() {  # label, loadgen flags...
  local label="$1"; shift
  "$LOADGEN" --endpoint "$ST_EP" --server-pid "$ST_PID" --label "$label" --json "$RESULTS" "$@" | tee -a "$LOG"
}

run_sidetable() {  # repeat, durability
  local r="$1" d="$2" t="st-$2"
  start_sidetable "$d" "$r"
  if [[ "$d" == os ]]; then
    # Memory per idle connection, on the fresh process (after a load, freed
    # heap absorbs it and RSS does not move): 1,000 connections, one Ping each.
    "$PYTHON" "$HERE/../loadgen/idle_connections.py" --endpoint "$ST_EP" --pid "$ST_PID" \
      --connections 1000 --label "st-idle-conn-$r" --json "$RESULTS" | tee -a "$LOG"
  fi
  # The sidecar's 32 in flight: 1 connection x 32, like the one Node process for Azurite
  # (2 x 16 and 4 x 8 measured slower on 2 cores: more client threads compete with the server).
  lg "$t-insert-$r" --table ins --mix insert=100 --connections 1 --depth 32 --partitions 1000 \
     --duration "$DURATION" --warmup 1
  lg "$t-egt-$r" --table egt --mix batch=100 --batch-size 100 --connections 1 --depth 1 \
     --partitions 1000 --duration "$DURATION" --warmup 1
  if [[ "$d" == os ]]; then
    lg "$t-get-$r" --table reads --mix get=100 --connections 1 --depth 32 --partitions 100 \
       --preload "$PRELOAD" --duration "$DURATION" --warmup 1
    lg "$t-query-$r" --table query5k --mix query=100 --connections 1 --depth 1 --partitions 1 \
       --preload "$QUERY_ENTITIES" --page-size 1000 --requests 100 --warmup 0.5
    # Strict round trips, interleaved with the bare echo so both see the same
    # machine: echo, Get of the 1 KiB entity (~60 B request, ~1 KiB reply),
    # Insert of it (~950 B request), echo again (the summary averages the two echoes).
    start_echo
    echo_strict "echo-strict-a-$r"
    lg "$t-strict-get-$r" --table reads --mix get=100 --strict --partitions 100 \
       --preload "$PRELOAD" --no-load --duration 3 --warmup 0.5
    lg "$t-strict-insert-$r" --table ins --mix insert=100 --strict --partitions 1000 \
       --duration 3 --warmup 0.5
    echo_strict "echo-strict-b-$r"
    stop_echo
  fi
  stop_sidetable
}

# ---- bare ZeroMQ echo ----------------------------------------------------------------
ECHO_PID=""; ECHO_EP=""
start_echo() {  # [binary]
  local port; port="$(free_port)"
  "${1:-$ECHO}" --serve --endpoint "tcp://127.0.0.1:$port" --max-seconds 300 >>"$LOG" 2>&1 &
  ECHO_PID=$!; PIDS+=("$ECHO_PID"); ECHO_EP="tcp://127.0.0.1:$port"
  sleep 0.3
}
stop_echo() {
  kill -TERM "$ECHO_PID" 2>/dev/null || true; wait "$ECHO_PID" 2>/dev/null || true; forget "$ECHO_PID"
}
echo_strict() {  # label
  "$ECHO" --endpoint "$ECHO_EP" --bytes 1024 --requests 20000 --warmup 1000 \
    --label "$1" --json "$RESULTS" | tee -a "$LOG"
}
echo_depth32() {  # binary label: its server and its client, 32 in flight
  start_echo "$1"
  "$1" --endpoint "$ECHO_EP" --bytes 1024 --requests 200000 --warmup 5000 --depth 32 \
    --label "$2" --json "$RESULTS" | tee -a "$LOG"
  stop_echo
}
run_echo() {  # repeat: the pipelined echoes (32 in flight), for information
  echo_depth32 "$ECHO" "echo-depth32-$1"
  if [[ -x "$ECHO_PIDC" ]]; then echo_depth32 "$ECHO_PIDC" "echo-pidc-depth32-$1"; fi
}

# ---- raw RocksDB ------------------------------------------------------------------------
run_raw() {  # repeat
  local r="$1"
  "$RAWREF" --workload single --n 200000 --threads 1 --dir "$WORK" --label "raw-insert-$r" --json "$RESULTS" | tee -a "$LOG"
  "$RAWREF" --workload single --n 200000 --threads 2 --dir "$WORK" --label "raw2-insert-$r" --json "$RESULTS" | tee -a "$LOG"
  "$RAWREF" --workload get --n 300000 --loaded "$PRELOAD" --threads 1 --dir "$WORK" --label "raw-get-$r" --json "$RESULTS" | tee -a "$LOG"
  "$RAWREF" --workload get --n 300000 --loaded "$PRELOAD" --threads 2 --dir "$WORK" --label "raw2-get-$r" --json "$RESULTS" | tee -a "$LOG"
  "$RAWREF" --workload egt --n 1500 --dir "$WORK" --label "raw-egt-$r" --json "$RESULTS" | tee -a "$LOG"
}

# ---- Azurite --------------------------------------------------------------------------------
run_azurite() {  # repeat
  local r="$1" port; port="$(free_port)"
  # setsid: npx runs the server under a shell; stop the whole group by its id.
  (cd "$AZURITE_DIR" && exec setsid npx azurite-table --inMemoryPersistence --silent --disableTelemetry \
     --tableHost 127.0.0.1 --tablePort "$port") >>"$LOG" 2>&1 &
  local pg=$!; PGIDS+=("$pg")
  local i; for ((i = 0; i < 300; i++)); do
    node -e "require('net').connect($port,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))" 2>/dev/null && break
    sleep 0.1
  done
  # --server-pgid: Azurite's CPU is that of every process of its group (npx, its shell, node).
  local az=(node "$HERE/azurite_load.mjs" --port "$port" --json "$RESULTS" --inflight 32 --duration "$AZ_DURATION"
            --server-pgid "$pg" --clk-tck "$CLK_TCK")
  AZURITE_DIR="$AZURITE_DIR" "${az[@]}" --workload insert --partitions 1000 --label "az-insert-$r" | tee -a "$LOG"
  AZURITE_DIR="$AZURITE_DIR" "${az[@]}" --workload get --preload "$PRELOAD" --partitions 100 --label "az-get-$r" | tee -a "$LOG"
  AZURITE_DIR="$AZURITE_DIR" "${az[@]}" --workload egt --label "az-egt-$r" | tee -a "$LOG"
  AZURITE_DIR="$AZURITE_DIR" "${az[@]}" --workload query --query-entities "$QUERY_ENTITIES" --page-size 1000 \
    --queries 10 --label "az-query-$r" | tee -a "$LOG"
  if [[ "$REST" == 1 && "$REST_PROCS" -gt 1 ]]; then
    # Azurite with the REST comparison's client processes (labels azp-*).
    AZURITE_DIR="$AZURITE_DIR" "${az[@]}" --procs "$REST_PROCS" --workload insert --partitions 1000 --label "azp-insert-$r" | tee -a "$LOG"
    AZURITE_DIR="$AZURITE_DIR" "${az[@]}" --procs "$REST_PROCS" --workload get --preload "$PRELOAD" --partitions 100 --label "azp-get-$r" | tee -a "$LOG"
    AZURITE_DIR="$AZURITE_DIR" "${az[@]}" --procs "$REST_PROCS" --workload egt --label "azp-egt-$r" | tee -a "$LOG"
  fi
  kill -TERM -- "-$pg" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do kill -0 -- "-$pg" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pg" 2>/dev/null || true
  wait "$pg" 2>/dev/null || true; forget "$pg"
}

# ---- sidetable's REST gateway, through the same client as Azurite --------------------------
run_rest() {  # repeat
  local r="$1" ready="$WORK/ready-rest" i ep=""
  rm -rf "$WORK/data-rest" "$ready"
  "$SIDETABLE" --listen "tcp://127.0.0.1:$(free_port)" --data "$WORK/data-rest" --durability os \
    --http '' --rest 127.0.0.1:0 --ready-file "$ready" --log-level warn >>"$LOG" 2>&1 &
  local pid=$!; PIDS+=("$pid")
  for ((i = 0; i < 300; i++)); do
    ep="$( (sed -n 's/^rest //p' "$ready" 2>/dev/null || true) | head -1)"
    if [[ -n "$ep" ]] && grep -q '^pid ' "$ready" 2>/dev/null; then break; fi
    sleep 0.1
  done
  [[ -n "$ep" ]] || { echo "sidetable wrote no 'rest' line in $ready" >&2; return 1; }
  ep="http://${ep#http://}/devstoreaccount1"
  local c=(node "$HERE/azurite_load.mjs" --endpoint "$ep" --system sidetable-rest --json "$RESULTS" \
           --inflight 32 --duration "$AZ_DURATION" --server-pid "$pid" --clk-tck "$CLK_TCK")
  AZURITE_DIR="$AZURITE_DIR" "${c[@]}" --procs "$REST_PROCS" --workload insert --partitions 1000 --label "rest-insert-$r" | tee -a "$LOG"
  AZURITE_DIR="$AZURITE_DIR" "${c[@]}" --procs "$REST_PROCS" --workload get --preload "$PRELOAD" --partitions 100 --label "rest-get-$r" | tee -a "$LOG"
  AZURITE_DIR="$AZURITE_DIR" "${c[@]}" --procs "$REST_PROCS" --workload egt --label "rest-egt-$r" | tee -a "$LOG"
  AZURITE_DIR="$AZURITE_DIR" "${c[@]}" --workload query --query-entities "$QUERY_ENTITIES" --page-size 1000 \
    --queries 5 --label "rest-query-$r" | tee -a "$LOG"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true; forget "$pid"; rm -rf "$WORK/data-rest"
}

# Beside Azurite's turn in every repeat (after it, before it, after it), so both REST
# servers see the same machine.
maybe_rest() { if [[ "$REST" == 1 ]]; then run_rest "$1"; fi; }

# ---- the run -----------------------------------------------------------------------------------
{
  echo "# bench/compare/run.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $(nproc) cores"
  echo "# sidetable $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?') (+ working tree), build $BUILD"
  echo "# REST gateway (issue 18): $([[ "$REST" == 1 ]] && echo "measured, $REST_PROCS client process(es)" || echo "not measured (the sidecar has no --rest, or --no-rest)")"
  echo "# load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$LOG"
T0=$(date +%s)
for ((r = 1; r <= REPEATS; r++)); do
  echo "## repeat $r/$REPEATS ($(( $(date +%s) - T0 )) s)" | tee -a "$LOG"
  # Rotate the order so no system always runs first or last on a noisy machine.
  if [[ "$ONLY_REST" == 1 ]]; then
    if (( r % 2 == 1 )); then run_azurite "$r"; run_rest "$r"; else run_rest "$r"; run_azurite "$r"; fi
    continue
  fi
  case $(( (r - 1) % 3 )) in
    0) run_sidetable "$r" os; run_echo "$r"; run_raw "$r"; run_azurite "$r"; maybe_rest "$r" ;;
    1) run_raw "$r"; maybe_rest "$r"; run_azurite "$r"; run_echo "$r"; run_sidetable "$r" os ;;
    2) run_azurite "$r"; maybe_rest "$r"; run_echo "$r"; run_sidetable "$r" os; run_raw "$r" ;;
  esac
  [[ "$FSYNC" == 1 ]] && run_sidetable "$r" fsync
done
echo "# load after the run: $(cut -d' ' -f1-3 /proc/loadavg); $(( $(date +%s) - T0 )) s" | tee -a "$LOG"

node "$HERE/summarize.mjs" "$RESULTS" | tee "$OUT/summary.md"
echo "results: $RESULTS, log: $LOG, summary: $OUT/summary.md"
