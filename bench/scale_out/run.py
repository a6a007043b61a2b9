#!/usr/bin/python3
"""Scale-out bench (issue 19; docs/performance.md, "Scale-out").

Runs 1, 2 and 3 clustered sidecars around one mock Kafka cluster (its own
process, sidetable-kafka-mock) on this machine, and measures:
  - insert and read throughput through all members at once (one loadgen per
    member, 32 requests in flight in total), the server CPU per request
    summed over the members, and the share of requests forwarded;
  - replicated acknowledgement (cluster.acks: replicated) against local-only;
  - hand-over: after SIGKILL of one member of three, the time until every
    shard has a serving owner again (as the survivors' /cluster pages say).

Every loop is bounded; everything started is killed at the end. Loopback only.
Usage: bench/scale_out/run.py --build build-load [--duration 5] [--repeats 3]
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def http_get(addr, path, timeout=2.0):
    with urllib.request.urlopen(f"http://{addr}{path}", timeout=timeout) as r:
        return r.read().decode()


def metric(text, name):
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


class Member:
    def __init__(self, args, work, kafka, index, acks, shards):
        self.args, self.index = args, index
        self.data = os.path.join(work, f"m{index}")
        self.ready = self.data + ".ready"
        self.config = self.data + ".yaml"
        with open(self.config, "w") as f:
            f.write(f"""sidecar:
  id: bench-m{index}
  listen: ["tcp://127.0.0.1:*"]
  http: 127.0.0.1:0
storage:
  path: {self.data}
kafka:
  bootstrap: {kafka}
  topic: sidetable.{{service}}.changes
  partitions: {shards}
cluster:
  service: bench
  acks: {acks}
  rebalance_wait_ms: 5000
  session_timeout_ms: {args.session_timeout_ms}
log:
  level: warn
