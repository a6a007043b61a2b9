// Entity group transactions: all or nothing, with Azure's batch rules.
#include <gtest/gtest.h>

#include "tests/engine/engine_fixture.h"

namespace sidetable {
namespace {

using testing::MakeEntity;

class BatchTest : public testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_TRUE(engine_->CreateTable("Tbl").ok());
  }
};

TEST_F(BatchTest, MixedOperationsCommitTogether) {
  ASSERT_TRUE(Insert("Tbl", MakeEntity("p", "upd", 1)).ok());
  ASSERT_TRUE(Insert("Tbl", MakeEntity("p", "del", 1)).ok());
  Batch b("Tbl");
  b.Insert(MakeEntity("p", "new", 1))
      .Update(MakeEntity("p", "upd", 2))
      .Delete("p", "del")
      .InsertOrMerge(MakeEntity("p", "ups", 3));
  auto w = Run(b);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->etags.size(), 4u);
  EXPECT_TRUE(w->etags[2].empty());
  EXPECT_TRUE(engine_->Get("Tbl", "p", "new").ok());
  EXPECT_EQ(*engine_->Get("Tbl", "p", "upd")->Find("n"), Value::Int32(2));
  EXPECT_EQ(engine_->Get("Tbl", "p", "del").status().code(), Code::kResourceNotFound);
  // One change record for the whole batch.
  auto log = engine_->ReadChanges(w->lsn, 10);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->records.size(), 1u);
  EXPECT_EQ(log->records[0].ops.size(), 4u);
}

// The atomicity case: the 57th operation fails, nothing is written.
TEST_F(BatchTest, FailureAtOperation57LeavesNoRowAndNoRecord) {
  ASSERT_TRUE(Insert("Tbl", MakeEntity("p", "r056", 0)).ok());
  Batch b("Tbl");
  for (int i = 0; i < 100; i++) {
    char rk[8];
    std::snprintf(rk, sizeof rk, "r%03d", i);
    b.Insert(MakeEntity("p", rk, i));
  }
  std::string before = testing::DumpState(*engine_);
  auto w = Run(b);
  ASSERT_EQ(w.status().code(), Code::kEntityAlreadyExists);
  EXPECT_EQ(w.status().op_index(), 56);  // 0-based: the 57th
  EXPECT_EQ(testing::DumpState(*engine_), before);
  EXPECT_EQ(engine_->Get("Tbl", "p", "r000").status().code(), Code::kResourceNotFound);
}

TEST_F(BatchTest, ConditionFailureNamesItsOperation) {
  ASSERT_TRUE(Insert("Tbl", MakeEntity("p", "a")).ok());
  Batch b("Tbl");
  b.Insert(MakeEntity("p", "x")).Merge(MakeEntity("p", "a"), "W/\"999999\"");
  std::string before = testing::DumpState(*engine_);
  auto w = Run(b);
  EXPECT_EQ(w.status().code(), Code::kUpdateConditionNotSatisfied);
  EXPECT_EQ(w.status().op_index(), 1);
  EXPECT_EQ(testing::DumpState(*engine_), before);
}

TEST_F(BatchTest, HundredOperationsIsTheLimit) {
  Batch ok("Tbl");
  for (int i = 0; i < 100; i++) ok.Insert(MakeEntity("p", "r" + std::to_string(i)));
  ASSERT_TRUE(Run(ok).ok());
  Batch too_many("Tbl");
  for (int i = 0; i < 101; i++) too_many.Insert(MakeEntity("q", "r" + std::to_string(i)));
  EXPECT_FAILS_UNCHANGED(Run(too_many), Code::kInvalidInput);
}

TEST_F(BatchTest, EmptyBatchIsInvalid) {
  EXPECT_FAILS_UNCHANGED(Run(Batch("Tbl")), Code::kInvalidInput);
}

TEST_F(BatchTest, FourMiBPayloadIsTooLarge) {
  Batch b("Tbl");
  // 70 entities of two 30,000-character strings: ~4.2 MB as sent.
  for (int i = 0; i < 70; i++) {
    Entity e = MakeEntity("p", "r" + std::to_string(i));
    e.Set("blob", Value::String(std::string(30000, 'x')));
    e.Set("blob2", Value::String(std::string(30000, 'y')));
    b.Insert(std::move(e));
  }
  EXPECT_GT(b.PayloadBytes(), Limits::kMaxBatchBytes);
  EXPECT_FAILS_UNCHANGED(Run(b), Code::kRequestBodyTooLarge);
}

