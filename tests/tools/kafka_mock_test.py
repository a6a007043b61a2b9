"""sidetable-kafka-mock (tools/kafka-mock/): the real binary (KAFKA_MOCK),
run the way docs/scale-out.md ("Try a cluster on one machine") runs it:
bad input refused with a clear error and exit 2, a port in use named with
exit 1, fixed ports and the ready file, a clean stop on SIGTERM and SIGINT,
a member refused the sidecar's own embedded Kafka, and two real sidecars (SIDETABLE) of one service with
configs/sidetable.cluster.dev.yaml around it, each accepting a write that
the other reads back. Ports: the system's choice (port 0, tcp://127.0.0.1:*)
read back from ready files, as the neighbouring tests do; one probed free
port for the fixed-port case."""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

MOCK = os.environ["KAFKA_MOCK"]
SIDETABLE = os.environ["SIDETABLE"]
SOURCE = os.environ["SOURCE_DIR"]
CONFIG = os.path.join(SOURCE, "configs", "sidetable.cluster.dev.yaml")
SHARDS = 6  # the file's kafka.partitions

sys.path.insert(0, os.path.join(SOURCE, "client", "python"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "deploy_common"))
from sidetable import Client, Entity  # noqa: E402  (python3-zmq, python3-msgpack)
from local_cluster import free_port, http_get, read_ready, start_member, stop  # noqa: E402
import local_cluster  # noqa: E402


class KafkaMockTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="kafka-mock-test-")
        self.procs = []

    def tearDown(self):
        for p in reversed(self.procs):
            stop(p)
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def tail(self, name):
        with open(self.path(name)) as f:
            return f.read()[-2000:]

    def start_mock(self, *args):
        # --stop-on-stdin-eof with a pipe: a test run killed midway takes
        # the mock with it.
        p = local_cluster.start_mock(MOCK, args, self.path("mock.log"))
        self.procs.append(p)
        return p

    def refused(self, *args):
        p = subprocess.run([MOCK, *args], capture_output=True, text=True, timeout=30)
        return p.returncode, p.stdout, p.stderr

    def test_bad_input_is_refused_naming_it(self):
        cases = [
            (["--topic", "orders"], "expected NAME=PARTITIONS"),
            (["--topic", "orders=0"], "partitions must be from 1 to 1024, not 0"),
            (["--topic", "orders=-3"], "partitions must be from 1 to 1024, not -3"),
            (["--topic", "orders=six"], "the partition count 'six' is not a whole number"),
            (["--topic", "orders=2000"], "partitions must be from 1 to 1024, not 2000"),
            (["--topic", "=6"], "the topic name is empty"),
            (["--topic", "my orders=6"], "' ' is not allowed in a topic name"),
            (["--topic", "a=1", "--topic", "a=2"], "topic 'a' is named twice"),
            (["--brokers", "0"], "--brokers 0: from 1 to 64"),
            (["--port", "70000"], "--port 70000: from 0 to 65535"),
            (["--port", "65535", "--brokers", "3"], "goes past port 65535"),
            (["--no-such-flag"], "--no-such-flag"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                rc, out, err = self.refused(*args)
                self.assertEqual(rc, 2, err)
                self.assertIn(message, err)
                self.assertEqual(out, "", "nothing on stdout: a script reading the address gets none")

    def test_a_port_in_use_is_named_and_nothing_is_written(self):
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        ready = self.path("kafka.ready")
        try:
            rc, out, err = self.refused("--port", str(port), "--brokers", "1", "--ready-file", ready)
        finally:
            taken.close()
        self.assertEqual(rc, 1, err)
        self.assertIn(f"cannot listen on 127.0.0.1:{port} (broker 1 of 1)", err)
        self.assertIn("another process listens there", err)
        self.assertEqual(out, "")
        self.assertFalse(os.path.exists(ready))

    def test_fixed_port_ready_file_and_clean_stops(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name):
                port = free_port()
                ready = self.path(f"kafka-{sig.name}.ready")
                mock = self.start_mock("--port", str(port), "--brokers", "1", "--topic", "t.changes=6",
                                       "--topic", "t.cluster=1", "--ready-file", ready)
                lines = read_ready(ready, 30, mock)
                if lines is None:
                    self.fail(f"no ready file; exit {mock.poll()}: " + self.tail("mock.log"))
                self.assertEqual(lines[:3], [("kafka", f"127.0.0.1:{port}"), ("topic", "t.changes=6"),
                                             ("topic", "t.cluster=1")])
                self.assertEqual(lines[3], ("pid", str(mock.pid)))
                self.assertEqual(mock.stdout.readline().strip(), f"127.0.0.1:{port}")
                with socket.create_connection(("127.0.0.1", port), timeout=5):
                    pass
                self.assertEqual(stop(mock, sig, timeout=20), 0)
                self.assertFalse(os.path.exists(ready), "the ready file is removed at a clean stop")

    def test_a_member_with_the_embedded_kafka_is_refused_naming_the_tool(self):
        # Each member's embedded mock is its own Kafka: before session 45 two
        # members with it both started, each serving every shard with its
        # own tables. Refused before anything starts.
        p = subprocess.run([SIDETABLE, "--config", CONFIG, "--kafka", "embedded", "--id", "m1",
                            "--data", self.path("m1")], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("kafka.bootstrap: embedded cannot hold a cluster", p.stderr)
        self.assertIn("sidetable-kafka-mock", p.stderr)

    def test_a_member_started_before_its_kafka_names_the_address(self):
        # Nothing listens on the port: the member's start-up fails (exit 1)
        # naming where it looked. Before session 45 the message was only
        # "cluster: looking up topic ...: Local: Broker transport failure".
        port = free_port()
        p = subprocess.run([SIDETABLE, "--config", CONFIG, "--kafka", f"127.0.0.1:{port}", "--id", "m1",
                            "--listen", "tcp://127.0.0.1:*", "--http", "127.0.0.1:0", "--data", self.path("m1")],
                           capture_output=True, text=True, timeout=90)
        self.assertEqual(p.returncode, 1, p.stderr[-2000:])
        self.assertIn(f"cluster: Kafka at 127.0.0.1:{port} (kafka.bootstrap) did not answer", p.stderr)
        self.assertIn("Start Kafka first, or correct kafka.bootstrap", p.stderr)

    def test_stop_on_stdin_eof(self):
        # Started as a child with a pipe: it stops cleanly when the pipe
        # closes (its parent exited or was killed), and not before.
        ready = self.path("kafka.ready")
        mock = subprocess.Popen([MOCK, "--port", "0", "--brokers", "1", "--stop-on-stdin-eof",
                                 "--ready-file", ready], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        self.procs.append(mock)
        if read_ready(ready, 30, mock) is None:
            self.fail(f"no ready file; exit {mock.poll()}")
        self.assertIsNone(mock.poll())
        mock.stdin.close()
        self.assertEqual(mock.wait(timeout=20), 0)
        self.assertFalse(os.path.exists(ready))

    def test_two_members_around_it_accept_a_write_through_each(self):
        ready = self.path("kafka.ready")
        mock = self.start_mock("--port", "0", "--topic", f"sidetable.demo.changes={SHARDS}",
                               "--topic", "sidetable.demo.cluster=1", "--topic", f"sidetable.demo.state={SHARDS}",
                               "--ready-file", ready)
        lines = read_ready(ready, 30, mock)
        if lines is None:
            self.fail(f"no ready file; exit {mock.poll()}: " + self.tail("mock.log"))
        bootstrap = dict(lines)["kafka"]
        self.assertEqual(len(bootstrap.split(",")), 3, "three brokers by default")

        members = []
        for name in ("m1", "m2"):
            member_ready = self.path(f"{name}.ready")
            p = start_member(SIDETABLE, ["--config", CONFIG, "--kafka", bootstrap, "--id", name,
                                         "--listen", "tcp://127.0.0.1:*", "--http", "127.0.0.1:0",
                                         "--data", self.path(name), "--ready-file", member_ready],
                             self.path(f"{name}.log"))
            self.procs.append(p)
            got = read_ready(member_ready, 60, p)
            if got is None:
                self.fail(f"{name} did not start: " + self.tail(f"{name}.log"))
            d = dict(got)
            members.append({"name": name, "zmq": d["zmq"], "http": d["http"], "proc": p})

        # Stable: each member sees both, and every shard is served once.
        local_cluster.wait_stable(members, SHARDS, 120)

        # A rebalance may still be finishing (the mock's second round):
        # retries that outlast a rebalance_wait_ms each, as an application's.
        def client(m):
            return Client(m["zmq"], timeout=15, retries=20, max_backoff=2.0)

        m1, m2 = members
        with client(m1) as c:
            c.create_table("Orders")
        rows = {f"customer-{k}": k for k in range(12)}
        for i, (pk, total) in enumerate(rows.items()):
            with client(members[i % 2]) as c:
                c.insert("Orders", Entity(pk, "order-1", {"Total": total}))
        for m in members:
            with client(m) as c:
                got = {pk: c.get("Orders", pk, "order-1")["Total"] for pk in rows}
                listed = sorted(e["PartitionKey"] for e in c.query("Orders"))
            self.assertEqual(got, rows, f"through {m['name']}")
            self.assertEqual(listed, sorted(rows), f"query through {m['name']}")
        forwarded = 0.0
        for m in members:
            for line in (http_get(m["http"], "/metrics") or "").splitlines():
                if line.startswith("sidetable_cluster_forwarded_total "):
                    forwarded += float(line.split()[1])
        self.assertGreater(forwarded, 0, "the members shared the rows: some requests were forwarded")

        for m in members:
            self.assertEqual(stop(m["proc"]), 0, f"{m['name']} stops cleanly")
        self.assertEqual(stop(mock, timeout=20), 0)


if __name__ == "__main__":
    unittest.main()
