// StallWatch: which partitions have messages waiting and deliver none
// (workers/stall_watch.h). The clock is the test's.
#include "workers/stall_watch.h"

#include <gtest/gtest.h>

namespace sidetable::workers {
namespace {

using Clock = StallWatch::Clock;
using std::chrono::seconds;
const TopicPartition kStallP0{"t", 0}, kStallP1{"t", 1};

TEST(StallWatchTest, APartitionThatDeliversIsNeverStalled) {
  StallWatch w;
  const Clock::time_point t0{};
  for (int i = 0; i <= 120; i++) w.Observe(kStallP0, 100 + i, 5000, t0 + seconds(i));
  EXPECT_TRUE(w.Stalled(t0 + seconds(120), seconds(30)).empty());
}

TEST(StallWatchTest, NothingWaitingIsNeverStalled) {
  StallWatch w;
  const Clock::time_point t0{};
  for (int i = 0; i <= 120; i++) w.Observe(kStallP0, 100, 0, t0 + seconds(i));
  EXPECT_TRUE(w.Stalled(t0 + seconds(120), seconds(30)).empty());
}

TEST(StallWatchTest, MessagesWaitingAndNoneDeliveredPastTheBoundIsAStall) {
  StallWatch w;
  const Clock::time_point t0{};
  for (int i = 0; i < 10; i++) {  // reports come every second
    w.Observe(kStallP0, 100, 0, t0 + seconds(i));
    w.Observe(kStallP1, 7, 0, t0 + seconds(i));
  }
  // From second 10 on, P0 has messages waiting and hands none out: the
  // last report with nothing waiting was at second 9.
  for (int i = 10; i <= 40; i++) {
    w.Observe(kStallP0, 100, 365000, t0 + seconds(i));
    w.Observe(kStallP1, 7 + i, 3, t0 + seconds(i));
  }
  EXPECT_TRUE(w.Stalled(t0 + seconds(39), seconds(30)).empty());  // 30 s exactly: not yet
  const auto stalled = w.Stalled(t0 + seconds(40), seconds(30));
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_EQ(stalled[0].tp, kStallP0);
  EXPECT_EQ(stalled[0].waiting, 365000);
  EXPECT_DOUBLE_EQ(stalled[0].seconds, 31.0);
  // It delivers again: no longer stalled.
  w.Observe(kStallP0, 101, 365000, t0 + seconds(42));
  EXPECT_TRUE(w.Stalled(t0 + seconds(42), seconds(30)).empty());
}

// A worker blocked applying does not poll, so no report comes: the time
// since the partition last delivered runs on.
TEST(StallWatchTest, NoReportsWhileMessagesWaitStillCounts) {
  StallWatch w;
  const Clock::time_point t0{};
  w.Observe(kStallP0, 100, 0, t0);
  w.Observe(kStallP0, 100, 12, t0 + seconds(1));
  EXPECT_TRUE(w.Stalled(t0 + seconds(20), seconds(30)).empty());
  EXPECT_EQ(w.Stalled(t0 + seconds(40), seconds(30)).size(), 1u);
}

TEST(StallWatchTest, ARevokedPartitionIsForgotten) {
  StallWatch w;
  const Clock::time_point t0{};
  w.Observe(kStallP0, 100, 50, t0);
  w.Observe(kStallP1, 100, 50, t0);
  w.Forget(kStallP0);
  const auto stalled = w.Stalled(t0 + seconds(60), seconds(30));
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_EQ(stalled[0].tp, kStallP1);
  w.Clear();
  EXPECT_TRUE(w.Stalled(t0 + seconds(60), seconds(30)).empty());
}

}  // namespace
}  // namespace sidetable::workers
