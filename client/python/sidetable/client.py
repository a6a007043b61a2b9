"""The sidetable client: a ZeroMQ DEALER socket speaking protocol version 1.

One :class:`Client` owns one socket and is not thread-safe: use one client
per thread.  Every call can be made synchronously (``client.insert(...)``) or
pipelined (``h = client.send("insert", ...)`` then ``h.result()`` or
``client.gather(handles)``); synchronous calls are pipelined calls that wait
at once.  Replies are matched to requests by request id, so they may arrive in
any order.
"""

import collections as _collections
import heapq as _heapq
import itertools as _itertools
import math as _math
import os as _os
import random as _random
import threading as _threading
import time as _time

import zmq as _zmq

from . import _watch
from . import curve as _curve
from . import filters as _filters
from . import wire as _w
from .errors import (ClientClosedError, ProtocolError, RequestBodyTooLargeError,
                     ResourceNotFoundError,
                     SidetableError, SidetableTimeout, SidetableUnreachable,
                     TableAlreadyExistsError, make_error,
                     INSUFFICIENT_STORAGE, READ_SESSION_NOT_AVAILABLE,
                     SERVER_BUSY)
from .types import DateTime, Entity

__all__ = ["Client", "Batch", "Handle", "SidetableError", "SidetableTimeout",
           "SidetableUnreachable", "WriteResult", "QueryPage", "ChangesPage",
           "INSUFFICIENT_STORAGE", "SERVER_BUSY", "READ_SESSION_NOT_AVAILABLE",
           "Watermark", "check_endpoint"]


# How far ``derived`` has applied ``source``'s change records on Kafka
# partition ``partition`` of ``partitions``: every one up to ``lsn``
# (0 only registers the pair). ``time`` is the commit time in DateTime ticks.
Watermark = _collections.namedtuple(
    "Watermark", "derived source partition partitions lsn time")
Watermark.__new__.__defaults__ = (0,)


def _select_names(select):
    """``select`` as the list of names the protocol takes. A str is a
    comma-separated list, as the Azure SDK reads it (``"Name"``,
    ``"Name,Age"``): ``list("Name")`` would have asked for the properties
    ``N``, ``a``, ``m`` and ``e``, and returned them as missing."""
    if isinstance(select, str):
        return [name.strip() for name in select.split(",")]
    if isinstance(select, (bytes, bytearray, memoryview)):
        raise TypeError("select: property names are str, got %s"
                        % type(select).__name__)
    return list(select)


