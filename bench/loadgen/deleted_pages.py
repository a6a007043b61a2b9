#!/usr/bin/python3
"""Query pages over recently deleted rows: fill one partition with N small
entities, delete all but the last three (EGTs of 100), then time a `$top=1`
query of the partition followed to its end, and its first page alone
(docs/performance.md, "Deleted rows and the skip bound").

    /usr/bin/python3 bench/loadgen/deleted_pages.py tcp://127.0.0.1:7611 200000

Run it against a fresh sidecar (the deletes are then in its memtable, the
worst case: a tombstone and the row it hides per deleted row). Needs
python3-zmq and python3-msgpack (Debian's /usr/bin/python3).
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "client", "python"))
from sidetable import Batch, Client, Entity  # noqa: E402


def main(endpoint, n):
    with Client(endpoint, timeout=120) as c:
        c.create_table("Queue", exist_ok=True)
        for at in range(0, n, 100):
            b = Batch("Queue")
            for i in range(at, min(n, at + 100)):
                b.insert(Entity("q", "r%07d" % i, {"n": i}))
            c.execute(b)
        for at in range(0, n - 3, 100):
            b = Batch("Queue")
            for i in range(at, min(n - 3, at + 100)):
                b.delete("q", "r%07d" % i)
            c.execute(b)
        flt = "PartitionKey eq 'q'"
        t0 = time.perf_counter()
        first = c.query_page("Queue", flt, top=1)
        t1 = time.perf_counter()
        pages, rows = 0, []
        for page in c.query_pages("Queue", flt, top=1):
            pages += 1
            rows += [e["RowKey"] for e in page.entities]
        t2 = time.perf_counter()
        assert rows == ["r%07d" % i for i in range(n - 3, n)], rows
        print(f"deleted {n - 3}: first page {1000 * (t1 - t0):.1f} ms ({len(first.entities)} rows), "
              f"whole query {1000 * (t2 - t1):.1f} ms in {pages} pages, "
              f"longest page {1000 * (t2 - t1) / max(pages, 1):.1f} ms on average")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
