// QueryPrefetch (sidecar/query_prefetch.h) on its own: what a key tells
// apart, a page served only at the sequence it was computed at, the bounds
// (pages, bytes, ttl), and a request waiting for a page still computed.
#include "sidecar/query_prefetch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace sidetable::sidecar {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

wire::Request PageRequest() {
  wire::Request r;
  r.op = wire::Op::kQuery;
  r.table = "People";
  r.filter = "Age lt 10";
  r.select = {"Name", "Age"};
  r.top = 7;
  r.next_pk = "p1";
  r.next_rk = "r5";
  r.token = "tok";
  return r;
}

QueryPrefetch::Options Small() {
  QueryPrefetch::Options o;
  o.max_bytes = 1000;
  o.max_entries = 2;
  o.ttl = milliseconds(60'000);
  return o;
}

auto Seq(uint64_t v) {
  return [v] { return v; };
}
steady_clock::time_point Now() { return steady_clock::now(); }

TEST(QueryPrefetchKey, EveryPartOfTheRequestThatShapesThePageChangesTheKey) {
  const wire::Request base = PageRequest();
  const std::string key = QueryPrefetch::KeyFor("conn-a", base);
  EXPECT_EQ(key, QueryPrefetch::KeyFor("conn-a", base));
  // The request id is not part of the page.
  wire::Request same = base;
  same.id = 99;
  EXPECT_EQ(key, QueryPrefetch::KeyFor("conn-a", same));

  std::vector<std::pair<std::string, wire::Request>> others;
  auto vary = [&](auto change) {
    wire::Request r = base;
    change(r);
    others.emplace_back("conn-a", r);
  };
  others.emplace_back("conn-b", base);
  vary([](wire::Request& r) { r.token = "tok2"; });
  vary([](wire::Request& r) { r.table = "Peoplx"; });
  vary([](wire::Request& r) { r.filter = "Age lt 11"; });
  vary([](wire::Request& r) { r.select = {"Name"}; });
  vary([](wire::Request& r) { r.select = {"Age", "Name"}; });
  vary([](wire::Request& r) { r.select.clear(); });
  vary([](wire::Request& r) { r.top.reset(); });
  vary([](wire::Request& r) { r.top = 8; });
  vary([](wire::Request& r) { r.next_pk = "p2"; });
  vary([](wire::Request& r) { r.next_pk.reset(); });
  vary([](wire::Request& r) { r.next_pk = ""; });
  vary([](wire::Request& r) { r.next_rk = "r6"; });
  // Parts are length-prefixed: moving a character from one to the next is
  // a different key.
  vary([](wire::Request& r) {
    r.table = "PeopleA";
    r.filter = "ge lt 10";
  });
  for (const auto& [envelope, r] : others) {
    EXPECT_NE(key, QueryPrefetch::KeyFor(envelope, r)) << envelope << " " << r.table << " " << r.filter;
  }
}

TEST(QueryPrefetchKey, AnAbsentContinuationRowKeyIsTheEmptyOne) {
  // The handler reads a continuation without a RowKey as RowKey "".
  wire::Request a = PageRequest();
  wire::Request b = PageRequest();
  a.next_rk.reset();
  b.next_rk = "";
  EXPECT_EQ(QueryPrefetch::KeyFor("c", a), QueryPrefetch::KeyFor("c", b));
}

TEST(QueryPrefetch, APageIsServedOnceAtTheSequenceItWasComputedAt) {
  QueryPrefetch p(Small());
  ASSERT_TRUE(p.Begin("k", 41, 41));
  p.Finish("k", "page-bytes", 3);
  EXPECT_EQ(p.Stats().held_bytes, 10u);
  auto page = p.Take("k", Seq(41), Now());
  ASSERT_TRUE(page.has_value());
  EXPECT_EQ(page->reply, "page-bytes");
  EXPECT_EQ(page->entities, 3u);
  // Taken: gone.
  EXPECT_FALSE(p.Take("k", Seq(41), Now()).has_value());
  const QueryPrefetchStats s = p.Stats();
  EXPECT_EQ(s.started, 1u);
  EXPECT_EQ(s.served, 1u);
  EXPECT_EQ(s.held_bytes, 0u);
  EXPECT_EQ(s.held_pages, 0u);
}

TEST(QueryPrefetch, AWriteBetweenPrefetchAndRequestMakesThePageStale) {
  QueryPrefetch p(Small());
  ASSERT_TRUE(p.Begin("k", 41, 41));
  p.Finish("k", "page-bytes", 3);
  EXPECT_FALSE(p.Take("k", Seq(42), Now()).has_value());
  // Dropped, not kept for a later request at the old sequence.
  EXPECT_FALSE(p.Take("k", Seq(41), Now()).has_value());
  const QueryPrefetchStats s = p.Stats();
  EXPECT_EQ(s.stale, 1u);
  EXPECT_EQ(s.served, 0u);
  EXPECT_EQ(s.held_bytes, 0u);
}

TEST(QueryPrefetch, NothingBeginsWhenWritesRanDuringThePageBefore) {
  QueryPrefetch p(Small());
  // The sequence moved from 41 (the page before) to 42: writes go on.
  EXPECT_FALSE(p.Begin("k", 42, 41));
  EXPECT_FALSE(p.Take("k", Seq(42), Now()).has_value());
  QueryPrefetchStats s = p.Stats();
  EXPECT_EQ(s.writing, 1u);
  EXPECT_EQ(s.started, 0u);
  EXPECT_TRUE(p.Begin("k", 42, 42));
}

TEST(QueryPrefetch, AfterMoreStaleThanServedPagesOnlyOneCallInEightBegins) {
  QueryPrefetch p(Small());
  ASSERT_TRUE(p.Begin("k", 1, 1));
  p.Finish("k", "x", 1);
  ASSERT_FALSE(p.Take("k", Seq(2), Now()).has_value());  // stale
  int begun = 0;
  for (int i = 0; i < 16; i++) {
    if (p.Begin("k", 3, 3)) {
      begun++;
      p.Finish("k", "", 0);  // a failed computation: neither served nor stale
    }
  }
  EXPECT_EQ(begun, 2);
  EXPECT_EQ(p.Stats().writing, 14u);
  // Served probes tip the balance back (a stale page weighs two served).
  int served = 0;
  for (int i = 0; i < 64 && served < 2; i++) {
    if (p.Begin("k", 3, 3)) {
      p.Finish("k", "page", 1);
      ASSERT_TRUE(p.Take("k", Seq(3), Now()).has_value());
      served++;
    }
  }
  EXPECT_EQ(served, 2);
  for (int i = 0; i < 4; i++) {
    ASSERT_TRUE(p.Begin("k", 3, 3)) << i;
    p.Finish("k", "", 0);
  }
}

TEST(QueryPrefetch, AnUnknownKeyIsAnsweredAtOnce) {
  QueryPrefetch p(Small());
  const auto start = Now();
  EXPECT_FALSE(p.Take("nothing", Seq(1), start + milliseconds(5000)).has_value());
  EXPECT_LT(Now() - start, milliseconds(2000));
}

TEST(QueryPrefetch, AKeyHeldOrComputedIsNotBegunTwice) {
  QueryPrefetch p(Small());
  ASSERT_TRUE(p.Begin("k", 1, 1));
  EXPECT_FALSE(p.Begin("k", 1, 1));
  p.Finish("k", "x", 1);
  EXPECT_FALSE(p.Begin("k", 2, 2));
  EXPECT_EQ(p.Stats().started, 1u);
}

TEST(QueryPrefetch, NoPrefetchBeginsBeyondMaxEntries) {
  QueryPrefetch p(Small());  // 2 entries
  ASSERT_TRUE(p.Begin("a", 1, 1));
  ASSERT_TRUE(p.Begin("b", 1, 1));
  EXPECT_FALSE(p.Begin("c", 1, 1));
  EXPECT_EQ(p.Stats().skipped, 1u);
  // Taking one makes room.
  p.Finish("a", "x", 1);
  ASSERT_TRUE(p.Take("a", Seq(1), Now()).has_value());
  EXPECT_TRUE(p.Begin("c", 1, 1));
}

TEST(QueryPrefetch, APageBeyondMaxBytesIsNotKept) {
  QueryPrefetch p(Small());  // 1000 bytes
  ASSERT_TRUE(p.Begin("a", 1, 1));
  p.Finish("a", std::string(600, 'a'), 1);
  ASSERT_TRUE(p.Begin("b", 1, 1));
  p.Finish("b", std::string(600, 'b'), 1);  // 1200 > 1000: dropped
  QueryPrefetchStats s = p.Stats();
  EXPECT_EQ(s.held_bytes, 600u);
  EXPECT_EQ(s.held_pages, 1u);
  EXPECT_EQ(s.unused, 1u);
  EXPECT_FALSE(p.Take("b", Seq(1), Now()).has_value());
  EXPECT_TRUE(p.Take("a", Seq(1), Now()).has_value());
}

TEST(QueryPrefetch, NoPrefetchBeginsWhileMaxBytesAreHeld) {
  QueryPrefetch p(Small());
  ASSERT_TRUE(p.Begin("a", 1, 1));
  p.Finish("a", std::string(1000, 'a'), 1);
  EXPECT_FALSE(p.Begin("b", 1, 1));
  EXPECT_EQ(p.Stats().skipped, 1u);
}

TEST(QueryPrefetch, AFailedComputationKeepsNothing) {
  QueryPrefetch p(Small());
  ASSERT_TRUE(p.Begin("k", 1, 1));
  p.Finish("k", "", 0);
  EXPECT_FALSE(p.Take("k", Seq(1), Now()).has_value());
  EXPECT_EQ(p.Stats().unused, 1u);
  EXPECT_EQ(p.Stats().held_pages, 0u);
  // The key is free again.
  EXPECT_TRUE(p.Begin("k", 1, 1));
}

TEST(QueryPrefetch, APageNotAskedForWithinTheTtlIsDropped) {
  QueryPrefetch::Options o = Small();
  o.ttl = milliseconds(1);
  QueryPrefetch p(o);
  ASSERT_TRUE(p.Begin("k", 1, 1));
  p.Finish("k", "page", 1);
  EXPECT_EQ(p.Stats().held_pages, 1u);
  std::this_thread::sleep_for(milliseconds(20));
  p.Expire();
  const QueryPrefetchStats s = p.Stats();
  EXPECT_EQ(s.held_pages, 0u);
  EXPECT_EQ(s.held_bytes, 0u);
  EXPECT_EQ(s.unused, 1u);
  EXPECT_FALSE(p.Take("k", Seq(1), Now()).has_value());
}

TEST(QueryPrefetch, ExpireLeavesAPageBeingComputed) {
  QueryPrefetch::Options o = Small();
  o.ttl = milliseconds(1);
  QueryPrefetch p(o);
  ASSERT_TRUE(p.Begin("k", 1, 1));
  std::this_thread::sleep_for(milliseconds(20));
  p.Expire();
  // Finished after the sweep: it gets its own ttl from now.
  p.Finish("k", "page", 1);
  EXPECT_TRUE(p.Take("k", Seq(1), Now()).has_value());
}

TEST(QueryPrefetch, ARequestWaitsForThePageAnotherWorkerIsComputing) {
  QueryPrefetch p(Small());
  ASSERT_TRUE(p.Begin("k", 5, 5));
  std::atomic<bool> finished{false};
  std::thread computer([&] {
    std::this_thread::sleep_for(milliseconds(100));
    finished = true;
    p.Finish("k", "late-page", 2);
  });
  auto page = p.Take("k", Seq(5), Now() + milliseconds(10'000));
  computer.join();
  ASSERT_TRUE(page.has_value());
  EXPECT_TRUE(finished.load());
  EXPECT_EQ(page->reply, "late-page");
}

TEST(QueryPrefetch, AWaitEndsAtItsDeadlineAndTheLatePageIsStillKept) {
  QueryPrefetch p(Small());
  ASSERT_TRUE(p.Begin("k", 5, 5));
  const auto start = Now();
  EXPECT_FALSE(p.Take("k", Seq(5), start + milliseconds(50)).has_value());
  EXPECT_GE(Now() - start, milliseconds(50));
  // The computation finishes later; the next request for it gets it.
  p.Finish("k", "late", 1);
  EXPECT_TRUE(p.Take("k", Seq(5), Now()).has_value());
}

TEST(QueryPrefetch, AWaiterOfAFailedComputationGetsNothing) {
  QueryPrefetch p(Small());
  ASSERT_TRUE(p.Begin("k", 5, 5));
  std::thread computer([&] {
    std::this_thread::sleep_for(milliseconds(50));
    p.Finish("k", "", 0);
  });
  const auto start = Now();
  EXPECT_FALSE(p.Take("k", Seq(5), start + milliseconds(10'000)).has_value());
  computer.join();
  EXPECT_LT(Now() - start, milliseconds(5000));  // woken, not timed out
}

}  // namespace
}  // namespace sidetable::sidecar
