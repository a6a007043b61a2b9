// The pure parts of scale-out routing (sidecar/cluster_routing.h): how a
// fan-out query's pages merge, and how a part names the shards it covered.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/utf8.h"
#include "sidecar/cluster_routing.h"

namespace sidetable::sidecar {
namespace {

Entity Row(std::string pk, std::string rk) {
  Entity e;
  e.partition_key = std::move(pk);
  e.row_key = std::move(rk);
  return e;
}

wire::QueryReply Page(std::vector<std::pair<std::string, std::string>> keys,
                      std::optional<std::pair<std::string, std::string>> next = std::nullopt) {
  wire::QueryReply p;
  for (auto& [pk, rk] : keys) p.entities.push_back(Row(pk, rk));
  if (next) {
    p.next_pk = next->first;
    p.next_rk = next->second;
  }
  return p;
}

std::vector<std::string> Keys(const wire::QueryReply& r) {
  std::vector<std::string> out;
  for (const auto& e : r.entities) out.push_back(e.partition_key + "/" + e.row_key);
  return out;
}

TEST(MergePagesTest, CompletePartsMergeInKeyOrderWithoutContinuation) {
  auto merged = ClusterRouting::MergePages({Page({{"a", "1"}, {"c", "1"}}), Page({{"b", "1"}, {"b", "2"}})}, 10, {});
  EXPECT_EQ(Keys(merged), (std::vector<std::string>{"a/1", "b/1", "b/2", "c/1"}));
  EXPECT_FALSE(merged.next_pk.has_value());
}

TEST(MergePagesTest, TopCutsAndContinuesAtTheFirstRowLeftOut) {
  auto merged = ClusterRouting::MergePages({Page({{"a", "1"}, {"c", "1"}}), Page({{"b", "1"}, {"b", "2"}})}, 3, {});
  EXPECT_EQ(Keys(merged), (std::vector<std::string>{"a/1", "b/1", "b/2"}));
  ASSERT_TRUE(merged.next_pk.has_value());
  EXPECT_EQ(*merged.next_pk, "c");
  EXPECT_EQ(*merged.next_rk, "1");
}

// A part that stopped early (its own $top or work bound) only vouches for
// the rows below its continuation: rows of other parts beyond it must wait
// for the next page, or a later page would return rows out of order.
TEST(MergePagesTest, NothingBeyondTheSmallestContinuation) {
  auto merged = ClusterRouting::MergePages(
      {Page({{"a", "1"}, {"b", "1"}}, std::make_pair(std::string("b"), std::string("2"))),
       Page({{"a", "2"}, {"b", "3"}, {"d", "1"}})},
      10, {});
  EXPECT_EQ(Keys(merged), (std::vector<std::string>{"a/1", "a/2", "b/1"}));
  ASSERT_TRUE(merged.next_pk.has_value());
  EXPECT_EQ(*merged.next_pk, "b");
  EXPECT_EQ(*merged.next_rk, "2");
}

TEST(MergePagesTest, PagingThroughMergesEveryRowOnce) {
  // Three parts with interleaved keys, paged with top 2 by re-merging from
  // each continuation (each part filtering its rows from the token on).
  std::vector<std::vector<std::pair<std::string, std::string>>> parts = {
      {{"a", "1"}, {"d", "1"}, {"g", "1"}}, {{"b", "1"}, {"e", "1"}}, {{"c", "1"}, {"f", "1"}, {"h", "1"}}};
  std::pair<std::string, std::string> from{"", ""};
  std::vector<std::string> all;
  for (int round = 0; round < 10; round++) {
    std::vector<wire::QueryReply> pages;
    for (const auto& part : parts) {
      std::vector<std::pair<std::string, std::string>> rows;
      for (const auto& k : part) {
        if (k >= from) rows.push_back(k);
      }
      std::optional<std::pair<std::string, std::string>> next;
      if (rows.size() > 2) {  // each part returns at most top rows
        next = rows[2];
        rows.resize(2);
      }
      pages.push_back(Page(rows, next));
    }
    auto merged = ClusterRouting::MergePages(std::move(pages), 2, {});
    for (const auto& k : Keys(merged)) all.push_back(k);
    if (!merged.next_pk) break;
    from = {*merged.next_pk, merged.next_rk.value_or("")};
  }
  EXPECT_EQ(all, (std::vector<std::string>{"a/1", "b/1", "c/1", "d/1", "e/1", "f/1", "g/1", "h/1"}));
}

// Each member's part ends at the byte bound; merged, N parts were N times
// it. The merged page ends after the row that reaches it, and continues there.
TEST(MergePagesTest, AMergedPageEndsAtTheByteBound) {
  auto big = [](std::string pk, std::string rk) {
    Entity e = Row(std::move(pk), std::move(rk));
    e.Set("b", Value::Binary(std::string(1000, 'x')));
    return e;
  };
  std::vector<wire::QueryReply> parts(2);
  for (const char* rk : {"1", "3", "5"}) parts[0].entities.push_back(big("a", rk));
  for (const char* rk : {"2", "4", "6"}) parts[1].entities.push_back(big("a", rk));
  auto merged = ClusterRouting::MergePages(parts, 1000, {}, 2500);
  EXPECT_EQ(Keys(merged), (std::vector<std::string>{"a/1", "a/2", "a/3"}));
  ASSERT_TRUE(merged.next_pk.has_value());
  EXPECT_EQ(*merged.next_rk, "4");
  // At least one row, however small the bound.
  EXPECT_EQ(Keys(ClusterRouting::MergePages(parts, 1000, {}, 1)),
            (std::vector<std::string>{"a/1"}));
  // The default is the engine's page bound: these few rows are far under it.
  EXPECT_EQ(ClusterRouting::MergePages(parts, 1000, {}).entities.size(), 6u);
}

// Keys beyond ASCII merge in storage order, Azure's ordinal UTF-16 order,
// as each member scans them: U+E000..U+FFFF sort after the supplementary
// planes (surrogates 0xD800..0xDFFF), the reverse of UTF-8 byte order.
// Before session 38 the merge compared bytes: pages came out of order, and
// the next page skipped rows (seen from outside: 34 of 101 partitions of a
// two-member table scan missing with $top 1).
const std::string kPrivateUse = "\xee\x80\x80";  // U+E000
const std::string kLastBmp = "\xef\xbf\xbf";     // U+FFFF
const std::string kEmoji = "\xf0\x9f\x98\x80";   // U+1F600: surrogates D83D DE00

TEST(MergePagesTest, MergesInOrdinalUtf16Order) {
  auto merged = ClusterRouting::MergePages({Page({{"x" + kPrivateUse, "1"}, {"x" + kLastBmp, "1"}}),
                                            Page({{"x", "1"}, {"x" + kEmoji, "1"}})},
                                           10, {});
  EXPECT_EQ(Keys(merged),
            (std::vector<std::string>{"x/1", "x" + kEmoji + "/1", "x" + kPrivateUse + "/1",
                                      "x" + kLastBmp + "/1"}));
  EXPECT_FALSE(merged.next_pk.has_value());
}

TEST(MergePagesTest, TheSmallestContinuationIsTheOrdinalOne) {
  // Part A stopped before U+FFFF, part B before U+1F600/2. In UTF-16 order
  // B's is the smaller: the page ends there and keeps B's row U+1F600/1.
  auto merged =
      ClusterRouting::MergePages({Page({{"a", "1"}}, std::make_pair(kLastBmp, std::string())),
                                  Page({{kEmoji, "1"}}, std::make_pair(kEmoji, std::string("2")))},
                                 10, {});
  EXPECT_EQ(Keys(merged), (std::vector<std::string>{"a/1", kEmoji + "/1"}));
  ASSERT_TRUE(merged.next_pk.has_value());
  EXPECT_EQ(*merged.next_pk, kEmoji);
  EXPECT_EQ(*merged.next_rk, "2");
}

TEST(MergePagesTest, PagingThroughUnicodeKeysMergesEveryRowOnceInOrder) {
  const std::vector<std::string> alphabet = {"a",    kPrivateUse,        kLastBmp,
                                             kEmoji, "\xf4\x8f\xbf\xbf", "z"};
  auto ordinal_less = [](const std::pair<std::string, std::string>& a,
                         const std::pair<std::string, std::string>& b) {
    const int c = CompareOrdinal(a.first, b.first);
    return c < 0 || (c == 0 && CompareOrdinal(a.second, b.second) < 0);
  };
  // Two parts (members), each holding every other key of two characters,
  // each a member's scan: in ordinal order, from the continuation on.
  std::vector<std::vector<std::pair<std::string, std::string>>> parts(2);
  std::vector<std::pair<std::string, std::string>> expected;
  int n = 0;
  for (const auto& c1 : alphabet) {
    for (const auto& c2 : alphabet) {
      parts[n++ % 2].push_back({c1 + c2, "r"});
      expected.push_back({c1 + c2, "r"});
    }
  }
  for (auto& part : parts) std::sort(part.begin(), part.end(), ordinal_less);
  std::sort(expected.begin(), expected.end(), ordinal_less);
  for (size_t top : {1u, 2u, 5u}) {
    std::pair<std::string, std::string> from{"", ""};
    std::vector<std::pair<std::string, std::string>> all;
    for (int round = 0; round < 100; round++) {
      std::vector<wire::QueryReply> pages;
      for (const auto& part : parts) {
        std::vector<std::pair<std::string, std::string>> rows;
        for (const auto& k : part) {
          if (!ordinal_less(k, from)) rows.push_back(k);
        }
        std::optional<std::pair<std::string, std::string>> next;
        if (rows.size() > top) {
          next = rows[top];
          rows.resize(top);
        }
        pages.push_back(Page(rows, next));
      }
      auto merged = ClusterRouting::MergePages(std::move(pages), top, {});
      for (const auto& e : merged.entities) all.push_back({e.partition_key, e.row_key});
      if (!merged.next_pk) break;
      from = {*merged.next_pk, merged.next_rk.value_or("")};
    }
    EXPECT_EQ(all, expected) << "top " << top;
  }
}

// A part may send whole entities (when the keys the merge needs would pass
// the $select bound of 255 names): the merged page holds only what the
// caller selected. Before session 38 the parts were sent the caller's
// $select and nothing else was projected; sending them more without this
// leaked unselected properties into the reply.
TEST(MergePagesTest, TheMergedPageHoldsOnlyTheSelectedProperties) {
  wire::QueryReply part = Page({{"a", "1"}, {"b", "1"}});
  for (Entity& e : part.entities) {
    e.Set("x0", Value::Int32(1));
    e.Set("secret", Value::String("not selected"));
  }
  std::vector<std::string> select;
  for (int i = 0; i < 255; i++) select.push_back("x" + std::to_string(i));
  auto merged = ClusterRouting::MergePages({part}, 10, select);
  ASSERT_EQ(merged.entities.size(), 2u);
  for (const Entity& e : merged.entities) {
    EXPECT_NE(e.Find("x0"), nullptr);
    EXPECT_EQ(e.Find("secret"), nullptr) << e.partition_key;
  }
  // Without a $select, whole entities.
  auto whole = ClusterRouting::MergePages({part}, 10, {});
  EXPECT_NE(whole.entities[0].Find("secret"), nullptr);
}

TEST(PlanShardsTest, RoundTrip) {
  std::vector<char> mask = {1, 0, 1, 1, 0};
  std::string plan = ClusterRouting::PlanWithShards("TableScan", mask);
  std::vector<int32_t> shards;
  ASSERT_TRUE(ClusterRouting::ShardsOfPlan(plan, &shards));
  EXPECT_EQ(shards, (std::vector<int32_t>{0, 2, 3}));
  ASSERT_TRUE(ClusterRouting::ShardsOfPlan(ClusterRouting::PlanWithShards("TableScan", {0, 0}), &shards));
  EXPECT_TRUE(shards.empty());
}

TEST(PlanShardsTest, RefusesWhatIsNotAShardList) {
  std::vector<int32_t> shards;
  EXPECT_FALSE(ClusterRouting::ShardsOfPlan("TableScan", &shards));
  EXPECT_FALSE(ClusterRouting::ShardsOfPlan("TableScan;shards=1,x", &shards));
  EXPECT_FALSE(ClusterRouting::ShardsOfPlan("TableScan;shards=1,,2", &shards));
  EXPECT_FALSE(ClusterRouting::ShardsOfPlan("TableScan;shards=12345678", &shards));
}

TEST(QueryPartitionTest, OnePartitionOrNone) {
  wire::Request r;
  r.op = wire::Op::kQuery;
  r.table = "T";
  r.filter = "PartitionKey eq 'p1' and RowKey gt 'a'";
  EXPECT_EQ(ClusterRouting::QueryPartition(r).value_or("-"), "p1");
  r.filter = "PartitionKey eq 'p1' and RowKey eq 'r'";
  EXPECT_EQ(ClusterRouting::QueryPartition(r).value_or("-"), "p1");
  r.filter = "PartitionKey ge 'p1'";
  EXPECT_FALSE(ClusterRouting::QueryPartition(r).has_value());
  r.filter = "";
  EXPECT_FALSE(ClusterRouting::QueryPartition(r).has_value());
  r.filter = "PartitionKey eq 'a' or PartitionKey eq 'b'";
  EXPECT_FALSE(ClusterRouting::QueryPartition(r).has_value());
}

}  // namespace
}  // namespace sidetable::sidecar
