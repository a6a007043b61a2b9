"""Server-level behaviour: ServerBusy and the client's retries, and a
graceful stop and restart."""

import unittest

import _harness
from sidetable import Entity, SidetableError, WriteResult


class BusyTest(unittest.TestCase):
    """A server with one worker and a queue of one is easily overrun (every
    request goes through the queue: none runs on the frontend)."""

    @classmethod
    def setUpClass(cls):
        cls.server = _harness.Server(workers=1, queue_depth=1,
                                     extra=("--inline-max-bytes", "0")).start()

    @classmethod
    def tearDownClass(cls):
        try:
            code = cls.server.stop()
            if code != 0:
                raise AssertionError("server exited with %r" % code)
        finally:
            cls.server.cleanup()

    def setUp(self):
        self.t = _harness.table_name("busy")
        with self.server.client() as c:
            c.create_table(self.t)

    def burst(self, client, prefix, n=300):
        hs = [client.send("insert", self.t,
                          Entity("%s%d" % (prefix, i), "r", {"i": i}))
              for i in range(n)]
        return client.gather(hs, return_exceptions=True)

    def count(self, prefix):
        with self.server.client() as c:
            return len(list(c.query(
                self.t, "PartitionKey ge '%s' and PartitionKey lt '%s~'"
                % (prefix, prefix))))

    def test_server_busy_without_retries(self):
        with self.server.client(retries=0) as c:
            res = self.burst(c, "a")
            busy = [r for r in res if isinstance(r, SidetableError)]
            ok = [r for r in res if isinstance(r, WriteResult)]
            self.assertEqual(len(busy) + len(ok), len(res))
            self.assertGreater(len(busy), 0, "expected ServerBusy replies")
            for e in busy:
                self.assertEqual((e.status, e.code), (503, "ServerBusy"))
            self.assertEqual(c.busy_replies, len(busy))
            self.assertEqual(c.resends, 0)
        # A rejected request was not executed.
        self.assertEqual(self.count("a"), len(ok))

    def test_retries_make_everything_succeed(self):
        with self.server.client(retries=60, backoff=0.005,
                                max_backoff=0.2) as c:
            res = self.burst(c, "b")
            errors = [r for r in res if not isinstance(r, WriteResult)]
            self.assertEqual(errors, [])
            self.assertGreater(c.busy_replies, 0)
            self.assertGreaterEqual(c.resends, c.busy_replies)
        self.assertEqual(self.count("b"), 300)


class LifecycleTest(unittest.TestCase):
    def test_sigterm_and_restart_keep_data(self):
        server = _harness.Server(workers=2, queue_depth=64).start()
        try:
            with server.client(caller="life") as c:
                c.create_table("lifecycle")
                w = c.insert("lifecycle", Entity("p", "r", {"v": 1}))
            self.assertEqual(server.stop(), 0)
            server.start()
            with server.client() as c:
                e = c.get("lifecycle", "p", "r")
                self.assertEqual((e.props, e.etag), ({"v": 1}, w.etag))
                self.assertEqual(c.ping()["lsn"], w.lsn)
                self.assertEqual(c.read_changes(1).records[-1]["caller"],
                                 "life")
            self.assertEqual(server.stop(), 0)
        finally:
            if server.proc is not None:
                server.proc.kill()
                server.proc.wait()
            server.cleanup()


if __name__ == "__main__":
    unittest.main()
