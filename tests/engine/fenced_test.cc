// Fenced writes (OpKind::kFencedUpsert / kFencedDelete): the engine checks
// the stored entity's SourceVersion inside the EGT, skips what is fenced out
// without an error, commits the rest, and logs only what it wrote, as plain
// InsertOrReplace / Delete.
#include <gtest/gtest.h>

#include "tests/engine/engine_fixture.h"

namespace sidetable::testing {
namespace {

Entity Derived(const std::string& pk, const std::string& rk, uint64_t version, const std::string& v = "x") {
  Entity e;
  e.partition_key = pk;
  e.row_key = rk;
  e.Set("Value", Value::String(v)).Set(kFenceProperty, Value::Int64(static_cast<int64_t>(version)));
  return e;
}

class FencedTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_TRUE(engine_->CreateTable("Idx", "").ok());
  }
  Result<WriteResult> Upsert(uint64_t version, const std::string& v = "x", const std::string& rk = "r") {
    return Run(std::move(Batch("Idx").FencedUpsert(Derived("p", rk, version, v), version)));
  }
  Result<WriteResult> Remove(uint64_t version, const std::string& rk = "r") {
    return Run(std::move(Batch("Idx").FencedDelete("p", rk, version)));
  }
  std::string StoredValue(const std::string& rk = "r") {
    auto e = engine_->Get("Idx", "p", rk, nullptr);
    if (!e.ok()) return "<" + std::string(ErrorCodeName(e.status().code())) + ">";
    return e->Find("Value")->bytes() + "@" + std::to_string(FenceOf(*e));
  }
};

TEST_F(FencedTest, UpsertWritesOnlyNewerVersions) {
  auto w = Upsert(10, "a");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_GT(w->lsn, 0u);
  EXPECT_TRUE(w->skipped.empty());
  EXPECT_EQ(StoredValue(), "a@10");

  const uint64_t lsn = engine_->Stats().last_lsn;
  for (uint64_t older : {10u, 9u, 1u}) {
    auto s = Upsert(older, "stale");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->lsn, 0u) << "a fenced-out write committed";
    EXPECT_EQ(s->skipped, std::vector<uint32_t>{0});
    EXPECT_EQ(s->etags, std::vector<std::string>{""});
  }
  EXPECT_EQ(engine_->Stats().last_lsn, lsn) << "skipped writes took LSNs";
  EXPECT_EQ(StoredValue(), "a@10");

  ASSERT_TRUE(Upsert(11, "b").ok());
  EXPECT_EQ(StoredValue(), "b@11");
}

TEST_F(FencedTest, DeleteRemovesOnlyWhenNotNewer) {
  auto absent = Remove(5);
  ASSERT_TRUE(absent.ok()) << absent.status().ToString();
  EXPECT_EQ(absent->lsn, 0u);
  EXPECT_EQ(absent->skipped, std::vector<uint32_t>{0});

  ASSERT_TRUE(Upsert(10).ok());
  auto newer_stored = Remove(9);
  ASSERT_TRUE(newer_stored.ok());
  EXPECT_EQ(newer_stored->skipped.size(), 1u);
  EXPECT_EQ(StoredValue(), "x@10");

  auto same = Remove(10);   // the delete of the version it wrote: applies
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->skipped.empty());
  EXPECT_GT(same->lsn, 0u);
  EXPECT_EQ(StoredValue(), "<ResourceNotFound>");
}

TEST_F(FencedTest, MixedBatchCommitsTheRestAndLogsPlainKinds) {
  ASSERT_TRUE(Upsert(20, "keep", "a").ok());
  ASSERT_TRUE(Upsert(5, "old", "b").ok());
  Batch b("Idx");
  b.FencedUpsert(Derived("p", "a", 7, "stale"), 7);   // fenced: stored 20
  b.FencedUpsert(Derived("p", "b", 8, "new"), 8);     // written: stored 5
  b.FencedDelete("p", "c", 3);                         // absent: skipped
  b.InsertOrReplace(Derived("p", "d", 1, "plain"));   // not fenced
  auto w = Run(std::move(b));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->skipped, (std::vector<uint32_t>{0, 2}));
  ASSERT_EQ(w->etags.size(), 4u);
  EXPECT_EQ(w->etags[0], "");
  EXPECT_FALSE(w->etags[1].empty());
  EXPECT_FALSE(w->etags[3].empty());
  EXPECT_EQ(StoredValue("a"), "keep@20");
  EXPECT_EQ(StoredValue("b"), "new@8");

  auto log = engine_->ReadChanges(w->lsn, 1, 1 << 20);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->records.size(), 1u);
  const ChangeRecord& r = log->records[0];
  ASSERT_EQ(r.ops.size(), 2u) << "the change log holds skipped operations";
  EXPECT_EQ(r.ops[0].row_key, "b");
  EXPECT_EQ(r.ops[0].kind, OpKind::kInsertOrReplace);
  EXPECT_EQ(r.ops[1].row_key, "d");
}

TEST_F(FencedTest, LoggedDeleteIsAPlainDelete) {
  ASSERT_TRUE(Upsert(3).ok());
  auto w = Remove(4);
  ASSERT_TRUE(w.ok());
  auto log = engine_->ReadChanges(w->lsn, 1, 1 << 20);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->records.at(0).ops.size(), 1u);
  EXPECT_EQ(log->records[0].ops[0].kind, OpKind::kDelete);
}

TEST_F(FencedTest, StringAndInt32FencesAreRead) {
  Entity s = Derived("p", "r", 0);
  s.Set(kFenceProperty, Value::String("42"));
  ASSERT_TRUE(Run(std::move(Batch("Idx").InsertOrReplace(s))).ok());
  auto w = Upsert(41);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->skipped.size(), 1u);
  Entity i = Derived("p", "r", 0);
  i.Set(kFenceProperty, Value::Int32(7));
  ASSERT_TRUE(Run(std::move(Batch("Idx").InsertOrReplace(i))).ok());
  w = Upsert(8, "y");
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->skipped.empty());
  EXPECT_EQ(StoredValue(), "y@8");
}

TEST_F(FencedTest, BadFencedOperationsChangeNothing) {
  ASSERT_TRUE(Upsert(3).ok());
  // No fence version.
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Idx").FencedUpsert(Derived("p", "r", 9), 0))),
                         Code::kInvalidInput);
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Idx").FencedDelete("p", "r", 0))), Code::kInvalidInput);
  // A fence on an operation that takes none.
  Operation plain{OpKind::kInsertOrReplace, Derived("p", "r", 9), "", 9};
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Idx").Add(plain))), Code::kInvalidInput);
  // If-Match on a fenced operation.
  Operation cond{OpKind::kFencedUpsert, Derived("p", "r", 9), "*", 9};
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Idx").Add(cond))), Code::kInvalidInput);
  // Properties on a fenced delete.
  Operation del{OpKind::kFencedDelete, Derived("p", "r", 9), "", 9};
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Idx").Add(del))), Code::kInvalidInput);
  // A failing operation fails the EGT, fenced ones included.
  Batch b("Idx");
  b.FencedUpsert(Derived("p", "n", 9), 9);
  b.Insert(Derived("p", "r", 1));   // exists
  EXPECT_FAILS_UNCHANGED(Run(std::move(b)), Code::kEntityAlreadyExists);
}

}  // namespace
}  // namespace sidetable::testing
