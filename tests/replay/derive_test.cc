// Derive (tools/replay/derive.h) against the real sidecar: a new index over
// an existing table while the table keeps changing between the snapshot's
// pages. The result must be exactly the pattern's function of the source as
// of the LSN derive reports: nothing missed (no gap between the snapshot
// and the log) and nothing applied twice (no stale entry from replaying a
// change the snapshot already held).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "client/client.h"
#include "client/entity_builder.h"
#include "patterns/index_table/index_table.h"
#include "testing/sidecar_process.h"
#include "testing/temp_dir.h"
#include "tools/replay/derive.h"

namespace sidetable {
namespace {

using Key = std::pair<std::string, std::string>;

class DeriveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<testing::SidecarProcess>(SIDETABLE_BIN, dir_.Sub("db"),
                                                        std::vector<std::string>{"--durability", "os"});
    ASSERT_TRUE(server_->Start()) << server_->Log();
    client::ClientOptions o;
    o.endpoint = server_->endpoint();
    o.timeout = std::chrono::milliseconds(10000);
    client_ = std::move(client::Client::Connect(o)).value();
    writer_ = std::move(client::Client::Connect(o)).value();
  }

  static patterns::PatternConfig IndexConfig(const std::string& target) {
    patterns::PatternConfig pc;
    pc.name = patterns::kIndexTableName;
    pc.settings["source"] = {"Employees"};
    pc.settings["target"] = {target};
    pc.settings["properties"] = {"LastName"};
    return pc;
  }

  Entity Employee(int i, const std::string& last) {
    return client::EntityBuilder("dept" + std::to_string(i % 7), "e" + std::to_string(100000 + i))
        .String("LastName", last)
        .Int32("n", i)
        .Build();
  }

  void Populate(int n) {
    ASSERT_TRUE(client_->CreateTable("Employees").ok());
    for (int i = 0; i < n; i++) {
      ASSERT_TRUE(client_->Insert("Employees", Employee(i, "name" + std::to_string(i % 50))).ok());
    }
  }

  // Everything the snapshot pages may or may not have seen yet: renames
  // (index key moves), deletes, re-inserts and new entities, all over the key space.
  void Churn(std::mt19937& rng, int n, int writes) {
    std::uniform_int_distribution<int> pick(0, n + 50);
    for (int w = 0; w < writes; w++) {
      const int i = pick(rng);
      const int action = static_cast<int>(rng() % 4);
      Entity e = Employee(i, "renamed" + std::to_string(rng() % 40));
      if (action == 0) {
        auto r = writer_->Delete("Employees", e.partition_key, e.row_key);
        ASSERT_TRUE(r.ok() || r.status().code() == Code::kResourceNotFound) << r.status().ToString();
        if (r.ok()) last_write_lsn_ = r->lsn;
      } else {
        auto r = writer_->InsertOrReplace("Employees", e);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        last_write_lsn_ = r->lsn;
      }
    }
  }

  std::vector<Entity> ReadAll(const std::string& table) {
    std::vector<Entity> out;
    auto it = client_->Query({.table = table});
    Entity e;
    while (it.Next(&e)) out.push_back(e);
    EXPECT_TRUE(it.status().ok()) << it.status().ToString();
    return out;
  }

  // The index table must be exactly ExpectedIndex(source now) (the writer
  // has stopped, and derive read the log to its end after the last write).
  void ExpectConverged(const std::string& target) {
    auto config = patterns::IndexTableConfig::FromSettings(IndexConfig(target));
    ASSERT_TRUE(config.ok());
    std::vector<Entity> want = patterns::ExpectedIndex(*config, ReadAll("Employees"));
    std::map<Key, std::vector<Property>> actual;
    for (const Entity& e : ReadAll(target)) actual[{e.partition_key, e.row_key}] = e.properties;
    size_t mismatches = 0;
    for (const Entity& w : want) {
      auto it = actual.find({w.partition_key, w.row_key});
      if (it == actual.end() || !(it->second == w.properties)) {
        if (mismatches++ < 5) ADD_FAILURE() << "missing or stale index entry (" << w.partition_key << ", " << w.row_key << ")";
      }
      if (it != actual.end()) actual.erase(it);
    }
    for (const auto& [k, props] : actual) {
      if (mismatches++ < 10) ADD_FAILURE() << "extra index entry (" << k.first << ", " << k.second << ")";
    }
    EXPECT_EQ(mismatches, 0u);
    EXPECT_FALSE(want.empty());
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::SidecarProcess> server_;
  std::unique_ptr<client::Client> client_, writer_;
  uint64_t last_write_lsn_ = 0;
};

TEST_F(DeriveTest, WritesBetweenSnapshotPagesAreNeitherLostNorDoubled) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  constexpr int kEntities = 600;
  Populate(kEntities);
  replay::DeriveOptions o;
  o.pattern = IndexConfig("ByLastName");
  o.page_size = 50;
  o.after_snapshot_page = [&](size_t) { Churn(rng, kEntities, 15); };
  auto report = replay::Derive(client_.get(), o, "");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->stopped);
  EXPECT_GT(report->snapshot_entities, 500u);
  // The churn happened after L0, so the log phase must have seen it, and
  // some of it was already in the snapshot pages read later.
  EXPECT_GE(report->log_records, 15u * 10);
  EXPECT_GT(report->ops_dropped, 0u) << "no log operation was already in the snapshot: the test did not "
                                        "exercise the no-double-count path";
  // The index's own writes go through the same sidecar and come later.
  EXPECT_GE(report->consistent_lsn, last_write_lsn_);
  ExpectConverged("ByLastName");
}

