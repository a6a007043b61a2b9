// Durability::kFsync with shared fsyncs (engine/internal/commit_queue.h): a
// write is visible once written, acknowledged (Execute returns, or
// WaitDurable does) only once durable, and the change log (hence Kafka)
// never shows a record that is not durable yet.
#include <gtest/gtest.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <thread>
#include <vector>

#include "engine/internal/engine_impl.h"
#include "testing/temp_dir.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::testing {
namespace {

class FsyncTest : public EngineTest {
 protected:
  void SetUp() override {
    options_.durability = Durability::kFsync;
    Reopen();
    ASSERT_TRUE(engine_->CreateTable("Things").ok());
  }
  Batch InsertOf(const std::string& pk, const std::string& rk, int n = 0) {
    Batch b("Things");
    b.Insert(MakeEntity(pk, rk, n));
    return b;
  }
  // The change log's records from `from` on, as the publisher reads them.
  size_t LogRecordsFrom(uint64_t from) {
    auto changes = engine_->ReadChanges(from, 1000, 16 << 20);
    EXPECT_TRUE(changes.ok());
    return changes.ok() ? changes->records.size() : 0;
  }
};

TEST_F(FsyncTest, DeferredWriteIsVisibleButNotInTheChangeLogUntilDurable) {
  const uint64_t syncs = engine_->Stats().wal_syncs;
  auto w = engine_->Execute(InsertOf("p", "r"), /*wait_durable=*/false);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_LT(engine_->durable_lsn(), w->lsn);
  EXPECT_EQ(engine_->Stats().last_lsn, engine_->durable_lsn());
  EXPECT_EQ(LogRecordsFrom(w->lsn), 0u) << "a record that is not durable was readable from the change log";
  EXPECT_TRUE(engine_->Get("Things", "p", "r").ok()) << "a written write is visible";

  ASSERT_TRUE(engine_->WaitDurable(w->lsn).ok());
  EXPECT_GE(engine_->durable_lsn(), w->lsn);
  EXPECT_EQ(LogRecordsFrom(w->lsn), 1u);
  EXPECT_EQ(engine_->Stats().wal_syncs, syncs + 1);
  // Already durable: no further fsync.
  ASSERT_TRUE(engine_->WaitDurable(w->lsn).ok());
  EXPECT_EQ(engine_->Stats().wal_syncs, syncs + 1);
}

TEST_F(FsyncTest, OneFsyncMakesEveryEarlierWriteDurable) {
  const uint64_t syncs = engine_->Stats().wal_syncs;
  uint64_t last = 0, first = 0;
  for (int i = 0; i < 20; i++) {
    auto w = engine_->Execute(InsertOf("p" + std::to_string(i % 3), "r" + std::to_string(i)), false);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    if (first == 0) first = w->lsn;
    EXPECT_GT(w->lsn, last);
    last = w->lsn;
  }
  EXPECT_LT(engine_->durable_lsn(), first);
  ASSERT_TRUE(engine_->WaitDurable(last).ok());
  EXPECT_EQ(engine_->Stats().wal_syncs, syncs + 1);
  EXPECT_EQ(engine_->durable_lsn(), last);
  EXPECT_EQ(LogRecordsFrom(first), 20u);
}

// Acknowledged means durable: a blocking Execute returns only once its LSN
// is, whichever thread ran the fsync; and the threads share fsyncs.
TEST_F(FsyncTest, BlockingWritesReturnDurableAndShareFsyncs) {
  constexpr int kThreads = 8, kWrites = 25;
  const uint64_t syncs = engine_->Stats().wal_syncs;
  std::atomic<int> not_durable{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; i++) {
        auto w = engine_->Execute(InsertOf("p" + std::to_string(t), "r" + std::to_string(i)));
        if (!w.ok()) {
          failed++;
        } else if (engine_->durable_lsn() < w->lsn) {
          not_durable++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(not_durable.load(), 0);
  const uint64_t used = engine_->Stats().wal_syncs - syncs;
  EXPECT_GE(used, 1u);
  EXPECT_LE(used, static_cast<uint64_t>(kThreads * kWrites));
  EXPECT_EQ(LogRecordsFrom(1), static_cast<size_t>(kThreads * kWrites) + 1);  // + TableCreated
}

// A retry answered from the request log carries its first attempt's LSN:
// it is acknowledged only once that LSN is durable.
TEST_F(FsyncTest, ReplayedResultWaitsForItsFirstAttemptsFsync) {
  Batch b = InsertOf("p", "r");
  b.SetCaller("svc").SetClientRequestId("0123456789abcdef0123456789abcdef");
  auto first = engine_->Execute(b, /*wait_durable=*/false);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_LT(engine_->durable_lsn(), first->lsn);
  auto retry = engine_->Execute(b);
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(retry->replayed);
  EXPECT_EQ(retry->lsn, first->lsn);
  EXPECT_GE(engine_->durable_lsn(), first->lsn);
}

TEST_F(EngineTest, OsDurabilityNeedsNoFsync) {
  ASSERT_EQ(options_.durability, Durability::kOs);
  ASSERT_TRUE(engine_->CreateTable("Things").ok());
  Batch b("Things");
  b.Insert(MakeEntity("p", "r"));
  auto w = engine_->Execute(b, /*wait_durable=*/false);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(engine_->durable_lsn(), w->lsn);
  ASSERT_TRUE(engine_->WaitDurable(w->lsn).ok());
  EXPECT_EQ(engine_->Stats().wal_syncs, 0u);
}

// A WAL whose fsync fails on demand (the writes themselves succeed).
class FailingSyncFs : public rocksdb::FileSystemWrapper {
 public:
  explicit FailingSyncFs(std::shared_ptr<rocksdb::FileSystem> base) : FileSystemWrapper(base) {}
  const char* Name() const override { return "FailingSyncFs"; }
  std::atomic<bool> fail{false};

  rocksdb::IOStatus NewWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->NewWritableFile(fname, opts, result, dbg);
    if (s.ok() && fname.size() > 4 && fname.compare(fname.size() - 4, 4, ".log") == 0) {
      *result = std::make_unique<File>(std::move(*result), &fail);
    }
    return s;
  }

 private:
  class File : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::unique_ptr<rocksdb::FSWritableFile> f, std::atomic<bool>* fail)
        : FSWritableFileOwnerWrapper(std::move(f)), fail_(fail) {}
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      if (fail_->load()) return rocksdb::IOStatus::IOError("FailingSyncFs", "fsync failed");
      return FSWritableFileOwnerWrapper::Sync(o, dbg);
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      if (fail_->load()) return rocksdb::IOStatus::IOError("FailingSyncFs", "fsync failed");
      return FSWritableFileOwnerWrapper::Fsync(o, dbg);
    }

