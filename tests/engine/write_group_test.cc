// WriteGroup (engine/write_group.h): deferred writes get their final result
// at once, become visible only at Flush, and are written as one RocksDB
// write; a second write of a partition sees the first; a failed check takes
// no ticket and changes nothing; other threads' writes on the group's
// partitions and tables wait for the flush, and never deadlock with it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "engine/etag.h"
#include "engine/write_group.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::testing {
namespace {

class WriteGroupTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_TRUE(engine_->CreateTable("Things").ok());
  }
  Result<WriteResult> Defer(WriteGroup* g, Batch b) { return engine_->Execute(b, g); }
  static Batch InsertOf(Entity e) { return std::move(Batch("Things").Insert(std::move(e))); }
};

TEST_F(WriteGroupTest, DeferredWritesAreInvisibleUntilFlushThenWrittenAsOne) {
  const EngineStats before = engine_->Stats();
  WriteGroup group(engine_.get());
  std::vector<uint64_t> lsns;
  for (int i = 0; i < 5; i++) {
    EXPECT_EQ(group.deferred(), static_cast<uint64_t>(i));
    auto r = Defer(&group, InsertOf(MakeEntity("p" + std::to_string(i), "r", i)));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    // The result is final before the write is: LSN and ETag.
    ASSERT_EQ(r->etags.size(), 1u);
    EXPECT_EQ(r->etags[0], MakeETag(r->lsn));
    lsns.push_back(r->lsn);
  }
  EXPECT_EQ(group.deferred(), 5u);
  for (int i = 0; i < 5; i++) EXPECT_EQ(lsns[i], before.last_lsn + 1 + i);
  // Nothing is visible, nor in the change log, before the flush.
  EXPECT_EQ(engine_->Get("Things", "p0", "r").status().code(), Code::kResourceNotFound);
  EXPECT_EQ(engine_->Stats().last_lsn, before.last_lsn);
  EXPECT_EQ(group.Outcome(0).code(), Code::kInternal) << "an outcome before the flush";

  ASSERT_TRUE(group.Flush().ok());
  for (uint64_t t = 0; t < 5; t++) EXPECT_TRUE(group.Outcome(t).ok());
  const EngineStats after = engine_->Stats();
  EXPECT_EQ(after.last_lsn, before.last_lsn + 5);
  EXPECT_EQ(after.commits - before.commits, 5u);
  EXPECT_EQ(after.group_commits - before.group_commits, 1u) << "one RocksDB write for the group";
  for (int i = 0; i < 5; i++) {
    auto e = engine_->Get("Things", "p" + std::to_string(i), "r");
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->etag, MakeETag(lsns[i]));
  }
  // The change log holds them in LSN order, without a gap.
  auto log = engine_->ReadChanges(before.last_lsn + 1, 100, 1 << 20);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->records.size(), 5u);
  for (int i = 0; i < 5; i++) {
    EXPECT_EQ(log->records[i].lsn, lsns[i]);
    EXPECT_EQ(log->records[i].partition_key, "p" + std::to_string(i));
  }
  group.Reset();
  EXPECT_EQ(group.deferred(), 0u);
}

TEST_F(WriteGroupTest, SecondWriteOfAPartitionSeesTheFirst) {
  WriteGroup group(engine_.get());
  auto first = Defer(&group, InsertOf(MakeEntity("p", "r", 1)));
  ASSERT_TRUE(first.ok());
  // Same partition: the group is written first, so this sees the entity.
  auto again = Defer(&group, InsertOf(MakeEntity("p", "r", 2)));
  EXPECT_EQ(again.status().code(), Code::kEntityAlreadyExists);
  EXPECT_EQ(group.deferred(), 1u) << "a refused write takes no ticket";
  EXPECT_TRUE(group.Outcome(0).ok()) << "flushed by the second write";
  // An update with the first write's ETag, in the same group, succeeds.
  Batch update("Things");
  update.Update(MakeEntity("p", "r", 3), first->etags[0]);
  auto updated = Defer(&group, std::move(update));
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ(group.deferred(), 2u);
  ASSERT_TRUE(group.Flush().ok());
  auto e = engine_->Get("Things", "p", "r");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->Find("n")->as_int32(), 3);
  EXPECT_EQ(e->etag, updated->etags[0]);
}

