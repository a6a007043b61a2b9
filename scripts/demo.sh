#!/usr/bin/env bash
# The main job: install what is missing, build, start a sidecar on the
# embedded development configuration, run the demo against it, stop it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh sidetable sidetable-demo

work="$(mktemp -d /tmp/sidetable-demo-XXXXXX)"
build/sidecar/sidetable --config configs/sidetable.dev.yaml --data "$work/data" \
  --listen 'tcp://127.0.0.1:*' --http 127.0.0.1:0 --ready-file "$work/ready" \
  2> "$work/sidecar.log" &
sidecar=$!
trap 'kill -TERM $sidecar 2>/dev/null; wait $sidecar 2>/dev/null || true' EXIT

for _ in $(seq 1 200); do [ -s "$work/ready" ] && break; sleep 0.05; done
[ -s "$work/ready" ] || { echo "sidecar did not start:"; cat "$work/sidecar.log"; exit 1; }
endpoint="$(awk '$1=="zmq"{print $2; exit}' "$work/ready")"
http="$(awk '$1=="http"{print $2; exit}' "$work/ready")"
echo "sidecar running: $endpoint (health: http://$http/health), data in $work/data"
echo

build/tools/sidetable-demo --endpoint "$endpoint"

echo
echo "health: $(curl -s "http://$http/health" 2>/dev/null || echo unavailable)"
kill -TERM $sidecar
wait $sidecar
trap - EXIT
echo "sidecar stopped cleanly; its log: $work/sidecar.log"
