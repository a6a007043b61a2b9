#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build-fuzz/) and runs each for
# the given number of seconds (default 60) on its seed corpus.
#   scripts/fuzz.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSIDETABLE_FUZZ=ON -DSIDETABLE_BUILD_TESTS=OFF -DSIDETABLE_BUILD_BENCH=OFF >/dev/null
ninja -C build-fuzz -j"$(nproc)" fuzz_targets
for target in build-fuzz/tests/fuzz/*_fuzz; do
  name="$(basename "$target")"
  corpus="tests/fuzz/corpus/${name%_fuzz}"
  work="$(mktemp -d)"
  cp -r "$corpus"/. "$work"/ 2>/dev/null || true
  echo "fuzzing $name for ${secs}s"
  "$target" -max_total_time="$secs" -print_final_stats=0 "$work" 2>&1 | tail -n 2
  rm -rf "$work"
done