TEST_F(DeriveTest, ResumedInChunksEqualsTheLiveFunction) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  constexpr int kEntities = 300;
  Populate(kEntities);
  const std::string checkpoint = dir_.Sub("derive.ckpt");
  replay::DeriveOptions o;
  o.pattern = IndexConfig("ByLastName2");
  o.page_size = 40;
  o.stop_after = 70;  // stops inside the snapshot, then inside the log
  o.after_snapshot_page = [&](size_t) { Churn(rng, kEntities, 10); };
  int runs = 0;
  for (;; runs++) {
    ASSERT_LT(runs, 100) << "derive never finished";
    auto report = replay::Derive(client_.get(), o, checkpoint);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    if (!report->stopped) break;
    Churn(rng, kEntities, 5);  // the application keeps writing between runs
  }
  EXPECT_GT(runs, 3);
  EXPECT_FALSE(std::ifstream(checkpoint).good()) << "a finished derive leaves no checkpoint";
  ExpectConverged("ByLastName2");
}

TEST_F(DeriveTest, RefusesANonEmptyTargetTheSourceItselfAndArchivePatterns) {
  Populate(20);
  ASSERT_TRUE(client_->CreateTable("Taken").ok());
  ASSERT_TRUE(client_->Insert("Taken", client::EntityBuilder("a", "b").Int32("x", 1).Build()).ok());
  replay::DeriveOptions o;
  o.pattern = IndexConfig("Taken");
  auto r = replay::Derive(client_.get(), o, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidInput);
  EXPECT_EQ(ReadAll("Taken").size(), 1u) << "the refused target was changed";

  o.pattern = IndexConfig("employees");  // the source, in another case
  r = replay::Derive(client_.get(), o, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidInput);
  EXPECT_EQ(ReadAll("Employees").size(), 20u);

  o.pattern.name = "archive";
  r = replay::Derive(client_.get(), o, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidInput);
}

TEST_F(DeriveTest, ACheckpointOfAnotherPatternIsRefused) {
  Populate(30);
  const std::string checkpoint = dir_.Sub("other.ckpt");
  replay::DeriveOptions o;
  o.pattern = IndexConfig("IdxA");
  o.page_size = 10;
  o.stop_after = 10;
  auto r = replay::Derive(client_.get(), o, checkpoint);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->stopped);
  o.pattern = IndexConfig("IdxB");
  r = replay::Derive(client_.get(), o, checkpoint);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidInput);
  auto b = client_->QueryPage({.table = "IdxB"});
  EXPECT_EQ(b.status().code(), Code::kTableNotFound) << "the refused run wrote";
}

TEST_F(DeriveTest, ACheckpointThatCannotBeSavedMidRunIsALocalErrorNotAServerOne) {
  // The directory is gone by the time the first checkpoint is saved (the
  // CLI checks the path before the run; the disk or the directory can still
  // fail later): InvalidInput naming the file, never InternalError.
  Populate(30);
  replay::DeriveOptions o;
  o.pattern = IndexConfig("IdxC");
  o.page_size = 10;
  o.stop_after = 10;
  auto r = replay::Derive(client_.get(), o, dir_.Sub("gone") + "/derive.ckpt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidInput) << r.status().ToString();
  EXPECT_NE(r.status().message().find("--checkpoint: creating "), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("gone/derive.ckpt.tmp"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace sidetable
