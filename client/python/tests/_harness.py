"""Starts and stops a real sidetable server for the tests."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY_ROOT = os.path.dirname(HERE)                       # client/python
REPO = os.path.dirname(os.path.dirname(PY_ROOT))      # the repository
try:
    import sidetable  # noqa: F401  (normally found through PYTHONPATH)
except ImportError:                                   # run without PYTHONPATH
    sys.path.insert(0, PY_ROOT)
    import sidetable  # noqa: F401


def server_binary():
    path = os.environ.get("SIDETABLE_BIN") or os.path.join(
        REPO, "build", "sidecar", "sidetable")
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise RuntimeError("sidetable server binary not found at %r "
                           "(set SIDETABLE_BIN)" % path)
    return path


class Server(object):
    """One server process in its own temporary directory."""

    READY_TIMEOUT = 10.0

    def __init__(self, workers=4, queue_depth=1024, extra=(), data_dir=None):
        self.workers = workers
        self.queue_depth = queue_depth
        self.extra = list(extra)
        self.tmp = tempfile.mkdtemp(prefix="sidetable-py-")
        self.data_dir = data_dir or os.path.join(self.tmp, "db")
        self.proc = None
        self.endpoint = None
        self.pid = None

    def start(self):
        ready = os.path.join(self.tmp, "ready")
        if os.path.exists(ready):
            os.unlink(ready)
        self.log_path = os.path.join(self.tmp, "server.log")
        self._log = open(self.log_path, "ab")
        cmd = [server_binary(), "--listen", "tcp://127.0.0.1:*",
               "--data", self.data_dir, "--http", "127.0.0.1:0",
               "--ready-file", ready, "--durability", "os",
               "--queue-depth", str(self.queue_depth),
               "--workers", str(self.workers), "--log-level", "warn"]
        cmd += self.extra
        self.proc = subprocess.Popen(cmd, stdout=self._log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited with %d before it was "
                                   "ready:\n%s" % (self.proc.returncode,
                                                   self.log()))
            info = self._read_ready(ready)
            if info is not None:
                self.endpoint, self.pid = info
                return self
            time.sleep(0.02)
        self.proc.kill()
        self.proc.wait()
        raise RuntimeError("server not ready within %.0f s:\n%s"
                           % (self.READY_TIMEOUT, self.log()))

    @staticmethod
    def _read_ready(path):
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError:
            return None
        fields = dict(l.split(None, 1) for l in lines if " " in l)
        if "zmq" not in fields or "pid" not in fields:
            return None                       # not completely written yet
        return fields["zmq"].strip(), int(fields["pid"])

    def stop(self, timeout=10.0):
        """SIGTERM and wait; returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self._log.close()
                raise RuntimeError("server ignored SIGTERM for %.0f s"
                                   % timeout)
        self._log.close()
        code = self.proc.returncode
        self.proc = None
        return code

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-4000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def client(self, **kw):
        return sidetable.Client(self.endpoint, **kw)


_names = [0]


def table_name(prefix="t"):
    """A fresh valid table name (letters and digits, 3..63 characters)."""
    _names[0] += 1
    return "%s%dx%d" % (prefix, os.getpid(), _names[0])


def stop_checked(server):
    """tearDownModule's body: stops `server`, fails the module if it did not
    exit cleanly (with its log), and removes its files either way."""
    if server is None:
        return
    try:
        code = server.stop()
        if code != 0:
            raise AssertionError("server exited with %r:\n%s" % (code, server.log()))
    finally:
        server.cleanup()

