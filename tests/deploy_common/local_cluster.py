"""Real processes of a scale-out cluster on loopback, for tests: the
Kafka stand-in (sidetable-kafka-mock) and `sidetable` members started the
way docs/scale-out.md ("Try a cluster on one machine") starts them, on
ports the system picks, read back from ready files.

Every child is started with the parent-death signal set (SIGKILL when the
test process dies, e.g. killed by CTest's timeout), and the mock also
stops when its stdin pipe closes, so nothing outlives a test run.

Used by tests/tools/kafka_mock_test.py and tests/scale_out/rest_cluster_test.py.
"""

import ctypes
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    # In the child, before exec: the kernel sends SIGKILL when the process
    # that started it exits, however it exits.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def read_ready(path, deadline_s, proc):
    """The ready file's lines as (key, value) pairs once it exists; None if
    `proc` exited or the deadline passed first."""
    until = time.time() + deadline_s
    while time.time() < until:
        if os.path.exists(path):
            with open(path) as f:
                return [tuple(line.rstrip("\n").split(" ", 1)) for line in f if line.strip()]
        if proc.poll() is not None:
            return None
        time.sleep(0.05)
    return None


def http_get(address, path):
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=2) as r:
            return r.read().decode()
    except OSError:
        return None


def stop(proc, sig=signal.SIGTERM, timeout=40):
    """Stops `proc` (SIGTERM, then SIGKILL after `timeout`); its exit code,
    or None when it had to be killed."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None
    finally:
        for f in (proc.stdin, proc.stdout):
            if f:
                f.close()


def start_mock(mock, args, log_path):
    """sidetable-kafka-mock with `args`, stopping when this process's pipe
    to it closes (--stop-on-stdin-eof) or this process dies."""
    with open(log_path, "a") as log:
        return subprocess.Popen([mock, "--stop-on-stdin-eof", *args], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=log, text=True, preexec_fn=_die_with_parent)


def start_member(sidetable, args, log_path):
    """A `sidetable` process with `args`, its output in `log_path`."""
    with open(log_path, "w") as log:
        return subprocess.Popen([sidetable, *args], stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=_die_with_parent)


def wait_stable(members, shards, deadline_s):
    """Waits until every member (dicts with "http" and "proc") sees every
    member and every shard is served by exactly one: the members' /cluster
    pages, or raises AssertionError saying what was seen (a member that
    exited, or the last pages)."""
    states = []
    until = time.time() + deadline_s
    while time.time() < until:
        for m in members:
            if m["proc"].poll() is not None:
                raise AssertionError(f"{m.get('name')} exited {m['proc'].returncode}")
        pages = [http_get(m["http"], "/cluster") for m in members]
        if all(pages):
            states = [json.loads(p) for p in pages]
            served = sorted(s for st in states for s in st["serving"])
            if served == list(range(shards)) and all(len(st["members"]) == len(members) for st in states):
                return states
        time.sleep(0.2)
    raise AssertionError(f"no stable cluster within {deadline_s} s: {states}")


def metric(address, name):
    """The sum of a metric's samples on a member's /metrics (0 when absent)."""
    total = 0.0
    for line in (http_get(address, "/metrics") or "").splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def murmur2(data):
    """Kafka's murmur2 (seed 0x9747b28c) as a signed 32-bit int, as the
    Java client computes it (common/kafka/partitioner.h)."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = length % 4
    base = length - tail
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def shard_of(table, pk, shards):
    """The shard of (table as created, PartitionKey): docs/scale-out.md, "Shards"."""
    return (murmur2(f"{table}/{pk}".encode()) & 0x7FFFFFFF) % shards