""")
        self.proc = None
        self.endpoint = self.http = None

    def start(self):
        if os.path.exists(self.ready):
            os.unlink(self.ready)
        log = open(self.data + ".log", "a")
        self.proc = subprocess.Popen(
            [os.path.join(self.args.build, "sidecar/sidetable"), "--config", self.config, "--ready-file", self.ready],
            stdout=log, stderr=log)
        deadline = time.time() + 30
        while time.time() < deadline:
            if os.path.exists(self.ready):
                lines = dict(l.split(" ", 1) for l in open(self.ready).read().splitlines() if " " in l)
                if "pid" in lines:
                    self.endpoint, self.http = lines["zmq"], lines["http"]
                    return
            if self.proc.poll() is not None:
                raise RuntimeError(f"member {self.index} exited: see {self.data}.log")
            time.sleep(0.05)
        raise RuntimeError(f"member {self.index} not ready in 30 s")

    def cluster(self):
        return json.loads(http_get(self.http, "/cluster"))

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)


def stable(members, shards):
    """Every shard served by exactly one member, and every member agrees."""
    try:
        views = [m.cluster() for m in members]
    except Exception:
        return False
    serving = {}
    for v in views:
        for s in v.get("serving", []):
            if s in serving:
                return False
            serving[s] = v.get("member")
    if sorted(serving) != list(range(shards)):
        return False
    for v in views:
        owners = v.get("owners", {})
        for s, who in serving.items():
            if owners.get(str(s), {}).get("member") != who:
                return False
    return True


def wait_stable(members, shards, limit=60):
    start = time.time()
    while time.time() - start < limit:
        if stable(members, shards):
            return time.time() - start
        time.sleep(0.1)
    raise RuntimeError("the cluster did not stabilise in %d s" % limit)


def load(args, members, mix, depth_total, label):
    """One loadgen per member at once; returns (ops/s, cpu µs/op, forwarded share, busy)."""
    per = max(1, depth_total // len(members))
    before_cpu = [cpu_seconds(m.proc.pid) for m in members]
    before_fwd = sum(metric(http_get(m.http, "/metrics"), "sidetable_cluster_forwarded_total") for m in members)
    jobs = []
    for i, m in enumerate(members):
        out = os.path.join(args.work, f"{label}-{i}.json")
        cmd = [os.path.join(args.build, "bench/loadgen/sidetable-loadgen"), "--endpoint", m.endpoint,
               "--table", "bench", "--mix", mix, "--connections", "1", "--depth", str(per),
               "--duration", str(args.duration), "--warmup", "1", "--json", out, "--seed", str(1000 + i)]
        if mix.startswith("get"):
            cmd += ["--preload", "2000"]
        jobs.append((subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), out))
    results = []
    for p, out in jobs:
        _, err = p.communicate(timeout=args.duration + 120)
        if p.returncode != 0:
            raise RuntimeError("loadgen failed: " + err.decode()[-2000:])
        results.append(json.load(open(out)))
    cpu = sum(cpu_seconds(m.proc.pid) - b for m, b in zip(members, before_cpu))
    fwd = sum(metric(http_get(m.http, "/metrics"), "sidetable_cluster_forwarded_total") for m in members) - before_fwd
    ops_s = sum(r["ops_per_s"] for r in results)
    # CPU over the whole run (warm-up and preload included) per measured op: an upper bound.
    ops = sum(r["ops_per_s"] * r["seconds"] for r in results)
    busy = sum(r.get("server_busy", 0) for r in results)
    return ops_s, cpu * 1e6 / max(ops, 1), fwd / max(ops, 1), busy


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-load")
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--shards", type=int, default=12)
    ap.add_argument("--session-timeout-ms", type=int, default=6000)
    ap.add_argument("--members", default="1,2,3")
    args = ap.parse_args()
    args.work = tempfile.mkdtemp(prefix="st-scale-out-")
    rows = []
    kafka_proc = None
    try:
        for acks in ("replicated", "local"):
            for n in [int(x) for x in args.members.split(",")]:
                if acks == "local" and n != 3:
                    continue
                for rep in range(args.repeats):
                    boot = os.path.join(args.work, f"kafka-{acks}-{n}-{rep}.bootstrap")
                    kafka_proc = subprocess.Popen([os.path.join(args.build, "bench/scale_out/sidetable-kafka-mock"),
                                                   "--brokers", "3", "--bootstrap-file", boot])
                    deadline = time.time() + 10
                    while not os.path.exists(boot) and time.time() < deadline:
                        time.sleep(0.05)
                    kafka = open(boot).read().strip()
                    members = [Member(args, args.work, kafka, f"{acks}{n}{rep}{i}", acks, args.shards) for i in range(n)]
                    try:
                        for m in members:
                            m.start()
                        wait_stable(members, args.shards)
                        ins = load(args, members, "insert=100", 32, f"ins-{acks}-{n}-{rep}")
                        get = load(args, members, "get=100", 32, f"get-{acks}-{n}-{rep}")
                        handover = None
                        if n == 3:
                            members[0].kill()
                            t0 = time.time()
                            wait_stable(members[1:], args.shards, limit=90)
                            handover = time.time() - t0
                        rows.append({"acks": acks, "members": n, "repeat": rep, "insert": ins, "get": get,
                                     "handover_s": handover})
                        print(json.dumps(rows[-1]), flush=True)
                    finally:
                        for m in members:
                            m.kill()
                        kafka_proc.send_signal(signal.SIGTERM)
                        kafka_proc.wait(10)
        print("\nmedians (ops/s, server CPU µs per op over all members, forwarded share):")
        for acks in ("replicated", "local"):
            for n in (1, 2, 3):
                rs = [r for r in rows if r["acks"] == acks and r["members"] == n]
                if not rs:
                    continue
                med = lambda k, i: statistics.median(r[k][i] for r in rs)
                ho = [r["handover_s"] for r in rs if r["handover_s"] is not None]
                print(f"acks={acks:10s} members={n}: insert {med('insert', 0):9.0f}/s cpu {med('insert', 1):6.1f} µs "
                      f"fwd {med('insert', 2):.2f} | get {med('get', 0):9.0f}/s cpu {med('get', 1):6.1f} µs "
                      f"fwd {med('get', 2):.2f}" + (f" | hand-over {statistics.median(ho):.1f} s" if ho else ""))
    finally:
        if kafka_proc and kafka_proc.poll() is None:
            kafka_proc.kill()
        shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
