# shellcheck shell=bash disable=SC2034  # what it sets is read by the scripts that source it
# Sourced by ab_pairs.sh, sustained.sh, cpu_per_op.sh and storage_floor.sh:
# the compare bench's two load shapes, starting a sidecar on a free loopback
# port, and a process's CPU per operation.

# The two shapes the compare bench runs one after the other; INSERT_SHAPE is
# the insert load without its table, for a script that names one per round.
INSERT_SHAPE=(--mix insert=100 --connections 1 --depth 32 --partitions 1000)
LOAD_INSERT=(--table ins "${INSERT_SHAPE[@]}")
LOAD_EGT=(--table egt --mix batch=100 --batch-size 100 --connections 1 --depth 1 --partitions 1000)

# start_sidecar BIN ENVS ARGS DATA DURABILITY DIR: starts BIN (with the
# environment ENVS and extra arguments ARGS, word lists) on DATA, its ready
# file and log in DIR. Sets SP (the PID started), SPID (the sidecar's own,
# from its ready file) and ENDPOINT; exits 1 with the log if it did not start.
start_sidecar() {
  local bin="$1" envs="$2" args="$3" data="$4" dur="$5" dir="$6" i
  rm -f "$dir/ready"
  # Any free port: the sidecar writes the one it bound into its ready file.
  # shellcheck disable=SC2086  # $envs and $args are word lists by design
  env $envs "$bin" $args --listen 'tcp://127.0.0.1:*' --data "$data" --durability "$dur" \
    --http '' --ready-file "$dir/ready" --log-level warn > "$dir/log" 2>&1 &
  SP=$!
  for ((i = 0; i < 300; i++)); do grep -qs '^pid' "$dir/ready" && break; sleep 0.05; done
  SPID="$(sed -n 's/^pid //p' "$dir/ready" 2>/dev/null || true)"
  ENDPOINT="$(sed -n 's/^zmq //p' "$dir/ready" 2>/dev/null | head -1 || true)"
  if [[ -z "$SPID" || -z "$ENDPOINT" ]]; then
    echo "the sidecar did not start:" >&2; cat "$dir/log" >&2; exit 1
  fi
}

# proc_cpu PID: the process's user + system CPU so far, in seconds.
proc_cpu() { awk -v t="$(getconf CLK_TCK)" '{print ($14+$15)/t}' "/proc/$1/stat"; }
# us_per_op SECONDS OPS: seconds of CPU (an expression) over OPS, in µs.
us_per_op() { echo "scale=1; ($1)*1000000/$2" | bc; }
