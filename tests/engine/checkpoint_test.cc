// Engine::Checkpoint, the engine half of a hot backup (docs/operations.md,
// "Backup and restore"): a copy made while writes go on holds every commit
// made before the call, whole EGTs only and a change log without a gap,
// and opens as a data directory; a bad target is refused with nothing
// changed on either side.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/engine.h"
#include "testing/temp_dir.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::testing {
namespace {

namespace fs = std::filesystem;

class EngineCheckpointTest : public EngineTest {
 protected:
  std::string Target(const std::string& name) { return fs::absolute(dir_.Sub(name)).string(); }

  std::unique_ptr<Engine> OpenCopy(const std::string& path) {
    auto e = Engine::Open(options_, path);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(e).value() : nullptr;
  }
};

TEST_F(EngineCheckpointTest, HoldsEveryCommitAndOpensAsADataDirectory) {
  ASSERT_TRUE(engine_->CreateTable("Orders").ok());
  for (int i = 0; i < 50; i++)
    ASSERT_TRUE(Insert("Orders", MakeEntity("p", "r" + std::to_string(i), i)).ok());
  ASSERT_TRUE(Run(std::move(Batch("Orders").Delete("p", "r7", "*"))).ok());
  const std::string before = DumpState(*engine_);
  const uint64_t last = engine_->Stats().last_lsn;

  auto info = engine_->Checkpoint(Target("backup"));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->path, Target("backup"));
  EXPECT_EQ(info->first_lsn, 1u);
  EXPECT_EQ(info->last_lsn, last);
  EXPECT_EQ(info->tables, 1u);
  EXPECT_GT(info->files, 0u);
  EXPECT_GT(info->bytes, 0u);
  EXPECT_FALSE(fs::exists(Target("backup") + ".tmp"));
  EXPECT_FALSE(fs::exists(Target("backup") + "/LOG"))
      << "the read-back wrote RocksDB's LOG into the copy";

  // The source goes on; the copy is what it was.
  ASSERT_TRUE(Insert("Orders", MakeEntity("p", "after", 1)).ok());
  auto copy = OpenCopy(Target("backup"));
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(DumpState(*copy), before);
  auto changes = copy->ReadChanges(1, 1000);
  ASSERT_TRUE(changes.ok());
  ASSERT_EQ(changes->records.size(), last);
  for (size_t i = 0; i < changes->records.size(); i++) EXPECT_EQ(changes->records[i].lsn, i + 1);
  // It is a database of its own: writes there do not reach the source.
  ASSERT_TRUE(
      copy->Execute(std::move(Batch("Orders").Insert(MakeEntity("p", "only-in-copy"))), true).ok());
  EXPECT_EQ(engine_->Get("Orders", "p", "only-in-copy").status().code(), Code::kResourceNotFound);
}

// Checkpoints of a quiet database (a few writes between them) copy the
// write-ahead log instead of flushing: the data directory gains no table
// files. Each used to flush, leaving table files per column family that
// compaction only moved, each with a descriptor open (found by session 41:
// 150 backups, 462 files).
TEST_F(EngineCheckpointTest, CheckpointsOfAQuietDatabaseAddNoTableFilesToIt) {
  ASSERT_TRUE(engine_->CreateTable("Orders").ok());
  auto table_files = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir_.Sub("db"))) {
      n += e.path().extension() == ".sst";
    }
    return n;
  };
  const size_t before = table_files();
  for (int i = 0; i < 5; i++) {
    ASSERT_TRUE(Insert("Orders", MakeEntity("p", "r" + std::to_string(i), i)).ok());
    auto info = engine_->Checkpoint(Target("backup" + std::to_string(i)));
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->last_lsn, static_cast<uint64_t>(i) + 2);
  }
  EXPECT_EQ(table_files(), before);
  // The copy holds the last write all the same.
  auto copy = OpenCopy(Target("backup4"));
  ASSERT_NE(copy, nullptr);
  EXPECT_TRUE(copy->Get("Orders", "p", "r4").ok());
}