def _seconds(name, value, positive=False):
    """A time-out or back-off in seconds, checked: 0 or less made every
    attempt time out at once (the retries spent in a few ms), NaN and
    infinities failed later inside the poll with an unrelated message."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("%s must be a number of seconds, got %r" % (name, value))
    value = float(value)
    if not _math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ValueError("%s must be a finite number of seconds %s, got %r"
                         % (name, "above 0" if positive else "of 0 or more",
                            value))
    return value


def _count(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("%s must be a whole number of 0 or more, got %r"
                         % (name, value))
    return value


def _check_limit(limit):
    """``limit`` of ``query``: None or a whole number of 0 or more (-1
    returned nothing, as if the table were empty)."""
    if limit is not None:
        _count("limit", limit)
    return limit


def _page_top(top, limit, count):
    """The ``top`` to ask for when ``count`` of ``limit`` entities are
    already read: the caller's, or, without one, no more than the limit
    still wants. ``limit=1`` asked for a default page (up to 1,000
    entities, or the page's byte bound) to return one."""
    if top is not None or limit is None:
        return top
    return max(1, min(1000, limit - count))


def _enc_after(body, after, wait_ms):
    """``after``: an iterable of ``(source_table, lsn)`` pairs or a mapping
    ``{source_table: lsn}``."""
    if after is None:
        return body
    items = after.items() if hasattr(after, "items") else after
    tokens = [{"source": t, "lsn": int(lsn)} for t, lsn in items]
    if tokens:
        body["after"] = tokens
        if wait_ms is not None:
            body["waitMs"] = int(wait_ms)
    return body


def _enc_watermark(w):
    if not isinstance(w, Watermark):
        w = Watermark(**w) if hasattr(w, "keys") else Watermark(*w)
    return {"derived": w.derived, "source": w.source,
            "partition": w.partition, "partitions": w.partitions,
            "lsn": w.lsn, "time": _w.encode_value(DateTime(w.time), "time")}


def _dec_watermarks(body):
    out = []
    for m in body.get("watermarks", []):
        t = m.get("time")
        out.append(Watermark(m["derived"], m["source"], m["partition"],
                             m["partitions"], m["lsn"],
                             t.ticks if isinstance(t, DateTime) else 0))
    return out


class WriteResult(object):
    """The reply of a Write: ``lsn``, ``ts`` (:class:`DateTime`) and
    ``etags`` (one per operation, ``""`` for deletes); for an insert also
    ``entity``, the entity as stored (with Timestamp and ETag), unless it
    was asked for with ``return_entity=False`` (then ``None``).
    ``replayed`` is true when the sidecar answered a retry with the
    remembered outcome of the write's first attempt (same client request
    id): the write was applied once, by that attempt."""

    __slots__ = ("lsn", "ts", "etags", "entity", "replayed")

    def __init__(self, lsn, ts, etags, entity=None, replayed=False):
        self.lsn, self.ts, self.etags, self.entity = lsn, ts, etags, entity
        self.replayed = replayed

    @property
    def etag(self):
        """The ETag of the first (for single writes: the only) operation."""
        return self.etags[0] if self.etags else None

    def __repr__(self):
        return "WriteResult(lsn=%r, ts=%r, etags=%r)" % (self.lsn, self.ts,
                                                          self.etags)


class QueryPage(object):
    """One page of a query.

    ``entities`` (also ``items``; iterating a page and ``len(page)`` use
    them) are the page's :class:`Entity` objects; ``continuation`` is an
    opaque ``(npk, nrk)`` tuple to pass as ``continuation=`` for the next
    page, ``None`` on the last page (``has_more``).  A page may be empty and
    still have a continuation: the server bounds the work of one page.
    ``plan`` names the scan used and ``examined`` counts entities read.
    """

    __slots__ = ("entities", "continuation", "plan", "examined")

    def __init__(self, entities, continuation, plan, examined):
        self.entities = entities
        self.continuation = continuation
        self.plan = plan
        self.examined = examined

    @property
    def items(self):
        return self.entities

    @property
    def has_more(self):
        return self.continuation is not None

    def __iter__(self):
        return iter(self.entities)

    def __len__(self):
        return len(self.entities)

    def __repr__(self):
        return "QueryPage(%d entities, continuation=%r, plan=%r)" % (
            len(self.entities), self.continuation, self.plan)


class ChangesPage(object):
    """The reply of ReadChanges: ``records`` (dicts as in docs/protocol.md,
    with ``before``/``after`` as :class:`Entity`), ``first`` (oldest LSN
    kept) and ``last`` (newest committed LSN)."""

    __slots__ = ("records", "first", "last")

    def __init__(self, records, first, last):
        self.records, self.first, self.last = records, first, last

    def __repr__(self):
        return "ChangesPage(%d records, first=%r, last=%r)" % (
            len(self.records), self.first, self.last)


# -- handles ------------------------------------------------------------------

class Handle(object):
    """A request in flight; like a future.  ``result()`` waits for it."""

    __slots__ = ("_client", "op", "request_id", "_frame", "_decode",
                 "attempt", "_waiting_resend", "_done", "_result", "_error", "_wait",
                 "status", "_first_sent", "_sent", "_drops")

    def __init__(self, client, op, request_id, frame, decode):
        self._client = client
        self.op = op
        self.request_id = request_id
        self._frame = frame
        self._decode = decode
        self.attempt = 0
        self._waiting_resend = False
        self._wait = 0.0
        self._sent = 0.0        # when the current attempt was sent
        self._drops = 0         # the connection watch's drops then
        self._done = False
        self._result = None
        self._error = None
        self.status = None

    def done(self):
        return self._done

    def result(self, timeout=None):
        """The decoded result; raises :class:`SidetableError` for an error
        reply.  ``timeout`` bounds this wait only (``None``: wait until the
        client's own per-attempt time-outs and retries decide)."""
        if not self._done:
            self._client._wait([self], timeout)
        if self._error is not None:
            raise self._error
        return self._result

    def exception(self, timeout=None):
        if not self._done:
            self._client._wait([self], timeout)
        return self._error

    def __repr__(self):
        state = "done" if self._done else "pending"
        return "<Handle %s id=%d %s>" % (_w.OP_NAMES.get(self.op, self.op),
                                         self.request_id, state)


# -- batches ------------------------------------------------------------------

def _check_if_match(if_match):
    """``ValueError`` for ``if_match=""``: the protocol reads an empty
    ``ifMatch`` as no condition, so an ETag variable left empty by a failed
    read would replace or delete whatever is stored (a lost update) where
    the caller asked for a condition."""
    if isinstance(if_match, str) and not if_match:
        raise ValueError("if_match is empty: pass the entity's ETag, \"*\" "
                         "for an unconditional write, or None")


class Batch(object):
    """An entity group transaction: 1 to 100 operations on one PartitionKey
    of one table, committed entirely or not at all by
    :meth:`Client.execute`.

    ``client_request_id``: the id that makes retries safe (1 to 128
    printable ASCII characters, unique per caller); ``None`` lets the client
    draw a random one.  Every attempt of the request carries it, and the
    sidecar answers a retry of a committed write with the first outcome
    instead of applying it again.  It is recorded in the change log, so it
    joins your log lines with the audit trail."""

    def __init__(self, table, caller=None, client_request_id=None):
        self.table = table
        self.caller = caller
        self.client_request_id = client_request_id
        self.ops = []

    def __len__(self):
        return len(self.ops)

    def _add(self, kind, entity, if_match=None, keys_only=False):
        _check_if_match(if_match)
        pk, rk, props = _w.split_entity(entity)
        op = {"op": kind,
              "entity": _w.encode_entity(pk, rk, None if keys_only else props)}
        if if_match is not None:
            op["ifMatch"] = if_match
        self.ops.append(op)
        return self

    def insert(self, entity):
        return self._add("Insert", entity)

    def update(self, entity, if_match=None):
        """Replace an existing entity; ``if_match`` an ETag, ``"*"`` or
        ``None`` (unconditional); ``""`` is a ``ValueError``."""
        return self._add("Update", entity, if_match)

    def merge(self, entity, if_match=None):
        return self._add("Merge", entity, if_match)

    def delete(self, entity_or_pk, rk=None, if_match=None):
        if rk is not None:
            entity_or_pk = Entity(entity_or_pk, rk)
        return self._add("Delete", entity_or_pk, if_match, keys_only=True)

    def insert_or_replace(self, entity):
        return self._add("InsertOrReplace", entity)

    upsert = insert_or_replace

    def insert_or_merge(self, entity):
        return self._add("InsertOrMerge", entity)


# -- decoders -----------------------------------------------------------------

def _dec_none(body):
    return None


def _dec_body(body):
    return body


def _dec_write(body):
    entity = body.get("entity")
    return WriteResult(body.get("lsn"), body.get("ts"),
                       list(body.get("etags") or []),
                       _w.decode_entity(entity) if entity is not None else None,
                       bool(body.get("replayed", False)))


def _dec_get(body):
    return _w.decode_entity(body.get("entity"))


def _dec_query(body):
    cont = None
    if "npk" in body or "nrk" in body:
        cont = (body.get("npk"), body.get("nrk"))
    return QueryPage([_w.decode_entity(e) for e in body.get("entities", [])],
                     cont, body.get("plan"), body.get("examined"))


def _dec_tables(body):
    return list(body.get("tables", [])), body.get("next")


def _dec_record(rec):
    rec = dict(rec)
    ops = []
    for op in rec.get("ops") or []:
        op = dict(op)
        for side in ("before", "after"):
            if side in op:
                op[side] = _w.decode_entity(op[side])
        ops.append(op)
    rec["ops"] = ops
    return rec


def _dec_changes(body):
    return ChangesPage([_dec_record(r) for r in body.get("records", [])],
                       body.get("first"), body.get("last"))


# -- requests -----------------------------------------------------------------

_SCHEMES = ("tcp://", "ipc://", "inproc://")


def _check_tcp_port(endpoint):
    """libzmq connects to port % 65536: tcp://127.0.0.1:73837 reached the
    sidecar on 8301 without a word (session 39)."""
    if not endpoint.startswith("tcp://") or ":" not in endpoint[6:]:
        return
    port = endpoint.rsplit(":", 1)[1]
    if port.lstrip("-").isdigit() and not 0 <= int(port) <= 65535:
        raise ValueError("cannot connect to %r: the port must be a number of "
                         "0..65535, got %r" % (endpoint, port))


def check_endpoint(endpoint):
    """``ValueError`` with a hint unless ``endpoint`` is a ZeroMQ address
    with a ``tcp://``, ``ipc://`` or ``inproc://`` scheme."""
    if not isinstance(endpoint, str):
        raise TypeError("endpoint must be a str such as 'tcp://127.0.0.1:5555'")
    if endpoint.startswith(_SCHEMES) and len(endpoint) > endpoint.index("//") + 2:
        _check_tcp_port(endpoint)
        return endpoint
    text = endpoint.strip()
    if "://" in text:
        text = text.split("://", 1)[1]
    if text.startswith("/") or text.endswith(".sock"):
        hint = "ipc://" + text
    elif text.isdigit():
        hint = "tcp://127.0.0.1:" + text
    elif ":" in text:
        hint = "tcp://" + text
    else:
        hint = "tcp://%s:5555" % (text or "127.0.0.1")
    raise ValueError("endpoint %r is not a ZeroMQ address (tcp://host:port or "
                     "ipc:///path): did you mean %s?" % (endpoint, hint))


def _policy_to_wire(p):
    """A stored access policy as a dict: ``id``, and optional ``start`` and
    ``expiry`` (aware datetimes or RFC 3339 "...Z" text) and ``permissions``
    (letters of ``raudmc``)."""
    from sidetable import tokens as _tokens
    out = {"id": p["id"]}
    for key in ("start", "expiry"):
        v = p.get(key)
        if v is not None:
            out[key] = v if isinstance(v, str) else _tokens.format_time(v)
    if p.get("permissions") is not None:
        out["sp"] = p["permissions"]
    return out


def _policy_from_wire(p):
    return {"id": p["id"], "start": p.get("start"), "expiry": p.get("expiry"),
            "permissions": p.get("sp")}


class _Requests(object):
    """Builds every request as ``(op, body, decoder)``; shared by
    :class:`Client` and :class:`sidetable.aio.AsyncClient`."""

    caller = None
    client_request_ids = True

    def _caller(self, caller):
        return self.caller if caller is None else caller

    def _settings(self, endpoint, timeout, retries, caller, backoff,
                  max_backoff, connect_timeout, client_request_ids, token,
                  curve_server_key, curve_public_key, curve_secret_key,
                  max_request_bytes=6 << 20):
        """The constructor arguments both clients share, checked and kept;
        returns the CURVE keys for :func:`_dealer` (None: plain)."""
        # None or 0: no check. -1 refused every request as "over twice -1".
        self.max_request_bytes = _count("max_request_bytes",
                                        max_request_bytes or 0)
        self.endpoint = check_endpoint(endpoint)
        # A signed access token (docs/security.md) sent with every request;
        # assign ``client.token`` to refresh it.
        self.token = token
        curve = _curve_keys(curve_server_key, curve_public_key,
                            curve_secret_key)
        self.client_request_ids = bool(client_request_ids)
        # Client request ids: this client's 64 random bits, then a counter
        # (as the C++ client's): unique, and one client's ids grow in byte
        # order, which the sidecar's request log inserts cheaply.
        self._id_prefix = "%016x" % _random.SystemRandom().getrandbits(64)
        self._id_count = _itertools.count()
        self.timeout = _seconds("timeout", timeout, positive=True)
        self.connect_timeout = (max(self.timeout, 1.0) if connect_timeout is None
                                else _seconds("connect_timeout", connect_timeout))
        self.retries = _count("retries", retries)
        self.caller = caller
        self.backoff = _seconds("backoff", backoff)
        self.max_backoff = _seconds("max_backoff", max_backoff)
        # libzmq's sockets and threads do not survive fork(): a child that
        # used this client waited in poll() for ever, whatever the timeout.
        self._pid = _os.getpid()
        return curve

    def _check_process(self):
        if _os.getpid() != self._pid:
            raise RuntimeError(
                "this sidetable client was created in process %d and used in "
                "process %d, a child made by fork(): ZeroMQ sockets do not "
                "survive a fork; create a new client in the child"
                % (self._pid, _os.getpid()))

    def _encode(self, op, rid, body):
        """The request frame, refused here when no sidecar with this
        client's ``max_request_bytes`` could answer it: over twice that,
        the sidecar's ZeroMQ drops the frame with the connection
        (maxmsgsize), and the request would only time out, attempt after
        attempt.  Up to twice, the sidecar answers 413 itself."""
        frame = _w.encode_request(op, rid, body, self.token)
        limit = self.max_request_bytes
        if limit and len(frame) > 2 * limit:
            raise RequestBodyTooLargeError(
                None, "RequestBodyTooLarge",
                "request of %d bytes not sent: over twice max_request_bytes "
                "(%d), the sidecar's ZeroMQ would drop it with the connection "
                "(max_request_bytes should match the sidecar's "
                "sidecar.max_request_bytes)" % (len(frame), limit), op=op)
        return frame

    # -- request builders: (op, body, decoder) --

    def _req_ping(self):
        return _w.PING, {}, _dec_body

    def _req_create_table(self, table, caller=None):
        return _w.CREATE_TABLE, self._with_caller({"table": table}, caller), \
            _dec_none

    def _req_delete_table(self, table, caller=None):
        return _w.DELETE_TABLE, self._with_caller({"table": table}, caller), \
            _dec_none

    def _req_list_tables_page(self, filter=None, top=None, next=None,
                              parameters=None):
        body = {}
        if parameters is not None:
            filter = _filters.format_filter(filter or "", parameters)
        if filter is not None:
            body["filter"] = filter
        if top is not None:
            body["top"] = top
        if next is not None:
            body["next"] = next
        return _w.LIST_TABLES, body, _dec_tables

    def _req_execute(self, batch):
        body = {"table": batch.table, "ops": batch.ops}
        crid = batch.client_request_id
        if crid is None and self.client_request_ids:
            # drawn once: every retry sends the same
            crid = "%s%016x" % (self._id_prefix, next(self._id_count))
        if crid is not None:
            body["clientRequestId"] = crid
        return _w.WRITE, self._with_caller(body, batch.caller), _dec_write

    def _single(self, table, caller, kind, entity, if_match=None):
        b = Batch(table, caller)
        getattr(b, kind)(entity, **({} if if_match is None
                                    else {"if_match": if_match}))
        return self._req_execute(b)

    def _req_insert(self, table, entity, caller=None, return_entity=True):
        op, body, dec = self._single(table, caller, "insert", entity)
        if not return_entity:
            body["noContent"] = True     # 204: no entity in the reply
        return op, body, dec

    def _req_update(self, table, entity, if_match=None, caller=None):
        return self._single(table, caller, "update", entity, if_match)

    def _req_merge(self, table, entity, if_match=None, caller=None):
        return self._single(table, caller, "merge", entity, if_match)

    def _req_delete(self, table, entity_or_pk, rk=None, if_match=None,
                    caller=None):
        b = Batch(table, caller)
        b.delete(entity_or_pk, rk, if_match)
        return self._req_execute(b)

    def _req_insert_or_replace(self, table, entity, caller=None):
        return self._single(table, caller, "insert_or_replace", entity)

    _req_upsert = _req_insert_or_replace

    def _req_insert_or_merge(self, table, entity, caller=None):
        return self._single(table, caller, "insert_or_merge", entity)

    def _req_get(self, table, pk, rk, select=None, after=None, wait_ms=None):
        body = {"table": table, "pk": pk, "rk": rk}
        if select is not None:
            body["select"] = _select_names(select)
        return _w.GET, _enc_after(body, after, wait_ms), _dec_get

    def _req_advance_watermarks(self, watermarks):
        body = {"watermarks": [_enc_watermark(w) for w in watermarks]}
        return _w.ADVANCE_WATERMARKS, body, _dec_none

    def _req_set_table_policies(self, table, policies):
        body = {"table": table, "policies": [_policy_to_wire(p) for p in policies]}
        return _w.SET_TABLE_POLICIES, body, _dec_body

    def _req_get_table_policies(self, table):
        return _w.GET_TABLE_POLICIES, {"table": table}, \
            lambda b: [_policy_from_wire(p) for p in b.get("policies", [])]

    def _req_issue_token(self, spec):
        from sidetable import tokens as _tokens
        body = {"spec": dict(_tokens.spec_fields(spec))}
        return _w.ISSUE_TOKEN, body, lambda b: b["token"]

    def _req_backup(self):
        return _w.BACKUP, {}, _dec_body

    def _req_forget_watermarks(self, derived):
        return _w.FORGET_WATERMARKS, {"derived": derived}, _dec_none

    def _req_read_watermarks(self, derived=None):
        body = {} if derived is None else {"derived": derived}
        return _w.READ_WATERMARKS, body, _dec_watermarks

    def _req_query_page(self, table, filter=None, select=None, top=None,
                        continuation=None, after=None, wait_ms=None,
                        parameters=None):
        body = _enc_after({"table": table}, after, wait_ms)
        if parameters is not None:
            filter = _filters.format_filter(filter or "", parameters)
        if filter is not None:
            body["filter"] = filter
        if select is not None:
            body["select"] = _select_names(select)
        if top is not None:
            body["top"] = top
        if continuation is not None:
            body["npk"], body["nrk"] = continuation
        return _w.QUERY, body, _dec_query

    def _req_read_changes(self, from_lsn, max=None, max_bytes=None):
        # Checked here: msgpack's OverflowError (2**64) or a negative LSN
        # sent as a signed integer named nothing.
        for name, v in (("from_lsn", from_lsn), ("max", max),
                        ("max_bytes", max_bytes)):
            if v is None and name != "from_lsn":
                continue
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError("%s must be an int, got %r" % (name, v))
            if not 0 <= v < 2 ** 64:
                raise ValueError("%s must be 0 to 2**64-1, got %d" % (name, v))
        body = {"from": from_lsn}
        if max is not None:
            body["max"] = max
        if max_bytes is not None:
            body["maxBytes"] = max_bytes
        return _w.READ_CHANGES, body, _dec_changes

    def _req_request_archive(self, table, pk, row_keys, archive_table, caller=None):
        body = self._with_caller({"table": table, "pk": pk, "rks": list(row_keys),
                                  "target": archive_table}, caller)
        return _w.REQUEST_ARCHIVE, body, lambda b: b["lsn"]

    def _with_caller(self, body, caller):
        c = self._caller(caller)
        if c is not None:
            body["caller"] = c
        return body


# -- the client ---------------------------------------------------------------


def _curve_keys(server_key, public_key, secret_key):
    """The three CURVE keys as Z85 bytes, or None for a plain connection;
    ValueError unless all three or none are given, each a Z85 key."""
    keys = (server_key, public_key, secret_key)
    if all(k is None for k in keys):
        return None
    out = []
    for name, k in zip(("curve_server_key", "curve_public_key",
                        "curve_secret_key"), keys):
        if isinstance(k, str):
            k = k.encode("ascii", "replace")
        if not _curve.is_z85_key(k):
            raise ValueError("%s: CURVE needs the server's public key and this "
                             "client's key pair, each a Z85 key of 40 "
                             "characters (sidetable.curve reads key files)"
                             % name)
        out.append(k)
    if not _zmq.has("curve"):
        raise ValueError("this libzmq was built without CURVE")
    return tuple(out)


def _dealer(ctx, endpoint, own_context, curve=None):
    """``(socket, watch)``: a DEALER socket connected to `endpoint` with the
    clients' options (no linger, unbounded queues: the retry timers bound
    what waits), and CURVE when `curve` holds (server, public, secret) keys;
    the :class:`_watch.ConnectionWatch` that says why it gets no reply. On a
    bad endpoint the context is closed if it is ours and ValueError raised.
    Shared by Client and aio.AsyncClient."""
    sock = ctx.socket(_zmq.DEALER)
    sock.setsockopt(_zmq.LINGER, 0)
    sock.setsockopt(_zmq.SNDHWM, 0)
    sock.setsockopt(_zmq.RCVHWM, 0)
    if curve is not None:
        sock.curve_serverkey, sock.curve_publickey, sock.curve_secretkey = curve
    watch = _watch.ConnectionWatch(sock, ctx)    # before it connects
    try:
        sock.connect(endpoint)
    except _zmq.ZMQError as e:
        sock.close(0)
        watch.close()
        if own_context:
            ctx.term()
        raise ValueError("cannot connect to %r: %s" % (endpoint, e))
    return sock, watch


def _unreachable_message(endpoint, seconds, op, attempts, why):
    """SidetableUnreachable's text: `why` from the connection's watch, or
    the usual question when it saw nothing."""
    hint = "is the sidecar running?"
    if why and "nothing listens" not in why:
        hint = why
    elif why:
        hint = why + "; " + hint
    return "nothing answered at %s within %.3g s (%s, %d attempt(s)) \u2014 %s" % (
        endpoint, seconds, op, attempts, hint)


def _timeout_message(op, request_id, timeout, attempts, why):
    m = "no reply to %s (request %d) within %.3g s after %d attempt(s)" % (
        op, request_id, timeout, attempts)
    return m + ": " + why if why else m

class Client(_Requests):
    """A connection to one sidetable sidecar.

    ``endpoint``: a ZeroMQ address such as ``tcp://127.0.0.1:5555``.
    ``timeout``: seconds to wait for each attempt's reply (finite, above
    0; ``backoff``, ``max_backoff`` and ``connect_timeout`` finite and 0 or
    more, ``retries`` a whole number of 0 or more: ``ValueError`` otherwise).
    ``retries``: how many times a request is sent again after ServerBusy
    (503) or a time-out, with exponential back-off (``backoff`` doubling up
    to ``max_backoff`` seconds) and random jitter; 0 disables retries.
    ``caller``: the identity recorded in the change log for this client's
    writes and table operations (can be overridden per call).
    ``connect_timeout``: until the endpoint has answered once, time-outs are
    retried only while a request is younger than this (default: ``timeout``,
    at least 1 s); then :class:`SidetableUnreachable` says that nothing
    answers there, instead of ``retries`` silent time-outs.  Once anything
    has answered, time-outs are retried as usual (a restarting sidecar).

    ``endpoint`` must have a ``tcp://``, ``ipc://`` or ``inproc://`` scheme;
    anything else is a ``ValueError`` at once, with a suggestion.

    A retried request keeps its request id, so a late reply to an earlier
    attempt also completes it.  Every write also carries a client request
    id (its batch's, or a random one), the same on each attempt: a write
    retried after a time-out whose first attempt did commit is answered with
    that first outcome (``WriteResult.replayed``), never applied twice,
    within the sidecar's request-id window (docs/protocol.md).
    ``client_request_ids=False`` sends none.

    ``curve_server_key``, ``curve_public_key``, ``curve_secret_key``: ZeroMQ
    CURVE (docs/security.md, "Transport"): the sidecar's public key and this
    client's key pair, Z85 (40 characters, str or bytes); all three or none.
    :mod:`sidetable.curve` reads them from key files.  A sidecar that does
    not allow this client's key refuses it at the handshake: nothing
    answers, so requests end in :class:`SidetableUnreachable` after
    ``connect_timeout``.

    ``max_request_bytes``: the sidecar's ``sidecar.max_request_bytes`` (its
    default here).  A request over twice this is refused at once with
    :class:`RequestBodyTooLargeError`, never sent: the sidecar's ZeroMQ
    drops such a frame with the connection, so it could only time out.  Up
    to twice this, the sidecar itself answers 413 to what is over its limit.
    Raise it with the sidecar's; 0 turns the check off.
    """

    def __init__(self, endpoint, timeout=5.0, retries=5, caller=None,
                 backoff=0.02, max_backoff=1.0, context=None,
                 connect_timeout=None, client_request_ids=True, token=None,
                 curve_server_key=None, curve_public_key=None,
                 curve_secret_key=None, max_request_bytes=6 << 20):
        self._sock = None            # before anything can fail: __del__ reads it
        curve = self._settings(endpoint, timeout, retries, caller, backoff,
                               max_backoff, connect_timeout, client_request_ids,
                               token, curve_server_key, curve_public_key,
                               curve_secret_key, max_request_bytes)
        self._answered = False       # has any reply arrived on this socket?
        # A ZeroMQ socket belongs to one thread: used from two at once,
        # libzmq aborts the process (an assertion in msg.cpp) or crashes.
        # Say so instead, at the first call from another thread.
        self._owner = _threading.get_ident()
        self._own_context = context is None
        self._ctx = context or _zmq.Context()
        self._sock, self._watch = _dealer(self._ctx, endpoint,
                                          self._own_context, curve)
        self._curve = curve is not None
        self._ids = _itertools.count(1)
        self._pending = {}           # request id -> Handle
        # Heap of (when, seq, request id, attempt, kind). By id, not by
        # handle: an entry outlives its request until its deadline, and a
        # handle keeps its result, so reading query pages back to back held
        # every page of the last `timeout` seconds (900 MB for 300 pages of
        # 3 MB; found from outside).
        self._timers = []
        self._seq = _itertools.count()
        self._rng = _random.Random()
        # Statistics, handy for tests and monitoring.
        self.busy_replies = 0        # 503 replies received
        self.timeouts = 0            # attempts that timed out
        self.resends = 0             # attempts sent again
        self.stray_replies = 0       # replies matching no pending request

    # -- life cycle --

    def close(self):
        if self._sock is not None:
            self._sock.close(0)
            self._sock = None
            self._watch.close()
            if self._own_context:
                self._ctx.term()

    def __del__(self):
        # A client dropped without close(): close its socket before its
        # context goes, here and in order. Left to the garbage collector,
        # the context could be destroyed first and wait for ever on the
        # socket (seen as a hang of the whole test suite).
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def in_flight(self):
        return len(self._pending)

    # -- pipelining --

    def send(self, name, *args, **kwargs):
        """Start operation ``name`` (``"insert"``, ``"get"``, ``"query_page"``,
        ``"execute"``, ...; any single-request method) and return its
        :class:`Handle` without waiting."""
        builder = getattr(self, "_req_" + name, None)
        if builder is None:
            raise ValueError("%r is not a single-request operation" % (name,))
        return self._submit(*builder(*args, **kwargs))

    def send_raw(self, op, body):
        """Send ``body`` (a dict, encoded as is) with operation code ``op``;
        the handle's result is the reply body."""
        return self._submit(op, body, _dec_body)

    def gather(self, handles, return_exceptions=False, timeout=None):
        """Wait for all ``handles``; their results in order.  With
        ``return_exceptions`` errors are returned in place instead of
        raising the first one."""
        handles = list(handles)
        for h in handles:
            # Waited for on this socket, another client's request never
            # completes: gather looped for ever.
            if h._client is not self:
                raise ValueError("%r belongs to another client: gather each "
                                 "client's handles with that client" % (h,))
        self._wait(handles, timeout)
        out = []
        for h in handles:
            if h._error is not None:
                if not return_exceptions:
                    raise h._error
                out.append(h._error)
            else:
                out.append(h._result)
        return out

    def _check_thread(self):
        self._check_process()
        if _threading.get_ident() != self._owner:
            raise RuntimeError(
                "a sidetable Client is not thread-safe: this one was created "
                "in thread %d and called from thread %d; create one client "
                "per thread" % (self._owner, _threading.get_ident()))

    def _submit(self, op, body, decode):
        if self._sock is None:
            raise ClientClosedError(None, "Closed", "the client is closed",
                                    op=op)
        self._check_thread()
        rid = next(self._ids)
        h = Handle(self, op, rid, self._encode(op, rid, body), decode)
        h._first_sent = _time.monotonic()
        # A read with session tokens may be held by the server on purpose:
        # each attempt may take that much longer.
        if isinstance(body, dict) and "after" in body:
            h._wait = body.get("waitMs", 5000) / 1000.0
        else:
            h._wait = _w.EXTRA_WAIT_S.get(op, h._wait)
        self._pending[rid] = h
        self._transmit(h)
        return h

    def _transmit(self, h):
        h.attempt += 1
        h._waiting_resend = False
        if h.attempt > 1:
            self.resends += 1
        try:
            self._sock.send(h._frame, _zmq.NOBLOCK, copy=False)
        except _zmq.Again:
            # No connection to queue on: none yet, or its handshake was
            # refused (CURVE). The deadline below retries or gives up,
            # instead of blocking here for ever.
            pass
        h._sent = _time.monotonic()
        h._drops = self._watch.drops
        self._push(h._sent + self.timeout, h, "deadline")

    def _keep_waiting(self, h):
        """At an attempt's deadline: a request allowed to take longer
        (Backup, a parked session read) gets another ``timeout`` while the
        connection it was sent on is up, until its extra wait is spent. A
        sidecar that is not there, or went away, times out like any request
        (before session 41 a backup waited the whole 10 minutes for it)."""
        limit = h._sent + self.timeout + h._wait
        now = _time.monotonic()
        if now >= limit or not self._watch.still_up(h._drops):
            return False
        self._push(min(now + self.timeout, limit), h, "deadline")
        return True

    def _push(self, when, h, kind):
        if len(self._timers) > 4 * len(self._pending) + 64:
            self._drop_stale_timers()
        _heapq.heappush(self._timers,
                        (when, next(self._seq), h.request_id, h.attempt, kind))

    def _drop_stale_timers(self):
        """Keeps the heap to the order of the requests in flight: a client
        reading fast adds an entry per attempt, due only `timeout` later."""
        self._timers = [t for t in self._timers if t[2] in self._pending]
        _heapq.heapify(self._timers)

    def _delay(self, attempt):
        base = min(self.max_backoff, self.backoff * (2 ** (attempt - 1)))
        return base * (0.5 + self._rng.random() * 0.5)   # jitter: 50..100 %

    def _complete(self, h, result=None, error=None):
        h._done = True
        h._result = result
        h._error = error
        self._pending.pop(h.request_id, None)
        h._frame = None

    def _retry_or_fail(self, h, error):
        if h.attempt <= self.retries:
            h._waiting_resend = True
            self._push(_time.monotonic() + self._delay(h.attempt), h, "resend")
        else:
            self._complete(h, error=error)

    def _on_frame(self, frame):
        try:
            op, status, rid, body = _w.decode_reply(frame)
        except Exception:
            self.stray_replies += 1
            return
        self._answered = True
        h = self._pending.get(rid)
        if h is None or h._done:
            self.stray_replies += 1
            return
        h.status = status
        if 200 <= status < 300:
            try:
                self._complete(h, result=h._decode(body))
            except Exception as e:  # a malformed reply
                self._complete(h, error=ProtocolError(
                    status, "ProtocolError", "cannot decode reply: %s" % e,
                    op=h.op))
            return
        err = make_error(status, body.get("code", "Unknown"),
                         body.get("message", ""), body.get("index"), op=h.op)
        if status == 503:
            self.busy_replies += 1
            if h._waiting_resend:
                return        # a late reply to an earlier attempt
            self._retry_or_fail(h, err)
        else:
            self._complete(h, error=err)

    def _on_timer(self, rid, attempt, kind):
        h = self._pending.get(rid)
        if h is None or h._done or attempt != h.attempt:
            return
        if kind == "resend":
            if h._waiting_resend:
                self._transmit(h)
        elif not h._waiting_resend:        # deadline of the current attempt
            if h._wait and self._keep_waiting(h):
                return
            self.timeouts += 1
            if not self._answered and (
                    h.attempt > self.retries or
                    _time.monotonic() - h._first_sent >= self.connect_timeout):
                self._complete(h, error=self._unreachable(h))
                return
            why = (self._watch.explain(self.endpoint, self._curve)
                   if h.attempt > self.retries else "")
            self._retry_or_fail(h, SidetableTimeout(_timeout_message(
                _w.OP_NAMES.get(h.op, h.op), h.request_id, self.timeout,
                h.attempt, why), op=h.op))

    def _unreachable(self, h):
        return SidetableUnreachable(_unreachable_message(
            self.endpoint, _time.monotonic() - h._first_sent,
            _w.OP_NAMES.get(h.op, h.op), h.attempt,
            self._watch.explain(self.endpoint, self._curve)), op=h.op)

    def _wait(self, handles, timeout=None):
        self._check_thread()
        limit = None if timeout is None else _time.monotonic() + timeout
        sock = self._sock
        todo = [h for h in handles if not h._done]
        while todo:
            now = _time.monotonic()
            while self._timers and self._timers[0][0] <= now:
                _, _, rid, attempt, kind = _heapq.heappop(self._timers)
                self._on_timer(rid, attempt, kind)
            todo = [h for h in todo if not h._done]
            if not todo:
                break
            if sock is None:
                raise ClientClosedError(None, "Closed", "the client is closed")
            wake = self._timers[0][0] if self._timers else now + 1.0
            if limit is not None:
                if now >= limit:
                    raise SidetableTimeout("gave up waiting after %.3g s"
                                           % timeout)
                wake = min(wake, limit)
            ms = max(0, int((wake - now) * 1000) + 1)
            if sock.poll(ms, _zmq.POLLIN):
                while True:
                    try:
                        frame = sock.recv(_zmq.NOBLOCK, copy=True)
                    except _zmq.Again:
                        break
                    self._on_frame(frame)
            else:
                self._watch.drain()   # idle: keep the monitor's queue short

    def _run(self, op, body, decode):
        return self._submit(op, body, decode).result()

    # -- synchronous API --

    def ping(self):
        """``{"version": 1, "sidecar": id, "lsn": last LSN}``."""
        return self._run(*self._req_ping())

    def create_table(self, table, caller=None, exist_ok=False):
        """Create ``table``; :class:`TableAlreadyExistsError` if it exists,
        unless ``exist_ok``."""
        try:
            self._run(*self._req_create_table(table, caller))
        except TableAlreadyExistsError:
            if not exist_ok:
                raise

    def delete_table(self, table, caller=None, missing_ok=False):
        """Delete ``table``; :class:`TableNotFoundError` if there is none,
        unless ``missing_ok``."""
        try:
            self._run(*self._req_delete_table(table, caller))
        except ResourceNotFoundError:
            if not missing_ok:
                raise

    def list_tables_page(self, filter=None, top=None, next=None,
                         parameters=None):
        """``(names, next)``; ``next`` is ``None`` on the last page."""
        return self._run(*self._req_list_tables_page(filter, top, next,
                                                     parameters))

    def list_tables(self, filter=None, top=None, parameters=None):
        """All table names (following continuations), ``top`` per page."""
        names, nxt = self.list_tables_page(filter, top, None, parameters)
        while nxt is not None:
            more, nxt = self.list_tables_page(filter, top, nxt, parameters)
            names.extend(more)
        return names

    def execute(self, batch):
        """Commit a :class:`Batch` atomically; a :class:`WriteResult`."""
        return self._run(*self._req_execute(batch))

    def insert(self, table, entity, caller=None, return_entity=True):
        """Insert; the result's ``entity`` is the entity as stored (as
        Azure's 201), or ``None`` with ``return_entity=False`` (204)."""
        return self._run(*self._req_insert(table, entity, caller, return_entity))

    def update(self, table, entity, if_match=None, caller=None):
        """Replace; ``if_match`` an ETag (e.g. ``entity.etag``), ``"*"`` or
        ``None`` for unconditional (``""`` is a ``ValueError``: on the wire
        it would mean no condition)."""
        return self._run(*self._req_update(table, entity, if_match, caller))

    def merge(self, table, entity, if_match=None, caller=None):
        return self._run(*self._req_merge(table, entity, if_match, caller))

    def delete(self, table, entity_or_pk, rk=None, if_match=None,
               caller=None):
        """``delete(t, entity)`` or ``delete(t, pk, rk)``."""
        return self._run(*self._req_delete(table, entity_or_pk, rk, if_match,
                                           caller))

    def insert_or_replace(self, table, entity, caller=None):
        return self._run(*self._req_insert_or_replace(table, entity, caller))

    upsert = insert_or_replace

    def insert_or_merge(self, table, entity, caller=None):
        return self._run(*self._req_insert_or_merge(table, entity, caller))

    def get(self, table, pk, rk, select=None, after=None, wait_ms=None):
        """The :class:`Entity`; ResourceNotFound (404) if missing.

        ``select``: property names, a list or a comma-separated str.

        ``after`` (session tokens, ``{source_table: lsn}``) makes the server
        answer only once ``table`` covers those writes of its sources, or
        fail with ReadSessionNotAvailable after ``wait_ms`` (default 5000)."""
        return self._run(*self._req_get(table, pk, rk, select, after, wait_ms))

    def query_page(self, table, filter=None, select=None, top=None,
                   continuation=None, after=None, wait_ms=None,
                   parameters=None):
        """One :class:`QueryPage`; pass its ``continuation`` for the next.

        ``parameters`` (``{"name": value}``) fills ``@name`` placeholders of
        ``filter`` with OData literals (:func:`sidetable.format_filter`)."""
        return self._run(*self._req_query_page(table, filter, select, top,
                                               continuation, after, wait_ms,
                                               parameters))

    def query_pages(self, table, filter=None, select=None, top=None,
                    continuation=None, after=None, wait_ms=None,
                    parameters=None):
        """An iterator over :class:`QueryPage` objects, from ``continuation``
        (or the start) to the last page; empty pages are included."""
        if parameters is not None:
            filter = _filters.format_filter(filter or "", parameters)
        while True:
            page = self.query_page(table, filter, select, top, continuation,
                                   after, wait_ms)
            yield page
            continuation = page.continuation
            if continuation is None:
                return

    def query(self, table, filter=None, select=None, top=None, limit=None,
              after=None, wait_ms=None, parameters=None):
        """An iterator over all matching entities, fetching pages lazily.

        ``top`` is the page size (1..1000, as in the protocol); ``limit``
        caps the total number of entities returned; ``parameters`` as in
        :meth:`query_page`."""
        if parameters is not None:      # errors now, not at the first next()
            filter = _filters.format_filter(filter or "", parameters)
        _check_limit(limit)
        return self._query(table, filter, select, top, limit, after, wait_ms)

    def _query(self, table, filter, select, top, limit, after, wait_ms):
        count = 0
        cont = None
        while limit != 0:
            page = self.query_page(table, filter, select,
                                   _page_top(top, limit, count), cont, after,
                                   wait_ms)
            for e in page.entities:
                if limit is not None and count >= limit:
                    return
                count += 1
                yield e
            cont = page.continuation
            if cont is None or (limit is not None and count >= limit):
                return

    def request_archive(self, table, pk, row_keys, archive_table, caller=None):
        """Asks the archive pattern's workers to move these entities of one
        partition to `archive_table`; returns the change record's LSN."""
        return self._run(*self._req_request_archive(table, pk, row_keys, archive_table, caller))

    def advance_watermarks(self, watermarks):
        """Raise the stored watermarks (each only grows; durable): a list of
        :class:`Watermark` (or dicts / tuples of its fields), at most 1,000."""
        return self._run(*self._req_advance_watermarks(watermarks))

    def read_watermarks(self, derived=None):
        """Every stored :class:`Watermark`, or those of one derived table."""
        return self._run(*self._req_read_watermarks(derived))

    def forget_watermarks(self, derived):
        """Stop counting ``derived`` as a derived table: forget its
        watermarks (nothing registered is not an error). For a table no
        worker derives any more; a worker that still does registers it
        again with its next report. Needs permission ``m``."""
        self._run(*self._req_forget_watermarks(derived))

    def set_table_policies(self, table, policies):
        """Replace ``table``'s stored access policies (at most 5 dicts with
        ``id`` and optional ``start``, ``expiry``, ``permissions``; ``[]``
        removes all). Changing or removing one revokes the tokens issued
        under it at once. Needs permission ``m``."""
        self._run(*self._req_set_table_policies(table, policies))

    def get_table_policies(self, table):
        """``table``'s stored access policies, as dicts (times as text)."""
        return self._run(*self._req_get_table_policies(table))

    def issue_token(self, spec):
        """Has the sidecar sign a token for ``spec`` (a
        :class:`sidetable.tokens.TokenSpec`) with its own key, and returns
        the text. This client's token must hold ``m`` and ``spec`` must lie
        within it (table, key range, permissions, its own expiry not after
        this token's, the same tenant); otherwise
        ``AuthorizationFailureError`` or
        ``AuthorizationPermissionMismatchError`` and nothing is issued.
        ``InvalidInputError`` from a sidecar with authentication off."""
        return self._run(*self._req_issue_token(spec))

    def backup(self):
        """Has the sidecar make a backup of its whole data directory in its
        ``storage.backup_dir`` (docs/operations.md, "Backup and restore"):
        every write acknowledged before the call is in it. Returns
        ``{"name", "path", "firstLsn", "lastLsn", "tables", "files",
        "bytes", "micros", "removed"}``; ``path`` is on the sidecar's host.
        The sidecar may take up to 10 minutes beyond the client's timeout;
        the client waits that long only while its connection is up.
        ``InvalidInputError`` when the sidecar has no backup directory,
        ``InsufficientStorageError`` when a disk is full (nothing is left
        behind); with authentication on it needs ``r``, ``c`` and ``m`` on
        every table."""
        return self._run(*self._req_backup())

    def read_changes(self, from_lsn, max=None, max_bytes=None):
        """A :class:`ChangesPage` of change records with LSN >= from_lsn."""
        return self._run(*self._req_read_changes(from_lsn, max, max_bytes))
