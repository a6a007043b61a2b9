// Session routes (sidecar/source_routes.h) on a real engine, and what a
// session read waits for with them (sidecar/read_session.h): a token means
// every change of its source up to its LSN, on every Kafka partition.
#include "sidecar/source_routes.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/kafka/partitioner.h"
#include "sidecar/read_session.h"
#include "sidecar/watermarks.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::sidecar {
namespace {

using testing::MakeEntity;

constexpr int32_t kParts = 12;

int32_t PartitionOf(const std::string& pk, int32_t parts = kParts) {
  return kafka::KafkaPartitionFor("People/" + pk, parts);
}

// Two PartitionKeys on different partitions of kParts (found, not assumed).
std::pair<std::string, std::string> TwoKeysOnDifferentPartitions() {
  for (int i = 1; i < 100; i++) {
    const std::string b = "k" + std::to_string(i);
    if (PartitionOf(b) != PartitionOf("k0")) return {"k0", b};
  }
  ADD_FAILURE() << "no two keys on different partitions";
  return {"k0", "k0"};
}

class SourceRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen({kParts}); }
  void Reopen(std::vector<int32_t> counts, uint64_t max_scan = 1'000'000) {
    watermarks_.reset();
    engine_.reset();
    routes_ = std::make_unique<SourceRoutes>(std::move(counts));
    EngineOptions o;
    o.durability = Durability::kOs;
    o.change_observer = routes_.get();
    auto e = Engine::Open(o, dir_.Sub("db"));
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    auto w = Watermarks::Load(engine_.get());
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    watermarks_ = std::move(w).value();
    ASSERT_TRUE(routes_->Load(*engine_, max_scan).ok());
  }
  uint64_t Put(const std::string& table, const std::string& pk) {
    Batch b(table);
    b.InsertOrReplace(MakeEntity(pk, "r", 1));
    auto r = engine_->Execute(b);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->lsn : 0;
  }
  std::vector<uint64_t> Newest(const std::string& source, int32_t parts = kParts,
                               uint64_t* complete_from = nullptr) {
    SourceRoutes::Routes r;
    EXPECT_TRUE(routes_->Newest(source, parts, &r)) << parts << " is not tracked";
    if (complete_from != nullptr) *complete_from = r.complete_from;
    return r.newest;
  }
  // Registers PeopleByAge <- People on every partition at `lsn`, except
  // those in `at` which get their own.
  void Report(uint64_t lsn, const std::map<int32_t, uint64_t>& at = {}) {
    std::vector<wire::WatermarkEntry> all;
    for (int32_t q = 0; q < kParts; q++) {
      auto it = at.find(q);
      all.push_back(wire::WatermarkEntry{"PeopleByAge", "People", q, kParts,
                                         it == at.end() ? lsn : it->second, 0});
    }
    ASSERT_TRUE(watermarks_->Advance(all).ok());
  }
  // The requirements a read of PeopleByAge with `after` still waits for.
  std::vector<Requirement> Waiting(std::vector<wire::AfterToken> after, SourceRoutes* routes) {
    wire::Request read;
    read.op = wire::Op::kGet;
    read.table = "PeopleByAge";
    read.after = std::move(after);
    std::vector<Requirement> waiting;
    Status s = ResolveSession(*engine_, *watermarks_, routes, read, &waiting);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return waiting;
  }

  testing::TempDir dir_;
  std::unique_ptr<SourceRoutes> routes_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Watermarks> watermarks_;
};

TEST_F(SourceRoutesTest, EveryCommittedRecordIsRoutedLikeThePublishersKey) {
  ASSERT_TRUE(engine_->CreateTable("People").ok());
  std::map<int32_t, uint64_t> want;
  want[PartitionOf("")] = engine_->Stats().last_lsn;  // TableCreated, keyed "People/"
  ASSERT_TRUE(engine_->CreateTable("Orders").ok());
  for (int i = 0; i < 40; i++) {
    const std::string pk = "pk" + std::to_string(i);
    want[PartitionOf(pk)] = Put("People", pk);
  }
  Put("Orders", "pk0");                                // another table: not People's
  const std::vector<uint64_t> got = Newest("people");  // names fold
  ASSERT_EQ(got.size(), static_cast<size_t>(kParts));
  for (int32_t q = 0; q < kParts; q++) {
    const uint64_t expected = want.count(q) ? want[q] : 0;
    EXPECT_EQ(got[static_cast<size_t>(q)], expected) << "partition " << q;
  }
  EXPECT_EQ(routes_->observed(), engine_->Stats().last_lsn);
  // A count asked for later is tracked from the next record on, not before.
  uint64_t complete_from = 0;
  SourceRoutes::Routes r;
  EXPECT_FALSE(routes_->Newest("People", 5, &r));
  const uint64_t next = Put("People", "pk0");
  Newest("People", 5, &complete_from);
  EXPECT_EQ(complete_from, next);
  EXPECT_EQ(Newest("People", 5)[static_cast<size_t>(PartitionOf("pk0", 5))], next);
}

