"""Client.backup() and AsyncClient.backup() against real sidecars
(docs/operations.md, "Backup and restore"): the backup holds what was
written before it and opens as a data directory; a sidecar without
storage.backup_dir refuses with InvalidInput."""

import asyncio
import json
import os
import socket
import time
import unittest

import _harness
from sidetable import Client, Entity, InvalidInputError, wire
from sidetable.aio import AsyncClient
from sidetable.errors import SidetableTimeout, SidetableUnreachable


def _backups_in(directory):
    """The backups there, without the sidecar's lock file."""
    return sorted(n for n in os.listdir(directory) if n.startswith("backup-"))


def _unused_endpoint():
    """A loopback endpoint nothing listens at."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return "tcp://127.0.0.1:%d" % s.getsockname()[1]


class BackupTest(unittest.TestCase):
    def setUp(self):
        self.server = None
        self.restored = None

    def tearDown(self):
        for s in (self.restored, self.server):  # the restored one runs in the first one's directory
            if s is not None:
                _harness.stop_checked(s)

    def test_backup_holds_the_writes_and_restores(self):
        self.server = _harness.Server()
        backups = os.path.join(self.server.tmp, "backups")
        self.server.extra += ["--backup-dir", backups, "--backup-keep", "1"]
        self.server.start()
        with self.server.client(timeout=5.0) as c:
            c.create_table("Orders")
            for i in range(20):
                c.insert("Orders", Entity("p", "r%02d" % i, {"N": i}))
            lsn = c.ping()["lsn"]
            b = c.backup()
            self.assertTrue(b["name"].startswith("backup-"), b)
            self.assertEqual(b["lastLsn"], lsn)
            self.assertEqual(b["firstLsn"], 1)
            self.assertEqual(b["tables"], 1)
            self.assertEqual(b["removed"], [])
            self.assertEqual(_backups_in(backups), [b["name"]])
            with open(os.path.join(b["path"], "sidetable-backup.json")) as f:
                self.assertEqual(json.load(f)["last_lsn"], lsn)
            c.insert("Orders", Entity("p", "after"))

        async def second():
            client = AsyncClient(self.server.endpoint, timeout=5.0)
            try:
                return await client.backup()
            finally:
                await client.close()
        b2 = asyncio.run(second())
        self.assertEqual(b2["lastLsn"], lsn + 1)
        self.assertEqual(b2["removed"], [b["name"]])   # backup_keep 1
        self.assertEqual(_backups_in(backups), [b2["name"]])

        self.restored = _harness.Server(data_dir=b2["path"]).start()
        with self.restored.client(timeout=5.0) as c:
            self.assertEqual(c.ping()["lsn"], lsn + 1)
            rows = list(c.query("Orders"))
            self.assertEqual(len(rows), 21)

    def test_backup_without_a_backup_directory_is_refused(self):
        self.server = _harness.Server().start()
        with self.server.client(timeout=5.0) as c:
            with self.assertRaises(InvalidInputError) as cm:
                c.backup()
            self.assertIn("storage.backup_dir", str(cm.exception))
            self.assertEqual(wire.OP_NAMES[wire.BACKUP], "Backup")

    def test_a_restored_sidecar_in_the_backup_directory_keeps_its_data(self):
        # The docs' restore: point storage.path at a backup. Before session
        # 41 that directory still counted as a backup, so the sidecar's own
        # retention (and any sidecar's on that backup_dir) deleted the
        # directory it was running on: a restart came back empty.
        first = _harness.Server()
        self.addCleanup(first.cleanup)
        backups = os.path.join(first.tmp, "backups")
        first.extra += ["--backup-dir", backups]
        first.start()
        with first.client(timeout=5.0) as c:
            c.create_table("Orders")
            c.insert("Orders", Entity("p", "r"))
            b0 = c.backup()
        self.assertEqual(first.stop(), 0)

        self.restored = _harness.Server(
            data_dir=b0["path"],
            extra=["--backup-dir", backups, "--backup-keep", "1"]).start()
        with self.restored.client(timeout=5.0) as c:
            c.insert("Orders", Entity("p", "after-restore"))
            b1 = c.backup()
            self.assertEqual(b1["removed"], [])
            b2 = c.backup()
            self.assertEqual(b2["removed"], [b1["name"]])
        self.assertTrue(os.path.isdir(b0["path"]))
        self.assertEqual(self.restored.stop(), 0)
        self.restored.start()
        with self.restored.client(timeout=5.0) as c:
            self.assertEqual([e.rk for e in c.query("Orders")],
                             ["after-restore", "r"])

    def test_retention_keeps_the_backup_it_made_and_other_directories(self):
        # Before session 41 retention sorted every backup-* directory with a
        # manifest by name: one named after the time stamps (a copy kept by
        # hand) made keep=1 remove the backup just made, and the reply named
        # it as made and removed.
        self.server = _harness.Server()
        backups = os.path.join(self.server.tmp, "backups")
        kept = os.path.join(backups, "backup-kept-by-hand")
        os.makedirs(kept)
        with open(os.path.join(kept, "sidetable-backup.json"), "w") as f:
            f.write("{}")
        self.server.extra += ["--backup-dir", backups, "--backup-keep", "1"]
        self.server.start()
        with self.server.client(timeout=5.0) as c:
            b1 = c.backup()
            self.assertEqual(b1["removed"], [])
            self.assertTrue(os.path.isdir(b1["path"]))
            b2 = c.backup()
            self.assertEqual(b2["removed"], [b1["name"]])
            self.assertTrue(os.path.isdir(b2["path"]))
        self.assertTrue(os.path.isdir(kept))

    def test_two_sidecars_on_one_backup_directory(self):
        # Before session 41 the second sidecar's retention removed the
        # first's backups, and its start removed the first's backup in
        # progress. Now the second one refuses to start on that directory.
        self.server = _harness.Server()
        backups = os.path.join(self.server.tmp, "backups")
        self.server.extra += ["--backup-dir", backups, "--backup-keep", "1"]
        self.server.start()
        with self.server.client(timeout=5.0) as c:
            mine = c.backup()
        other = _harness.Server(extra=["--backup-dir", backups])
        try:
            with self.assertRaises(RuntimeError) as cm:
                other.start()
            self.assertIn("storage.backup_dir", str(cm.exception))
            self.assertIn("another sidecar", str(cm.exception))
        finally:
            other.stop()
            other.cleanup()
        self.assertTrue(os.path.isdir(mine["path"]))

    def test_backup_of_nothing_listening_fails_like_any_request(self):
        # Backup may wait 10 minutes for a sidecar that is working on it;
        # before session 41 it also waited that long for one that was not
        # there at all (ping: SidetableUnreachable after 1 s).
        endpoint = _unused_endpoint()
        c = Client(endpoint, timeout=0.5, retries=1)
        try:
            t = time.monotonic()
            with self.assertRaises(SidetableUnreachable):
                c.backup()
            self.assertLess(time.monotonic() - t, 10.0)
        finally:
            c.close()

        async def run():
            client = AsyncClient(endpoint, timeout=0.5, retries=1)
            try:
                await client.backup()
            finally:
                await client.close()
        t = time.monotonic()
        with self.assertRaises(SidetableUnreachable):
            asyncio.run(run())
        self.assertLess(time.monotonic() - t, 10.0)

    def test_backup_fails_soon_when_the_connection_is_gone(self):
        # Before session 41 the client waited the whole 10 minutes although
        # the connection to the sidecar was lost (a sidecar killed during a
        # backup looks the same to the client).
        server = _harness.Server()
        self.addCleanup(server.cleanup)
        server.extra += ["--backup-dir", os.path.join(server.tmp, "b")]
        server.start()
        c = server.client(timeout=0.5, retries=1)
        try:
            c.ping()                          # the connection is up
            server.proc.kill()
            server.proc.wait()
            t = time.monotonic()
            with self.assertRaises(SidetableTimeout):
                c.backup()
            self.assertLess(time.monotonic() - t, 10.0)
        finally:
            c.close()


if __name__ == "__main__":
    unittest.main()