TEST_F(WriteGroupTest, RefusedWritesChangeNothingAndLeaveTheGroupIntact) {
  ASSERT_TRUE(Insert("Things", MakeEntity("q", "exists", 1)).ok());
  WriteGroup group(engine_.get());
  ASSERT_TRUE(Defer(&group, InsertOf(MakeEntity("a", "r", 1))).ok());
  const std::string before = DumpState(*engine_);
  // A condition that fails, a missing table, a limit: each its own error.
  Batch stale("Things");
  stale.Update(MakeEntity("q", "exists", 2), MakeETag(1));
  EXPECT_EQ(Defer(&group, std::move(stale)).status().code(), Code::kUpdateConditionNotSatisfied);
  EXPECT_EQ(Defer(&group, std::move(Batch("Nope").Insert(MakeEntity("b", "r")))).status().code(),
            Code::kTableNotFound);
  Entity bad = MakeEntity("c", "r");
  bad.row_key = "bad/key";
  EXPECT_EQ(Defer(&group, InsertOf(bad)).status().code(), Code::kOutOfRangeInput);
  // No group at all: refused, not dereferenced.
  EXPECT_EQ(engine_->Execute(InsertOf(MakeEntity("d", "r")), static_cast<WriteGroup*>(nullptr)).status().code(),
            Code::kInternal);
  EXPECT_EQ(group.deferred(), 1u);
  EXPECT_EQ(DumpState(*engine_), before) << "refused writes changed something";
  ASSERT_TRUE(group.Flush().ok());
  EXPECT_TRUE(group.Outcome(0).ok());
  EXPECT_TRUE(engine_->Get("Things", "a", "r").ok());
  auto q = engine_->Get("Things", "q", "exists");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->Find("n")->as_int32(), 1);
}

TEST_F(WriteGroupTest, AnotherWriterOfTheGroupsPartitionWaitsForTheFlush) {
  WriteGroup group(engine_.get());
  ASSERT_TRUE(Defer(&group, InsertOf(MakeEntity("p", "r", 1))).ok());
  std::atomic<bool> done{false};
  Result<WriteResult> other = Status(Code::kInternal, "not run");
  std::thread t([&] {
    other = engine_->Execute(InsertOf(MakeEntity("p", "r", 2)));
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(done.load()) << "wrote past the group's partition lock";
  ASSERT_TRUE(group.Flush().ok());
  t.join();
  // It ran after the group's insert, and saw it.
  EXPECT_EQ(other.status().code(), Code::kEntityAlreadyExists);
}

TEST_F(WriteGroupTest, DeleteTableWaitsForTheFlushAndTheGroupDoesNotWaitForIt) {
  ASSERT_TRUE(engine_->CreateTable("Other").ok());
  WriteGroup group(engine_.get());
  ASSERT_TRUE(Defer(&group, InsertOf(MakeEntity("p", "r", 1))).ok());
  std::atomic<bool> deleted{false};
  std::thread t([&] {
    EXPECT_TRUE(engine_->DeleteTable("Things").ok());
    deleted = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(deleted.load()) << "the table went while the group held a write to it";
  // Writing another table meanwhile neither blocks nor deadlocks.
  ASSERT_TRUE(Defer(&group, std::move(Batch("Other").Insert(MakeEntity("o", "r")))).ok());
  ASSERT_TRUE(group.Flush().ok());
  t.join();
  EXPECT_TRUE(deleted.load());
  EXPECT_EQ(engine_->Get("Things", "p", "r").status().code(), Code::kTableNotFound);
  EXPECT_TRUE(engine_->Get("Other", "o", "r").ok());
  // Every record is in the log, in order.
  auto log = engine_->ReadChanges(1, 100, 1 << 20);
  ASSERT_TRUE(log.ok());
  for (size_t i = 0; i < log->records.size(); i++) EXPECT_EQ(log->records[i].lsn, i + 1);
}

// Writer threads on a few shared partitions, each also holding partition
// locks in the commit queue, against a group that keeps writing the same
// partitions: no deadlock (bounded by the test's time), every write applied
// exactly once, the log gap-free and in commit order.
TEST_F(WriteGroupTest, GroupAndConcurrentWritersNeverDeadlockAndLoseNothing) {
  constexpr int kThreads = 4, kPerThread = 300, kGroupWrites = 1200, kPartitions = 8;
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; t++) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; i++) {
        Batch b("Things");
        b.Insert(MakeEntity("p" + std::to_string(i % kPartitions), "t" + std::to_string(t) + "-" + std::to_string(i)));
        if (!engine_->Execute(b).ok()) failures++;
      }
    });
  }
  {
    WriteGroup group(engine_.get());
    for (int i = 0; i < kGroupWrites; i++) {
      auto r = Defer(&group, InsertOf(MakeEntity("p" + std::to_string(i % kPartitions), "g-" + std::to_string(i))));
      if (!r.ok()) failures++;
      if (i % 5 == 4) {
        if (!group.Flush().ok()) failures++;
        group.Reset();
      }
    }
  }  // the destructor flushes the rest
  for (auto& w : writers) w.join();
  EXPECT_EQ(failures.load(), 0);
  const uint64_t total = kThreads * kPerThread + kGroupWrites;
  EXPECT_EQ(engine_->Stats().last_lsn, total + 1);  // + the table's creation
  auto log = engine_->ReadChanges(1, total + 10, 64 << 20);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->records.size(), total + 1);
  for (size_t i = 0; i < log->records.size(); i++) ASSERT_EQ(log->records[i].lsn, i + 1);
  size_t rows = 0;
  auto cur = engine_->Scan("Things", ScanBounds{}, nullptr);
  ASSERT_TRUE(cur.ok());
  for (; (*cur)->Valid(); (*cur)->Next()) rows++;
  EXPECT_EQ(rows, total);
}

}  // namespace
}  // namespace sidetable::testing
