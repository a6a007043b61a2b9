#!/usr/bin/python3
"""Creates and deletes one table N times on a running sidecar, 50 ms apart,
and prints the median and largest time of one table operation.

Run it beside a sidetable-loadgen load to see what the barrier of a
CreateTable or DeleteTable (sidecar/worker_barrier.h) costs the load
(docs/performance.md, "Table operations and the worker barrier"):

    bench/loadgen/table_ops_churn.py tcp://127.0.0.1:27700 80
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../client/python"))
import sidetable  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: table_ops_churn.py ENDPOINT PAIRS")
    client = sidetable.Client(sys.argv[1])
    pairs = int(sys.argv[2])
    took = []
    for _ in range(pairs):
        start = time.monotonic()
        client.create_table("Churn")
        client.delete_table("Churn")
        took.append((time.monotonic() - start) / 2)
        time.sleep(0.05)
    took.sort()
    print("table ops: %d pairs, median %.2f ms, max %.2f ms"
          % (pairs, took[len(took) // 2] * 1000, took[-1] * 1000))
    client.close()


if __name__ == "__main__":
    main()
