// RecentRecords (engine/internal/recent_records.h): the newest resolved
// records, found only for the very record they were made from, evicted
// oldest first within the byte bound, replaced when an LSN is handed out
// again.
#include "engine/internal/recent_records.h"

#include <gtest/gtest.h>

namespace sidetable::internal {
namespace {

TEST(RecentRecords, FindsARecordOnlyForTheBytesItWasMadeFrom) {
  RecentRecords r(1 << 20);
  ASSERT_TRUE(r.enabled());
  r.Add(5, "stored-5", "resolved-5");
  r.Add(6, "stored-6", "resolved-6");
  std::string out;
  ASSERT_TRUE(r.Find(5, "stored-5", &out));
  EXPECT_EQ(out, "resolved-5");
  ASSERT_TRUE(r.Find(6, "stored-6", &out));
  EXPECT_EQ(out, "resolved-6");
  out = "untouched";
  EXPECT_FALSE(r.Find(5, "stored-X", &out)) << "other bytes at the same LSN";
  EXPECT_FALSE(r.Find(5, "stored-55", &out)) << "another size";
  EXPECT_FALSE(r.Find(7, "stored-6", &out)) << "an LSN never added";
  EXPECT_FALSE(r.Find(4, "stored-5", &out));
  EXPECT_EQ(out, "untouched");
}

TEST(RecentRecords, AnLsnHandedOutAgainReplacesItAndWhatFollowed) {
  RecentRecords r(1 << 20);
  r.Add(5, "a5", "r-a5");
  r.Add(6, "a6", "r-a6");
  r.Add(7, "a7", "r-a7");
  // The group of 6 and 7 failed; 6 goes to another write.
  r.Add(6, "b6", "r-b6");
  std::string out;
  EXPECT_FALSE(r.Find(6, "a6", &out));
  EXPECT_FALSE(r.Find(7, "a7", &out));
  ASSERT_TRUE(r.Find(6, "b6", &out));
  EXPECT_EQ(out, "r-b6");
  ASSERT_TRUE(r.Find(5, "a5", &out));
  EXPECT_EQ(r.bytes(), 2 * 4u);
}

TEST(RecentRecords, TheOldestGoFirstWithinTheBound) {
  RecentRecords r(100);
  for (uint64_t lsn = 1; lsn <= 10; lsn++)
    r.Add(lsn, "s" + std::to_string(lsn), std::string(30, 'x'));
  EXPECT_LE(r.bytes(), 100u);
  std::string out;
  EXPECT_TRUE(r.Find(10, "s10", &out));
  EXPECT_TRUE(r.Find(8, "s8", &out));
  EXPECT_FALSE(r.Find(7, "s7", &out)) << "evicted";
  r.Add(11, "s11", std::string(100, 'y'));  // as large as the bound: not kept
  EXPECT_FALSE(r.Find(11, "s11", &out));
  EXPECT_TRUE(r.Find(10, "s10", &out)) << "a record too large to keep evicts nothing";
}

TEST(RecentRecords, OffKeepsNothing) {
  RecentRecords r(0);
  EXPECT_FALSE(r.enabled());
  r.Add(1, "s", "r");
  std::string out;
  EXPECT_FALSE(r.Find(1, "s", &out));
  EXPECT_EQ(r.bytes(), 0u);
}

}  // namespace
}  // namespace sidetable::internal
