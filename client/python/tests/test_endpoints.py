"""Prompt errors when nothing answers: a fast, explicit failure for an
endpoint where no sidecar listens, an immediate hint for an address without
a scheme, and the usual retries once the sidecar has answered."""

import asyncio
import os
import signal
import socket
import subprocess
import time
import unittest

import _harness
from sidetable import (Client, SidetableTimeout, SidetableUnreachable,
                       check_endpoint)
from sidetable.aio import AsyncClient


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class NothingListensTest(unittest.TestCase):
    def test_fails_after_about_one_timeout_naming_the_endpoint(self):
        endpoint = "tcp://127.0.0.1:%d" % free_port()
        # retries=5 would be six silent attempts (and back-off) before.
        with Client(endpoint, timeout=1.0, retries=5) as c:
            t0 = time.monotonic()
            with self.assertRaises(SidetableUnreachable) as cm:
                c.ping()
            elapsed = time.monotonic() - t0
            self.assertGreaterEqual(elapsed, 0.9)
            self.assertLess(elapsed, 1.5)
            self.assertEqual(c.resends, 0)
        msg = str(cm.exception)
        self.assertIn("nothing answered at %s" % endpoint, msg)
        self.assertIn("is the sidecar running?", msg)
        self.assertIsInstance(cm.exception, SidetableTimeout)   # old callers

    def test_async_client_too(self):
        endpoint = "tcp://127.0.0.1:%d" % free_port()

        async def main():
            async with AsyncClient(endpoint, timeout=1.0, retries=5) as c:
                t0 = time.monotonic()
                with self.assertRaises(SidetableUnreachable) as cm:
                    await c.ping()
                return time.monotonic() - t0, cm.exception
        elapsed, err = asyncio.run(main())
        self.assertLess(elapsed, 1.5)
        self.assertIn("nothing answered at %s" % endpoint, str(err))


class SchemeTest(unittest.TestCase):
    def test_hints(self):
        cases = {"127.0.0.1:5555": "tcp://127.0.0.1:5555",
                 "localhost:5999": "tcp://localhost:5999",
                 "5555": "tcp://127.0.0.1:5555",
                 "/run/sidetable.sock": "ipc:///run/sidetable.sock",
                 "http://127.0.0.1:5555": "tcp://127.0.0.1:5555",
                 "": "tcp://127.0.0.1:5555"}
        for endpoint, hint in cases.items():
            for make in (Client, AsyncClient):
                t0 = time.monotonic()
                with self.assertRaises(ValueError) as cm:
                    make(endpoint)
                self.assertLess(time.monotonic() - t0, 0.5)
                self.assertIn("did you mean %s?" % hint, str(cm.exception))

    def test_good_schemes_pass(self):
        for e in ("tcp://127.0.0.1:5555", "ipc:///tmp/x.sock", "inproc://x"):
            self.assertEqual(check_endpoint(e), e)
        with self.assertRaises(ValueError):
            Client("tcp://")

    def test_a_port_beyond_sixteen_bits_is_refused(self):
        # libzmq would connect to port % 65536 (73837 -> 8301).
        for e in ("tcp://127.0.0.1:73837", "tcp://127.0.0.1:99999",
                  "tcp://127.0.0.1:-1"):
            for make in (Client, AsyncClient):
                with self.assertRaises(ValueError) as cm:
                    make(e)
                self.assertIn("the port must be a number of 0..65535",
                              str(cm.exception))
        self.assertEqual(check_endpoint("tcp://127.0.0.1:65535"),
                         "tcp://127.0.0.1:65535")


