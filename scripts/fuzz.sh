#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build-fuzz/) and runs each on its
# seed corpus.
#   scripts/fuzz.sh [seconds]        explore for that long per target (default 60)
#   scripts/fuzz.sh --runs N         N inputs per target with a fixed seed:
#                                    repeatable, what the test suite runs
set -euo pipefail
cd "$(dirname "$0")/.."
limit=(-max_total_time="${1:-60}")
if [ "${1:-}" = "--runs" ]; then limit=(-runs="$2" -seed=1); fi
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSIDETABLE_FUZZ=ON -DSIDETABLE_BUILD_TESTS=OFF -DSIDETABLE_BUILD_BENCH=OFF >/dev/null
ninja -C build-fuzz -j"$(nproc)" fuzz_targets
status=0
for target in build-fuzz/tests/fuzz/*_fuzz; do
  name="$(basename "$target")"
  corpus="tests/fuzz/corpus/${name%_fuzz}"
  work="$(mktemp -d)"
  cp -r "$corpus"/. "$work"/ 2>/dev/null || true
  echo "fuzzing $name (${limit[*]})"
  if ! "$target" "${limit[@]}" -print_final_stats=0 -artifact_prefix="$work/" "$work" > "$work.log" 2>&1; then
    echo "$name FAILED:"; cat "$work.log"; ls "$work"/crash-* 2>/dev/null || true
    status=1
  else
    tail -n 1 "$work.log"
  fi
  rm -rf "$work" "$work.log"
done
exit $status
