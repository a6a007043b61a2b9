"""The life of a client: its arguments, a fork, a client dropped without
close(), a close while requests wait. Each case was found from outside
(session 40) and hung a process or failed with another library's error."""

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
import unittest

import msgpack
import zmq

import _harness
from sidetable import ClientClosedError, Client, wire
from sidetable.aio import AsyncClient

SERVER = None


def setUpModule():
    global SERVER
    SERVER = _harness.Server(workers=2).start()


def tearDownModule():
    _harness.stop_checked(SERVER)


class ArgumentsTest(unittest.TestCase):
    def test_time_outs_that_mean_nothing_are_refused_by_name(self):
        # timeout=0 or -1 made every attempt time out at once (the retries
        # spent in milliseconds, a slow reply reported as none); NaN and
        # infinities failed at the first call with "cannot convert float
        # NaN to integer".
        for cls in (Client, AsyncClient):
            for kw in ({"timeout": 0}, {"timeout": -1},
                       {"timeout": float("nan")}, {"timeout": float("inf")},
                       {"connect_timeout": -1}, {"backoff": -0.5},
                       {"max_backoff": float("inf")}):
                with self.assertRaises(ValueError) as caught:
                    cls(SERVER.endpoint, **kw)
                self.assertIn(next(iter(kw)), str(caught.exception))
            for kw in ({"timeout": None}, {"timeout": "5"}):
                with self.assertRaises(TypeError):
                    cls(SERVER.endpoint, **kw)
            for bad in (-1, 1.5, True):
                with self.assertRaises(ValueError) as caught:
                    cls(SERVER.endpoint, retries=bad)
                self.assertIn("retries", str(caught.exception))
            # -1 refused every request as "over twice max_request_bytes (-1)"
            for bad in (-1, 0.5, "6"):
                with self.assertRaises(ValueError) as caught:
                    cls(SERVER.endpoint, max_request_bytes=bad)
                self.assertIn("max_request_bytes", str(caught.exception))

    def test_change_log_positions_out_of_range_are_refused_by_name(self):
        # 2**64 raised msgpack's OverflowError, naming nothing.
        with Client(SERVER.endpoint, timeout=5.0) as c:
            for kw, exc, name in (
                    ({"from_lsn": 2 ** 64}, ValueError, "from_lsn"),
                    ({"from_lsn": -1}, ValueError, "from_lsn"),
                    ({"from_lsn": 1, "max": -1}, ValueError, "max"),
                    ({"from_lsn": "1"}, TypeError, "from_lsn"),
                    ({"from_lsn": 1, "max_bytes": 1.5}, TypeError, "max_bytes")):
                with self.assertRaises(exc) as caught:
                    c.read_changes(**kw)
                self.assertIn(name, str(caught.exception))
            self.assertIsInstance(c.read_changes(1, max=10).records, list)

    def test_good_values_still_work(self):
        with Client(SERVER.endpoint, timeout=0.5, retries=0, backoff=0,
                    connect_timeout=0) as c:
            self.assertEqual(c.ping()["version"], 1)
        for no_check in (None, 0):
            with Client(SERVER.endpoint, max_request_bytes=no_check) as c:
                self.assertEqual(c.max_request_bytes, 0)
                self.assertEqual(c.ping()["version"], 1)


class ForkTest(unittest.TestCase):
    def test_a_client_used_in_a_forked_child_says_so(self):
        # The child waited in libzmq's poll for ever, whatever the timeout.
        c = Client(SERVER.endpoint, timeout=1.0, retries=0)
        c.ping()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:                                   # the child
            os.close(read)
            try:
                c.ping()
                msg = b"answered"
            except RuntimeError as e:
                msg = str(e).encode()
            except BaseException as e:
                msg = ("other: %r" % e).encode()
            os.write(write, msg)
            os._exit(0)
        os.close(write)
        try:
            ready = _wait_readable(read, 10.0)
            got = os.read(read, 4096) if ready else b""
        finally:
            if not ready:
                os.kill(pid, 9)
            os.waitpid(pid, 0)
            os.close(read)
        self.assertTrue(ready, "the child hung in the inherited client")
        self.assertIn(b"fork()", got)
        self.assertIn(b"create a new client in the child", got)
        self.assertEqual(c.ping()["version"], 1)       # the parent's works
        c.close()


