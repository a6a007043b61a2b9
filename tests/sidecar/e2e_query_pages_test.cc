// Query pages are bounded in bytes as well as in entities (session 35): a
// page of large entities ends once its reply reaches 4 MiB, with a
// continuation, as Azure may return fewer than 1,000 entities; 1,000
// entities of 1 MiB were one reply of 1 GB. The bound counts the encoded
// reply, so a $select of small properties still fills pages by count.
#include <string>
#include <vector>

#include "e2e_fixture.h"

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

}  // namespace
}  // namespace sidetable::testing
