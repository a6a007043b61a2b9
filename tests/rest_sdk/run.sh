#!/usr/bin/env bash
# tests/rest_sdk/run.sh: the @azure/data-tables suite and the differential test against
# sidetable's REST gateway (issue 18). scripts/test.sh runs it after ctest.
#
#   tests/rest_sdk/run.sh [--target sidetable|azurite] [node --test arguments...]
#
# SIDETABLE_BIN: the sidecar (default build/sidecar/sidetable). It must have --rest:
# a sidecar without the gateway fails here, loudly, instead of passing by testing
# nothing. --target azurite runs the suite against Azurite alone (the differential
# test still starts both). Installs the locked packages with npm ci when
# node_modules is missing or older than package-lock.json.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TARGET="${REST_TARGET:-sidetable}"
if [[ "${1:-}" == "--target" ]]; then TARGET="$2"; shift 2; fi
export REST_TARGET="$TARGET"
export SIDETABLE_BIN="${SIDETABLE_BIN:-$ROOT/build/sidecar/sidetable}"

command -v node >/dev/null || { echo "rest_sdk: node not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
command -v npm >/dev/null || { echo "rest_sdk: npm not found (scripts/install-deps.sh installs it)" >&2; exit 1; }

# The differential test always needs sidetable; so does REST_TARGET=sidetable.
if [[ ! -x "$SIDETABLE_BIN" ]]; then
  echo "rest_sdk: no sidetable binary at $SIDETABLE_BIN (build it, or set SIDETABLE_BIN)" >&2; exit 1
fi
if ! "$SIDETABLE_BIN" --help 2>&1 | grep -q -- '--rest'; then
  echo "rest_sdk: FAIL: $SIDETABLE_BIN has no --rest option: this sidecar has no REST gateway (issue 18)." >&2
  echo "rest_sdk: the @azure/data-tables suite cannot run against it; see tests/rest_sdk/README.md." >&2
  exit 1
fi

# Node 18 (Debian bookworm's nodejs) has no global crypto by default; the Azure SDK's
# dependencies need it (they declare node >= 20 but work on 18 with this flag).
NODE_MAJOR="$(node -p 'process.versions.node.split(".")[0]')"
if (( NODE_MAJOR < 20 )); then
  export NODE_OPTIONS="--experimental-global-webcrypto ${NODE_OPTIONS:-}"
fi

cd "$HERE"
if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
# One file at a time: each starts its own server(s); the machine has 2 cores.
# (--test-concurrency is Node >= 20.10; Node 18 runs files one per spare core.)
CONC=()
if node --help 2>/dev/null | grep -q -- '--test-concurrency'; then CONC=(--test-concurrency=1); fi
# A bound on the whole run (normally about a minute): timeout signals the process group,
# and the harness stops its servers on SIGTERM.
exec timeout --kill-after=15 "${REST_SDK_TIMEOUT:-600}" node --test "${CONC[@]}" "$@"
