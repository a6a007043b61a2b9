#!/usr/bin/env bash
# What the order mark of a query of several partitions costs (session 42,
# docs/performance.md "Queries of several partitions and the order mark"):
# one sidecar (BIN) with 64 partitions x 20 rows preloaded, a 32-deep
# insert load (sidetable-loadgen, 6 s) and beside it one Python client
# querying `RowKey eq 'r3'` (every partition) back to back for 5 s. Prints
# the queries' latency, the inserts' rate and the order-mark metrics. Run
# it for the old and the new binary, alternating.
#
#   bench/loadgen/query_order_cost.sh BIN PORT [LOADGEN]
#
# Loopback only (PORT and PORT+1); the sidecar it starts is stopped on exit.
set -euo pipefail
BIN=$1; PORT=$2; LOADGEN=${3:-build-load/bench/loadgen/sidetable-loadgen}
CLIENT="$(cd "$(dirname "$0")/../.." && pwd)/client/python"
D=$(mktemp -d); SP=""
cleanup() { [[ -n "$SP" ]] && kill "$SP" 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
"$BIN" --listen "tcp://127.0.0.1:$PORT" --data "$D/db" --durability os --http "127.0.0.1:$((PORT + 1))" \
  > "$D/log" 2>&1 &
SP=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$((PORT + 1))/health" > /dev/null && break; sleep 0.1; done
/usr/bin/python3 - "$PORT" "$CLIENT" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import sidetable
c = sidetable.Client('tcp://127.0.0.1:' + sys.argv[1])
c.create_table('scan', exist_ok=True)
for p in range(64):
    for r in range(20):
        c.insert_or_replace('scan', {'PartitionKey': 'p%d' % p, 'RowKey': 'r%d' % r, 'V': r})
PY
"$LOADGEN" --endpoint "tcp://127.0.0.1:$PORT" --table ins --mix insert=100 --depth 32 --partitions 1000 \
  --duration 6 --warmup 0 > "$D/lg.txt" 2>&1 &
LG=$!
sleep 0.5
/usr/bin/python3 - "$PORT" "$CLIENT" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[2])
import sidetable
c = sidetable.Client('tcp://127.0.0.1:' + sys.argv[1])
lat = []
end = time.time() + 5
while time.time() < end:
    t0 = time.perf_counter()
    page = c.query_page('scan', filter="RowKey eq 'r3'")
    lat.append((time.perf_counter() - t0) * 1e6)
lat.sort()
print("queries %d p50 %.0f us p90 %.0f us p99 %.0f us" %
      (len(lat), lat[len(lat) // 2], lat[int(len(lat) * 0.9)], lat[int(len(lat) * 0.99)]))
PY
wait "$LG"
grep -E "^insert" "$D/lg.txt" | head -1
curl -s "http://127.0.0.1:$((PORT + 1))/metrics" | grep -E "^sidetable_query_order_wait" || true
