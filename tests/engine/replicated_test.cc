// Scale-out on the engine (docs/scale-out.md, "Hand-over"): ApplyReplicated
// applies another owner's records exactly (rows, versions, ETags,
// timestamps, request-id outcomes; no change record), idempotently, and
// refuses bad records with nothing changed; DropPartitions deletes the rows
// of the partitions given up and nothing else.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine/etag.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::testing {
namespace {

class ReplicatedTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    auto old = Engine::Open(options_, dir_.Sub("old-owner"));
    ASSERT_TRUE(old.ok()) << old.status().ToString();
    old_ = std::move(old).value();
    ASSERT_TRUE(old_->CreateTable("Orders", "").ok());
  }
  // Runs `b` on the old owner under `epoch` and returns its change record.
  ChangeRecord OnOldOwner(Batch b, uint64_t epoch = 3) {
    b.SetEpoch(epoch);
    auto r = old_->Execute(b);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    auto changes = old_->ReadChanges(old_->Stats().last_lsn, 1);
    EXPECT_TRUE(changes.ok());
    return changes->records.at(0);
  }
  std::vector<ChangeRecord> OldLog() {
    auto changes = old_->ReadChanges(1, 1000);
    EXPECT_TRUE(changes.ok());
    return changes->records;
  }
  ChangeRecord ValidRecord() {
    Batch b("Orders");
    b.Insert(MakeEntity("p", "a", 1)).Insert(MakeEntity("p", "b", 2));
    return OnOldOwner(std::move(b));
  }

  std::unique_ptr<Engine> old_;
};

TEST_F(ReplicatedTest, RowsETagsAndTimestampsAreTheOldOwners) {
  for (const ChangeRecord& r : OldLog()) ASSERT_TRUE(engine_->ApplyReplicated(r).ok());
  ChangeRecord ins = ValidRecord();
  Batch merge("Orders");
  merge.Merge(MakeEntity("p", "a", 5)).Delete("p", "b");
  ChangeRecord upd = OnOldOwner(std::move(merge));
  const uint64_t lsn_before = engine_->Stats().last_lsn;
  ASSERT_TRUE(engine_->ApplyReplicated(ins).ok());
  ASSERT_TRUE(engine_->ApplyReplicated(upd).ok());

  auto mine = engine_->Get("Orders", "p", "a");
  auto theirs = old_->Get("Orders", "p", "a");
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  ASSERT_TRUE(theirs.ok());
  EXPECT_EQ(mine->etag, theirs->etag);
  EXPECT_EQ(mine->etag, MakeETag(uint64_t{3} << 40 | upd.lsn));
  EXPECT_EQ(mine->timestamp, theirs->timestamp);
  EXPECT_EQ(mine->Find("n")->ToString(), "5");
  EXPECT_EQ(engine_->Get("Orders", "p", "b").status().code(), Code::kResourceNotFound);
  // No change record and no LSN here: the publisher must not republish it.
  EXPECT_EQ(engine_->Stats().last_lsn, lsn_before);

  // The client's If-Match from the old owner still matches after the
  // hand-over; the new owner's versions (a larger epoch) are larger.
  Batch next("Orders");
  next.Update(MakeEntity("p", "a", 6), theirs->etag).SetEpoch(4);
  auto r = engine_->Execute(next);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(*VersionFromETag(r->etags[0]), *VersionFromETag(theirs->etag));
}