// The 4 MiB is Azure's limit on the request's payload: counted in bytes as
// sent, not in the UTF-16 units of the entity size (which doubled ASCII
// strings and refused this 2.1 MB batch).
TEST_F(BatchTest, FourMiBIsCountedInBytesNotUtf16Units) {
  Batch b("Tbl");
  for (int i = 0; i < 70; i++) {
    Entity e = MakeEntity("p", "r" + std::to_string(i));
    e.Set("blob", Value::String(std::string(30000, 'x')));
    b.Insert(std::move(e));
  }
  EXPECT_LT(b.PayloadBytes(), 2200000u);
  auto r = Run(b);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Non-ASCII counts its UTF-8 bytes: 70 x 30,000 three-byte characters
  // (30,000 UTF-16 units each, within the 64 KiB property limit) is 6.3 MB.
  Batch wide("Tbl");
  std::string cjk;
  for (int k = 0; k < 30000; k++) cjk += "\u4e2d";
  for (int i = 0; i < 70; i++) {
    Entity e = MakeEntity("q", "r" + std::to_string(i));
    e.Set("blob", Value::String(cjk));
    wide.Insert(std::move(e));
  }
  EXPECT_FAILS_UNCHANGED(Run(wide), Code::kRequestBodyTooLarge);
}

// docs/protocol.md: validation (here a duplicate RowKey at index 3) wins over
// an execution error at a lower index (an Insert of an existing entity at 1).
TEST_F(BatchTest, ValidationErrorsWinOverExecutionErrors) {
  ASSERT_TRUE(Insert("Tbl", MakeEntity("p", "exists")).ok());
  Batch b("Tbl");
  b.Insert(MakeEntity("p", "a")).Insert(MakeEntity("p", "exists")).Insert(MakeEntity("p", "b"))
      .Insert(MakeEntity("p", "a"));
  auto w = Run(b);
  EXPECT_EQ(w.status().code(), Code::kInvalidDuplicateRow);
  EXPECT_EQ(w.status().op_index(), 3);
  EXPECT_FAILS_UNCHANGED(Run(b), Code::kInvalidDuplicateRow);
}

TEST_F(BatchTest, DifferentPartitionsAreRejected) {
  Batch b("Tbl");
  b.Insert(MakeEntity("p1", "a")).Insert(MakeEntity("p2", "b"));
  auto w = Run(b);
  EXPECT_EQ(w.status().code(), Code::kCommandsInBatchActOnDifferentPartitions);
  EXPECT_EQ(w.status().op_index(), 1) << "the first operation that differs";
  EXPECT_FAILS_UNCHANGED(Run(b), Code::kCommandsInBatchActOnDifferentPartitions);
}

TEST_F(BatchTest, SameRowTwiceIsDuplicateRow) {
  Batch b("Tbl");
  b.Insert(MakeEntity("p", "a")).Insert(MakeEntity("p", "b")).Merge(MakeEntity("p", "a"));
  auto w = Run(b);
  EXPECT_EQ(w.status().code(), Code::kInvalidDuplicateRow);
  EXPECT_EQ(w.status().op_index(), 2);
  EXPECT_FAILS_UNCHANGED(Run(b), Code::kInvalidDuplicateRow);
}

TEST_F(BatchTest, InvalidEntityInsideBatchNamesIt) {
  Batch b("Tbl");
  b.Insert(MakeEntity("p", "a")).Insert(MakeEntity("p", "b/c"));
  auto w = Run(b);
  EXPECT_EQ(w.status().code(), Code::kOutOfRangeInput);
  EXPECT_EQ(w.status().op_index(), 1);
}

