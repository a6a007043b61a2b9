"""Issue 14, no silent data loss: property names that look like entity
metadata (``etag``, ``odata.etag``, ``Timestamp``, the keys) are either
kept as user properties or refused naming the property, never dropped; and
entities carry ``PartitionKey``/``RowKey`` as dict keys, as the Azure SDK's
``TableEntity`` does.  Round trips through a real sidecar."""

import unittest

import _harness
from sidetable import Entity, wire

SERVER = None


def setUpModule():
    global SERVER
    SERVER = _harness.Server(workers=2).start()


def tearDownModule():
    _harness.stop_checked(SERVER)


class MetadataNamedPropertiesTest(unittest.TestCase):
    def setUp(self):
        self.c = SERVER.client(timeout=5.0)
        self.t = _harness.table_name("names")
        self.c.create_table(self.t)

    def tearDown(self):
        self.c.close()

    def test_etag_property_of_a_plain_dict_is_kept(self):
        # Was dropped by wire.split_entity before issue 14.
        w = self.c.insert(self.t, {"PartitionKey": "p", "RowKey": "r",
                                   "etag": "mine", "Name": "Ana"})
        e = self.c.get(self.t, "p", "r")
        self.assertEqual(e.props, {"etag": "mine", "Name": "Ana"})
        self.assertEqual(e["etag"], "mine")          # the user's property
        self.assertEqual(e.etag, w.etag)             # the server's ETag

    def test_etag_property_of_an_entity_is_kept(self):
        self.c.insert(self.t, Entity("p", "r", {"etag": 7}))
        e = self.c.get(self.t, "p", "r")
        self.assertEqual(e.props, {"etag": 7})
        # Writing back what was read keeps it (and the ETag still works).
        e["etag"] = 8
        self.c.update(self.t, e, if_match=e.etag)
        self.assertEqual(self.c.get(self.t, "p", "r")["etag"], 8)

    def assertRefused(self, entity, name):
        with self.assertRaises(ValueError) as cm:
            self.c.insert(self.t, entity)
        self.assertIn(repr(name), str(cm.exception))
        with self.assertRaises(Exception):     # and nothing was written
            self.c.get(self.t, entity["PartitionKey"], entity["RowKey"])

    def test_odata_etag_is_refused_naming_it(self):
        self.assertRefused({"PartitionKey": "p", "RowKey": "r",
                            "odata.etag": 'W/"1"', "a": 1}, "odata.etag")
        self.assertRefused(Entity("p", "r", {"odata.etag": 'W/"1"'}),
                           "odata.etag")

    def test_timestamp_is_refused_naming_it(self):
        self.assertRefused({"PartitionKey": "p", "RowKey": "r",
                            "Timestamp": "2020-01-01", "a": 1}, "Timestamp")
        self.assertRefused(Entity("p", "r", {"Timestamp": 1}), "Timestamp")

    def test_conflicting_keys_are_refused(self):
        with self.assertRaisesRegex(ValueError, "PartitionKey"):
            Entity("p", "r", {"PartitionKey": "other"})
        with self.assertRaisesRegex(ValueError, "RowKey"):
            Entity("p", "r", {"RowKey": "other"})
        # The same values are fine (an Azure-style dict turned into an Entity).
        e = Entity("p", "r", {"PartitionKey": "p", "RowKey": "r", "a": 1})
        self.assertEqual(e.props, {"a": 1})

    def test_refused_in_batches_too(self):
        from sidetable import Batch
        with self.assertRaisesRegex(ValueError, "'Timestamp'"):
            Batch(self.t).insert({"PartitionKey": "p", "RowKey": "r",
                                  "Timestamp": 0})


class EntityKeysTest(unittest.TestCase):
    def setUp(self):
        self.c = SERVER.client(timeout=5.0)
        self.t = _harness.table_name("keys")
        self.c.create_table(self.t)

    def tearDown(self):
        self.c.close()

    def test_read_entities_carry_the_keys_as_dict_keys(self):
        self.c.insert(self.t, Entity("Sales", "001", {"Name": "Ana"}))
        for e in (self.c.get(self.t, "Sales", "001"),
                  next(iter(self.c.query(self.t)))):
            self.assertEqual(e["PartitionKey"], "Sales")
            self.assertEqual(e["RowKey"], "001")
            self.assertEqual((e.pk, e.rk), ("Sales", "001"))
            self.assertEqual(dict(e), {"PartitionKey": "Sales",
                                       "RowKey": "001", "Name": "Ana"})
            self.assertEqual(e.props, {"Name": "Ana"})

    def test_a_read_entity_written_back_as_a_plain_dict(self):
        self.c.insert(self.t, Entity("p", "r", {"n": 1}))
        d = dict(self.c.get(self.t, "p", "r"))      # Azure style: all keys
        d["n"] = 2
        d["RowKey"] = "r2"
        self.c.insert(self.t, d)
        self.assertEqual(self.c.get(self.t, "p", "r2").props, {"n": 2})

    def test_keys_follow_attribute_changes(self):
        e = Entity("p", "r")
        e.rk = "s"
        self.assertEqual(e["RowKey"], "s")
        e["PartitionKey"] = "q"
        self.assertEqual(e.pk, "q")
        self.assertEqual(wire.split_entity(e), ("q", "s", {}))
        self.c.insert(self.t, e)
        self.assertEqual(self.c.get(self.t, "q", "s").pk, "q")


if __name__ == "__main__":
    unittest.main()