   private:
    std::atomic<bool>* fail_;
  };
};

// A failed fsync acknowledges nothing and publishes nothing: the caller gets
// an error that says the write is visible but its durability unknown, and
// the change log does not advance over it.
TEST(EngineDurabilityTest, FailedFsyncIsNotAcknowledgedNorPublished) {
  TempDir dir;
  auto fs = std::make_shared<FailingSyncFs>(rocksdb::FileSystem::Default());
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  EngineOptions options;
  options.durability = Durability::kFsync;
  auto opened = Engine::Impl::Open(options, dir.Sub("db"), env.get());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<Engine::Impl> engine = std::move(opened).value();
  ASSERT_TRUE(engine->CreateTable("Things", "").ok());
  const uint64_t durable_before = engine->commits_->last_committed_lsn();

  fs->fail = true;
  Batch b("Things");
  b.Insert(MakeEntity("p", "r"));
  auto w = engine->Execute(b);  // written, not yet synced
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  Status synced = engine->commits_->SyncTo(w->lsn);
  EXPECT_FALSE(synced.ok());
  EXPECT_NE(synced.message().find("fsync failed"), std::string::npos) << synced.ToString();
  EXPECT_EQ(engine->commits_->last_committed_lsn(), durable_before);
  auto changes = engine->ReadChanges(w->lsn, 10, 1 << 20);
  ASSERT_TRUE(changes.ok());
  EXPECT_TRUE(changes->records.empty()) << "a record whose fsync failed reached the change log";
}

}  // namespace
}  // namespace sidetable::testing
