"""ZeroMQ CURVE against a real sidecar (docs/security.md, "Transport"):
Client and AsyncClient with an allowed key work; an unknown key, a plain
client and a wrong server key are refused at the handshake (no reply:
SidetableUnreachable within connect_timeout) while the sidecar keeps
serving the allowed client; key files as `sidetable-cli curve keygen`
writes them; bad keys are a ValueError at once."""

import asyncio
import os
import time
import unittest

import zmq

import _harness
from sidetable import Client, Entity, SidetableUnreachable, curve
from sidetable.aio import AsyncClient

SERVER = None
KEYS = {}


def setUpModule():
    global SERVER
    SERVER = _harness.Server(workers=2)
    tmp = SERVER.tmp
    KEYS["server_pub"] = curve.write_key_pair(os.path.join(tmp, "server"))
    KEYS["app"] = curve.write_key_pair(os.path.join(tmp, "app"))
    with open(os.path.join(tmp, "clients"), "w") as f:
        f.write("# allowed\n%s app\n" % KEYS["app"])
    config = os.path.join(tmp, "sidetable.yaml")
    with open(config, "w") as f:
        f.write("security:\n  curve_secret_key_file: %s\n  curve_clients_file: %s\n"
                % (os.path.join(tmp, "server.key"), os.path.join(tmp, "clients")))
    SERVER.extra = ["--config", config]
    SERVER.start()


def tearDownModule():
    _harness.stop_checked(SERVER)


def app_keys():
    public, secret = curve.load_secret_key_file(os.path.join(SERVER.tmp, "app.key"))
    server = curve.load_public_key_file(os.path.join(SERVER.tmp, "server.pub"))
    return dict(curve_server_key=server, curve_public_key=public,
                curve_secret_key=secret)


class CurveTest(unittest.TestCase):
    def assert_refused(self, what, **keys):
        start = time.monotonic()
        with Client(SERVER.endpoint, timeout=0.3, retries=3,
                    connect_timeout=0.5, **keys) as c:
            with self.assertRaises(SidetableUnreachable, msg=what):
                c.ping()
        self.assertLess(time.monotonic() - start, 5.0, what)

    def test_allowed_key_works_and_others_are_refused(self):
        keys = app_keys()
        self.assertEqual(keys["curve_server_key"], KEYS["server_pub"])
        self.assertEqual(keys["curve_public_key"], KEYS["app"])
        table = _harness.table_name("curve")
        with Client(SERVER.endpoint, **keys) as c:
            c.create_table(table)
            c.insert(table, Entity("p", "r", {"V": 1}))

            stranger_pub, stranger_sec = (k.decode() for k in zmq.curve_keypair())
            self.assert_refused("unknown key", curve_server_key=KEYS["server_pub"],
                                curve_public_key=stranger_pub,
                                curve_secret_key=stranger_sec)
            self.assert_refused("plain client")
            other_server, _ = zmq.curve_keypair()
            self.assert_refused("wrong server key", curve_server_key=other_server,
                                curve_public_key=keys["curve_public_key"],
                                curve_secret_key=keys["curve_secret_key"])
            # Still serving the allowed client, on this connection and a new one.
            self.assertEqual(c.get(table, "p", "r")["V"], 1)
        with Client(SERVER.endpoint, **keys) as again:
            again.ping()
        self.assertIsNone(SERVER.proc.poll(), "the sidecar is still running")

    def test_async_client(self):
        keys = app_keys()

        async def go():
            c = AsyncClient(SERVER.endpoint, **keys)
            try:
                await c.ping()
            finally:
                await c.close()
            plain = AsyncClient(SERVER.endpoint, timeout=0.3, connect_timeout=0.5)
            try:
                with self.assertRaises(SidetableUnreachable):
                    await plain.ping()
            finally:
                await plain.close()
        asyncio.run(go())

    def test_bad_keys_are_refused_at_once(self):
        keys = app_keys()
        with self.assertRaises(ValueError):
            Client(SERVER.endpoint, curve_server_key=keys["curve_server_key"])
        with self.assertRaises(ValueError):
            Client(SERVER.endpoint, **dict(keys, curve_secret_key="short"))
        with self.assertRaises(ValueError):
            AsyncClient(SERVER.endpoint, **dict(keys, curve_public_key="~" * 40))

    def test_key_files(self):
        prefix = os.path.join(SERVER.tmp, "kf")
        public = curve.write_key_pair(prefix)
        self.assertEqual(os.stat(prefix + ".key").st_mode & 0o777, 0o600)
        self.assertEqual(curve.load_secret_key_file(prefix + ".key")[0], public)
        self.assertEqual(curve.load_public_key_file(prefix + ".pub"), public)
        with self.assertRaises(FileExistsError):
            curve.write_key_pair(prefix)
        os.chmod(prefix + ".key", 0o644)
        with self.assertRaisesRegex(ValueError, "group or others"):
            curve.load_secret_key_file(prefix + ".key")
        with open(prefix + ".bad", "w") as f:
            f.write("# c\nnot-a-key\n")
        with self.assertRaisesRegex(ValueError, "line 2: not a Z85 key"):
            curve.load_public_key_file(prefix + ".bad")


if __name__ == "__main__":
    unittest.main()
