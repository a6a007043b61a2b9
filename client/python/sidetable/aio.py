"""An asyncio client: :class:`AsyncClient` has the methods of
:class:`sidetable.Client` as coroutines, over ``zmq.asyncio``.

``async with AsyncClient("tcp://127.0.0.1:5555") as c: await c.insert(...)``.
Many coroutines may call one client at once (``asyncio.gather``): each
request has its own id and a single reader task hands replies out, so they
are pipelined on one socket.  Retries follow the blocking client's rules:
ServerBusy (503) and time-outs are retried ``retries`` times with jittered
exponential back-off, reusing the request id; until the endpoint has
answered once, a time-out past ``connect_timeout`` raises
:class:`~sidetable.SidetableUnreachable`.  ``query`` and ``query_pages``
are async generators.  Use the client from one event loop.
"""

import asyncio as _asyncio
import itertools as _itertools
import random as _random
import time as _time
import weakref as _weakref

import zmq as _zmq
import zmq.asyncio as _zmq_asyncio

from . import client as _client
from . import filters as _filters
from . import wire as _w
from .client import _Requests, check_endpoint
from .errors import (ClientClosedError, ProtocolError, ResourceNotFoundError,
                     SidetableTimeout, SidetableUnreachable,
                     TableAlreadyExistsError, make_error)

__all__ = ["AsyncClient"]


async def _read_replies(sock, pending, client_ref):
    """The reader task: hands each reply to the future of its request. It
    holds the client only through ``client_ref`` (a weak reference), and
    never across an ``await``, so that a client dropped without close() is
    freed and its __del__ closes the socket."""
    while True:
        _deliver(await sock.recv(), pending, client_ref())


def _deliver(frame, pending, client):
    try:
        _op, status, rid, body = _w.decode_reply(frame)
    except Exception:
        if client is not None:
            client.stray_replies += 1
        return
    if client is not None:
        client._answered = True
    fut = pending.get(rid)
    if fut is None or fut.done():
        if client is not None:
            client.stray_replies += 1
        return
    fut.set_result((status, body))