class AnsweredBeforeTest(unittest.TestCase):
    def test_a_sidecar_that_answered_is_retried(self):
        server = _harness.Server(workers=1).start()
        try:
            c = server.client(timeout=0.3, retries=2, backoff=0.01,
                              connect_timeout=0.3)
            c.ping()
            self.assertEqual(server.stop(), 0)
            with self.assertRaises(SidetableTimeout) as cm:
                c.ping()
            # Not "unreachable": it answered before, so every retry was made.
            self.assertNotIsInstance(cm.exception, SidetableUnreachable)
            self.assertIn("the connection was lost, and the connect failed",
                          str(cm.exception))
            self.assertEqual((c.timeouts, c.resends), (3, 2))
            c.close()
        finally:
            server.stop()
            server.cleanup()

    def test_a_sidecar_started_late_within_the_connect_window(self):
        port = free_port()
        endpoint = "tcp://127.0.0.1:%d" % port
        c = Client(endpoint, timeout=0.2, retries=20, backoff=0.01,
                   connect_timeout=10.0)
        server = _harness.Server(workers=1)
        try:
            h = c.send("ping")
            while c.timeouts == 0:   # the first attempt times out unanswered
                try:
                    c.gather([h], timeout=0.05)
                except SidetableTimeout:
                    pass
            _start_on(server, endpoint)
            self.assertEqual(h.result()["version"], 1)
            self.assertGreaterEqual(c.timeouts, 1)
        finally:
            c.close()
            server.stop()
            server.cleanup()


class WhyNothingAnswersTest(unittest.TestCase):
    """The error says why (sidetable/_watch.py): a sidecar at its connection
    bound, or one that is stopped on an open connection."""

    def setUp(self):
        self.server = _harness.Server(
            workers=1, extra=("--max-connections", "1")).start()
        self.holder = self.server.client(timeout=5.0)
        self.holder.ping()          # holds the one connection

    def tearDown(self):
        self.holder.close()
        self.server.stop()
        self.server.cleanup()

    def test_a_full_sidecar_is_told_apart_from_a_missing_one(self):
        with self.server.client(timeout=0.3, retries=1,
                                connect_timeout=0.3) as c:
            with self.assertRaises(SidetableUnreachable) as cm:
                c.ping()
        msg = str(cm.exception)
        self.assertIn("closed the connection during the handshake", msg)
        self.assertIn("sidecar.max_connections", msg)
        self.assertNotIn("is the sidecar running?", msg)
        self.holder.ping()

    def test_async_client_too(self):
        async def main():
            async with AsyncClient(self.server.endpoint, timeout=0.3,
                                   retries=1, connect_timeout=0.3) as c:
                with self.assertRaises(SidetableUnreachable) as cm:
                    await c.ping()
                return str(cm.exception)
        self.assertIn("sidecar.max_connections", asyncio.run(main()))

    def test_a_stopped_sidecar_on_an_open_connection(self):
        self.holder.close()
        self.holder = self.server.client(timeout=0.3, retries=1)
        # The bound frees the closed connection's place when its monitor
        # event arrives: a few tries, bounded.
        for _ in range(50):
            try:
                self.holder.ping()
                break
            except SidetableTimeout:
                time.sleep(0.05)
        self.holder.ping()
        os.kill(self.server.proc.pid, signal.SIGSTOP)
        try:
            with self.assertRaises(SidetableTimeout) as cm:
                self.holder.ping()
        finally:
            os.kill(self.server.proc.pid, signal.SIGCONT)
        self.assertIn("the connection is up: the sidecar did not answer in "
                      "time", str(cm.exception))


def _start_on(server, endpoint):
    """Start ``server`` listening on ``endpoint`` (not an ephemeral port)."""
    ready = os.path.join(server.tmp, "ready")
    server.log_path = os.path.join(server.tmp, "server.log")
    server._log = open(server.log_path, "ab")
    cmd = [_harness.server_binary(), "--listen", endpoint,
           "--data", server.data_dir, "--http", "127.0.0.1:0",
           "--ready-file", ready, "--durability", "os",
           "--workers", "1", "--log-level", "warn"]
    server.proc = subprocess.Popen(cmd, stdout=server._log,
                                   stderr=subprocess.STDOUT)
    deadline = time.monotonic() + server.READY_TIMEOUT
    while time.monotonic() < deadline:
        if server._read_ready(ready) is not None:
            return
        time.sleep(0.02)
    raise RuntimeError("server not ready:\n" + server.log())


if __name__ == "__main__":
    unittest.main()
