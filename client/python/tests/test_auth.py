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
                       AuthorizationPermissionMismatchError, Entity,
                       InvalidInputError, tokens)
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


class _Closing(unittest.TestCase):
    def client(self, token=None, server=None, **kw):
        # Closed when the test ends: a client left to the cyclic garbage
        # collector can hang its context's term() in a later test.
        c = (server or SERVER).client(timeout=10.0, token=token, **kw)
        self.addCleanup(c.close)
        return c


class AuthTests(_Closing):
    def setUp(self):
        self.admin = self.client(token=issue("", "raudmc", prefix=True))
        self.table = _harness.table_name("auth")
        self.admin.create_table(self.table)

    def test_no_token_is_refused(self):
        with self.assertRaises(AuthenticationFailedError):
            self.client(retries=1).ping()

    def test_scope_is_enforced(self):
        reader = self.client(token=issue(self.table, "r"))
        with self.assertRaises(AuthorizationPermissionMismatchError):
            reader.insert(self.table, Entity("p", "r", {"V": 1}))
        self.admin.insert(self.table, Entity("p", "r", {"V": 1}))
        self.assertEqual(reader.get(self.table, "p", "r")["V"], 1)
        with self.assertRaises(AuthorizationFailureError):
            reader.create_table(_harness.table_name("other"))
        self.assertEqual(reader.list_tables(), [self.table])

    def test_identity_is_recorded_not_caller(self):
        writer = self.client(caller="mallory",
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
        c = self.client(token=spec_token)
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


def user_spec(table_name, identity="py-user", **kw):
    """Partition t|1 of ``table_name``, read and add, for 30 minutes."""
    fields = dict(table=table_name, tenant="py", identity=identity, permissions="ra",
                  start_pk="t|1", end_pk="t|1",
                  expiry=dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=30))
    fields.update(kw)
    return tokens.TokenSpec(**fields)


class IssueTokenTests(_Closing):
    """The IssueToken operation: a token holding m has the sidecar sign one
    within its own scope (docs/security.md, "Issuing tokens")."""

    def setUp(self):
        admin = self.client(issue("", "raudmc", prefix=True))
        self.table = _harness.table_name("issue")
        admin.create_table(self.table)
        admin.insert(self.table, Entity("t|1", "r", {"V": 1}))
        admin.insert(self.table, Entity("t|2", "r", {"V": 2}))
        # The application tier: m and raud on this table, partitions t|..t|~.
        self.app = self.client(issue(
            self.table, "raudm", identity="py-app", start_pk="t|", end_pk="t|~"))

    def test_issued_token_works_for_exactly_its_scope(self):
        text = self.app.issue_token(user_spec(self.table))
        fields = tokens.inspect_token(text)
        self.assertEqual((fields["kid"], fields["caller"], fields["tn"]),
                         ("k1", "py-user", self.table))
        user = self.client(text)
        self.assertEqual(user.get(self.table, "t|1", "r")["V"], 1)
        user.insert(self.table, Entity("t|1", "new", {}))
        with self.assertRaises(AuthorizationFailureError):
            user.get(self.table, "t|2", "r")
        with self.assertRaises(AuthorizationPermissionMismatchError):
            user.delete(self.table, "t|1", "r")

    def test_out_of_scope_is_refused(self):
        later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=2)
        cases = [
            (AuthorizationFailureError, dict(table=_harness.table_name("other"))),
            (AuthorizationFailureError, dict(end_pk="u")),
            (AuthorizationFailureError, dict(start_pk=None)),
            (AuthorizationPermissionMismatchError, dict(permissions="rc")),
            (AuthorizationFailureError, dict(expiry=later)),
            (AuthorizationFailureError, dict(tenant="other")),
        ]
        for error, change in cases:
            with self.subTest(change=change), self.assertRaises(error):
                self.app.issue_token(user_spec(self.table, **change))
        plain = self.client(issue(self.table, "raud"))
        with self.assertRaises(AuthorizationPermissionMismatchError):
            plain.issue_token(user_spec(self.table))

    def test_aio_client_issues(self):
        async def run():
            c = AsyncClient(SERVER.endpoint, timeout=10.0, token=self.app.token)
            try:
                text = await c.issue_token(user_spec(self.table, identity="py-aio"))
                with self.assertRaises(AuthorizationFailureError):
                    await c.issue_token(user_spec(self.table, end_pk="u"))
                return text
            finally:
                await c.close()
        text = asyncio.run(run())
        self.assertEqual(tokens.inspect_token(text)["caller"], "py-aio")
        user = self.client(text)
        self.assertEqual(user.get(self.table, "t|1", "r")["V"], 1)

    def test_auth_off_refuses(self):
        server = _harness.Server(workers=1).start()
        try:
            c = server.client(timeout=10.0)
            try:
                with self.assertRaises(InvalidInputError):
                    c.issue_token(user_spec("orders"))
            finally:
                c.close()
        finally:
            _harness.stop_checked(server)


if __name__ == "__main__":
    unittest.main()
