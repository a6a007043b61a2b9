"""Watermarks, session tokens and Session against a real server
(docs/consistency.md). The pattern worker is simulated: the test writes the
derived rows and advances the watermarks itself."""

import time
import unittest

import _harness
from sidetable import (Client, Entity, Session, SidetableError, Watermark,
                       READ_SESSION_NOT_AVAILABLE)

SERVER = None


def setUpModule():
    global SERVER
    SERVER = _harness.Server(workers=2).start()


def tearDownModule():
    _harness.stop_checked(SERVER)


class SessionTests(unittest.TestCase):
    def setUp(self):
        self.c = SERVER.client(timeout=10.0)
        self.src = _harness.table_name()
        self.idx = _harness.table_name()
        self.c.create_table(self.src)
        self.c.create_table(self.idx)
        # One partition: every record of the source is on partition 0.
        self.c.advance_watermarks([Watermark(self.idx, self.src, 0, 1, 0)])

    def tearDown(self):
        self.c.close()

    def test_read_waits_for_the_watermark_and_never_returns_stale_data(self):
        w = self.c.insert(self.src, Entity("p", "1", {"n": 1}))
        self.c.insert(self.idx, Entity("1", "p_1"))
        t0 = time.monotonic()
        with self.assertRaises(SidetableError) as e:
            self.c.get(self.idx, "1", "p_1", after={self.src: w.lsn}, wait_ms=200)
        self.assertEqual(e.exception.code, READ_SESSION_NOT_AVAILABLE)
        self.assertEqual(e.exception.status, 504)
        self.assertGreaterEqual(time.monotonic() - t0, 0.19)
        h = self.c.send("get", self.idx, "1", "p_1", after={self.src: w.lsn},
                        wait_ms=20000)
        time.sleep(0.2)
        self.assertFalse(h.done())
        with SERVER.client(timeout=5.0) as worker:
            worker.advance_watermarks([Watermark(self.idx, self.src, 0, 1, w.lsn, 77)])
        self.assertEqual(h.result(timeout=5.0).rk, "p_1")
        page = self.c.query_page(self.idx, after=[(self.src, w.lsn)], wait_ms=0)
        self.assertEqual(len(page.entities), 1)
        got = [m for m in self.c.read_watermarks(self.idx)]
        self.assertEqual(got, [Watermark(self.idx, self.src, 0, 1, w.lsn, 77)])
        # Monotonic: an older report does not move it back.
        self.c.advance_watermarks([{"derived": self.idx, "source": self.src,
                                    "partition": 0, "partitions": 1, "lsn": 1}])
        self.assertEqual(self.c.read_watermarks(self.idx)[0].lsn, w.lsn)

    def test_forget_watermarks_stops_counting_the_table_and_keeps_it(self):
        w = self.c.insert(self.src, Entity("p", "1", {"n": 1}))
        self.c.insert(self.idx, Entity("1", "p_1"))
        with self.assertRaises(SidetableError) as e:
            self.c.forget_watermarks("1bad")
        self.assertEqual(e.exception.code, "InvalidResourceName")
        self.assertEqual(len(self.c.read_watermarks(self.idx)), 1)
        self.c.forget_watermarks(self.idx)
        self.assertEqual(self.c.read_watermarks(self.idx), [])
        # Nothing to wait for any more; the row is still there.
        got = self.c.get(self.idx, "1", "p_1", after={self.src: w.lsn}, wait_ms=0)
        self.assertEqual(got.rk, "p_1")
        self.c.forget_watermarks(self.idx)  # nothing registered: no error

    def test_bad_input_is_invalid_and_changes_nothing(self):
        before = self.c.read_watermarks(self.idx)
        last = self.c.ping()["lsn"]
        for bad in ([Watermark(self.idx, self.src, 0, 1, last + 1)],
                    [Watermark(self.idx, self.src, 1, 1, 0)],
                    [Watermark("1bad", self.src, 0, 1, 0)],
                    [Watermark(self.idx, self.src, 0, 1, 0)] * 1001):
            with self.assertRaises(SidetableError) as e:
                self.c.advance_watermarks(bad)
            self.assertEqual(e.exception.code, "InvalidInput")
        self.assertEqual(self.c.read_watermarks(self.idx), before)
        for after, wait in (({self.src: last + 1}, 0), ({self.src: 1}, 60001),
                            ([("T%d" % i + "xx", 1) for i in range(65)], 0)):
            with self.assertRaises(SidetableError) as e:
                self.c.get(self.idx, "a", "b", after=after, wait_ms=wait)
            self.assertEqual(e.exception.code, "InvalidInput")

    def test_session_records_writes_and_travels_as_a_string(self):
        s = Session(self.c, wait_ms=100)
        w = s.insert(self.src, Entity("p", "1", {"n": 1}))
        self.c.insert(self.idx, Entity("1", "p_1"))
        self.assertEqual(s.export(), "st1:%s=%d" % (self.src, w.lsn))
        with self.assertRaises(SidetableError) as e:
            s.get(self.idx, "1", "p_1")
        self.assertEqual(e.exception.code, READ_SESSION_NOT_AVAILABLE)
        self.assertEqual(s.get(self.src, "p", "1")["n"], 1)  # the source: no wait
        self.c.advance_watermarks([Watermark(self.idx, self.src, 0, 1, w.lsn)])
        self.assertEqual(len(list(s.query(self.idx))), 1)
        other = Session(self.c)
        other.import_tokens(s.export())
        self.assertEqual(other.tokens, s.tokens)
        for bad in ("", "st2:A12=1", "st1:A12", "st1:A12=x", "st1:1ab=1",
                    "st1:A12=1,", "st1:tables=1"):
            fresh = Session(self.c)
            with self.assertRaises(ValueError):
                fresh.import_tokens(bad)
            self.assertEqual(fresh.tokens, {})


if __name__ == "__main__":
    unittest.main()
