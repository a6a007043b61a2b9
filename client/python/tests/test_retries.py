"""Exactly-once retries from Python (docs/protocol.md): every write carries
a client request id, the same on each attempt; a retry of a committed write
gets the first outcome back (``replayed``) instead of being applied again.
The SIGKILL case runs in the C++ reliability suite (retries_test)."""

import unittest

import _harness
from sidetable import Batch, Entity, EntityAlreadyExistsError, InvalidInputError

SERVER = None


def setUpModule():
    global SERVER
    SERVER = _harness.Server(workers=2).start()


def tearDownModule():
    _harness.stop_checked(SERVER)


class RetryTests(unittest.TestCase):
    def setUp(self):
        self.c = SERVER.client(timeout=10.0, caller="py-retries")
        self.t = _harness.table_name()
        self.c.create_table(self.t)

    def tearDown(self):
        self.c.close()

    def _ids(self):
        page = self.c.read_changes(1, max=10000)
        return [r.get("clientRequestId") for r in page.records
                if r.get("table") == self.t]

    def test_a_resent_batch_gets_its_first_outcome_and_applies_once(self):
        b = Batch(self.t, client_request_id="order-42-create")
        b.insert(Entity("p", "r", {"n": 1}))
        first = self.c.execute(b)
        self.assertFalse(first.replayed)
        # A newer write, then the "retry" of the first one.
        self.c.upsert(self.t, Entity("p", "r", {"n": 2}))
        again = self.c.execute(b)
        self.assertTrue(again.replayed)
        self.assertEqual(again.etag, first.etag)
        self.assertEqual(again.lsn, first.lsn)
        self.assertEqual(self.c.get(self.t, "p", "r")["n"], 2)
        self.assertEqual(self._ids().count("order-42-create"), 1)

    def test_every_write_gets_its_own_id_so_a_new_insert_is_not_a_retry(self):
        self.c.insert(self.t, Entity("p", "once"))
        with self.assertRaises(EntityAlreadyExistsError):
            self.c.insert(self.t, Entity("p", "once"))
        ids = [i for i in self._ids() if i is not None]
        self.assertEqual(len(ids), 1, ids)
        self.assertEqual(len(ids[0]), 32)

    def test_a_clients_ids_are_unique_and_grow_and_two_clients_differ(self):
        other = SERVER.client(timeout=10.0, caller="py-retries")
        try:
            for i in range(12):
                (other if i % 3 == 2 else self.c).insert(
                    self.t, Entity("p", "g%02d" % i))
        finally:
            other.close()
        ids = [i for i in self._ids() if i is not None]
        self.assertEqual(len(ids), 12, ids)
        self.assertEqual(len(set(ids)), 12, ids)
        by_client = {}
        for i in ids:
            self.assertRegex(i, "^[0-9a-f]{32}$")
            by_client.setdefault(i[:16], []).append(i)
        self.assertEqual(len(by_client), 2, ids)
        for prefix, mine in by_client.items():
            self.assertEqual(mine, sorted(mine), prefix)

    def test_an_id_reused_for_another_request_is_refused(self):
        b = Batch(self.t, client_request_id="reused")
        b.insert(Entity("p", "a"))
        self.c.execute(b)
        other = Batch(self.t, client_request_id="reused")
        other.insert(Entity("p", "b"))
        with self.assertRaises(InvalidInputError):
            self.c.execute(other)
        from sidetable import ResourceNotFoundError
        with self.assertRaises(ResourceNotFoundError):
            self.c.get(self.t, "p", "b")

    def test_a_bad_id_is_refused_and_changes_nothing(self):
        b = Batch(self.t, client_request_id="has a space")
        b.insert(Entity("p", "x"))
        with self.assertRaises(InvalidInputError):
            self.c.execute(b)
        self.assertEqual(self._ids(), [None])   # only the table's creation

    def test_ids_can_be_turned_off(self):
        c = SERVER.client(timeout=10.0, client_request_ids=False)
        try:
            c.insert(self.t, Entity("p", "plain"))
        finally:
            c.close()
        self.assertEqual(self._ids(), [None, None])


if __name__ == "__main__":
    unittest.main()
