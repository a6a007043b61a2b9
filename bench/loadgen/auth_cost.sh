#!/bin/sh
# The cost of authentication per request (docs/performance.md, "Cost of
# authentication"): two sidecars in one run, one with auth.mode off and one
# with tokens, the same loadgen workload against each, alternated ROUNDS
# times; prints each round's p50 and the medians.
#   bench/loadgen/auth_cost.sh [BUILD_DIR] [SECONDS] [ROUNDS]
set -eu
BUILD=${1:-build}; SECS=${2:-3}; ROUNDS=${3:-3}
SC=$BUILD/sidecar/sidetable; LG=$BUILD/bench/loadgen/sidetable-loadgen; CLI=$BUILD/tools/cli/sidetable-cli
T=$(mktemp -d); trap 'kill $OFF $ON 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
head -c 32 /dev/urandom | base64 > "$T/k1.key"; chmod 600 "$T/k1.key"
printf 'auth:\n  mode: tokens\n  keys:\n    - {id: k1, file: %s}\n' "$T/k1.key" > "$T/on.yaml"
start() {  # name, extra args
  name=$1; shift
  "$SC" --data "$T/$name" --listen tcp://127.0.0.1:0 --http "" --durability os --log-level warn \
    --ready-file "$T/$name.ready" "$@" > "$T/$name.log" 2>&1 &
  echo $!
}
OFF=$(start off); ON=$(start on --config "$T/on.yaml")
for f in off on; do i=0; until grep -q '^pid' "$T/$f.ready" 2>/dev/null; do i=$((i+1)); [ $i -lt 100 ] || exit 1; sleep 0.1; done; done
EP_OFF=$(sed -n 's/^zmq //p' "$T/off.ready" | head -1); EP_ON=$(sed -n 's/^zmq //p' "$T/on.ready" | head -1)
TOKEN=$("$CLI" token issue --key-file "$T/k1.key" --key-id k1 --table bench --perms raudm --expiry 1h \
  --tenant bench --identity bench)
run() {  # endpoint [--token T]: p50 of Get, one connection, depth 1
  "$LG" --endpoint "$@" --table bench --mix get=100 --preload 1000 --duration "$SECS" --warmup 1 \
    --connections 1 --depth 1 | awk '$1 == "get" { print $5 }'
}
offs=""; ons=""
for r in $(seq "$ROUNDS"); do
  o=$(run "$EP_OFF"); n=$(run "$EP_ON" --token "$TOKEN")
  echo "round $r: Get p50 off ${o} us, tokens ${n} us"; offs="$offs $o"; ons="$ons $n"
done
median() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median Get p50: off $(median $offs) us, tokens $(median $ons) us"