TEST_F(BatchTest, ChangeRecordHasBeforeAndAfterImages) {
  auto w1 = Insert("Tbl", MakeEntity("p", "a", 1));
  ASSERT_TRUE(w1.ok());
  Batch b("Tbl");
  b.SetCaller("svc-orders").Merge(MakeEntity("p", "a", 2)).Insert(MakeEntity("p", "b", 3));
  auto w2 = Run(b);
  ASSERT_TRUE(w2.ok());
  ASSERT_TRUE(Run(std::move(Batch("Tbl").Delete("p", "b"))).ok());

  auto log = engine_->ReadChanges(w2->lsn, 10);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->records.size(), 2u);
  const ChangeRecord& r = log->records[0];
  EXPECT_EQ(r.lsn, w2->lsn);
  EXPECT_EQ(r.table, "Tbl");
  EXPECT_EQ(r.partition_key, "p");
  EXPECT_EQ(r.caller, "svc-orders");
  EXPECT_EQ(r.commit_time, w2->timestamp);
  ASSERT_EQ(r.ops.size(), 2u);
  EXPECT_EQ(r.ops[0].kind, OpKind::kMerge);
  ASSERT_TRUE(r.ops[0].before.has_value());
  ASSERT_TRUE(r.ops[0].after.has_value());
  EXPECT_EQ(*r.ops[0].before->Find("n"), Value::Int32(1));
  EXPECT_EQ(r.ops[0].before->etag, w1->etags[0]);
  EXPECT_EQ(*r.ops[0].after->Find("n"), Value::Int32(2));
  EXPECT_EQ(r.ops[0].etag, w2->etags[0]);
  EXPECT_EQ(r.ops[0].version, w2->lsn);
  EXPECT_FALSE(r.ops[1].before.has_value());
  const ChangeRecord& d = log->records[1];
  ASSERT_EQ(d.ops.size(), 1u);
  EXPECT_EQ(d.ops[0].kind, OpKind::kDelete);
  EXPECT_TRUE(d.ops[0].before.has_value());
  EXPECT_FALSE(d.ops[0].after.has_value());
  EXPECT_GT(d.ops[0].version, r.ops[1].version);  // versions only increase
}

TEST_F(BatchTest, FailedBatchesWriteNoChangeRecord) {
  auto w = Insert("Tbl", MakeEntity("p", "a"));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(Insert("Tbl", MakeEntity("p", "a")).status().code(), Code::kEntityAlreadyExists);
  auto w2 = Insert("Tbl", MakeEntity("p", "b"));
  ASSERT_TRUE(w2.ok());
  EXPECT_EQ(w2->lsn, w->lsn + 1);  // no LSN burnt by the failure
}

}  // namespace
}  // namespace sidetable

namespace sidetable {
namespace {

TEST_F(BatchTest, ArchiveRequestIsRecordedAndWritesNoRows) {
  ASSERT_TRUE(Insert("Tbl", testing::MakeEntity("p", "a")).ok());
  auto lsn = engine_->RequestArchive("Tbl", "p", {"a", "b"}, "TblArchive", "hr");
  ASSERT_TRUE(lsn.ok()) << lsn.status().ToString();
  auto log = engine_->ReadChanges(*lsn, 10);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->records.size(), 1u);
  const ChangeRecord& r = log->records[0];
  EXPECT_EQ(r.kind, ChangeKind::kArchiveRequested);
  EXPECT_EQ(r.target_table, "TblArchive");
  EXPECT_EQ(r.partition_key, "p");
  EXPECT_EQ(r.caller, "hr");
  ASSERT_EQ(r.ops.size(), 2u);
  EXPECT_EQ(r.ops[1].row_key, "b");
  EXPECT_FALSE(r.ops[0].before.has_value());
  EXPECT_TRUE(engine_->Get("Tbl", "p", "a").ok());  // nothing moved by the engine itself
}

TEST_F(BatchTest, BadArchiveRequestsChangeNothing) {
  EXPECT_FAILS_UNCHANGED(engine_->RequestArchive("Tbl", "p", {}, "Arch"), Code::kInvalidInput);
  EXPECT_FAILS_UNCHANGED(engine_->RequestArchive("Tbl", "p", {"a"}, "1bad"), Code::kInvalidResourceName);
  EXPECT_FAILS_UNCHANGED(engine_->RequestArchive("Tbl", "p", {"a"}, "TBL"), Code::kInvalidInput);
  EXPECT_FAILS_UNCHANGED(engine_->RequestArchive("Tbl", "p", {"a/b"}, "Arch"), Code::kOutOfRangeInput);
  EXPECT_FAILS_UNCHANGED(engine_->RequestArchive("Tbl", "p", {"a", "a"}, "Arch"), Code::kInvalidDuplicateRow);
  EXPECT_FAILS_UNCHANGED(engine_->RequestArchive("Nope", "p", {"a"}, "Arch"), Code::kTableNotFound);
  std::vector<std::string> many(101);
  for (size_t i = 0; i < many.size(); i++) many[i] = std::to_string(i);
  EXPECT_FAILS_UNCHANGED(engine_->RequestArchive("Tbl", "p", many, "Arch"), Code::kInvalidInput);
}

}  // namespace
}  // namespace sidetable