// The observer's contract: what was staged and not written is forgotten
// (its LSN is handed out again to another record).
TEST_F(SourceRoutesTest, StagedRecordsThatWereNotWrittenAreForgotten) {
  SourceRoutes routes({kParts});
  routes.Staged(7, "People", "k0");
  routes.Settled(false);
  EXPECT_EQ(routes.observed(), 0u);
  SourceRoutes::Routes r;
  ASSERT_TRUE(routes.Newest("People", kParts, &r));
  EXPECT_EQ(r.newest, std::vector<uint64_t>(kParts, 0));
  routes.Staged(7, "People", "k1");
  routes.Settled(true);
  ASSERT_TRUE(routes.Newest("People", kParts, &r));
  EXPECT_EQ(r.newest[static_cast<size_t>(PartitionOf("k1"))], 7u);
  EXPECT_EQ(routes.observed(), 7u);
  if (PartitionOf("k0") != PartitionOf("k1"))
    EXPECT_EQ(r.newest[static_cast<size_t>(PartitionOf("k0"))], 0u);
}

TEST_F(SourceRoutesTest, RoutesSurviveARestartFromTheSnapshotAndTheLogAfterIt) {
  ASSERT_TRUE(engine_->CreateTable("People").ok());
  const auto [a, b] = TwoKeysOnDifferentPartitions();
  const uint64_t la = Put("People", a);
  ASSERT_TRUE(routes_->Persist(engine_.get()).ok());
  const uint64_t lb = Put("People", b);  // after the snapshot: read from the log
  const std::vector<uint64_t> before = Newest("People");
  Reopen({kParts});
  uint64_t complete_from = 0;
  EXPECT_EQ(Newest("People", kParts, &complete_from), before);
  EXPECT_EQ(complete_from, 1u);
  EXPECT_EQ(Newest("People")[static_cast<size_t>(PartitionOf(a))], la);
  EXPECT_EQ(Newest("People")[static_cast<size_t>(PartitionOf(b))], lb);
  EXPECT_EQ(routes_->observed(), lb);
  // A count first asked for at this start knows nothing before the snapshot.
  Reopen({kParts, 5});
  Newest("People", 5, &complete_from);
  EXPECT_GT(complete_from, la);
}

TEST_F(SourceRoutesTest, ADamagedSnapshotIsReadAgainFromTheLogNotAReasonToStop) {
  ASSERT_TRUE(engine_->CreateTable("People").ok());
  const uint64_t l = Put("People", "k0");
  ASSERT_TRUE(routes_->Persist(engine_.get()).ok());
  ASSERT_TRUE(engine_->PutSetting("session-routes/state", "observed=x counts=12:1").ok());
  Reopen({kParts});
  EXPECT_EQ(Newest("People")[static_cast<size_t>(PartitionOf("k0"))], l);
  ASSERT_TRUE(routes_->Persist(engine_.get()).ok());  // a whole state, then a damaged table
  ASSERT_TRUE(engine_->PutSetting("session-routes/t/people", "People\n12=1,2;").ok());
  Reopen({kParts});
  EXPECT_EQ(Newest("People")[static_cast<size_t>(PartitionOf("k0"))], l);
}

// Records trimmed before the routes persisted them (a crash in between):
// what is known is whole only after them.
TEST_F(SourceRoutesTest, RecordsTrimmedBeforeTheSnapshotMoveWhereTheRoutesAreWhole) {
  ASSERT_TRUE(engine_->CreateTable("People").ok());
  ASSERT_TRUE(routes_->Persist(engine_.get()).ok());
  for (int i = 0; i < 5; i++) Put("People", "k" + std::to_string(i));
  const uint64_t last = Put("People", "k9");
  ASSERT_TRUE(engine_->TrimChanges(last).ok());  // only `last` remains
  Reopen({kParts});
  uint64_t complete_from = 0;
  Newest("People", kParts, &complete_from);
  EXPECT_EQ(complete_from, last);
  // The bound on the scan of an unpersisted tail does the same.
  const uint64_t more = Put("People", "k1");
  Put("People", "k2");
  Reopen({kParts}, /*max_scan=*/1);
  Newest("People", kParts, &complete_from);
  EXPECT_EQ(complete_from, more + 1);
}

