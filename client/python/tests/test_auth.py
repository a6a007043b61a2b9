"""Signed tokens against a real sidecar with ``auth.mode: tokens``
(docs/security.md): the sync and asyncio clients send them, the sidecar
enforces their scope, stored access policies revoke them."""

import asyncio
import datetime as dt
import os
import tempfile
import unittest

import _harness
from sidetable import (AuthenticationFailedError, AuthorizationFailureError,
                       AuthorizationPermissionMismatchError, Entity, tokens)
from sidetable.aio import AsyncClient

KEY = os.urandom(32)
SERVER = None


def setUpModule():
    global SERVER
    d = tempfile.mkdtemp(prefix="sidetable-py-auth-")
    key_file = os.path.join(d, "k1.key")
    with open(key_file, "w") as f:
        import base64
        f.write(base64.b64encode(KEY).decode() + "\n")
    os.chmod(key_file, 0o600)
    config = os.path.join(d, "sidetable.yaml")
    with open(config, "w") as f:
        f.write("auth:\n  mode: tokens\n  keys:\n    - {id: k1, file: %s}\n" % key_file)
    SERVER = _harness.Server(workers=2, extra=["--config", config]).start()


def tearDownModule():
    _harness.stop_checked(SERVER)


def issue(table, perms, prefix=False, identity="py-alice", **kw):
    spec = tokens.TokenSpec(table=table, tenant="py", identity=identity,
                            table_is_prefix=prefix, permissions=perms,
                            expiry=dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1),
                            **kw)
    return tokens.issue_token(spec, "k1", KEY)


class AuthTests(unittest.TestCase):
    def client(self, **kw):
        c = SERVER.client(**kw)
        self.addCleanup(c.close)
        return c

    def setUp(self):
        self.admin = self.client(timeout=10.0, token=issue("", "raudmc", prefix=True))
        self.table = _harness.table_name("auth")
        self.admin.create_table(self.table)

    def test_no_token_is_refused(self):
        with self.assertRaises(AuthenticationFailedError):
            self.client(timeout=10.0, retries=1).ping()

    def test_scope_is_enforced(self):
        reader = self.client(timeout=10.0, token=issue(self.table, "r"))
        with self.assertRaises(AuthorizationPermissionMismatchError):
            reader.insert(self.table, Entity("p", "r", {"V": 1}))
        self.admin.insert(self.table, Entity("p", "r", {"V": 1}))
        self.assertEqual(reader.get(self.table, "p", "r")["V"], 1)
        with self.assertRaises(AuthorizationFailureError):
            reader.create_table(_harness.table_name("other"))
        self.assertEqual(reader.list_tables(), [self.table])

    def test_identity_is_recorded_not_caller(self):
        writer = self.client(timeout=10.0, caller="mallory",
                               token=issue(self.table, "a", identity="py-bob"))
        writer.insert(self.table, Entity("p", "x", {}))
        changes = self.admin.read_changes(1)
        mine = [r for r in changes.records if r["table"] == self.table and r.get("ops")]
        self.assertTrue(mine)
        self.assertTrue(all(r["caller"] == "py-bob" for r in mine), [r["caller"] for r in mine])

    def test_policy_revokes(self):
        self.admin.set_table_policies(self.table, [{"id": "ro", "permissions": "r",
                                                     "expiry": "2099-01-01T00:00:00Z"}])
        self.assertEqual(self.admin.get_table_policies(self.table)[0]["id"], "ro")
        spec_token = tokens.issue_token(tokens.TokenSpec(
            table=self.table, tenant="py", identity="py-carol", policy_id="ro"), "k1", KEY)
        c = self.client(timeout=10.0, token=spec_token)
        list(c.query(self.table))
        self.admin.set_table_policies(self.table, [])
        with self.assertRaises(AuthenticationFailedError):
            list(c.query(self.table))

    def test_aio_client_sends_the_token(self):
        async def run():
            c = AsyncClient(SERVER.endpoint, timeout=10.0, token=issue(self.table, "ra"))
            try:
                await c.insert(self.table, Entity("p", "aio", {"V": 2}))
                return (await c.get(self.table, "p", "aio"))["V"]
            finally:
                await c.close()
        self.assertEqual(asyncio.run(run()), 2)


if __name__ == "__main__":
    unittest.main()
