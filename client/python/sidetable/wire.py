"""Frame layout and MessagePack encoding of the sidetable protocol, version 1.

Written from docs/protocol.md only.  A frame is a 16-byte little-endian header
(version, operation, status, reserved, request id) followed by a MessagePack
map.
"""

import math as _math
import struct as _struct
import uuid as _uuid
import datetime as _dt

import msgpack as _msgpack

from .types import (DateTime, Entity, Int32, Int64, INT32_MIN, INT32_MAX,
                    INT64_MIN, INT64_MAX, KEY_NAMES)

VERSION = 1
HEADER = _struct.Struct("<BBHIQ")
HEADER_SIZE = HEADER.size  # 16

# Operation codes.
PING = 1
CREATE_TABLE = 2
DELETE_TABLE = 3
LIST_TABLES = 4
WRITE = 5
GET = 6
QUERY = 7
READ_CHANGES = 8
REQUEST_ARCHIVE = 9
ADVANCE_WATERMARKS = 10   # docs/consistency.md
READ_WATERMARKS = 11
WRITE_MANY = 12           # independent EGTs in one request (pattern workers)
SET_TABLE_POLICIES = 13   # stored access policies (docs/security.md)
GET_TABLE_POLICIES = 14
ISSUE_TOKEN = 15          # the sidecar signs a token within the caller's scope
BACKUP = 16               # a backup of the data directory (docs/operations.md)
FORGET_WATERMARKS = 17    # stop counting a table as derived (docs/consistency.md)

OP_NAMES = {PING: "Ping", CREATE_TABLE: "CreateTable",
            DELETE_TABLE: "DeleteTable", LIST_TABLES: "ListTables",
            WRITE: "Write", GET: "Get", QUERY: "Query",
            READ_CHANGES: "ReadChanges", REQUEST_ARCHIVE: "RequestArchive",
            ADVANCE_WATERMARKS: "AdvanceWatermarks",
            READ_WATERMARKS: "ReadWatermarks", WRITE_MANY: "WriteMany",
            SET_TABLE_POLICIES: "SetTablePolicies",
            GET_TABLE_POLICIES: "GetTablePolicies", ISSUE_TOKEN: "IssueToken",
            BACKUP: "Backup", FORGET_WATERMARKS: "ForgetWatermarks"}

# How much longer than the client's timeout the sidecar may take on purpose,
# per operation: a backup flushes, and copies files when its directory is on
# another filesystem (seconds).
EXTRA_WAIT_S = {BACKUP: 600.0}

# MessagePack ext types for Edm values.
EXT_INT64 = 1
EXT_DATETIME = 2
EXT_GUID = 3

_I64 = _struct.Struct(">q")


def pack_header(op, request_id, status=0, version=VERSION, reserved=0):
    return HEADER.pack(version, op, status, reserved, request_id)


def unpack_header(frame):
    """(version, op, status, reserved, request_id) of a frame."""
    if len(frame) < HEADER_SIZE:
        raise ValueError("frame shorter than %d bytes" % HEADER_SIZE)
    return HEADER.unpack_from(frame, 0)


# -- values -------------------------------------------------------------------

def encode_value(value, name="?"):
    """A Python value as the MessagePack object of its Edm type."""
    # Order matters: bool is an int, Int32/Int64 are ints.
    if isinstance(value, bool):
        return value
    if isinstance(value, Int64):
        return _msgpack.ExtType(EXT_INT64, _I64.pack(int(value)))
    if isinstance(value, Int32):
        return int(value)
    if isinstance(value, int):
        if INT32_MIN <= value <= INT32_MAX:
            return int(value)
        if INT64_MIN <= value <= INT64_MAX:
            return _msgpack.ExtType(EXT_INT64, _I64.pack(int(value)))
        raise ValueError("property %r: integer %d does not fit in Edm.Int64"
                         % (name, value))
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, DateTime):
        return _msgpack.ExtType(EXT_DATETIME, _I64.pack(value.ticks))
    if isinstance(value, _dt.datetime):
        return _msgpack.ExtType(EXT_DATETIME,
                                _I64.pack(DateTime.from_datetime(value).ticks))
    if isinstance(value, _uuid.UUID):
        return _msgpack.ExtType(EXT_GUID, value.bytes)
    if value is None:
        raise TypeError("property %r: None is not a value; omit the property "
                        "to remove it" % (name,))
    raise TypeError("property %r: %s is not an Edm type"
                    % (name, type(value).__name__))


def _ext_hook(code, data):
    if code == EXT_INT64 and len(data) == 8:
        return Int64(_I64.unpack(data)[0])
    if code == EXT_DATETIME and len(data) == 8:
        return DateTime(_I64.unpack(data)[0])
    if code == EXT_GUID and len(data) == 16:
        return _uuid.UUID(bytes=bytes(data))
    return _msgpack.ExtType(code, data)


def encode_props(props):
    out = {}
    for k, v in props.items():
        if not isinstance(k, str):
            raise TypeError("property names must be str, got %r" % (k,))
        out[k] = encode_value(v, k)
    return out


def _check_property_name(name):
    """Names that are entity metadata, not properties: refused here with a
    clear message instead of being dropped (or refused by the server with a
    less helpful ``PropertyNameInvalid``)."""
    if name == "Timestamp":
        raise ValueError("property 'Timestamp' cannot be written: the server "
                         "sets it on every write (read it as "
                         "entity.timestamp); remove it from the entity")
    if name.startswith("odata."):
        raise ValueError("property %r is OData metadata, not a property "
                         "(a property name may not contain '.'); for an ETag "
                         "condition pass if_match=...; remove it from the "
                         "entity" % (name,))


