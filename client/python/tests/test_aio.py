"""sidetable.aio.AsyncClient against a real sidecar: the client's methods
as coroutines, concurrency on one socket, errors, retries on ServerBusy."""

import asyncio
import unittest

import _harness
from sidetable import (Batch, Entity, EntityAlreadyExistsError,
                       ResourceNotFoundError, TableAlreadyExistsError,
                       UpdateConditionNotSatisfiedError, Watermark)
from sidetable.aio import AsyncClient

SERVER = None


def setUpModule():
    global SERVER
    SERVER = _harness.Server(workers=2).start()


def tearDownModule():
    _harness.stop_checked(SERVER)


def run(coro):
    return asyncio.run(coro)


class AsyncClientTest(unittest.TestCase):
    def test_every_operation(self):
        t = _harness.table_name("aio")

        async def main():
            async with AsyncClient(SERVER.endpoint, caller="aio") as c:
                self.assertEqual((await c.ping())["version"], 1)
                await c.create_table(t)
                await c.create_table(t, exist_ok=True)
                with self.assertRaises(TableAlreadyExistsError):
                    await c.create_table(t)
                self.assertIn(t, await c.list_tables())
                w = await c.insert(t, Entity("p", "r", {"a": 1}))
                with self.assertRaises(EntityAlreadyExistsError):
                    await c.insert(t, {"PartitionKey": "p", "RowKey": "r"})
                e = await c.get(t, "p", "r")
                self.assertEqual((e["PartitionKey"], e.props, e.etag),
                                 ("p", {"a": 1}, w.etag))
                e["a"] = 2
                await c.update(t, e, if_match=e.etag)
                with self.assertRaises(UpdateConditionNotSatisfiedError):
                    await c.update(t, e, if_match=e.etag)
                await c.merge(t, Entity("p", "r", {"b": 3}))
                await c.upsert(t, Entity("p", "s", {"c": 4}))
                await c.insert_or_merge(t, Entity("p", "s", {"d": 5}))
                self.assertEqual((await c.get(t, "p", "s")).props,
                                 {"c": 4, "d": 5})
                await c.execute(Batch(t).insert(Entity("p", "u"))
                                .delete("p", "s"))
                await c.delete(t, "p", "u")
                with self.assertRaises(ResourceNotFoundError):
                    await c.get(t, "p", "u")
                page = await c.query_page(t, "a eq @a", parameters={"a": 2})
                self.assertEqual([x.rk for x in page], ["r"])
                ch = await c.read_changes(w.lsn, max=1)
                self.assertEqual(ch.records[0]["lsn"], w.lsn)
                lsn = await c.request_archive(t, "p", ["r"], t + "Arch")
                self.assertGreater(lsn, w.lsn)
                idx = _harness.table_name("aioidx")
                await c.create_table(idx)
                await c.advance_watermarks([Watermark(idx, t, 0, 1, w.lsn)])
                got = await c.read_watermarks(idx)
                self.assertEqual(got[0].lsn, w.lsn)
                await c.delete_table(t)
                await c.delete_table(t, missing_ok=True)
        run(main())

    def test_concurrent_requests_share_one_socket(self):
        t = _harness.table_name("aioc")

        async def main():
            async with AsyncClient(SERVER.endpoint) as c:
                await c.create_table(t)
                await asyncio.gather(*[
                    c.insert(t, Entity("p%d" % (i % 7), "%03d" % i, {"i": i}))
                    for i in range(200)])
                got = sorted([e["i"] async for e in c.query(t)])
                results = await asyncio.gather(
                    *[c.get(t, "p%d" % (i % 7), "%03d" % i)
                      for i in range(200)], return_exceptions=True)
                return got, results, c.in_flight
        got, results, in_flight = run(main())
        self.assertEqual(got, list(range(200)))
        self.assertEqual([e["i"] for e in results], list(range(200)))
        self.assertEqual(in_flight, 0)


class AsyncQueryLimitTest(unittest.TestCase):
    def test_a_limit_bounds_the_pages_asked_for_and_is_checked(self):
        # As the blocking client's (test_client.QueryLimitTest).
        t = _harness.table_name("aiolimit")

        async def main():
            async with AsyncClient(SERVER.endpoint) as c:
                await c.create_table(t)
                b = Batch(t)
                for i in range(30):
                    b.insert(Entity("p", "%02d" % i))
                await c.execute(b)
                tops = []
                real = c.query_page

                async def spy(table, filter=None, select=None, top=None,
                              *rest, **kw):
                    tops.append(top)
                    return await real(table, filter, select, top, *rest, **kw)

                c.query_page = spy
                one = [e.rk async for e in c.query(t, limit=1)]
                self.assertEqual((one, tops), (["00"], [1]))
                del tops[:]
                some = [e async for e in c.query(t, limit=25, top=10)]
                self.assertEqual((len(some), tops), (25, [10, 10, 10]))
                del tops[:]
                self.assertEqual([e async for e in c.query(t, limit=0)], [])
                self.assertEqual(tops, [])
                with self.assertRaises(ValueError):
                    c.query(t, limit=-1)

        run(main())


class AsyncLoopTest(unittest.TestCase):
    def test_a_second_event_loop_is_refused_by_name(self):
        # Reused in a second asyncio.run(), the client waited on a reader
        # that died with the first loop and timed out although the sidecar
        # answered (found from outside).
        c = AsyncClient(SERVER.endpoint, timeout=2.0, retries=0)

        async def ping():
            return await c.ping()

        self.assertEqual(run(ping())["version"], 1)
        with self.assertRaises(RuntimeError) as caught:
            run(ping())
        self.assertIn("event loop", str(caught.exception))
        run(c.close())  # closing from another loop still works

        async def fresh():
            async with AsyncClient(SERVER.endpoint) as d:
                return await d.ping()

        self.assertEqual(run(fresh())["version"], 1)


class AsyncBusyTest(unittest.TestCase):
    def test_server_busy_is_retried(self):
        # Every request through the one-deep queue (none run on the
        # frontend, which would never queue): easily overrun.
        server = _harness.Server(workers=1, queue_depth=1,
                                 extra=("--inline-max-bytes", "0")).start()
        t = _harness.table_name("aiobusy")

        async def main():
            async with AsyncClient(server.endpoint, retries=60,
                                   backoff=0.005, max_backoff=0.05) as c:
                await c.create_table(t)
                await asyncio.gather(*[
                    c.insert(t, Entity("p%d" % i, "r", {"i": i}))
                    for i in range(300)])
                return c.busy_replies, len([e async for e in c.query(t)])
        try:
            busy, count = run(main())
            self.assertEqual(count, 300)
            self.assertGreater(busy, 0)
        finally:
            self.assertEqual(server.stop(), 0)
            server.cleanup()


if __name__ == "__main__":
    unittest.main()
