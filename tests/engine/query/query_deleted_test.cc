// Deleted entities cost a query work until compaction removes their
// tombstones; a page bounds that work (query.h) and resumes where it
// stopped. Every case checks that following the continuations returns
// exactly the live entities, once each, in order.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "engine/query/query.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::query {
namespace {

using sidetable::testing::MakeEntity;

std::string Rk(int i) {
  char rk[16];
  std::snprintf(rk, sizeof rk, "r%06d", i);
  return rk;
}

class QueryDeletedTest : public sidetable::testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_TRUE(engine_->CreateTable("Tbl").ok());
  }

  // Rows 0..n-1 of partition "q", then deletes those `dead` says (with a
  // reopen between, the rows and the tombstones are in different files).
  void Fill(int n, const std::function<bool(int)>& dead, bool reopen_between = false) {
    for (int at = 0; at < n; at += 100) {
      Batch b("Tbl");
      for (int i = at; i < std::min(n, at + 100); i++) b.Insert(MakeEntity("q", Rk(i), i));
      ASSERT_TRUE(Run(std::move(b)).ok());
    }
    if (reopen_between) Reopen();
    for (int at = 0; at < n; at += 100) {
      Batch b("Tbl");
      int ops = 0;
      for (int i = at; i < std::min(n, at + 100); i++) {
        if (dead(i) && ++ops) b.Delete("q", Rk(i));
      }
      if (ops > 0) ASSERT_TRUE(Run(std::move(b)).ok());
    }
  }

  struct Walk {
    std::vector<int> ns;
    std::vector<QueryStats> pages;
  };

  // Follows the continuations (bounded), keeping every page's stats.
  Walk All(Query q) {
    q.table = "Tbl";
    Walk w;
    for (int guard = 0; guard < 1000; guard++) {
      auto r = ExecuteQuery(*engine_, q);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) break;
      w.pages.push_back(r->stats);
      for (const auto& e : r->entities) w.ns.push_back(e.Find("n")->as_int32());
      if (!r->continuation) break;
      q.continuation = r->continuation;
    }
    return w;
  }

  static std::vector<int> Live(int n, const std::function<bool(int)>& dead) {
    std::vector<int> out;
    for (int i = 0; i < n; i++) {
      if (!dead(i)) out.push_back(i);
    }
    return out;
  }
};

// Queue-like: every row but the last three deleted. Without the bound the
// first page passed over all 5,997 tombstones to return one row.
TEST_F(QueryDeletedTest, APageStopsAfterPassingOverTooManyDeletedRows) {
  const int n = 6000;
  auto dead = [](int i) { return i < 5997; };
  Fill(n, dead);
  Query q;
  q.filter = "PartitionKey eq 'q'";
  q.top = 1;
  q.max_examined = 1000;  // below kMinSkipBound: the bound is 1,024
  Walk w = All(q);
  EXPECT_EQ(w.ns, Live(n, dead));
  ASSERT_GE(w.pages.size(), 5u) << "5,997 deleted rows in pages of at most 1,024 passed over";
  EXPECT_TRUE(w.pages[0].stopped_at_deleted);
  EXPECT_EQ(w.pages[0].returned, 0u);
  for (size_t i = 0; i < w.pages.size(); i++) {
    EXPECT_LE(w.pages[i].skipped, kMinSkipBound + 1) << "page " << i;
  }
}

// One live row after every 99 deleted ones: no single step passes over
// many, but a page counts them across steps and stops before the next live
// row, which the next page returns. (Before a flush each deleted row is two
// entries passed over: its tombstone and the version it hides.)
TEST_F(QueryDeletedTest, DeletedRowsBetweenLiveOnesCountAcrossSteps) {
  const int n = 5000;
  auto dead = [](int i) { return i % 100 != 99; };
  Fill(n, dead);
  Query q;
  q.filter = "PartitionKey eq 'q'";
  q.max_examined = 1000;
  Walk w = All(q);
  EXPECT_EQ(w.ns, Live(n, dead));
  ASSERT_GE(w.pages.size(), 4u);
  EXPECT_TRUE(w.pages[0].stopped_at_deleted);
  EXPECT_GE(w.pages[0].returned, 3u);
  EXPECT_LT(w.pages[0].returned, 50u);
  for (size_t i = 0; i < w.pages.size(); i++) {
    EXPECT_LE(w.pages[i].skipped, kMinSkipBound + 2 * 99) << "page " << i;
  }
}

// A table scan (no key condition) is bounded the same way, across
// partitions, and a filter that rejects every live row still ends.
TEST_F(QueryDeletedTest, ATableScanWithAFilterIsBoundedToo) {
  const int n = 4000;
  auto dead = [](int i) { return i < 3990; };
  Fill(n, dead);
  Query q;
  q.max_examined = 1000;
  q.filter = "n lt 0";
  Walk w = All(q);
  EXPECT_TRUE(w.ns.empty());
  EXPECT_GE(w.pages.size(), 3u);
  EXPECT_TRUE(w.pages[0].stopped_at_deleted);
  q.filter = "n ge 3995";
  EXPECT_EQ(All(q).ns, (std::vector<int>{3995, 3996, 3997, 3998, 3999}));
}

// Versions of one row kept for older read views are passed over too; with
// the least bound a page never stops at the key it started from, so the
// query always ends.
TEST_F(QueryDeletedTest, VersionsKeptForOlderViewsNeverStopAPageInPlace) {
  Fill(3, [](int) { return false; });
  std::vector<std::unique_ptr<ReadView>> views;
  for (int v = 0; v < 60; v++) {
    views.push_back(engine_->NewReadView());
    Batch b("Tbl");
    b.InsertOrReplace(MakeEntity("q", Rk(1), 1));
    ASSERT_TRUE(Run(std::move(b)).ok());
  }
  Query q;
  q.max_examined = 1;
  Walk w = All(q);
  EXPECT_EQ(w.ns, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(w.pages.size(), 3u);
  EXPECT_GT(w.pages[1].skipped + w.pages[2].skipped, 0u)
      << "the older versions were not passed over";
}

// A query with live rows only passes over nothing and pages as before.
TEST_F(QueryDeletedTest, WithoutDeletesNothingIsSkipped) {
  Fill(2500, [](int) { return false; });
  Query q;
  q.filter = "PartitionKey eq 'q'";
  Walk w = All(q);
  EXPECT_EQ(w.ns.size(), 2500u);
  ASSERT_EQ(w.pages.size(), 3u);
  for (const auto& p : w.pages) {
    EXPECT_EQ(p.skipped, 0u);
    EXPECT_FALSE(p.stopped_at_deleted);
  }
}

// Rows in one file, their tombstones in a newer one (a reopen replays the
// log into a file): that file is marked for compaction, and the compaction
// drops the rows with their tombstones, so a scan of the partition then
// passes over nothing. Without the marking a single such file waits for
// three more before any compaction looks at it.
TEST_F(QueryDeletedTest, FilesOfTombstonesAreCompactedAway) {
  const int n = 6000;
  auto dead = [](int i) { return i < 5997; };
  Fill(n, dead, /*reopen_between=*/true);
  Reopen();
  Query q;
  q.table = "Tbl";
  q.filter = "PartitionKey eq 'q'";
  uint64_t skipped = 0;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(100))) {
    auto r = ExecuteQuery(*engine_, q);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->entities.size(), 3u);
    skipped = r->stats.skipped;
    if (skipped == 0) break;
  }
  EXPECT_EQ(skipped, 0u) << "the tombstones were still there after 30 s";
}

}  // namespace
}  // namespace sidetable::query