TEST_F(ReplicatedTest, TheTableIsCreatedWhenMissingAndTableRecordsAreIdempotent) {
  // The Entities record comes first: the table is created for it.
  ASSERT_FALSE(engine_->GetTable("Orders").ok());
  ASSERT_TRUE(engine_->ApplyReplicated(ValidRecord()).ok());
  ASSERT_TRUE(engine_->GetTable("Orders").ok());
  ChangeRecord created = OldLog().at(0);
  ASSERT_EQ(created.kind, ChangeKind::kTableCreated);
  ASSERT_TRUE(engine_->ApplyReplicated(created).ok());  // exists: nothing to do
  EXPECT_TRUE(engine_->Get("Orders", "p", "a").ok()) << "re-applying the creation emptied the table";

  ASSERT_TRUE(old_->DeleteTable("Orders").ok());
  ChangeRecord deleted = OldLog().back();
  ASSERT_EQ(deleted.kind, ChangeKind::kTableDeleted);
  const uint64_t lsn = engine_->Stats().last_lsn;
  ASSERT_TRUE(engine_->ApplyReplicated(deleted).ok());
  EXPECT_EQ(engine_->GetTable("Orders").status().code(), Code::kTableNotFound);
  ASSERT_TRUE(engine_->ApplyReplicated(deleted).ok());  // twice: still fine
  ASSERT_TRUE(engine_->ApplyReplicated(created).ok());
  EXPECT_TRUE(engine_->GetTable("Orders").ok());
  EXPECT_EQ(engine_->Get("Orders", "p", "a").status().code(), Code::kResourceNotFound)
      << "a re-created table starts empty";
  EXPECT_EQ(engine_->Stats().last_lsn, lsn);
}

TEST_F(ReplicatedTest, ApplyingARecordTwiceOrOutOfDateChangesNothing) {
  ChangeRecord first = ValidRecord();
  ChangeRecord second = OnOldOwner(std::move(Batch("Orders").InsertOrReplace(MakeEntity("p", "a", 9))));
  ASSERT_TRUE(engine_->ApplyReplicated(first).ok());
  ASSERT_TRUE(engine_->ApplyReplicated(second).ok());
  const std::string state = DumpState(*engine_);
  ASSERT_TRUE(engine_->ApplyReplicated(second).ok());
  ASSERT_TRUE(engine_->ApplyReplicated(first).ok());  // older: (p, a) keeps n=9
  EXPECT_EQ(DumpState(*engine_), state);
  EXPECT_EQ(engine_->Get("Orders", "p", "a")->Find("n")->ToString(), "9");
}

TEST_F(ReplicatedTest, ClaimsAndArchiveRequestsChangeNothing) {
  ASSERT_TRUE(engine_->ApplyReplicated(ValidRecord()).ok());
  const std::string state = DumpState(*engine_);
  ChangeRecord claim;
  claim.kind = ChangeKind::kShardClaimed;
  claim.epoch = 5;
  claim.shard = 2;
  EXPECT_TRUE(engine_->ApplyReplicated(claim).ok());
  ASSERT_TRUE(old_->RequestArchive("Orders", "p", {"a"}, "Archive").ok());
  EXPECT_TRUE(engine_->ApplyReplicated(OldLog().back()).ok());
  EXPECT_EQ(DumpState(*engine_), state);
}

TEST_F(ReplicatedTest, ARetryOfTheOldOwnersRequestIsAnsweredOnceWithItsResult) {
  Batch b("Orders");
  b.Insert(MakeEntity("p", "x", 1)).Insert(MakeEntity("p", "y", 2));
  b.SetCaller("app").SetClientRequestId("req-42").SetEpoch(3);
  auto original = old_->Execute(b);
  ASSERT_TRUE(original.ok());
  ChangeRecord rec = old_->ReadChanges(old_->Stats().last_lsn, 1)->records.at(0);
  ASSERT_EQ(rec.client_request_id, "req-42");
  ASSERT_TRUE(engine_->ApplyReplicated(rec).ok());
  const std::string state = DumpState(*engine_);

  // The client retries on the new owner (its epoch is 4): not executed again
  // (an Insert would fail with EntityAlreadyExists), the original answer.
  b.SetEpoch(4);
  auto retry = engine_->Execute(b);
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(retry->replayed);
  EXPECT_EQ(retry->etags, original->etags);
  EXPECT_EQ(retry->timestamp, original->timestamp);
  EXPECT_EQ(retry->lsn, 0u) << "no local commit to wait for";
  EXPECT_EQ(DumpState(*engine_), state);
  // Applying the record again keeps the one outcome; after a reopen too.
  ASSERT_TRUE(engine_->ApplyReplicated(rec).ok());
  Reopen();
  auto again = engine_->Execute(b);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->etags, original->etags);
  // Another caller's same id is another request.
  Batch other = b;
  other.SetCaller("someone-else");
  EXPECT_FAILS_UNCHANGED(engine_->Execute(other), Code::kEntityAlreadyExists);
}

