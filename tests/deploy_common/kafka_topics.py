"""Runs a topic-creating shell script (the Kubernetes Job's, compose's
kafka-init's) against stand-ins for Kafka's kafka-topics.sh and
kafka-configs.sh, and returns what it asked Kafka to do.

No broker runs here; what this proves is that the script, as written, calls
the tools with the topics, partition counts, replication and settings its
environment names (a typo in a variable, a --config dropped, a topic never
created fails here). The stand-in answers --describe with the partition count
the script created the topic with (or `existing`, a topic that was there
before).

  topics = run(script, env, bin_dir="/opt/kafka/bin")
  topics["t"] == {"partitions": 12, "replication": 3, "create": {...}, "alter": {...}}
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

_STUB = r'''#!/bin/sh
# A stand-in for Kafka's kafka-topics.sh and kafka-configs.sh: logs its
# arguments (one call a line, separated by \037) and answers --describe.
tool=${0##*/}
us=$(printf '\037')
{ printf '%s' "$tool"; for a in "$@"; do printf '%s%s' "$us" "$a"; done; printf '\n'; } >> "$TOPICS_STUB_LOG"
[ "$tool" = kafka-topics.sh ] || exit 0
describe=; topic=; prev=
for a in "$@"; do
  [ "$a" = --describe ] && describe=1
  [ "$prev" = --topic ] && topic=$a
  prev=$a
done
[ -n "$describe" ] || exit 0
parts=$(printf '%s\n' "$TOPICS_STUB_EXISTING" | awk -F= -v t="$topic" '$1 == t { print $2 }')
[ -n "$parts" ] || parts=$(awk -F "$us" -v t="$topic" '{
  c = 0; p = ""; tp = ""
  for (i = 2; i <= NF; i++) {
    if ($i == "--create") c = 1
    if ($(i-1) == "--topic") tp = $i
    if ($(i-1) == "--partitions") p = $i
  }
  if (c && tp == t && p != "") { print p; exit }
}' "$TOPICS_STUB_LOG")
if [ -z "$parts" ]; then
  echo "Error while executing topic command : Topic '$topic' does not exist as expected" >&2
  exit 1
fi
printf 'Topic: %s\tTopicId: AAAAAAAAAAAAAAAAAAAAAA\tPartitionCount: %s\tReplicationFactor: 3\tConfigs: \n' \
  "$topic" "$parts"
'''


def _pairs(text):
    out = {}
    for kv in text.split(","):
        if kv:
            k, _, v = kv.partition("=")
            out[k] = v
    return out


_RUNS = {}


def run(script, env, bin_dir="/opt/kafka/bin", existing=None):
    """Returns (topics, error): topics by name as the script created and
    altered them; error is the script's failure (exit code and stderr) or None.
    The same script with the same environment runs once (self-tests ask often)."""
    key = (script, json.dumps(env, sort_keys=True, default=str), bin_dir, json.dumps(existing, sort_keys=True))
    if key not in _RUNS:
        _RUNS[key] = _run(script, env, bin_dir, existing)
    return copy.deepcopy(_RUNS[key])


def _run(script, env, bin_dir, existing):
    with tempfile.TemporaryDirectory() as d:
        for tool in ("kafka-topics.sh", "kafka-configs.sh"):
            path = os.path.join(d, tool)
            with open(path, "w") as f:
                f.write(_STUB)
            os.chmod(path, 0o755)
        log = os.path.join(d, "calls.log")
        open(log, "w").close()
        run_env = {k: str(v) for k, v in env.items()}
        run_env.update(PATH=os.environ.get("PATH", "/usr/bin:/bin"), TOPICS_STUB_LOG=log,
                       TOPICS_STUB_EXISTING="\n".join(f"{t}={n}" for t, n in (existing or {}).items()))
        r = subprocess.run(["/bin/sh", "-c", script.replace(bin_dir.rstrip("/") + "/", d + "/")], env=run_env,
                           capture_output=True, text=True, timeout=30)
        error = None if r.returncode == 0 else f"exit {r.returncode}: {r.stderr.strip()}"
        topics = {}
        for line in open(log):
            a = line.rstrip("\n").split("\x1f")
            tool, args = a[0], a[1:]

            def value(flag):
                return args[args.index(flag) + 1] if flag in args else None

            if tool == "kafka-topics.sh" and "--create" in args:
                t = topics.setdefault(value("--topic"), {"create": {}, "alter": {}})
                t["partitions"] = int(value("--partitions"))
                t["replication"] = int(value("--replication-factor"))
                t["bootstrap"] = value("--bootstrap-server")
                for i, x in enumerate(args):
                    if x == "--config":
                        t["create"].update(_pairs(args[i + 1]))
            elif tool == "kafka-configs.sh" and "--alter" in args and value("--entity-type") == "topics":
                t = topics.setdefault(value("--entity-name"), {"create": {}, "alter": {}})
                t["alter"].update(_pairs(value("--add-config") or ""))
        return topics, error


if __name__ == "__main__":
    print(run(sys.stdin.read(), dict(os.environ)))
