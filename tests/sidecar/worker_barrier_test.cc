// The barrier that orders a table operation with every worker's queue
// (sidecar/worker_barrier.h): the operation waits for every share, the
// shares wait for the operation, and a cancelled barrier lets everyone go.
#include "sidecar/worker_barrier.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace sidetable::sidecar {
namespace {

using namespace std::chrono_literals;

TEST(WorkerBarrierTest, TheOperationRunsOnlyAfterEveryShareArrivedAndTheSharesOnlyAfterIt) {
  constexpr int kShares = 3;
  WorkerBarrier barrier(kShares);
  std::atomic<int> arrived{0}, passed{0};
  std::atomic<bool> ran{false};
  std::vector<std::thread> shares;
  // Two shares arrive; the executor must not run yet.
  for (int i = 0; i < kShares - 1; i++) {
    shares.emplace_back([&] {
      arrived++;
      barrier.ArriveAndWait();
      EXPECT_TRUE(ran.load()) << "a share went on before the operation ran";
      passed++;
    });
  }
  std::atomic<bool> executor_ready{false};
  std::thread executor([&] {
    executor_ready = barrier.WaitForOthers();
    EXPECT_EQ(arrived.load(), kShares);
    ran = true;
    barrier.Release();
  });
  // Bounded wait for the two arrivals, then some time in which the
  // executor must still wait for the third share.
  for (int i = 0; i < 200 && arrived.load() < kShares - 1; i++) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(ran.load()) << "the operation ran with a share still on its way";
  EXPECT_EQ(passed.load(), 0);
  shares.emplace_back([&] {
    arrived++;
    barrier.ArriveAndWait();
    EXPECT_TRUE(ran.load());
    passed++;
  });
  executor.join();
  for (auto& t : shares) t.join();
  EXPECT_TRUE(executor_ready.load());
  EXPECT_EQ(passed.load(), kShares);
}

// Shutdown takes a share off its queue: the operation is not run, and the
// shares already waiting go on.
TEST(WorkerBarrierTest, ACancelledBarrierReleasesTheSharesAndRefusesTheOperation) {
  WorkerBarrier barrier(2);
  std::atomic<int> passed{0};
  std::thread share([&] {
    barrier.ArriveAndWait();
    passed++;
  });
  std::atomic<int> verdict{-1};
  std::thread executor([&] { verdict = barrier.WaitForOthers() ? 1 : 0; });
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(verdict.load(), -1) << "the operation did not wait for its second share";
  EXPECT_EQ(passed.load(), 0);
  barrier.Cancel();  // the second share was taken off its queue
  executor.join();
  share.join();
  EXPECT_EQ(verdict.load(), 0) << "a cancelled operation was told to run";
  EXPECT_EQ(passed.load(), 1);
}

// The operation itself taken off its queue: the shares that arrived go on.
TEST(WorkerBarrierTest, CancellingBeforeTheOperationArrivesReleasesArrivedShares) {
  WorkerBarrier barrier(1);
  std::atomic<bool> passed{false};
  std::thread share([&] {
    barrier.ArriveAndWait();
    passed = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(passed.load());
  barrier.Cancel();
  share.join();
  EXPECT_TRUE(passed.load());
  EXPECT_FALSE(barrier.WaitForOthers());
}

// Shares that do not wait (a query of several partitions): each worker
// marks the point and goes on, never released; the operation still waits
// until every share is marked.
TEST(WorkerBarrierTest, SharesThatDoNotWaitGoOnAndTheOperationStillWaitsForThem) {
  WorkerBarrier barrier(2, /*shares_wait=*/false);
  EXPECT_FALSE(barrier.shares_wait());
  std::atomic<bool> ran{false};
  std::thread executor([&] {
    EXPECT_TRUE(barrier.WaitForOthers());
    ran = true;
  });
  barrier.ArriveAndWait();  // returns at once: nothing releases it
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(ran.load()) << "ran before the second share was marked";
  barrier.ArriveAndWait();
  executor.join();
  EXPECT_TRUE(ran.load());
}

}  // namespace
}  // namespace sidetable::sidecar
