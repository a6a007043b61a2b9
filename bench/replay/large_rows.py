#!/usr/bin/python3
"""Change-log pages of large rows: fill a sidecar with entities of ~900 KB,
then time reading the whole change log back in pages (docs/performance.md,
"Pages of large rows").

    /usr/bin/python3 bench/replay/large_rows.py fill tcp://127.0.0.1:7611 300
    # restart the sidecar (so nothing comes from its in-memory tail), then
    /usr/bin/python3 bench/replay/large_rows.py read tcp://127.0.0.1:7611

Needs python3-zmq and python3-msgpack (Debian's /usr/bin/python3).
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "client", "python"))
from sidetable import Client, Entity  # noqa: E402


def fill(endpoint, n):
    with Client(endpoint) as c:
        c.create_table("Big", exist_ok=True)
        for i in range(n):
            # 15 x 60,000 random bytes: ~900 KB, incompressible.
            props = {f"B{j}": os.urandom(60000) for j in range(15)}
            c.upsert("Big", Entity("p%d" % (i % 10), "r%05d" % i, props))
    print(f"filled {n}")


def read(endpoint):
    with Client(endpoint, timeout=120) as c:
        start, frm, n = time.time(), 1, 0
        while True:
            recs = c.read_changes(frm, max=1000).records
            if not recs:
                break
            n += len(recs)
            frm = recs[-1]["lsn"] + 1
        print(f"{n} records in {time.time() - start:.2f} s")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("fill", "read"):
        sys.exit(__doc__)
    if sys.argv[1] == "fill":
        fill(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 300)
    else:
        read(sys.argv[2])
