#!/usr/bin/env python3
"""Memory the sidecar holds per idle connection (issue 17).

Opens N connections to a running sidecar (one ZeroMQ context, a DEALER
socket each), sends one Ping on each so the sidecar knows every peer, then
leaves them idle and reads the sidecar's RSS from /proc before and after:

    idle_connections.py --endpoint tcp://127.0.0.1:5555 --pid <sidecar pid> [--connections 1000]

Prints one line, and with --json appends
{"label":..., "connections":N, "rss_before_kb":..., "rss_after_kb":..., "kb_per_connection":...}.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "client", "python"))
import zmq  # noqa: E402

import sidetable  # noqa: E402


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--label", default="idle-connections")
    ap.add_argument("--json")
    a = ap.parse_args()
    ctx = zmq.Context()
    ctx.setsockopt(zmq.MAX_SOCKETS, a.connections + 64)
    time.sleep(0.5)
    before = rss_kb(a.pid)
    clients = []
    for _ in range(a.connections):
        c = sidetable.Client(a.endpoint, context=ctx, timeout=10.0)
        c.ping()
        clients.append(c)
    time.sleep(1.0)  # idle
    after = rss_kb(a.pid)
    per = (after - before) / a.connections
    print(f"{a.label}: {a.connections} idle connections: sidecar RSS {before / 1024:.1f} -> "
          f"{after / 1024:.1f} MB, {per:.1f} KB per connection")
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps({"label": a.label, "connections": a.connections, "rss_before_kb": before,
                                "rss_after_kb": after, "kb_per_connection": per}) + "\n")
    for c in clients:
        c.close()
    ctx.term()


if __name__ == "__main__":
    main()
