"""Encoding of values and frames, without a server."""

import datetime as dt
import math
import struct
import unittest
import uuid

import _harness  # noqa: F401  (puts the package on sys.path)
import msgpack
from sidetable import DateTime, Entity, Int32, Int64, wire

UTC = dt.timezone.utc


class ValueEncodingTest(unittest.TestCase):
    def enc(self, v):
        return wire.encode_value(v)

    def test_int_chooses_int32_then_int64(self):
        self.assertEqual(self.enc(5), 5)
        self.assertEqual(self.enc(2 ** 31 - 1), 2 ** 31 - 1)
        self.assertEqual(self.enc(-2 ** 31), -2 ** 31)
        self.assertEqual(self.enc(2 ** 31),
                         msgpack.ExtType(1, struct.pack(">q", 2 ** 31)))
        self.assertEqual(self.enc(-2 ** 31 - 1),
                         msgpack.ExtType(1, struct.pack(">q", -2 ** 31 - 1)))
        with self.assertRaises(ValueError):
            self.enc(2 ** 63)

    def test_wrappers_force_the_type(self):
        self.assertEqual(self.enc(Int64(1)),
                         msgpack.ExtType(1, b"\0" * 7 + b"\x01"))
        self.assertEqual(self.enc(Int64(-1)), msgpack.ExtType(1, b"\xff" * 8))
        self.assertIs(type(self.enc(Int32(7))), int)
        with self.assertRaises(ValueError):
            Int32(2 ** 31)
        with self.assertRaises(ValueError):
            Int64(-2 ** 63 - 1)

    def test_bool_is_not_int(self):
        self.assertIs(self.enc(True), True)
        self.assertIs(self.enc(False), False)

    def test_guid_bytes_in_text_order(self):
        # docs/protocol.md: c9da6455-213d-... -> c9 da 64 55 21 3d ...
        g = uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")
        ext = self.enc(g)
        self.assertEqual(ext.code, 3)
        self.assertEqual(ext.data, bytes.fromhex(
            "c9da6455213d42c99a793e9149a57833"))

    def test_datetime_ticks(self):
        d = DateTime.parse("2014-08-22T00:50:32.1234567Z")
        self.assertEqual(d.isoformat(), "2014-08-22T00:50:32.1234567Z")
        self.assertEqual(d.sub_microsecond_ticks, 7)
        self.assertEqual(d.to_datetime(),
                         dt.datetime(2014, 8, 22, 0, 50, 32, 123456, UTC))
        # .NET: new DateTime(1601,1,1).Ticks == 504911232000000000
        self.assertEqual(DateTime.parse("1601-01-01T00:00:00Z").ticks,
                         504911232000000000)
        self.assertEqual(DateTime.parse("9999-12-31T23:59:59.9999999Z").ticks,
                         3155378975999999999)
        ext = self.enc(d)
        self.assertEqual(ext.code, 2)
        self.assertEqual(struct.unpack(">q", ext.data)[0], d.ticks)
        self.assertEqual(self.enc(d.to_datetime()).data,
                         struct.pack(">q", d.ticks - 7))
        other = dt.datetime(2014, 8, 22, 2, 50, 32, 123456,
                            dt.timezone(dt.timedelta(hours=2)))
        self.assertEqual(DateTime.from_datetime(other).ticks, d.ticks - 7)
        with self.assertRaises(ValueError):
            DateTime.from_datetime(dt.datetime(2020, 1, 1))      # naive
        with self.assertRaises(ValueError):
            DateTime.parse("2014-08-22T00:50:32+01:00")

    def test_none_and_containers_rejected(self):
        for bad in (None, [1], {"a": 1}, object()):
            with self.assertRaises(TypeError):
                self.enc(bad)

    def test_decode_returns_typed_values(self):
        props = {"i": 1, "l": Int64(2), "d": DateTime(504911232000000001),
                 "g": uuid.UUID(int=1), "b": b"\0\1", "s": "x", "f": 1.5,
                 "t": True}
        back = wire.unpack_body(wire.pack_body(wire.encode_props(props)))
        self.assertEqual(back, props)
        for k, v in props.items():
            self.assertIs(type(back[k]), type(v), k)

    def test_float_is_float64(self):
        packed = wire.pack_body(self.enc(0.1))
        self.assertEqual(packed[0], 0xcb)
        self.assertTrue(math.isnan(wire.unpack_body(
            wire.pack_body(self.enc(float("nan"))))))


class FrameTest(unittest.TestCase):
    def test_header_layout(self):
        frame = wire.encode_request(wire.WRITE, 0x0102030405060708, {})
        self.assertEqual(len(frame), 17)
        self.assertEqual(frame[:16], bytes([1, 5, 0, 0, 0, 0, 0, 0,
                                            8, 7, 6, 5, 4, 3, 2, 1]))
        self.assertEqual(wire.unpack_header(frame),
                         (1, 5, 0, 0, 0x0102030405060708))

    def test_split_entity(self):
        self.assertEqual(wire.split_entity(Entity("p", "r", {"a": 1})),
                         ("p", "r", {"a": 1}))
        # Issue 14: Timestamp was silently dropped here; now it is refused.
        with self.assertRaisesRegex(ValueError, "'Timestamp'"):
            wire.split_entity(
                {"PartitionKey": "p", "RowKey": "r", "a": 1, "Timestamp": 0})
        with self.assertRaises(TypeError):
            wire.split_entity({"a": 1})


if __name__ == "__main__":
    unittest.main()
