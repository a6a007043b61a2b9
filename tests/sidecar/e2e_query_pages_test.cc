// Query pages are bounded in bytes as well as in entities (session 35): a
// page of large entities ends once its reply reaches 4 MiB, with a
// continuation, as Azure may return fewer than 1,000 entities; 1,000
// entities of 1 MiB were one reply of 1 GB. The bound counts the encoded
// reply, so a $select of small properties still fills pages by count. And
// by the deleted rows a page passes over (session 43).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "e2e_fixture.h"
#include "e2e_metrics.h"

namespace sidetable::testing {
namespace {

class QueryPagesTest : public SidecarTest {
 protected:
  // Table "Big": 12 entities "p"/"r10".."r21" of ~960 KB (15 Binary
  // properties of 64,000 bytes) and an Int32 "n".
  void SetUp() override {
    SidecarTest::SetUp();
    ASSERT_TRUE(client_->CreateTable("Big").ok());
    for (int i = 0; i < 12; i++) {
      client::EntityBuilder e("p", "r" + std::to_string(10 + i));
      e.Int32("n", i);
      for (int j = 0; j < 15; j++)
        e.Binary("b" + std::to_string(j), std::string(64000, static_cast<char>('a' + i)));
      Batch b("Big");
      b.Insert(e.Build());
      ASSERT_TRUE(client_->Execute(b).ok());
    }
  }

  // The row keys of every page, asked page by page.
  std::vector<std::vector<std::string>> Pages(const client::QueryOptions& q) {
    std::vector<std::vector<std::string>> pages;
    std::optional<client::Continuation> next;
    do {
      auto page = client_->QueryPage(q, next);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok() || pages.size() > 100) break;
      auto& keys = pages.emplace_back();
      for (const Entity& e : page->entities) {
        keys.push_back(e.row_key);
        // Whole entities, not cut short.
        if (q.select.empty()) {
          EXPECT_EQ(e.properties.size(), 16u) << e.row_key;
        }
      }
      next = page->next;
    } while (next);
    return pages;
  }

  static std::vector<std::string> Keys(int from, int to) {
    std::vector<std::string> out;
    for (int i = from; i < to; i++) out.push_back("r" + std::to_string(10 + i));
    return out;
  }
};

TEST_F(QueryPagesTest, APageOfLargeEntitiesEndsAtTheByteBoundWithAContinuation) {
  // The fifth entity takes the reply past 4 MiB: it ends the page, in it.
  auto pages = Pages({.table = "Big", .top = 1000});
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(pages[0], Keys(0, 5));
  EXPECT_EQ(pages[1], Keys(5, 10));
  EXPECT_EQ(pages[2], Keys(10, 12));
  // The iterator (which reads a page ahead, and the sidecar's prefetch)
  // follows the short pages: every entity once, in order.
  std::vector<std::string> all;
  auto it = client_->Query({.table = "Big"});
  for (Entity e; it.Next(&e);) all.push_back(e.row_key);
  EXPECT_TRUE(it.status().ok()) << it.status().ToString();
  EXPECT_EQ(all, Keys(0, 12));
}

TEST_F(QueryPagesTest, TheBoundCountsTheReplyNotTheStoredEntities) {
  // Only the RowKey and "n" of each: a small reply, one page.
  auto pages = Pages({.table = "Big", .select = {"RowKey", "n"}});
  ASSERT_EQ(pages.size(), 1u);
  EXPECT_EQ(pages[0], Keys(0, 12));
  // $top still ends a page first.
  EXPECT_EQ(Pages({.table = "Big", .top = 3}).size(), 4u);
}

// Deleted rows cost a scan work until compaction drops their tombstones;
// a page stops after passing over query.max_examined of them (1,000 here;
// the engine's least bound, 1,024, applies) with a continuation at the
// deleted key, so a range of recent deletes gives empty pages that
// progress. Before session 43 the first page passed over them all.
class QueryDeletedRowsTest : public SidecarTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    std::ofstream(dir_.Sub("sidetable.yaml")) << "query:\n  max_examined: 1000\n";
    return {"--durability", "os", "--config", dir_.Sub("sidetable.yaml")};
  }
};

TEST_F(QueryDeletedRowsTest, ARangeOfRecentDeletesGivesEmptyPagesThatProgress) {
  Status created = client_->CreateTable("Queue");
  ASSERT_TRUE(created.ok()) << created.ToString();
  auto rk = [](int i) {
    char s[16];
    std::snprintf(s, sizeof s, "r%05d", i);
    return std::string(s);
  };
  for (int at = 0; at < 3000; at += 100) {
    Batch b("Queue");
    for (int i = at; i < at + 100; i++)
      b.Insert(client::EntityBuilder("q", rk(i)).Int32("n", i).Build());
    ASSERT_TRUE(client_->Execute(b).ok());
  }
  for (int at = 0; at < 2997; at += 100) {
    Batch b("Queue");
    for (int i = at; i < std::min(at + 100, 2997); i++) b.Delete("q", rk(i));
    ASSERT_TRUE(client_->Execute(b).ok());
  }
  const client::QueryOptions q{.table = "Queue", .filter = "PartitionKey eq 'q'", .top = 1};
  auto first = client_->QueryPage(q, std::nullopt);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->entities.empty());
  ASSERT_TRUE(first->next.has_value()) << "the first page passed over every deleted row";
  const uint64_t stopped = Metric(*server_, "sidetable_query_pages_stopped_at_deleted_total");
  const uint64_t skipped = Metric(*server_, "sidetable_query_skipped_entries_total");
  EXPECT_NE(stopped, kNoMetric);
  EXPECT_NE(skipped, kNoMetric);
  EXPECT_GE(stopped, 1u);
  EXPECT_GE(skipped, 1024u);
  // The iterator follows the empty pages: the three live rows, once each.
  std::vector<std::string> all;
  auto it = client_->Query(q);
  for (Entity e; it.Next(&e);) all.push_back(e.row_key);
  EXPECT_TRUE(it.status().ok()) << it.status().ToString();
  EXPECT_EQ(all, (std::vector<std::string>{rk(2997), rk(2998), rk(2999)}));
  EXPECT_GE(it.pages(), 5u);
}

}  // namespace
}  // namespace sidetable::testing
