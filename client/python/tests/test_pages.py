"""The documented page type (QueryPage: items + continuation) and the
iterators that follow continuations, blocking and asyncio."""

import asyncio
import unittest

import _harness
from sidetable import Batch, Entity, QueryPage
from sidetable.aio import AsyncClient

SERVER = None


def setUpModule():
    global SERVER
    SERVER = _harness.Server(workers=2).start()


def tearDownModule():
    _harness.stop_checked(SERVER)


class PagesTest(unittest.TestCase):
    N = 25

    @classmethod
    def setUpClass(cls):
        cls.t = _harness.table_name("pages")
        with SERVER.client() as c:
            c.create_table(cls.t)
            b = Batch(cls.t)
            for i in range(cls.N):
                b.insert(Entity("p", "%03d" % i, {"i": i}))
            c.execute(b)

    def setUp(self):
        self.c = SERVER.client(timeout=5.0)

    def tearDown(self):
        self.c.close()

    def test_page_type(self):
        page = self.c.query_page(self.t, top=10)
        self.assertIsInstance(page, QueryPage)
        self.assertIs(page.items, page.entities)
        self.assertEqual(len(page), 10)
        self.assertEqual([e["i"] for e in page], list(range(10)))
        self.assertTrue(page.has_more)
        nxt = self.c.query_page(self.t, top=10, continuation=page.continuation)
        self.assertEqual(nxt.items[0]["i"], 10)

    def test_query_pages_follows_continuations(self):
        pages = list(self.c.query_pages(self.t, "i ge @lo", top=10,
                                        parameters={"lo": 5}))
        self.assertEqual([len(p) for p in pages], [10, 10])
        self.assertFalse(pages[-1].has_more)
        # Resuming from a saved continuation gives the rest.
        first = self.c.query_page(self.t, top=7)
        rest = list(self.c.query_pages(self.t, top=7,
                                       continuation=first.continuation))
        got = [e["i"] for p in [first] + rest for e in p]
        self.assertEqual(got, list(range(self.N)))

    def test_query_iterates_all_and_limit(self):
        self.assertEqual([e["i"] for e in self.c.query(self.t, top=4)],
                         list(range(self.N)))
        self.assertEqual(len(list(self.c.query(self.t, top=4, limit=9))), 9)

    def test_async_pages(self):
        async def main():
            async with AsyncClient(SERVER.endpoint) as c:
                sizes = [len(p) async for p in c.query_pages(self.t, top=10)]
                items = [e["i"] async for e in c.query(self.t, top=6)]
                limited = [e async for e in c.query(self.t, top=6, limit=8)]
                return sizes, items, len(limited)
        sizes, items, limited = asyncio.run(main())
        self.assertEqual(sizes, [10, 10, 5])
        self.assertEqual(items, list(range(self.N)))
        self.assertEqual(limited, 8)


if __name__ == "__main__":
    unittest.main()
