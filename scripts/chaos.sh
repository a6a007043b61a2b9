#!/usr/bin/env bash
# The chaos campaign (scripts/chaos.py --help); not part of CI.
# Uses Debian's python3 (python3-zmq, python3-msgpack) and the repo's client.
root="$(cd "$(dirname "$0")/.." && pwd)"
export PYTHONPATH="$root/client/python${PYTHONPATH:+:$PYTHONPATH}"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" "$(dirname "$0")/chaos.py" --bin "$root/build/sidecar/sidetable" "$@"
