#!/usr/bin/env bash
# The storage floor with the sidecar's hops (issue 17's single-insert rows):
# in each round, alternating, the sidecar's single inserts (sidetable-loadgen,
# 1 KiB entities over 1,000 partitions, 32 in flight, `os` durability) and
# three servers behind the same ZeroMQ echo client at the same depth and
# size: the plain echo; the echo that first Puts each burst of messages into
# RocksDB with the engine's options, one WriteBatch with the WAL and no sync
# (`--store`, the least a storage server that acknowledges after its write
# can do); and the same with a Get of each key first, as an Insert must
# (`--store --store-get`). Prints each round's rates, server CPU per operation
# and the ratios to the plain echo, then their medians.
#   bench/loadgen/storage_floor.sh [--build build-load] [--rounds 5]
# Starts and stops its own processes on 127.0.0.1 (the sidecar on a free
# port, the echo on 27712) and works in a temporary directory. docs/performance.md, "The storage floor".
set -euo pipefail
BUILD=build-load; ROUNDS=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--rounds N]" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/../.."
ECHO="$BUILD/bench/loadgen/sidetable-zmq-echo"
W="$(mktemp -d)"; SP=""; EP=""
cleanup() { [[ -n "$SP" ]] && kill "$SP" 2>/dev/null; [[ -n "$EP" ]] && kill "$EP" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
# shellcheck source=bench/loadgen/sidecar_run.sh
source bench/loadgen/sidecar_run.sh
ratio() { echo "scale=3; $1/$2" | bc; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

start_sidecar "$BUILD/sidecar/sidetable" "" "" "$W/d" os "$W"

echo_run() {  # label [server flags...]: prints "rate server-µs"
  local label="$1"; shift
  rm -rf "$W/db-store"
  "$ECHO" --serve --endpoint tcp://127.0.0.1:27712 --max-seconds 60 "$@" > "$W/echo.log" 2>&1 &
  EP=$!; sleep 0.5
  local s0 s1 rate
  s0="$(proc_cpu "$EP")"
  "$ECHO" --endpoint tcp://127.0.0.1:27712 --bytes 1024 --requests 200000 --warmup 2000 --depth 32 \
    --label "$label" > "$W/o" 2>&1
  s1="$(proc_cpu "$EP")"
  kill "$EP"; wait "$EP" 2>/dev/null || true; EP=""
  rate="$(sed -n 's/.* round trips: \([0-9]*\) \/s.*/\1/p' "$W/o")"
  GROUP="$(awk '/rows in/ {printf "%.1f", $3 / $6}' "$W/echo.log")"
  echo "$rate $(us_per_op "$s1-$s0" 202000)" > "$W/$label"
}
sidecar_run() {  # round
  local s0 s1 n
  s0="$(proc_cpu "$SPID")"
  "$BUILD/bench/loadgen/sidetable-loadgen" --endpoint "$ENDPOINT" --table "ins$1" "${INSERT_SHAPE[@]}" \
    --duration 5 --warmup 0 > "$W/o" 2>&1
  s1="$(proc_cpu "$SPID")"
  n="$(awk '$1=="insert"{print $2}' "$W/o")"
  echo "$(awk '$1=="insert"{printf "%d", $3}' "$W/o") $(us_per_op "$s1-$s0" "$n")" > "$W/sidecar"
}

R_STORE=""; R_GET=""; R_SIDECAR=""; R_SIDECAR_STORE=""
for ((r = 1; r <= ROUNDS; r++)); do
  # The order rotates by round: what runs first after another's load pays
  # for its flushes (the sidecar stays up between its runs).
  steps=(sidecar plain store get)
  for ((i = 0; i < 4; i++)); do
    case "${steps[$(((i + r) % 4))]}" in
      sidecar) sidecar_run "$r" ;;
      plain) echo_run plain ;;
      store) echo_run store --store "$W/db-store"; store_group="$GROUP" ;;
      get) echo_run get --store "$W/db-store" --store-get; get_group="$GROUP" ;;
    esac
  done
  read -r ins ins_cpu < "$W/sidecar"; read -r plain plain_cpu < "$W/plain"
  read -r store store_cpu < "$W/store"; read -r get get_cpu < "$W/get"
  echo "round $r: sidecar insert $ins /s ($ins_cpu µs server CPU), echo $plain /s ($plain_cpu µs)," \
       "echo+Put $store /s ($store_cpu µs, $store_group rows a write), echo+Get+Put $get /s ($get_cpu µs, $get_group);" \
       "of the echo: sidecar $(ratio "$ins" "$plain"), echo+Put $(ratio "$store" "$plain")," \
       "echo+Get+Put $(ratio "$get" "$plain"); sidecar of echo+Get+Put $(ratio "$ins" "$get")"
  R_SIDECAR+=" $(ratio "$ins" "$plain")"; R_STORE+=" $(ratio "$store" "$plain")"
  R_GET+=" $(ratio "$get" "$plain")"; R_SIDECAR_STORE+=" $(ratio "$ins" "$get")"
done
echo "medians of the per-round ratios to the plain echo: sidecar $(median <<< "$R_SIDECAR")," \
     "echo+Put $(median <<< "$R_STORE"), echo+Get+Put $(median <<< "$R_GET");" \
     "sidecar of echo+Get+Put $(median <<< "$R_SIDECAR_STORE")"
