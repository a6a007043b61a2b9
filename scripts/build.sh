#!/usr/bin/env bash
# Configures and builds sidetable into build/ (Release with debug info).
# Extra arguments go to ninja (e.g. a target name).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
ninja -C build -j"${JOBS:-$(nproc)}" "$@"
