// OffsetGaps: which delivered offsets mark messages Kafka removed before
// the group read them (workers/offset_gaps.h).
#include "workers/offset_gaps.h"

#include <gtest/gtest.h>

namespace sidetable::workers {
namespace {

const TopicPartition kP0{"t", 0}, kP1{"t", 1};

TEST(OffsetGapsTest, ConsecutiveOffsetsFromTheCommittedOneAreNoGap) {
  OffsetGaps g;
  g.Expect(kP0, 10);
  for (int64_t o = 10; o < 20; o++) EXPECT_FALSE(g.Observe(kP0, o)) << o;
}

TEST(OffsetGapsTest, AFirstMessagePastTheCommittedOffsetIsAGap) {
  OffsetGaps g;
  g.Expect(kP0, 10);
  auto gap = g.Observe(kP0, 25);
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->tp, kP0);
  EXPECT_EQ(gap->from, 10);
  EXPECT_EQ(gap->to, 25);
  EXPECT_FALSE(g.Observe(kP0, 26));
}

// librdkafka resetting a partition mid-run (its fetch position fell out of
// the retained range while the worker was behind).
TEST(OffsetGapsTest, AJumpWhileReadingIsAGapOfThatPartitionOnly) {
  OffsetGaps g;
  g.Expect(kP0, 0);
  g.Expect(kP1, 0);
  EXPECT_FALSE(g.Observe(kP0, 0));
  EXPECT_FALSE(g.Observe(kP1, 0));
  EXPECT_FALSE(g.Observe(kP0, 1));
  auto gap = g.Observe(kP1, 7);
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->tp, kP1);
  EXPECT_EQ(gap->from, 1);
  EXPECT_EQ(gap->to, 7);
  EXPECT_FALSE(g.Observe(kP0, 2));
}

TEST(OffsetGapsTest, MessagesDeliveredAgainAreNoGap) {
  OffsetGaps g;
  g.Expect(kP0, 5);
  EXPECT_FALSE(g.Observe(kP0, 5));
  EXPECT_FALSE(g.Observe(kP0, 6));
  EXPECT_FALSE(g.Observe(kP0, 3));
  EXPECT_FALSE(g.Observe(kP0, 4));
}

// A new group (nothing committed) starts at the oldest message retained,
// as documented; a revoked partition is checked again from its next
// assignment's committed offset.
TEST(OffsetGapsTest, AnUnknownStartIsNotChecked) {
  OffsetGaps g;
  g.Expect(kP0, -1001);  // RD_KAFKA_OFFSET_INVALID
  EXPECT_FALSE(g.Observe(kP0, 500));
  EXPECT_FALSE(g.Observe(kP0, 501));
  g.Forget(kP0);
  EXPECT_FALSE(g.Observe(kP0, 900));
  EXPECT_FALSE(g.Observe(kP1, 42));
  g.Clear();
  g.Expect(kP0, 901);
  EXPECT_TRUE(g.Observe(kP0, 950));
}

}  // namespace
}  // namespace sidetable::workers