// A sidecar that owned the shard before remembers its own commit of a
// request whose change never reached Kafka (it was killed first); the
// client retried on another owner, whose commit is what a later restore
// brings back here. A retry must get the restored answer, not the stale
// local one: its ETags are the rows' (ScaleOutTest seed 436159).
TEST_F(ReplicatedTest, ARestoredOutcomeReplacesAStaleLocalOne) {
  Batch b("Orders");
  b.Insert(MakeEntity("p", "x", 1));
  b.SetCaller("app").SetClientRequestId("req-7").SetEpoch(2);
  ASSERT_TRUE(engine_->CreateTable("Orders", "").ok());
  auto stale = engine_->Execute(b);  // this engine's own commit, never published
  ASSERT_TRUE(stale.ok()) << stale.status().ToString();
  b.SetEpoch(6);
  auto elsewhere = old_->Execute(b);  // the retry, committed by the other owner
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status().ToString();
  ASSERT_NE(elsewhere->etags, stale->etags);
  ChangeRecord rec = old_->ReadChanges(old_->Stats().last_lsn, 1)->records.at(0);
  // The hand-over back: drop the shard's rows, restore from the topic.
  ASSERT_TRUE(engine_->DropPartitions([](std::string_view, std::string_view) { return true; }).ok());
  ASSERT_TRUE(engine_->ApplyReplicated(rec).ok());
  auto row = engine_->Get("Orders", "p", "x");
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->etag, elsewhere->etags[0]);
  b.SetEpoch(7);
  auto retry = engine_->Execute(b);
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(retry->replayed);
  EXPECT_EQ(retry->etags, elsewhere->etags) << "a retry must get the ETag the row has";
}

// Every bad record is refused naming the problem, with nothing changed (not
// even the table created for it).
TEST_F(ReplicatedTest, BadRecordsAreRefusedWithNothingChanged) {
  const ChangeRecord good = ValidRecord();
  struct Case {
    const char* what;
    std::function<void(ChangeRecord*)> spoil;
  };
  const std::vector<Case> cases = {
      {"at least one operation", [](ChangeRecord* r) { r->ops.clear(); }},
      {"at most 100", [](ChangeRecord* r) {
         for (int i = 0; i < 101; i++) {
           ChangeOp op = r->ops[0];
           op.row_key = "k" + std::to_string(i);
           op.after->row_key = op.row_key;
           r->ops.push_back(op);
         }
         r->ops.erase(r->ops.begin(), r->ops.begin() + 2);
       }},
      {"RowKey", [](ChangeRecord* r) { r->ops[1].row_key = "bad/key"; r->ops[1].after->row_key = "bad/key"; }},
      {"PartitionKey", [](ChangeRecord* r) { r->partition_key = "bad#pk"; }},
      {"table", [](ChangeRecord* r) { r->table = "1bad"; }},
      {"appears twice", [](ChangeRecord* r) { r->ops[1].row_key = "a"; r->ops[1].after->row_key = "a"; }},
      {"without a version", [](ChangeRecord* r) { for (auto& op : r->ops) op.version = 0; }},
      {"different versions", [](ChangeRecord* r) { r->ops[1].version++; }},
      {"ETag does not match", [](ChangeRecord* r) { r->ops[0].etag = MakeETag(12345); }},
      {"keys differ", [](ChangeRecord* r) { r->ops[0].after->row_key = "zzz"; }},
      {"properties", [](ChangeRecord* r) {
         for (int i = 0; i < 300; i++) r->ops[0].after->Set("p" + std::to_string(i), Value::Int32(i));
       }},
      {"epoch", [](ChangeRecord* r) { r->epoch = 1u << 24; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ChangeRecord bad = good;
    c.spoil(&bad);
    const std::string before = DumpState(*engine_);
    Status s = engine_->ApplyReplicated(bad);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << s.ToString();
    EXPECT_NE(s.message().find(c.what), std::string::npos) << s.ToString();
    EXPECT_EQ(DumpState(*engine_), before);
  }
  // And the good record still applies.
  EXPECT_TRUE(engine_->ApplyReplicated(good).ok());
  // A table record with a bad name too.
  ChangeRecord table;
  table.kind = ChangeKind::kTableCreated;
  table.table = "no spaces";
  EXPECT_FAILS_UNCHANGED(engine_->ApplyReplicated(table), Code::kInvalidInput);
  table.kind = ChangeKind::kTableDeleted;
  EXPECT_FAILS_UNCHANGED(engine_->ApplyReplicated(table), Code::kInvalidInput);
}

class DropPartitionsTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_TRUE(engine_->CreateTable("Orders", "").ok());
    ASSERT_TRUE(engine_->CreateTable("Lines", "").ok());
  }
  void Fill(const std::string& table, const std::string& pk, int rows) {
    for (int i = 0; i < rows; i += 100) {
      Batch b(table);
      for (int j = i; j < std::min(rows, i + 100); j++) b.InsertOrReplace(MakeEntity(pk, "r" + std::to_string(j), j));
      ASSERT_TRUE(engine_->Execute(b).ok());
    }
  }
  size_t Count(const std::string& table, const std::string& pk) {
    auto cur = engine_->Scan(table, ScanBounds::Partition(pk), nullptr);
    EXPECT_TRUE(cur.ok());
    size_t n = 0;
    for (; (*cur)->Valid(); (*cur)->Next()) n++;
    return n;
  }
};

