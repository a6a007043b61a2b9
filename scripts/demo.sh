#!/usr/bin/env bash
# The main job: install what is missing, build, and run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh engine_demo
exec build/tools/engine_demo "$@"
