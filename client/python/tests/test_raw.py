"""Malformed frames sent on a bare ZeroMQ socket get the documented replies,
and the server keeps serving."""

import struct
import unittest

import _harness
import msgpack
import zmq
from sidetable import wire

SERVER = None


def setUpModule():
    global SERVER
    SERVER = _harness.Server(workers=2, queue_depth=256).start()


def tearDownModule():
    _harness.stop_checked(SERVER)


def header(version=1, op=1, status=0, reserved=0, rid=1):
    return struct.pack("<BBHIQ", version, op, status, reserved, rid)


class RawFrameTest(unittest.TestCase):
    def setUp(self):
        self.ctx = zmq.Context()
        self.s = self.ctx.socket(zmq.DEALER)
        self.s.setsockopt(zmq.LINGER, 0)
        self.s.setsockopt(zmq.RCVTIMEO, 5000)
        self.s.connect(SERVER.endpoint)

    def tearDown(self):
        self.s.close(0)
        self.ctx.term()

    def roundtrip(self, *frames):
        self.s.send_multipart(list(frames))
        reply = self.s.recv_multipart()
        self.assertEqual(len(reply), 1, "a reply is one frame")
        frame = reply[0]
        self.assertGreaterEqual(len(frame), 16)
        version, op, status, reserved, rid = struct.unpack("<BBHIQ",
                                                           frame[:16])
        self.assertEqual((version, reserved), (1, 0))
        body = wire.unpack_body(frame[16:])
        return op, status, rid, body

    def assertAlive(self):
        op, status, rid, body = self.roundtrip(header(op=1, rid=424242) +
                                               msgpack.packb({}))
        self.assertEqual((op, status, rid, body["version"]),
                         (1, 200, 424242, 1))

    def assertInvalid(self, frame, want_rid, want_op=None):
        op, status, rid, body = self.roundtrip(frame)
        self.assertEqual((status, rid, body.get("code")),
                         (400, want_rid, "InvalidInput"), body)
        self.assertIsInstance(body.get("message"), str)
        if want_op is not None:
            self.assertEqual(op, want_op)
        self.assertAlive()
        return body

    def test_short_frames(self):
        for frame in (b"", b"\x01", b"\x01\x01" + b"\0" * 13):
            self.assertInvalid(frame, 0)

    def test_wrong_version(self):
        for v in (0, 2, 255):
            self.assertInvalid(header(version=v, rid=77) + msgpack.packb({}),
                               77)

    def test_unknown_operation(self):
        for op in (0, 9, 200):
            self.assertInvalid(header(op=op, rid=78) + msgpack.packb({}), 78,
                               want_op=op)

    def test_nonzero_status(self):
        self.assertInvalid(header(status=200, rid=79) + msgpack.packb({}), 79)

    def test_garbage_bodies(self):
        for i, body in enumerate([b"", b"\xc1", b"garbage", b"\x81",
                                  msgpack.packb([1, 2]), msgpack.packb("x"),
                                  msgpack.packb({}) + b"trailing",
                                  b"\x82\xa5table"]):
            self.assertInvalid(header(op=wire.GET, rid=100 + i) + body,
                               100 + i)

    def test_wrong_field_types(self):
        for op, body in ((wire.CREATE_TABLE, {"table": 5}),
                         (wire.GET, {"table": "abc", "pk": 1, "rk": "r"}),
                         (wire.WRITE, {"table": "abc", "ops": "x"}),
                         (wire.QUERY, {"table": "abc", "top": "7"}),
                         (wire.READ_CHANGES, {"from": "1"})):
            self.assertInvalid(header(op=op, rid=300 + op) +
                               msgpack.packb(body), 300 + op)

    def test_unknown_fields_ignored(self):
        op, status, rid, body = self.roundtrip(
            header(op=wire.PING, rid=5) + msgpack.packb({"future": [1, {}]}))
        self.assertEqual((status, rid), (200, 5))

    def write(self, rid, table, entity):
        return self.roundtrip(header(op=wire.WRITE, rid=rid) + msgpack.packb(
            {"table": table, "ops": [{"op": "Insert", "entity": entity}]}))

    def test_float32_accepted_and_ts_etag_ignored(self):
        table = _harness.table_name("raw")
        op, status, rid, body = self.roundtrip(
            header(op=wire.CREATE_TABLE, rid=20) +
            msgpack.packb({"table": table}))
        self.assertEqual(status, 201)
        # float32 1.5 (0xca); the server keeps the Double.
        frame = (header(op=wire.WRITE, rid=21) + msgpack.packb(
            {"table": table, "ops": [{"op": "Insert", "entity": {
                "pk": "p", "rk": "f", "props": {"f": 7.0}}}]}))
        frame = frame.replace(b"\xcb" + struct.pack(">d", 7.0),
                              b"\xca" + struct.pack(">f", 1.5))
        op, status, rid, body = self.roundtrip(frame)
        self.assertEqual((status, rid), (201, 21), body)
        # ts and etag in a request entity are ignored (the server sets them).
        fake_ts = msgpack.ExtType(2, struct.pack(">q", 504911232000000000))
        op, status, rid, w = self.write(22, table, {
            "pk": "p", "rk": "t", "ts": fake_ts, "etag": 'W/"1"'})
        self.assertEqual((status, rid), (201, 22), w)
        for rk, props in (("f", {"f": 1.5}), ("t", {})):
            op, status, rid, body = self.roundtrip(
                header(op=wire.GET, rid=23) +
                msgpack.packb({"table": table, "pk": "p", "rk": rk}))
            self.assertEqual(status, 200)
            ent = body["entity"]
            self.assertEqual(ent.get("props", {}), props)
            self.assertIs(type(ent.get("props", {}).get("f", 0.0)), float)
        self.assertEqual(ent["etag"], w["etags"][0])
        self.assertEqual(ent["ts"], w["ts"])

    def test_multi_frame_message_dropped(self):
        self.s.send_multipart([header(rid=6) + msgpack.packb({}),
                               b"extra"])
        self.assertEqual(self.s.poll(300), 0, "no reply expected")
        self.assertAlive()

    def test_request_too_large(self):
        body = msgpack.packb({"table": "abc", "pad": b"\0" * (7 << 20)})
        op, status, rid, reply = self.roundtrip(header(op=wire.GET, rid=9) +
                                                body)
        self.assertEqual((status, rid, reply["code"]),
                         (413, 9, "RequestBodyTooLarge"))
        self.assertAlive()

    def test_repeated_request_field_refused(self):
        # {"table": A, "ops": [Insert], "table": B}: a dict cannot say a key
        # twice, so the map is built by hand. It used to write to B.
        c = SERVER.client(timeout=5.0)
        try:
            a, b = _harness.table_name(), _harness.table_name()
            c.create_table(a)
            c.create_table(b)
            ops = [{"op": "Insert", "entity": {"pk": "p", "rk": "r"}}]
            body = (b"\x83" + msgpack.packb("table") + msgpack.packb(a) +
                    msgpack.packb("ops") + msgpack.packb(ops) +
                    msgpack.packb("table") + msgpack.packb(b))
            reply = self.assertInvalid(header(op=wire.WRITE, rid=61) + body,
                                       61)
            self.assertIn("request field 'table' repeated", reply["message"])
            self.assertEqual(list(c.query(a)), [])
            self.assertEqual(list(c.query(b)), [])
        finally:
            c.close()

    def test_req_socket_works(self):
        req = self.ctx.socket(zmq.REQ)
        req.setsockopt(zmq.LINGER, 0)
        req.setsockopt(zmq.RCVTIMEO, 5000)
        try:
            req.connect(SERVER.endpoint)
            req.send(header(op=wire.PING, rid=11) + msgpack.packb({}))
            frame = req.recv()
            self.assertEqual(struct.unpack("<BBHIQ", frame[:16]),
                             (1, 1, 200, 0, 11))
        finally:
            req.close(0)

    def test_doc_example(self):
        # The Python example at the end of docs/protocol.md, adapted.
        table = _harness.table_name("People")
        self.roundtrip(header(op=wire.CREATE_TABLE, rid=1) +
                       msgpack.packb({"table": table}))
        body = {"table": table, "ops": [{"op": "Insert", "entity": {
            "pk": "Sales", "rk": "1", "props": {"Name": "Ana"}}}]}
        self.s.send(struct.pack("<BBHIQ", 1, 5, 0, 0, 1) +
                    msgpack.packb(body))
        reply = self.s.recv()
        version, op, status, _, rid = struct.unpack("<BBHIQ", reply[:16])
        self.assertEqual((version, op, status, rid), (1, 5, 201, 1))
        self.assertEqual(set(msgpack.unpackb(reply[16:])),
                         {"lsn", "ts", "etags", "entity"})


if __name__ == "__main__":
    unittest.main()
