#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test.
# This is the README's test command and what CI (.ci/run) runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step says how long it took, so a CI log shows where the budget goes
# (docs/development.md).
step_start=$SECONDS
step_done() { echo "== $1: $((SECONDS - step_start)) s (total $SECONDS s)"; step_start=$SECONDS; }
scripts/install-deps.sh
step_done "install-deps"
scripts/build.sh
step_done "build"

# 1. Unit, integration and end-to-end tests (GoogleTest through CTest).
(cd build && ctest -j"$(nproc)" --output-on-failure --timeout 900)
step_done "ctest"

# 1b. The @azure/data-tables suite and the differential test against the REST gateway
# (issue 18; tests/rest_sdk/README.md): npm ci from the committed lockfile, then Node's
# test runner against build/sidecar/sidetable --rest and Azurite. It fails (never passes
# silently) when the sidecar has no --rest. SIDETABLE_REST_SDK=0 skips it, saying so.
if [[ "${SIDETABLE_REST_SDK:-1}" == 0 ]]; then
  echo "rest_sdk: SKIPPED (SIDETABLE_REST_SDK=0)"
else
  SIDETABLE_BIN="$PWD/build/sidecar/sidetable" tests/rest_sdk/run.sh
fi
step_done "rest_sdk"

# 2. A short libFuzzer run of each fuzz target (clang build of its own).
scripts/fuzz.sh --runs 300000
step_done "fuzz"

# 3. The benchmarks still run (a smoke run; figures come from bench/, not here).
build/bench/engine_bench --quick >/dev/null
build/bench/query_bench --quick >/dev/null
build/bench/codec_bench --quick >/dev/null
build/bench/crc32c_bench --quick >/dev/null
build/bench/replay/sidetable-replay-bench --quick >/dev/null
echo "benchmark smoke run: ok"
step_done "benchmark smoke"