def _wait_readable(fd, seconds):
    import select
    return bool(select.select([fd], [], [], seconds)[0])


_DROPPED = textwrap.dedent("""
    import asyncio, gc, json, os, sys
    from sidetable.aio import AsyncClient

    async def use(endpoint):
        c = AsyncClient(endpoint)
        await c.ping()                # never closed

    def counts():
        return len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))

    asyncio.run(use(sys.argv[1]))
    gc.collect()                      # hung here: the context before its socket
    before = counts()
    async def many(endpoint):
        for _ in range(50):
            await use(endpoint)
    asyncio.run(many(sys.argv[1]))
    gc.collect()
    after = counts()
    print("ok", json.dumps([before, after]))
""")


class DroppedAsyncClientTest(unittest.TestCase):
    def test_a_dropped_client_is_freed_and_the_process_goes_on(self):
        # An AsyncClient left unclosed was kept alive by its reader task:
        # each held two ZeroMQ threads and ~9 descriptors for good, and the
        # first garbage collection after its event loop ended hung the
        # whole process (the context was destroyed before the socket).
        import sidetable    # the child imports the package under test
        env = dict(os.environ, PYTHONPATH=os.path.dirname(
            os.path.dirname(os.path.abspath(sidetable.__file__))))
        try:
            out = subprocess.run([sys.executable, "-c", _DROPPED,
                                  SERVER.endpoint], env=env, timeout=30,
                                 capture_output=True, text=True)
        except subprocess.TimeoutExpired:
            self.fail("the process hung after dropping an AsyncClient")
        self.assertEqual(out.returncode, 0, out.stderr)
        words = out.stdout.split(" ", 1)
        self.assertEqual(words[0], "ok", out.stdout + out.stderr)
        before, after = json.loads(words[1])
        self.assertLessEqual(after[0], before[0] + 2, "descriptors leaked")
        self.assertLessEqual(after[1], before[1] + 2, "threads leaked")


class _BusyServer(object):
    """A ROUTER that answers every request ServerBusy (503), as a sidecar
    past its admission bounds does, on a loopback port of its own."""

    def __init__(self):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = "tcp://127.0.0.1:%d" % port
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            if not self.sock.poll(50):
                continue
            ident, frame = self.sock.recv_multipart()
            _v, op, _s, _r, rid = wire.unpack_header(frame)
            body = msgpack.packb({"code": "ServerBusy", "message": "busy"})
            self.sock.send_multipart([ident, wire.pack_header(op, rid, 503) +
                                      body])

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close(0)
        self.ctx.term()


class CloseDuringBackoffTest(unittest.TestCase):
    def test_a_request_waiting_to_be_resent_fails_as_closed(self):
        # It failed with AttributeError ('NoneType' object has no attribute
        # 'send'), and asyncio logged "Future exception was never retrieved".
        busy = _BusyServer()
        self.addCleanup(busy.close)
        lost = []

        async def main():
            asyncio.get_running_loop().set_exception_handler(
                lambda loop, ctx: lost.append(ctx.get("message")))
            c = AsyncClient(busy.endpoint, timeout=2.0, retries=50,
                            backoff=0.2, max_backoff=0.2)
            task = asyncio.ensure_future(c.ping())
            while c.busy_replies == 0:
                await asyncio.sleep(0.01)
            await c.close()
            with self.assertRaises(ClientClosedError):
                await asyncio.wait_for(task, 5)

        asyncio.run(main())
        import gc
        gc.collect()
        self.assertEqual(lost, [])


if __name__ == "__main__":
    unittest.main()
