// The query prefetch (sidecar/query_prefetch.h) through the real binary: a
// worker computes the next page of a query while the page before travels,
// and the request for it is answered from there only if nothing was
// written in between, only on the connection that asked, and the held
// pages stay within query.prefetch_mb and are dropped when nobody asks.
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tests/sidecar/e2e_fixture.h"
#include "tests/sidecar/e2e_metrics.h"

namespace sidetable::testing {
namespace {

constexpr uint64_t kAbsent = kNoMetric;

std::string Outcome(const char* outcome) {
  return std::string("sidetable_query_prefetch_pages_total{outcome=\"") + outcome + "\"}";
}
constexpr const char* kHeld = "sidetable_query_prefetch_held_bytes";

// Polls until `metric` satisfies `ok` (at most ~10 s); returns the last value.
template <typename Ok>
uint64_t WaitForMetric(const SidecarProcess& server, const std::string& metric, Ok ok) {
  uint64_t v = kAbsent;
  for (int i = 0; i < 200; i++) {
    v = Metric(server, metric);
    if (v != kAbsent && ok(v)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return v;
}

class QueryPrefetchTest : public SidecarTest {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    CreatePeople();
  }

  // Keys of every page, page by page, each asked for once the one before arrived.
  std::vector<std::string> PageByPage(client::Client& c, const client::QueryOptions& q) {
    std::vector<std::string> keys;
    std::optional<client::Continuation> next;
    do {
      auto page = c.QueryPage(q, next);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) break;
      for (const Entity& e : page->entities) keys.push_back(e.partition_key + "/" + e.row_key);
      next = page->next;
    } while (next);
    return keys;
  }

  static std::vector<std::string> YoungerThan10() {
    std::vector<std::string> keys;
    for (int p = 0; p < 3; p++) {
      for (int i = 0; i < 10; i++) keys.push_back("p" + std::to_string(p) + "/r" + std::to_string(100 + i));
    }
    return keys;
  }

  const client::QueryOptions q_{.table = "People", .filter = "Age lt 10", .top = 7};
};

TEST_F(QueryPrefetchTest, FollowingPagesAreServedFromThePrefetchAndMatchTheData) {
  EXPECT_EQ(Metric(*server_, Outcome("served")), 0u);
  // A worker may find the next request queued before it looks (then it
  // does not prefetch): a few rounds make "never served" a real failure.
  uint64_t served = 0;
  for (int round = 0; round < 5 && served == 0; round++) {
    EXPECT_EQ(PageByPage(*client_, q_), YoungerThan10());
    served = Metric(*server_, Outcome("served"));
  }
  EXPECT_GE(served, 1u);
  EXPECT_NE(served, kAbsent);
  EXPECT_EQ(Metric(*server_, Outcome("stale")), 0u);
}

TEST_F(QueryPrefetchTest, AWriteBetweenTwoPagesIsInTheSecond) {
  auto first = client_->QueryPage(q_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->entities.size(), 7u);
  ASSERT_TRUE(first->next.has_value());
  EXPECT_EQ(first->next->second, "r107");
  // The next page is computed and held.
  ASSERT_GT(WaitForMetric(*server_, kHeld, [](uint64_t v) { return v > 0; }), 0u) << server_->Log();

  // Between r107 and r108: on the second page.
  ASSERT_TRUE(client_->Insert("People", Person("p0", "r1070", 5)).ok());
  // r108 no longer matches.
  ASSERT_TRUE(client_->InsertOrReplace("People", Person("p0", "r108", 50)).ok());

  auto second = client_->QueryPage(q_, first->next);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  std::vector<std::string> keys;
  for (const Entity& e : second->entities) keys.push_back(e.row_key);
  ASSERT_GE(keys.size(), 3u);
  // Order is by RowKey: r107 < r1070 < r109.
  EXPECT_EQ(keys[0], "r107");
  EXPECT_EQ(keys[1], "r1070");
  EXPECT_EQ(keys[2], "r109");
  for (const auto& k : keys) EXPECT_NE(k, "r108");
  EXPECT_GE(Metric(*server_, Outcome("stale")), 1u);
  EXPECT_EQ(Metric(*server_, Outcome("served")), 0u);
}

TEST_F(QueryPrefetchTest, AnotherConnectionDoesNotGetThePage) {
  auto first = client_->QueryPage(q_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->next.has_value());
  ASSERT_GT(WaitForMetric(*server_, kHeld, [](uint64_t v) { return v > 0; }), 0u) << server_->Log();

  auto other = Connect();
  ASSERT_NE(other, nullptr);
  auto theirs = other->QueryPage(q_, first->next);
  ASSERT_TRUE(theirs.ok()) << theirs.status().ToString();
  EXPECT_EQ(Metric(*server_, Outcome("served")), 0u);
  // The page is still held for the connection that asked first.
  auto mine = client_->QueryPage(q_, first->next);
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  EXPECT_EQ(Metric(*server_, Outcome("served")), 1u);
  ASSERT_EQ(mine->entities.size(), theirs->entities.size());
  for (size_t i = 0; i < mine->entities.size(); i++) {
    EXPECT_EQ(mine->entities[i].row_key, theirs->entities[i].row_key);
    EXPECT_EQ(mine->entities[i].etag, theirs->entities[i].etag);
  }
}

TEST_F(QueryPrefetchTest, APageNobodyAsksForIsDropped) {
  auto first = client_->QueryPage(q_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->next.has_value());
  ASSERT_GT(WaitForMetric(*server_, kHeld, [](uint64_t v) { return v > 0; }), 0u) << server_->Log();
  // The client stops here: the page goes after its ttl (2 s) at the next
  // maintenance pass.
  EXPECT_EQ(WaitForMetric(*server_, kHeld, [](uint64_t v) { return v == 0; }), 0u);
  EXPECT_EQ(Metric(*server_, Outcome("unused")), 1u);
}

class QueryPrefetchOffTest : public QueryPrefetchTest {
 protected:
  std::vector<std::string> ServerArgs() override { return {"--durability", "os", "--query-prefetch-mb", "0"}; }
};

TEST_F(QueryPrefetchOffTest, QueriesPageWithoutIt) {
  EXPECT_EQ(PageByPage(*client_, q_), YoungerThan10());
  EXPECT_EQ(Metric(*server_, Outcome("served")), kAbsent);
  EXPECT_EQ(Metric(*server_, kHeld), kAbsent);
}

class QueryPrefetchBoundTest : public SidecarTest {
 protected:
  std::vector<std::string> ServerArgs() override { return {"--durability", "os", "--query-prefetch-mb", "1"}; }
};

TEST_F(QueryPrefetchBoundTest, PagesLargerThanTheBoundAreNotHeld) {
  ASSERT_TRUE(client_->CreateTable("Big").ok());
  // 3 pages of 150 entities of ~8 KiB: ~1.2 MB each, above the 1 MiB bound.
  for (int b = 0; b < 5; b++) {
    Batch batch("Big");
    for (int i = 0; i < 90; i++) {
      batch.Insert(client::EntityBuilder("p", "r" + std::to_string(1000 + b * 90 + i))
                       .String("Pad", std::string(8000, static_cast<char>('a' + b)))
                       .Build());
    }
    ASSERT_TRUE(client_->Execute(batch).ok());
  }
  const client::QueryOptions big{.table = "Big", .top = 150};
  std::optional<client::Continuation> next;
  size_t entities = 0;
  do {
    auto page = client_->QueryPage(big, next);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    entities += page->entities.size();
    next = page->next;
    EXPECT_LE(Metric(*server_, kHeld), uint64_t{1} << 20);
  } while (next);
  EXPECT_EQ(entities, 450u);
  EXPECT_EQ(Metric(*server_, Outcome("served")), 0u);
  EXPECT_GE(Metric(*server_, Outcome("unused")), 1u);
  EXPECT_EQ(Metric(*server_, kHeld), 0u);
}

}  // namespace
}  // namespace sidetable::testing