// EGTs of two rows each while checkpoints run: every EGT acknowledged
// before the call is in the copy, no EGT is there by half, the copy's
// change log runs 1..last_lsn without a gap and matches its rows, and the
// copy opens without dropping anything (its WAL, copied while writers
// appended to it, may end in a cut record that every open of the backup
// would drop and report as a loss: seen twice in about 70 backups under
// sidetable-loadgen's inserts, where the read-back refused the backup; not
// reproduced here in 60 checkpoints, nor by a test of 30 backups under a
// pipelined client, so this checks the outcome only).
TEST_F(EngineCheckpointTest, TakenUnderWritesHoldsWholeBatchesAndNoGap) {
  ASSERT_TRUE(engine_->CreateTable("Items").ok());
  // EGT i is written by thread i % 4; acked counts the EGTs below which
  // every one is acknowledged (each thread's own count, the lowest).
  constexpr int kWriters = 4;
  std::array<std::atomic<int>, kWriters> done{};
  std::atomic<bool> stop{false};
  auto acked = [&] {
    int low = INT32_MAX;
    for (int w = 0; w < kWriters; w++) low = std::min(low, done[w].load() * kWriters + w);
    return low;
  };
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; w++) {
    writers.emplace_back([&, w] {
      for (int k = 0; k < 500000 && !stop.load(); k++) {
        const int i = k * kWriters + w;
        Batch b("Items");
        b.Insert(MakeEntity("p" + std::to_string(i % 7), "a" + std::to_string(i), i));
        b.Insert(MakeEntity("p" + std::to_string(i % 7), "b" + std::to_string(i), i));
        if (!engine_->Execute(b).ok()) return;
        done[w].store(k + 1);
      }
    });
  }
  struct Taken {
    int before = 0, after = 0;
    Result<CheckpointInfo> info = Status(Code::kInternal, "not taken");
  };
  std::vector<Taken> taken(10);
  for (size_t n = 0; n < taken.size(); n++) {
    const int want = 200 * static_cast<int>(n + 1);
    while (acked() < want) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    taken[n].before = acked();
    taken[n].info = engine_->Checkpoint(Target("hot" + std::to_string(n)));
    int high = 0;
    for (int w = 0; w < kWriters; w++) high = std::max(high, (done[w].load() + 1) * kWriters);
    taken[n].after = high;
  }
  stop = true;
  for (auto& t : writers) t.join();

  for (size_t n = 0; n < taken.size(); n++) {
    SCOPED_TRACE("checkpoint " + std::to_string(n));
    const Taken& t = taken[n];
    ASSERT_TRUE(t.info.ok()) << t.info.status().ToString();
    auto copy = OpenCopy(t.info->path);
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(copy->Stats().wal_recovery_dropped_bytes, 0u);
    EXPECT_EQ(copy->Stats().last_lsn, t.info->last_lsn);
    int held = 0;
    for (int i = 0; i < t.after + 1; i++) {
      const std::string pk = "p" + std::to_string(i % 7);
      const bool a = copy->Get("Items", pk, "a" + std::to_string(i)).ok();
      const bool b = copy->Get("Items", pk, "b" + std::to_string(i)).ok();
      EXPECT_EQ(a, b) << "EGT " << i << " is in the copy by half";
      if (i < t.before) {
        EXPECT_TRUE(a) << "EGT " << i << " was acknowledged before the checkpoint";
      }
      held += a ? 1 : 0;
    }
    // One record per EGT after the table's creation (LSN 1).
    EXPECT_EQ(t.info->last_lsn, static_cast<uint64_t>(held) + 1);
    uint64_t expect = 1;
    for (uint64_t from = 1;;) {
      auto page = copy->ReadChanges(from, 1000);
      ASSERT_TRUE(page.ok());
      if (page->records.empty()) break;
      for (const auto& r : page->records) ASSERT_EQ(r.lsn, expect++);
      from = page->records.back().lsn + 1;
    }
    EXPECT_EQ(expect - 1, t.info->last_lsn);
  }
}

TEST_F(EngineCheckpointTest, ABadTargetIsRefusedAndChangesNothing) {
  ASSERT_TRUE(engine_->CreateTable("Items").ok());
  ASSERT_TRUE(Insert("Items", MakeEntity("p", "r")).ok());
  fs::create_directories(Target("exists"));
  std::ofstream(Target("exists") + "/keep") << "mine";
  fs::create_directories(Target("staged.tmp"));

  struct Case {
    std::string dir, says;
  } cases[] = {
      {Target("exists"), "already exists"},
      {"relative/backup", "absolute"},
      {"", "absolute"},
      {Target("exists") + "/", "must not end"},
      {Target("no-parent") + "/backup", "parent"},
      {Target("staged"), "stages there"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dir);
    EXPECT_FAILS_UNCHANGED(engine_->Checkpoint(c.dir), Code::kInvalidInput);
    auto s = engine_->Checkpoint(c.dir);
    EXPECT_NE(s.status().message().find(c.says), std::string::npos) << s.status().ToString();
  }
  // What was there is as it was; nothing was created.
  EXPECT_EQ(std::distance(fs::directory_iterator(Target("exists")), fs::directory_iterator()), 1);
  EXPECT_FALSE(fs::exists(Target("no-parent")));
  EXPECT_FALSE(fs::exists(Target("staged")));
  EXPECT_TRUE(fs::is_directory(Target("staged.tmp")));
}

}  // namespace
}  // namespace sidetable::testing
