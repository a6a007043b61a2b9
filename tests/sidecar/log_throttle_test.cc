// common::LogThrottle: one line an interval, with the number since the last.
#include "common/log_throttle.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace sidetable::common {
namespace {

TEST(LogThrottle, TheFirstEventLogsAndTheRestOfTheIntervalIsCounted) {
  LogThrottle t(std::chrono::hours(1));
  EXPECT_EQ(t.Record(), 1u);
  for (int i = 0; i < 5; i++) EXPECT_EQ(t.Record(), 0u);
}

TEST(LogThrottle, TheNextLineCarriesWhatWasCountedMeanwhile) {
  LogThrottle t(std::chrono::milliseconds(50));
  EXPECT_EQ(t.Record(), 1u);
  for (int i = 0; i < 4; i++) EXPECT_EQ(t.Record(), 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_EQ(t.Record(), 5u);  // the four within the interval and this one
}

TEST(LogThrottle, AnEventThatMayNotLogIsCountedForTheNextLine) {
  LogThrottle t(std::chrono::milliseconds(0));
  EXPECT_EQ(t.Record(/*may_log=*/false), 0u);
  EXPECT_EQ(t.Record(/*may_log=*/false), 0u);
  EXPECT_EQ(t.Record(), 3u);
}

// What a burst counted after its last line is taken by an idle tick once
// the interval has passed (before session 42 it waited for the next burst).
TEST(LogThrottle, AnIdleTickTakesTheEndOfABurst) {
  LogThrottle slow(std::chrono::hours(1));
  EXPECT_EQ(slow.TakeOverdue(), 0u);  // nothing counted
  EXPECT_EQ(slow.Record(), 1u);
  for (int i = 0; i < 3; i++) EXPECT_EQ(slow.Record(), 0u);
  EXPECT_EQ(slow.TakeOverdue(), 0u);  // within the interval
  LogThrottle fast(std::chrono::milliseconds(20));
  EXPECT_EQ(fast.Record(), 1u);
  for (int i = 0; i < 3; i++) EXPECT_EQ(fast.Record(/*may_log=*/false), 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(fast.TakeOverdue(), 3u);
  EXPECT_EQ(fast.TakeOverdue(), 0u);  // taken once
  // And the next line starts counting afresh, an interval later.
  EXPECT_EQ(fast.Record(), 0u);
}

// Many threads at once: the counts the lines carry add up to the events.
TEST(LogThrottle, ConcurrentEventsAreEachCountedOnce) {
  LogThrottle t(std::chrono::microseconds(100));
  std::atomic<uint64_t> logged{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; k++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; i++) logged += t.Record();
    });
  }
  for (auto& th : threads) th.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  logged += t.Record();  // the rest, with this one
  EXPECT_EQ(logged.load(), 80001u);
}

}  // namespace
}  // namespace sidetable::common