class AsyncClient(_Requests):
    """One DEALER socket to one sidecar; arguments as :class:`sidetable.Client`."""

    def __init__(self, endpoint, timeout=5.0, retries=5, caller=None,
                 backoff=0.02, max_backoff=1.0, context=None,
                 connect_timeout=None, client_request_ids=True, token=None,
                 curve_server_key=None, curve_public_key=None,
                 curve_secret_key=None, max_request_bytes=6 << 20):
        curve = self._settings(endpoint, timeout, retries, caller, backoff,
                               max_backoff, connect_timeout, client_request_ids,
                               token, curve_server_key, curve_public_key,
                               curve_secret_key, max_request_bytes)
        self._own_context = context is None
        self._ctx = context or _zmq_asyncio.Context()
        self._sock, self._watch = _client._dealer(
            self._ctx, endpoint, self._own_context, curve)
        self._curve = curve is not None
        self._ids = _itertools.count(1)
        self._pending = {}          # request id -> Future of (status, body)
        self._reader = None
        # The event loop of the first request: the reader task and the
        # socket's futures live there. A second asyncio.run() would wait on
        # a reader that died with the first loop, and time out although the
        # sidecar answered: refused by name instead.
        self._loop = None
        self._answered = False
        self._rng = _random.Random()
        self.busy_replies = 0
        self.timeouts = 0
        self.resends = 0
        self.stray_replies = 0

    # -- life cycle --

    async def close(self):
        if self._reader is not None:
            self._reader.cancel()
            try:
                await self._reader
            except (_asyncio.CancelledError, Exception):
                pass
            self._reader = None
        self._close_socket()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ClientClosedError(
                    None, "Closed", "the client is closed"))
                # A request in its back-off is not awaiting this future:
                # it finds the socket closed itself. Marked as retrieved so
                # that asyncio does not log it as lost.
                fut.exception()
        self._pending.clear()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    @property
    def in_flight(self):
        return len(self._pending)

    def __del__(self):
        # A client dropped without close(). Its reader task holds only a
        # weak reference to it, so this runs when the application lets go
        # of it; closing the socket cancels the reader's receive. Left to
        # the garbage collector, the context could be destroyed before the
        # socket and wait for it for ever: the first collection after the
        # event loop ended hung the whole process.
        try:
            self._close_socket()
        except Exception:
            pass

    def _close_socket(self):
        if getattr(self, "_sock", None) is not None:
            self._sock.close(0)
            self._sock = None
            self._watch.close()
            if self._own_context:
                self._ctx.term()

    # -- transport --


    def _delay(self, attempt):
        base = min(self.max_backoff, self.backoff * (2 ** (attempt - 1)))
        return base * (0.5 + self._rng.random() * 0.5)

    async def _reply(self, fut, wait):
        """The reply to the attempt just sent, within ``timeout``; a request
        allowed ``wait`` seconds more (Backup, a parked session read) gets
        them only while the connection it was sent on stays up, so a sidecar
        that is not there, or went away, times out like any request (before
        session 41 a backup waited 10 minutes for it)."""
        drops = self._watch.drops
        limit = _time.monotonic() + self.timeout + wait
        step = self.timeout
        while True:
            try:
                return await _asyncio.wait_for(_asyncio.shield(fut), step)
            except _asyncio.TimeoutError:
                left = limit - _time.monotonic()
                if left <= 0 or not self._watch.still_up(drops):
                    raise
                step = min(self.timeout, left)

    async def _run(self, op, body, decode):
        if self._sock is None:
            raise ClientClosedError(None, "Closed", "the client is closed",
                                    op=op)
        self._check_process()
        running = _asyncio.get_running_loop()
        if self._loop is None:
            self._loop = running
        elif running is not self._loop:
            raise RuntimeError(
                "an AsyncClient belongs to the event loop it was first used "
                "in (a new asyncio.run() makes a new loop): create a client "
                "in each loop")
        if self._reader is None:
            self._reader = _asyncio.ensure_future(
                _read_replies(self._sock, self._pending, _weakref.ref(self)))
        rid = next(self._ids)
        frame = self._encode(op, rid, body)
        wait = (body.get("waitMs", 5000) / 1000.0
                if isinstance(body, dict) and "after" in body
                else _w.EXTRA_WAIT_S.get(op, 0.0))
        loop = _asyncio.get_running_loop()
        fut = loop.create_future()
        self._pending[rid] = fut
        first = _time.monotonic()
        attempt = 0
        try:
            while True:
                attempt += 1
                if self._sock is None:      # closed during the back-off
                    raise ClientClosedError(None, "Closed",
                                            "the client is closed", op=op)
                if attempt > 1:
                    self.resends += 1
                try:
                    await self._sock.send(frame, _zmq.NOBLOCK)
                except _zmq.Again:
                    pass   # no connection (a refused CURVE handshake): time out below
                try:
                    status, reply = await self._reply(fut, wait)
                except _asyncio.TimeoutError:
                    self.timeouts += 1
                    if not self._answered and (
                            attempt > self.retries or
                            _time.monotonic() - first >= self.connect_timeout):
                        raise SidetableUnreachable(
                            _client._unreachable_message(
                                self.endpoint, _time.monotonic() - first,
                                _w.OP_NAMES.get(op, op), attempt,
                                self._watch.explain(self.endpoint,
                                                    self._curve)), op=op)
                    if attempt > self.retries:
                        raise SidetableTimeout(_client._timeout_message(
                            _w.OP_NAMES.get(op, op), rid, self.timeout,
                            attempt, self._watch.explain(self.endpoint,
                                                         self._curve)), op=op)
                    await _asyncio.sleep(self._delay(attempt))
                    if fut.done():       # a late reply to the earlier attempt
                        status, reply = fut.result()
                    else:
                        continue
                if 200 <= status < 300:
                    try:
                        return decode(reply)
                    except Exception as e:
                        raise ProtocolError(status, "ProtocolError",
                                            "cannot decode reply: %s" % e,
                                            op=op)
                err = make_error(status, reply.get("code", "Unknown"),
                                 reply.get("message", ""), reply.get("index"),
                                 op=op)
                if status != 503:
                    raise err
                self.busy_replies += 1
                if attempt > self.retries:
                    raise err
                fut = loop.create_future()     # a 503 was not executed
                self._pending[rid] = fut
                await _asyncio.sleep(self._delay(attempt))
        finally:
            self._pending.pop(rid, None)

    # -- the API: Client's, as coroutines --

    async def ping(self):
        return await self._run(*self._req_ping())

    async def create_table(self, table, caller=None, exist_ok=False):
        try:
            await self._run(*self._req_create_table(table, caller))
        except TableAlreadyExistsError:
            if not exist_ok:
                raise

    async def delete_table(self, table, caller=None, missing_ok=False):
        try:
            await self._run(*self._req_delete_table(table, caller))
        except ResourceNotFoundError:
            if not missing_ok:
                raise

    async def list_tables_page(self, filter=None, top=None, next=None,
                               parameters=None):
        return await self._run(*self._req_list_tables_page(filter, top, next,
                                                           parameters))

    async def list_tables(self, filter=None, top=None, parameters=None):
        names, nxt = await self.list_tables_page(filter, top, None, parameters)
        while nxt is not None:
            more, nxt = await self.list_tables_page(filter, top, nxt,
                                                    parameters)
            names.extend(more)
        return names

    async def execute(self, batch):
        return await self._run(*self._req_execute(batch))

    async def insert(self, table, entity, caller=None, return_entity=True):
        return await self._run(*self._req_insert(table, entity, caller, return_entity))

    async def update(self, table, entity, if_match=None, caller=None):
        return await self._run(*self._req_update(table, entity, if_match,
                                                 caller))

    async def merge(self, table, entity, if_match=None, caller=None):
        return await self._run(*self._req_merge(table, entity, if_match,
                                                caller))

    async def delete(self, table, entity_or_pk, rk=None, if_match=None,
                     caller=None):
        return await self._run(*self._req_delete(table, entity_or_pk, rk,
                                                 if_match, caller))

    async def insert_or_replace(self, table, entity, caller=None):
        return await self._run(*self._req_insert_or_replace(table, entity,
                                                            caller))

    upsert = insert_or_replace

    async def insert_or_merge(self, table, entity, caller=None):
        return await self._run(*self._req_insert_or_merge(table, entity,
                                                          caller))

    async def get(self, table, pk, rk, select=None, after=None, wait_ms=None):
        return await self._run(*self._req_get(table, pk, rk, select, after,
                                              wait_ms))

    async def query_page(self, table, filter=None, select=None, top=None,
                         continuation=None, after=None, wait_ms=None,
                         parameters=None):
        return await self._run(*self._req_query_page(
            table, filter, select, top, continuation, after, wait_ms,
            parameters))

    def query_pages(self, table, filter=None, select=None, top=None,
                    continuation=None, after=None, wait_ms=None,
                    parameters=None):
        """An async iterator over the pages, following continuations."""
        if parameters is not None:
            filter = _filters.format_filter(filter or "", parameters)
        return self._pages(table, filter, select, top, continuation, after,
                           wait_ms)

    async def _pages(self, table, filter, select, top, continuation, after,
                     wait_ms):
        while True:
            page = await self.query_page(table, filter, select, top,
                                         continuation, after, wait_ms)
            yield page
            continuation = page.continuation
            if continuation is None:
                return

    def query(self, table, filter=None, select=None, top=None, limit=None,
              after=None, wait_ms=None, parameters=None):
        """An async iterator over every matching entity
        (``async for e in c.query(...)``)."""
        if parameters is not None:
            filter = _filters.format_filter(filter or "", parameters)
        _client._check_limit(limit)
        return self._entities(table, filter, select, top, limit, after,
                              wait_ms)

    async def _entities(self, table, filter, select, top, limit, after,
                        wait_ms):
        count = 0
        cont = None
        while limit != 0:
            page = await self.query_page(
                table, filter, select, _client._page_top(top, limit, count),
                cont, after, wait_ms)
            for e in page.entities:
                if limit is not None and count >= limit:
                    return
                count += 1
                yield e
            cont = page.continuation
            if cont is None or (limit is not None and count >= limit):
                return

    async def request_archive(self, table, pk, row_keys, archive_table,
                              caller=None):
        return await self._run(*self._req_request_archive(
            table, pk, row_keys, archive_table, caller))

    async def advance_watermarks(self, watermarks):
        return await self._run(*self._req_advance_watermarks(watermarks))

    async def read_watermarks(self, derived=None):
        return await self._run(*self._req_read_watermarks(derived))

    async def forget_watermarks(self, derived):
        """As :meth:`sidetable.client.Client.forget_watermarks`."""
        await self._run(*self._req_forget_watermarks(derived))

    async def set_table_policies(self, table, policies):
        await self._run(*self._req_set_table_policies(table, policies))

    async def get_table_policies(self, table):
        return await self._run(*self._req_get_table_policies(table))

    async def issue_token(self, spec):
        """As :meth:`sidetable.client.Client.issue_token`."""
        return await self._run(*self._req_issue_token(spec))

    async def backup(self):
        """As :meth:`sidetable.client.Client.backup`."""
        return await self._run(*self._req_backup())

    async def read_changes(self, from_lsn, max=None, max_bytes=None):
        return await self._run(*self._req_read_changes(from_lsn, max,
                                                       max_bytes))