def split_entity(entity):
    """(pk, rk, props) of an :class:`Entity` or an Azure-style mapping with
    ``PartitionKey`` and ``RowKey`` keys.

    Every other key is a user property and is sent (``etag`` included);
    ``Timestamp`` and ``odata.*`` keys are a ``ValueError`` naming the key."""
    try:
        pk, rk = entity["PartitionKey"], entity["RowKey"]
    except (KeyError, TypeError):
        raise TypeError("an entity is a sidetable.Entity or a mapping with "
                        "'PartitionKey' and 'RowKey'")
    props = {}
    for k, v in entity.items():
        if k in KEY_NAMES:
            continue
        if isinstance(k, str):
            _check_property_name(k)
        props[k] = v
    return pk, rk, props


def encode_entity(pk, rk, props=None):
    body = {"pk": pk, "rk": rk}
    if props:
        body["props"] = encode_props(props)
    return body


def decode_entity(m):
    """An entity map of a reply as an :class:`Entity`."""
    if m is None:
        return None
    e = Entity(m.get("pk"), m.get("rk"), m.get("props") or {},
               etag=m.get("etag"), timestamp=m.get("ts"))
    # With $select, the keys come back only when selected (as Azure answers);
    # a selected property the entity lacks is in props as None.
    for key, name in (("pk", "PartitionKey"), ("rk", "RowKey")):
        if key not in m:
            dict.pop(e, name, None)
    return e


def pack_body(body):
    return _msgpack.packb(body, use_bin_type=True)


def unpack_body(data):
    return _msgpack.unpackb(data, raw=False, ext_hook=_ext_hook,
                            strict_map_key=False)


def encode_request(op, request_id, body, token=None):
    """The request frame; ``token`` (a signed access token, text) travels in
    the body's ``token`` field (docs/protocol.md).

    A str that is not Unicode text UTF-8 can hold (a lone surrogate such as
    ``"\ud800"``, what ``surrogateescape`` decoding leaves) is a
    ``ValueError`` naming where it is: the property, and the operation and
    entity keys of a batch's operation."""
    if token:
        body = dict(body, token=token)
    try:
        packed = pack_body(body)
    except UnicodeEncodeError as e:
        # msgpack's own message names only the character. Looked for only
        # after the failure, so a good request pays nothing for it.
        found = _find_unencodable(body, ())
        if found is None:
            raise
        path, text = found
        raise ValueError("%s: %r is not valid Unicode text (%s); send bytes "
                         "for binary data, or fix the string"
                         % (_describe_path(body, path), _clip(text), e.reason)
                         ) from e
    return pack_header(op, request_id) + packed


def _unencodable(text):
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def _find_unencodable(obj, path):
    """``(path, str)`` of the first str in ``obj`` (keys included) that
    UTF-8 cannot encode; a key's path ends with ``("key", key)``."""
    if isinstance(obj, str):
        return (path, obj) if _unencodable(obj) else None
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str) and _unencodable(k):
                return path + (("key", k),), k
            found = _find_unencodable(v, path + (k,))
            if found is not None:
                return found
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            found = _find_unencodable(v, path + (i,))
            if found is not None:
                return found
    return None


def _clip(text, limit=40):
    return text if len(text) <= limit else text[:limit] + "..."


def _describe_op(op, index):
    """``operation 2 (Merge, pk 'a', rk 'b')`` of a batch's operation map."""
    parts = [str(op.get("op"))] if isinstance(op, dict) else []
    entity = op.get("entity") if isinstance(op, dict) else None
    if isinstance(entity, dict):
        for key in ("pk", "rk"):
            if isinstance(entity.get(key), str):
                parts.append("%s %r" % (key, _clip(entity[key])))
    return "operation %d (%s)" % (index, ", ".join(parts))


def _describe_path(body, path):
    """Where ``path`` points in a request body, in the API's words."""
    where = []
    node = body
    i = 0
    if len(path) >= 2 and path[0] == "writes" and isinstance(path[1], int):
        item = body["writes"][path[1]]
        where.append("batch %d (table %r)" % (path[1], _clip(str(item.get("table")))))
        node, i = item, 2
    if len(path) >= i + 2 and path[i] == "ops" and isinstance(path[i + 1], int):
        op = node["ops"][path[i + 1]]
        where.append(_describe_op(op, path[i + 1]))
        rest = path[i + 2:]
        if rest[:2] == ("entity", "props") and len(rest) >= 3:
            what = rest[2]
            if isinstance(what, tuple):                # the name itself
                where.insert(0, "property name %r" % (_clip(what[1]),))
            else:
                where.insert(0, "property %r" % (what,))
        elif rest[:1] == ("entity",) and len(rest) == 2:
            where.insert(0, {"pk": "PartitionKey", "rk": "RowKey"}.get(rest[1], rest[1]))
        elif rest:
            where.insert(0, "field %r" % (rest[-1],))
        if where[0].startswith("operation"):
            where.insert(0, "a string")
        return where[0] + " of " + ", ".join(where[1:])
    field = path[i] if len(path) > i else None
    if isinstance(field, tuple):
        return "request field name %r" % (_clip(field[1]),)
    return "request field %r" % (".".join(str(p) for p in path),)


def decode_reply(frame):
    """(op, status, request_id, body) of a reply frame."""
    version, op, status, _reserved, rid = unpack_header(frame)
    if version != VERSION:
        raise ValueError("reply has protocol version %d" % version)
    body = unpack_body(frame[HEADER_SIZE:]) if len(frame) > HEADER_SIZE else {}
    if not isinstance(body, dict):
        raise ValueError("reply body is not a map")
    return op, status, rid, body


def is_nan(x):
    return isinstance(x, float) and _math.isnan(x)
