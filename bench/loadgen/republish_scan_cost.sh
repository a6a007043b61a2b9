#!/usr/bin/env bash
# What the embedded Kafka's restart point costs a start (session 44,
# docs/operations.md "Embedded Kafka"): a sidecar with --kafka embedded takes
# N inserts into ONE partition of table Src; a derived table Idx is then
# reported as a worker would over 12 Kafka partitions (applied up to the last
# LSN where records travel, 0 on the partitions that carry none); after a
# clean stop, BIN is started three times, each timed from the exec to its
# ready file, and its republish line is shown. Run it for two builds to
# compare (the first start also replays the WAL; read the later two).
#
#   bench/loadgen/republish_scan_cost.sh BIN N PORT [LOADGEN] [CLI]
#
# Loopback only (PORT); the sidecar it starts is stopped on exit.
set -euo pipefail
BIN=$1; N=$2; PORT=$3
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
LOADGEN=${4:-$ROOT/build-load/bench/loadgen/sidetable-loadgen}
CLI=${5:-$ROOT/build/tools/cli/sidetable-cli}
W=$(mktemp -d); SP=""
cleanup() { [[ -n "$SP" ]] && kill -9 "$SP" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
start() {  # $1 log suffix: 0 once the ready file is there (bounded, 30 s)
  rm -f "$W/ready"
  "$BIN" --listen "tcp://127.0.0.1:$PORT" --data "$W/d" --durability os --kafka embedded --http "" \
    --ready-file "$W/ready" --log-level info > "$W/log.$1" 2>&1 &
  SP=$!
  for _ in $(seq 3000); do [[ -s "$W/ready" ]] && return 0; sleep 0.01; done
  return 1
}
stop() { kill "$SP"; wait "$SP" 2>/dev/null || true; SP=""; }

start 0
"$LOADGEN" --endpoint "tcp://127.0.0.1:$PORT" --table Src --partitions 1 --mix insert=100 \
  --requests "$N" --warmup 0 --depth 32 > /dev/null 2>&1
/usr/bin/python3 - "$PORT" "$ROOT/client/python" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import sidetable
from sidetable import Watermark
c = sidetable.Client('tcp://127.0.0.1:' + sys.argv[1])
c.create_table('Idx', exist_ok=True)
c.advance_watermarks([Watermark('Idx', 'Src', p, 12, 0) for p in range(12)])
PY
# Which partitions carry records: what `lag` counts above 0.
LAG=$("$CLI" --endpoint "tcp://127.0.0.1:$PORT" lag --json)
/usr/bin/python3 - "$PORT" "$ROOT/client/python" "$LAG" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
import sidetable
from sidetable import Watermark
lag = json.loads(sys.argv[3])
last = lag['last_lsn']
parts = lag['pairs'][0]['by_partition']
sidetable.Client('tcp://127.0.0.1:' + sys.argv[1]).advance_watermarks(
    [Watermark('Idx', 'Src', p['partition'], 12, last if p['lag'] > 0 else 0) for p in parts])
print('records up to LSN %d on %d of 12 partitions' % (last, sum(1 for p in parts if p['lag'] > 0)))
PY
sleep 1  # the publish watermark is flushed every 200 ms
stop
for r in 1 2 3; do
  t0=$(date +%s%3N)
  start "$r" || { cat "$W/log.$r" >&2; exit 1; }
  t1=$(date +%s%3N)
  sleep 1
  echo "start $r: $((t1 - t0)) ms; $(grep -o 'publishing again from LSN [0-9]*' "$W/log.$r" | head -1)"
  stop
done
