// The write-stall flag (StorageGuard::WritesStalled, engine/internal/
// storage_guard.h): what the sidecar's frontend asks before it runs a write
// inline. RocksDB's stall callbacks can arrive out of order, so the flag must
// follow RocksDB's real state, not the last callback.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "engine/internal/storage_guard.h"
#include "testing/temp_dir.h"

namespace sidetable {
namespace {

using namespace std::chrono_literals;
using rocksdb::WriteStallCondition;

rocksdb::WriteStallInfo Change(WriteStallCondition prev, WriteStallCondition cur) {
  rocksdb::WriteStallInfo info;
  info.cf_name = "entities";
  info.condition.prev = prev;
  info.condition.cur = cur;
  return info;
}

std::shared_ptr<StorageGuard> MakeGuard(const std::string& dir) {
  return std::make_shared<StorageGuard>(dir, /*reserve_bytes=*/0, [] { return int64_t{0}; });
}

// Asks until the flag reads `want`, for at most `within`.
bool Becomes(StorageGuard& guard, bool want, std::chrono::milliseconds within = 2s) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < until) {
    if (guard.WritesStalled() == want) return true;
    std::this_thread::sleep_for(1ms);
  }
  return guard.WritesStalled() == want;
}

TEST(WriteStallTest, WithoutAStallTheAnswerIsNoAndRocksDbIsAskedRarely) {
  testing::TempDir dir;
  auto guard = MakeGuard(dir.path());
  std::atomic<int> asked{0};
  guard->SetStallProbe([&] {
    asked++;
    return false;
  });
  for (int i = 0; i < 1000; i++) ASSERT_FALSE(guard->WritesStalled());
  // One call in 64 looks at the clock, and at most one a re-check interval asks.
  EXPECT_GE(asked.load(), 1);
  EXPECT_LE(asked.load(), 16);
}

TEST(WriteStallTest, AStallIsSeenWithoutAnyCallback) {
  testing::TempDir dir;
  auto guard = MakeGuard(dir.path());
  std::atomic<bool> stalls{false};
  guard->SetStallProbe([&] { return stalls.load(); });
  ASSERT_FALSE(guard->WritesStalled());
  // RocksDB announces a stall only when the write that found it returns, so
  // the guard must find it by asking.
  stalls = true;
  EXPECT_TRUE(Becomes(*guard, true));
  stalls = false;
  EXPECT_TRUE(Becomes(*guard, false));
}

TEST(WriteStallTest, CallbacksInTheOtherOrderDoNotLeaveWritesStalled) {
  testing::TempDir dir;
  auto guard = MakeGuard(dir.path());
  guard->SetStallProbe([] { return false; });  // RocksDB neither stops nor delays
  // The recovery's callback delivered before the stall's it follows, as
  // RocksDB did under a load of single inserts (session 27): the last
  // callback says "stopped", but nothing is.
  guard->OnStallConditionsChanged(
      Change(WriteStallCondition::kStopped, WriteStallCondition::kNormal));
  guard->OnStallConditionsChanged(
      Change(WriteStallCondition::kNormal, WriteStallCondition::kStopped));
  EXPECT_TRUE(Becomes(*guard, false));
}

TEST(WriteStallTest, TheFlagStaysUpWhileRocksDbStillStallsThenComesDown) {
  testing::TempDir dir;
  auto guard = MakeGuard(dir.path());
  std::atomic<bool> stalls{true};
  std::atomic<int> asked{0};
  guard->SetStallProbe([&] {
    asked++;
    return stalls.load();
  });
  guard->OnStallConditionsChanged(
      Change(WriteStallCondition::kNormal, WriteStallCondition::kDelayed));
  EXPECT_TRUE(guard->WritesStalled());
  // Re-read several times meanwhile (every 10 ms at most): still stalled.
  const auto until = std::chrono::steady_clock::now() + 5 * StorageGuard::kStallRecheck;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_TRUE(guard->WritesStalled());
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_GE(asked.load(), 2);
  // A stale "normal" (a delay that ended before the current one began) does
  // not lower it either: it only makes the next call re-read.
  const int before = asked.load();
  guard->OnStallConditionsChanged(
      Change(WriteStallCondition::kDelayed, WriteStallCondition::kNormal));
  EXPECT_TRUE(guard->WritesStalled());
  EXPECT_EQ(asked.load(), before + 1);
  stalls = false;
  EXPECT_TRUE(Becomes(*guard, false));
}

// A real stop: RocksDB stops writes when two full memtables wait for a flush
// that cannot run, and the flag follows it up and down with the guard's own
// re-reads of the DB's properties (no probe replaced).
TEST(WriteStallTest, FollowsRocksDbStoppingAndResumingWrites) {
  testing::TempDir dir;
  auto guard = MakeGuard(dir.path());
  rocksdb::Options options;
  options.create_if_missing = true;
  options.write_buffer_size = 64 << 10;
  options.max_write_buffer_number = 2;
  options.listeners.push_back(guard);
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(options, dir.Sub("db"), &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  guard->Attach(db.get(), db->DefaultColumnFamily());
  ASSERT_FALSE(guard->WritesStalled());

  ASSERT_TRUE(db->PauseBackgroundWork().ok());
  std::atomic<bool> enough{false};
  std::atomic<int> written{0};
  std::thread writer([&] {
    const std::string value(1024, 'v');
    // Bounded: 2,000 KiB is ten memtables; it stops at the stall long before.
    for (int i = 0; i < 2000 && !enough.load(); i++) {
      if (!db->Put(rocksdb::WriteOptions(), "k" + std::to_string(i), value).ok()) break;
      written++;
    }
  });
  const bool stalled = Becomes(*guard, true, 10s);
  uint64_t stopped = 0;
  ASSERT_TRUE(db->GetIntProperty(rocksdb::DB::Properties::kIsWriteStopped, &stopped));
  EXPECT_TRUE(stalled);
  EXPECT_EQ(stopped, 1u);
  // Re-reads meanwhile find RocksDB still stopped.
  std::this_thread::sleep_for(5 * StorageGuard::kStallRecheck);
  EXPECT_TRUE(guard->WritesStalled());
  const int at_stall = written.load();

  enough = true;
  ASSERT_TRUE(db->ContinueBackgroundWork().ok());
  writer.join();
  EXPECT_GE(written.load(), at_stall);
  EXPECT_TRUE(Becomes(*guard, false, 10s));
  ASSERT_TRUE(db->GetIntProperty(rocksdb::DB::Properties::kIsWriteStopped, &stopped));
  EXPECT_EQ(stopped, 0u);
  ASSERT_TRUE(db->Close().ok());
}

}  // namespace
}  // namespace sidetable