// The session-45 gap: a session writes A then B; its token is B's LSN. The
// read must wait for A's partition too.
TEST_F(SourceRoutesTest, ATokenWaitsForEveryEarlierWriteOfItsSourceOnEveryPartition) {
  ASSERT_TRUE(engine_->CreateTable("People").ok());
  ASSERT_TRUE(engine_->CreateTable("PeopleByAge").ok());
  Report(0);
  const auto [a, b] = TwoKeysOnDifferentPartitions();
  const uint64_t la = Put("People", a);
  const uint64_t lb = Put("People", b);
  const int32_t pa = PartitionOf(a), pb = PartitionOf(b);
  Report(0, {{pb, lb}});  // B applied, A not
  std::vector<Requirement> w = Waiting({{"People", lb}}, routes_.get());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].partition, pa);
  EXPECT_EQ(w[0].lsn, la);
  // Before session 46 (no routes) the same read was answered.
  EXPECT_TRUE(Waiting({{"People", lb}}, nullptr).empty());
  Report(0, {{pb, lb}, {pa, la}});
  EXPECT_TRUE(Waiting({{"People", lb}}, routes_.get()).empty());
  // A later write on A's partition (by anyone): the routes keep only the
  // newest record per partition, so the partition must now reach the
  // token's LSN, which only that later record takes it past. The read
  // waits a little longer; it is never answered early.
  const uint64_t later = Put("People", a);
  w = Waiting({{"People", lb}}, routes_.get());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].partition, pa);
  EXPECT_EQ(w[0].lsn, lb);
  Report(0, {{pb, lb}, {pa, later}});
  EXPECT_TRUE(Waiting({{"People", lb}}, routes_.get()).empty());
  EXPECT_TRUE(Waiting({{"People", later}}, routes_.get()).empty());
}

// A trimmed token waited for every partition of the pair, those the source
// never used included, so it timed out on an idle partition; now only the
// partitions that carried the source's records are waited for.
TEST_F(SourceRoutesTest, ATrimmedTokenWaitsOnlyForPartitionsTheSourceUsed) {
  ASSERT_TRUE(engine_->CreateTable("People").ok());
  ASSERT_TRUE(engine_->CreateTable("PeopleByAge").ok());
  Report(0);
  const uint64_t l = Put("People", "k0");
  const uint64_t after = Put("People", "k0");
  ASSERT_TRUE(engine_->TrimChanges(after).ok());  // l is gone from the log
  Report(0, {{PartitionOf("k0"), after}});        // every other partition idle at 0
  EXPECT_TRUE(Waiting({{"People", l}}, routes_.get()).empty());
  std::vector<Requirement> old = Waiting({{"People", l}}, nullptr);
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].partition, -1);  // every partition: never met while idle
}

// A token older than what the routes know whole waits as before for its
// own record's partition.
TEST_F(SourceRoutesTest, ATokenOlderThanTheRoutesWaitsForItsOwnRecord) {
  ASSERT_TRUE(engine_->CreateTable("People").ok());
  ASSERT_TRUE(engine_->CreateTable("PeopleByAge").ok());
  Report(0);
  const auto [a, b] = TwoKeysOnDifferentPartitions();
  Put("People", a);
  const uint64_t lb = Put("People", b);
  Reopen({kParts}, /*max_scan=*/1);  // the routes are whole from lb on
  uint64_t complete_from = 0;
  Newest("People", kParts, &complete_from);
  ASSERT_EQ(complete_from, lb);
  std::vector<Requirement> w = Waiting({{"People", lb - 1}}, routes_.get());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].partition, PartitionOf(a));
  w = Waiting({{"People", lb}}, routes_.get());
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].partition, PartitionOf(b));
}

// Changes before a pair was registered are not promised to a session: a new
// derived table's worker may never see them (Kafka no longer holds them),
// and its partitions idle since would otherwise never be covered.
TEST_F(SourceRoutesTest, ChangesBeforeThePairsRegistrationAreNotWaitedFor) {
  ASSERT_TRUE(engine_->CreateTable("People").ok());
  ASSERT_TRUE(engine_->CreateTable("PeopleByAge").ok());
  const auto [a, b] = TwoKeysOnDifferentPartitions();
  const uint64_t la = Put("People", a);  // before any worker registered
  Report(0);
  const uint64_t lb = Put("People", b);
  for (int restart = 0; restart < 2; restart++) {
    std::vector<Requirement> w = Waiting({{"People", lb}}, routes_.get());
    ASSERT_EQ(w.size(), 1u) << "restart " << restart;
    EXPECT_EQ(w[0].partition, PartitionOf(b));
    // The token of the write before the registration: its own record, as
    // before session 46.
    w = Waiting({{"People", la}}, routes_.get());
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].partition, PartitionOf(a));
    Reopen({kParts});  // the registration LSN is durable
  }
  Report(0, {{PartitionOf(b), lb}});
  EXPECT_TRUE(Waiting({{"People", lb}}, routes_.get()).empty());
}

}  // namespace
}  // namespace sidetable::sidecar