TEST_F(DropPartitionsTest, DropsOnlyTheChosenPartitionsOfEveryTable) {
  Fill("Orders", "a", 2500);  // more than one bounded write
  Fill("Orders", "b", 10);
  Fill("Orders", "ab", 10);   // a prefix of another key is another partition
  Fill("Lines", "a", 5);
  Fill("Lines", "c", 7);
  const uint64_t lsn = engine_->Stats().last_lsn;
  std::vector<std::string> asked;
  auto dropped = engine_->DropPartitions([&](std::string_view table, std::string_view pk) {
    asked.push_back(std::string(table) + "/" + std::string(pk));
    return pk == "a";
  });
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(*dropped, 2505u);
  EXPECT_EQ(Count("Orders", "a"), 0u);
  EXPECT_EQ(Count("Lines", "a"), 0u);
  EXPECT_EQ(Count("Orders", "b"), 10u);
  EXPECT_EQ(Count("Orders", "ab"), 10u);
  EXPECT_EQ(Count("Lines", "c"), 7u);
  // Once per partition, with the table's name as created.
  std::sort(asked.begin(), asked.end());
  EXPECT_EQ(asked, (std::vector<std::string>{"Lines/a", "Lines/c", "Orders/a", "Orders/ab", "Orders/b"}));
  EXPECT_EQ(engine_->Stats().last_lsn, lsn) << "a drop wrote change records";
  // Nothing left to drop: 0, and the partition takes writes again.
  auto again = engine_->DropPartitions([](std::string_view, std::string_view pk) { return pk == "a"; });
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0u);
  EXPECT_TRUE(Insert("Orders", MakeEntity("a", "new")).ok());
}

TEST_F(DropPartitionsTest, OtherPartitionsAreWrittenAndReadMeanwhile) {
  Fill("Orders", "gone", 5000);
  std::atomic<bool> done{false};
  std::atomic<int> writes{0}, failures{0};
  std::thread writer([&] {
    for (int i = 0; !done.load() || i < 20; i++) {
      if (!Insert("Orders", MakeEntity("kept", "r" + std::to_string(i))).ok()) failures++;
      if (!engine_->Get("Orders", "kept", "r" + std::to_string(i)).ok()) failures++;
      writes++;
    }
  });
  auto dropped = engine_->DropPartitions([](std::string_view, std::string_view pk) { return pk == "gone"; });
  done = true;
  writer.join();
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(*dropped, 5000u);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Count("Orders", "kept"), static_cast<size_t>(writes.load()));
}

}  // namespace
}  // namespace sidetable::testing
