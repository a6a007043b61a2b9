"""A smoke run of a scale-out example's own configuration: its sidecars, as
the example starts them (the mounted config, each member's flags), form one
cluster on this machine around a Kafka stand-in (sidetable-kafka-mock, the
librdkafka mock with three brokers, tools/kafka-mock/), and answer for every
row.

What stands in for what: each member gets its own loopback address
(127.x.y.1, .2, ...) where the example has a Pod IP or a container's
address, and binds there what the example binds on 0.0.0.0; kafka.bootstrap
is the mock's; --data and --http are added. Everything else is the example's:
the file, the member ids, the advertised endpoints, the ports, acks.

Checks: every member lists every member at the address it was meant to
advertise; every shard is served by exactly one member; a table created
through one member is listed by every member; rows written through one
member (most of them forwarded to their owners) are read back through every
member, by key and by a query without a PartitionKey.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "client", "python"))


def _get(address, path):
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=2) as r:
            return r.read().decode()
    except OSError:
        return None


def run(config, members, kafka_mock, sidetable, stable_within_s=120):
    """config: the parsed sidecar configuration; members: one dict per member
    with name, args (the example's, addresses already replaced), ip,
    advertise (what it must advertise) and endpoint (its ZeroMQ port for
    applications). Returns a list of problems (empty: it worked)."""
    from sidetable import Client, Entity  # the Python client (python3-zmq, python3-msgpack)

    problems = []
    cl = config["cluster"]
    service = cl["service"]
    shards = int(config["kafka"]["partitions"])
    change_topic = config["kafka"]["topic"].replace("{service}", service)
    cluster_topic = cl.get("topic", "sidetable.{service}.cluster").replace("{service}", service)
    state_topic = cl.get("state_topic", "sidetable.{service}.state").replace("{service}", service)
    topics = [(change_topic, shards), (cluster_topic, 1)] + ([(state_topic, shards)] if state_topic else [])
    workdir = tempfile.mkdtemp(prefix="deploy-smoke-")
    # Ports the system picks (--port 0): this run's members use the
    # example's own ports on addresses of their own. Its stdin is this
    # process's pipe: a run killed by CTest's timeout takes the mock with it.
    mock = subprocess.Popen([kafka_mock, "--port", "0", "--log-level", "warn", "--stop-on-stdin-eof"] +
                            [a for name, n in topics for a in ("--topic", f"{name}={n}")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    procs = []
    try:
        bootstrap = mock.stdout.readline().strip()
        if not bootstrap:
            return [f"smoke: the Kafka stand-in did not start (exit {mock.poll()})"]
        config = dict(config, kafka=dict(config["kafka"], bootstrap=bootstrap))
        path = os.path.join(workdir, "sidetable.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        http_port = config["sidecar"]["http"].rsplit(":", 1)[1]
        for m in members:
            args = [path if i > 0 and m["args"][i - 1] == "--config" else a for i, a in enumerate(m["args"])]
            data = os.path.join(workdir, m["name"])
            os.makedirs(data)
            m["http"] = f"{m['ip']}:{http_port}"
            args += ["--data", data, "--http", m["http"], "--log-format", "text"]
            m["log"] = os.path.join(workdir, m["name"] + ".log")
            with open(m["log"], "w") as log:
                procs.append(subprocess.Popen([sidetable] + args, stdout=log, stderr=subprocess.STDOUT))
            print(f"smoke: {m['name']}: sidetable {' '.join(args)}")

        # Stable: every member sees every member, every shard served once.
        deadline = time.time() + stable_within_s
        states = []
        while time.time() < deadline:
            if any(p.poll() is not None for p in procs):
                break
            pages = [_get(m["http"], "/cluster") for m in members]
            if all(pages):
                states = [json.loads(p) for p in pages]
                served = sorted(s for st in states for s in st.get("serving", []))
                if served == list(range(shards)) and all(len(st.get("members", {})) == len(members)
                                                         for st in states):
                    break
            time.sleep(0.5)
        else:
            problems.append(f"smoke: no stable cluster within {stable_within_s} s: {states}")
        for m, p in zip(members, procs):
            if p.poll() is not None:
                with open(m["log"]) as f:
                    problems.append(f"smoke: {m['name']} exited {p.returncode}: {f.read()[-2000:]}")
        if problems:
            return problems
        print(f"smoke: stable after {stable_within_s - (deadline - time.time()):.0f} s")
        for m, st in zip(members, states):
            print(f"smoke: {m['name']} serves {st['serving']}, sees {st['members']}")
            for other in members:
                seen = st["members"].get(other["name"])
                if seen != other["advertise"]:
                    problems.append(f"smoke: {m['name']} sees {other['name']} at {seen}, "
                                    f"not {other['advertise']}")
        if problems:
            return problems

        # One table store: written through one member, read through each.
        # The clients ride out a rebalance as an application should: a
        # member that misses heartbeats for session_timeout_ms (a loaded CI
        # machine) loses its shards until the group settles again, and
        # meanwhile every request for them is ServerBusy NotOwner after the
        # sidecar's own rebalance_wait_ms (seen once in CI: shard 5 for
        # more than the client's default five retries). So retries that
        # span a session timeout and a rejoin; each attempt is bounded.
        session_s = int(cl.get("session_timeout_ms", 10000)) / 1000.0
        wait_s = int(cl.get("rebalance_wait_ms", 2000)) / 1000.0
        retries = int(2 * session_s / (wait_s + 2.0)) + 6
        rows = 60
        with Client(members[0]["endpoint"], timeout=15, retries=retries, max_backoff=2.0) as c:
            c.create_table("SmokeOrders", exist_ok=True)
        # CreateTable returns once the member asked has read its table record
        # back from the cluster topic; another member may not have yet, and a
        # write forwarded to it then is TableNotFound (seen here). So wait, as
        # tests/scale_out does, until every member lists the table.
        for m in members:
            with Client(m["endpoint"], timeout=15, retries=retries, max_backoff=2.0) as c:
                until = time.time() + 15
                while "SmokeOrders" not in c.list_tables() and time.time() < until:
                    time.sleep(0.1)
                if "SmokeOrders" not in c.list_tables():
                    problems.append(f"smoke: {m['name']} does not list SmokeOrders after 15 s")
        if problems:
            return problems
        with Client(members[0]["endpoint"], timeout=15, retries=retries, max_backoff=2.0) as c:
            for k in range(rows):
                c.insert_or_replace("SmokeOrders", Entity(f"customer-{k}", "order-1", {"Total": k}))
        for m in members:
            with Client(m["endpoint"], timeout=15, retries=retries, max_backoff=2.0) as c:
                got = [c.get("SmokeOrders", f"customer-{k}", "order-1")["Total"] for k in range(rows)]
                listed = sorted(int(e["Total"]) for e in c.query("SmokeOrders"))
            if got != list(range(rows)) or listed != list(range(rows)):
                problems.append(f"smoke: through {m['name']}: gets {got}, query {listed}")
        forwarded = 0.0
        for m in members:
            for line in (_get(m["http"], "/metrics") or "").splitlines():
                if line.startswith("sidetable_cluster_forwarded_total "):
                    forwarded += float(line.split()[1])
        print(f"smoke: {rows} rows written through {members[0]['name']} and read through every member; "
              f"{forwarded:.0f} requests forwarded")
        if forwarded == 0:
            problems.append("smoke: nothing was forwarded: the members did not share the rows")
        return problems
    except Exception as e:  # a client call that raised: keep the logs, say which
        problems.append(f"smoke: {type(e).__name__}: {e}")
        for m in members:
            page = _get(m["http"], "/cluster") if "http" in m else None
            problems.append(f"smoke: {m['name']} /cluster now: {page}")
        return problems
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=40)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if mock.poll() is None:
            mock.send_signal(signal.SIGTERM)
        mock.stdin.close()
        try:
            mock.wait(timeout=10)
        except subprocess.TimeoutExpired:
            mock.kill()
            mock.wait()
        if problems:
            print(f"smoke: logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
