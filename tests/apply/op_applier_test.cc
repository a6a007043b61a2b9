// The fencing of every TableOp kind (patterns/pattern.h), against an
// in-memory store with the engine's ETag rules and injected races.
#include "apply/op_applier.h"

#include <gtest/gtest.h>

#include "client/entity_builder.h"
#include "engine/etag.h"
#include "tests/apply/fake_table_store.h"

namespace sidetable::apply {
namespace {

using patterns::TableOp;
using testing::FakeTableStore;

TableOp Upsert(const std::string& table, const std::string& pk, const std::string& rk, uint64_t v,
               const std::string& payload = "x") {
  TableOp op;
  op.kind = TableOp::Kind::kFencedUpsert;
  op.table = table;
  op.entity = client::EntityBuilder(pk, rk).String("P", payload).Build();
  op.version = v;
  return op;
}

TableOp Keys(TableOp::Kind kind, const std::string& table, const std::string& pk, const std::string& rk,
             uint64_t v) {
  TableOp op;
  op.kind = kind;
  op.table = table;
  op.entity.partition_key = pk;
  op.entity.row_key = rk;
  op.version = v;
  return op;
}

// The move of Orders ("p", "1") into Archive that these tests make.
TableOp MoveOp(uint64_t v) {
  TableOp op = Keys(TableOp::Kind::kMove, "Archive", "p", "1", v);
  op.source_table = "Orders";
  return op;
}

Entity WithVersion(const std::string& pk, const std::string& rk, int64_t v, const std::string& payload = "old") {
  return client::EntityBuilder(pk, rk).String("P", payload).Int64("SourceVersion", v).Build();
}

TEST(OpApplierTest, UpsertCreatesTheTableAndCarriesSourceVersion) {
  FakeTableStore store;
  OpApplier a(&store, 4);
  OpResult r;
  ASSERT_TRUE(a.Apply(Upsert("Idx", "a", "1", 7), &r).ok());
  EXPECT_EQ(r, OpResult::kWritten);
  const Entity* e = store.Find("Idx", "a", "1");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(SourceVersionOf(*e), 7u);
  EXPECT_EQ(e->Find("SourceVersion")->type(), EdmType::kInt64);
  EXPECT_EQ(store.calls["CreateTable"], 1);
}

TEST(OpApplierTest, UpsertSkipsWhenStoredIsAsNewOrNewer) {
  FakeTableStore store;
  store.tables["Idx"];
  store.Put("Idx", WithVersion("a", "1", 9));
  OpApplier a(&store, 4);
  OpResult r;
  ASSERT_TRUE(a.Apply(Upsert("Idx", "a", "1", 9, "new"), &r).ok());
  EXPECT_EQ(r, OpResult::kFenced);
  ASSERT_TRUE(a.Apply(Upsert("Idx", "a", "1", 3, "new"), &r).ok());
  EXPECT_EQ(r, OpResult::kFenced);
  EXPECT_EQ(store.Find("Idx", "a", "1")->Find("P")->bytes(), "old");
  ASSERT_TRUE(a.Apply(Upsert("Idx", "a", "1", 10, "new"), &r).ok());
  EXPECT_EQ(r, OpResult::kWritten);
  EXPECT_EQ(store.Find("Idx", "a", "1")->Find("P")->bytes(), "new");
  EXPECT_EQ(SourceVersionOf(*store.Find("Idx", "a", "1")), 10u);
}

TEST(OpApplierTest, UpsertRereadsWhenAnotherWriterWins) {
  FakeTableStore store;
  store.tables["Idx"];
  store.Put("Idx", WithVersion("a", "1", 1));
  // Before our conditional Update, a newer writer (version 20) slips in.
  bool raced = false;
  store.before = [&](const std::string& call, const std::string&) {
    if (call == "Update" && !raced) {
      raced = true;
      store.Put("Idx", WithVersion("a", "1", 20, "newer"));
    }
    return Status::OK();
  };
  OpApplier a(&store, 4);
  OpResult r;
  ASSERT_TRUE(a.Apply(Upsert("Idx", "a", "1", 5, "mine"), &r).ok());
  EXPECT_EQ(r, OpResult::kFenced) << "re-read saw version 20 > 5";
  EXPECT_EQ(store.Find("Idx", "a", "1")->Find("P")->bytes(), "newer");
  EXPECT_EQ(store.calls["Get"], 2);
}

TEST(OpApplierTest, UpsertInsertRaceRetriesAsUpdate) {
  FakeTableStore store;
  store.tables["Idx"];
  bool raced = false;
  store.before = [&](const std::string& call, const std::string&) {
    if (call == "Insert" && !raced) {
      raced = true;
      store.Put("Idx", WithVersion("a", "1", 2, "older"));
    }
    return Status::OK();
  };
  OpApplier a(&store, 4);
  OpResult r;
  ASSERT_TRUE(a.Apply(Upsert("Idx", "a", "1", 5, "mine"), &r).ok());
  EXPECT_EQ(r, OpResult::kWritten);
  EXPECT_EQ(store.Find("Idx", "a", "1")->Find("P")->bytes(), "mine");
}

TEST(OpApplierTest, EndlessContentionIsBoundedAndReported) {
  FakeTableStore store;
  store.tables["Idx"];
  store.Put("Idx", WithVersion("a", "1", 1));
  store.before = [&](const std::string& call, const std::string&) {
    if (call == "Update") store.Put("Idx", WithVersion("a", "1", 1));  // ETag changes every time
    return Status::OK();
  };
  OpApplier a(&store, 3);
  OpResult r;
  Status s = a.Apply(Upsert("Idx", "a", "1", 5), &r);
  EXPECT_EQ(s.code(), Code::kUpdateConditionNotSatisfied);
  EXPECT_EQ(store.calls["Update"], 3);
}

TEST(OpApplierTest, DeleteIsFencedByNewerSourceVersionOnly) {
  FakeTableStore store;
  store.tables["Idx"];
  store.Put("Idx", WithVersion("a", "1", 9));
  OpApplier a(&store, 4);
  OpResult r;
  ASSERT_TRUE(a.Apply(Keys(TableOp::Kind::kFencedDelete, "Idx", "a", "1", 8), &r).ok());
  EXPECT_EQ(r, OpResult::kFenced);
  ASSERT_NE(store.Find("Idx", "a", "1"), nullptr);
  ASSERT_TRUE(a.Apply(Keys(TableOp::Kind::kFencedDelete, "Idx", "a", "1", 9), &r).ok());
  EXPECT_EQ(r, OpResult::kWritten) << "SourceVersion == version: deleted";
  EXPECT_EQ(store.Find("Idx", "a", "1"), nullptr);
  ASSERT_TRUE(a.Apply(Keys(TableOp::Kind::kFencedDelete, "Idx", "a", "1", 9), &r).ok());
  EXPECT_EQ(r, OpResult::kNoop) << "absent is fine";
  ASSERT_TRUE(a.Apply(Keys(TableOp::Kind::kFencedDelete, "Nope", "a", "1", 9), &r).ok());
  EXPECT_EQ(store.calls["CreateTable"], 0) << "a delete never creates a table";
}

TEST(OpApplierTest, DeleteRereadsOnEtagMismatch) {
  FakeTableStore store;
  store.tables["Idx"];
  store.Put("Idx", WithVersion("a", "1", 3));
  bool raced = false;
  store.before = [&](const std::string& call, const std::string&) {
    if (call == "Delete" && !raced) {
      raced = true;
      store.Put("Idx", WithVersion("a", "1", 12, "newer"));
    }
    return Status::OK();
  };
  OpApplier a(&store, 4);
  OpResult r;
  ASSERT_TRUE(a.Apply(Keys(TableOp::Kind::kFencedDelete, "Idx", "a", "1", 10), &r).ok());
  EXPECT_EQ(r, OpResult::kFenced);
  ASSERT_NE(store.Find("Idx", "a", "1"), nullptr);
}

TEST(OpApplierTest, ClearDeletesOnlyUpToTheVersionAcrossPages) {
  FakeTableStore store;
  store.tables["Idx"];
  for (int i = 0; i < 7; i++) store.Put("Idx", WithVersion("p", "r" + std::to_string(i), i % 2 ? 50 : 5));
  store.page_size = 2;
  OpApplier a(&store, 4);
  OpResult r;
  TableOp op;
  op.kind = TableOp::Kind::kFencedClear;
  op.table = "Idx";
  op.version = 10;
  ASSERT_TRUE(a.Apply(op, &r).ok());
  EXPECT_EQ(r, OpResult::kWritten);
  EXPECT_EQ(store.tables["Idx"].size(), 3u);
  for (const auto& [k, e] : store.tables["Idx"]) EXPECT_EQ(SourceVersionOf(e), 50u);
  EXPECT_GE(store.calls["Query"], 4);
  op.table = "Missing";
  ASSERT_TRUE(a.Apply(op, &r).ok()) << "a missing table is already clear";
}

// Regression: a source table's delete event and its entity events travel on
// different Kafka partitions; an upsert from before the clear that arrives
// after it must not bring an entry back (found by the patterns' convergence
// analysis).
TEST(OpApplierTest, UpsertFromBeforeAClearDoesNotRecreateTheEntry) {
  FakeTableStore store;
  store.tables["Idx"];
  OpApplier a(&store, 4);
  OpResult r;
  TableOp clear;
  clear.kind = TableOp::Kind::kFencedClear;
  clear.table = "Idx";
  clear.version = 10;
  ASSERT_TRUE(a.Apply(clear, &r).ok());
  ASSERT_TRUE(a.Apply(Upsert("IDX", "a", "1", 9), &r).ok());
  EXPECT_EQ(r, OpResult::kFenced);
  EXPECT_TRUE(store.tables["Idx"].empty());
  ASSERT_TRUE(a.Apply(Upsert("Idx", "a", "1", 11), &r).ok());  // after the clear: written
  EXPECT_EQ(r, OpResult::kWritten);
  EXPECT_EQ(store.tables["Idx"].size(), 1u);
}

// In a cluster a clear covers whole epochs (patterns::ClearVersion): the
// re-created table's entities can share them, so the clear is not
// remembered, or every one of them would be dropped by this process.
TEST(OpApplierTest, AClustersClearIsNotRememberedAgainstLaterUpserts) {
  FakeTableStore store;
  store.tables["Idx"];
  store.Put("Idx", WithVersion("a", "old", static_cast<int64_t>((uint64_t{2} << 40) | 900)));
  OpApplier a(&store, 4);
  OpResult r;
  TableOp clear;
  clear.kind = TableOp::Kind::kFencedClear;
  clear.table = "Idx";
  clear.version = (uint64_t{3} << 40) | patterns::kMaxStampedLsn;
  ASSERT_TRUE(a.Apply(clear, &r).ok());
  EXPECT_EQ(r, OpResult::kWritten);
  EXPECT_TRUE(store.tables["Idx"].empty());
  EXPECT_FALSE(a.FencedByClear("Idx", (uint64_t{3} << 40) | 5));
  ASSERT_TRUE(a.Apply(Upsert("Idx", "a", "new", (uint64_t{3} << 40) | 5), &r).ok());
  EXPECT_EQ(r, OpResult::kWritten)
      << "an entity of the table created again, at an owner epoch the clear covered";
}

TEST(OpApplierTest, MoveCopiesWithTheSourceVersionThenDeletesTheSource) {
  FakeTableStore store;
  store.tables["Orders"];
  Entity& src = store.Put("Orders", client::EntityBuilder("p", "1").String("P", "v1").Build());
  const uint64_t v = *VersionFromETag(src.etag);
  OpApplier a(&store, 4);
  OpResult r;
  TableOp op = MoveOp(v);
  ASSERT_TRUE(a.Apply(op, &r).ok());
  EXPECT_EQ(r, OpResult::kWritten);
  EXPECT_EQ(store.Find("Orders", "p", "1"), nullptr);
  const Entity* copy = store.Find("Archive", "p", "1");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->Find("P")->bytes(), "v1");
  EXPECT_EQ(SourceVersionOf(*copy), v);
  // Again (redelivery): the source is gone, nothing to do.
  ASSERT_TRUE(a.Apply(op, &r).ok());
  EXPECT_EQ(r, OpResult::kNoop);
}

TEST(OpApplierTest, MoveRedoesWhenTheSourceChangesBetweenCopyAndDelete) {
  FakeTableStore store;
  store.tables["Orders"];
  Entity& src = store.Put("Orders", client::EntityBuilder("p", "1").String("P", "v1").Build());
  const uint64_t v = *VersionFromETag(src.etag);
  bool raced = false;
  store.before = [&](const std::string& call, const std::string& table) {
    if (call == "Delete" && table == "Orders" && !raced) {
      raced = true;
      store.Put("Orders", client::EntityBuilder("p", "1").String("P", "v2").Build());
    }
    return Status::OK();
  };
  OpApplier a(&store, 4);
  OpResult r;
  TableOp op = MoveOp(v);
  ASSERT_TRUE(a.Apply(op, &r).ok());
  EXPECT_EQ(store.Find("Orders", "p", "1"), nullptr);
  ASSERT_NE(store.Find("Archive", "p", "1"), nullptr);
  EXPECT_EQ(store.Find("Archive", "p", "1")->Find("P")->bytes(), "v2") << "the new state was copied";
}

TEST(OpApplierTest, MoveOfAnEntityRewrittenAfterTheDecisionIsSkipped) {
  FakeTableStore store;
  store.tables["Orders"];
  Entity& src = store.Put("Orders", client::EntityBuilder("p", "1").String("P", "v1").Build());
  const uint64_t seen = *VersionFromETag(src.etag);
  store.Put("Orders", client::EntityBuilder("p", "1").String("P", "v2").Build());
  OpApplier a(&store, 4);
  OpResult r;
  TableOp op = MoveOp(seen);
  ASSERT_TRUE(a.Apply(op, &r).ok());
  EXPECT_EQ(r, OpResult::kFenced);
  EXPECT_NE(store.Find("Orders", "p", "1"), nullptr);
  EXPECT_EQ(store.Find("Archive", "p", "1"), nullptr);
}

// Session 39: an archive already holding an entity with the same keys at a
// higher SourceVersion (another table's entity archived there, or one written
// there directly) fenced the copy out, and the source was deleted anyway: the
// entity was in neither table, and nothing said so.
TEST(OpApplierTest, MoveLeavesTheSourceWhenTheArchiveHoldsANewerEntityWithItsKeys) {
  FakeTableStore store;
  store.tables["Orders"];
  store.tables["Archive"];
  Entity& src = store.Put("Orders", client::EntityBuilder("p", "1").String("P", "mine").Build());
  const uint64_t v = *VersionFromETag(src.etag);
  store.Put("Archive", WithVersion("p", "1", static_cast<int64_t>(v + 1000), "theirs"));
  OpApplier a(&store, 4);
  OpResult r;
  TableOp op = MoveOp(v);
  Status s = a.Apply(op, &r);
  EXPECT_EQ(s.code(), Code::kInvalidInput) << s.ToString();
  EXPECT_NE(s.message().find("Orders(p, 1) -> Archive"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(std::to_string(v + 1000)), std::string::npos) << s.ToString();
  ASSERT_NE(store.Find("Orders", "p", "1"), nullptr) << "the source was deleted without its copy";
  EXPECT_EQ(store.Find("Orders", "p", "1")->Find("P")->bytes(), "mine");
  EXPECT_EQ(store.Find("Archive", "p", "1")->Find("P")->bytes(), "theirs")
      << "the archive is untouched";
  EXPECT_EQ(SourceVersionOf(*store.Find("Archive", "p", "1")), v + 1000);
}

// The fence that must not stop a redelivered move: its own copy, made by an
// attempt that stopped before the delete, is in the archive.
TEST(OpApplierTest, MoveDeletesTheSourceWhenTheArchiveHoldsItsOwnEarlierCopy) {
  FakeTableStore store;
  store.tables["Orders"];
  store.tables["Archive"];
  Entity& src = store.Put("Orders", client::EntityBuilder("p", "1").String("P", "mine").Build());
  const uint64_t v = *VersionFromETag(src.etag);
  store.Put("Archive", WithVersion("p", "1", static_cast<int64_t>(v), "mine"));
  OpApplier a(&store, 4);
  OpResult r;
  TableOp op = MoveOp(v);
  ASSERT_TRUE(a.Apply(op, &r).ok());
  EXPECT_EQ(r, OpResult::kWritten);
  EXPECT_EQ(store.Find("Orders", "p", "1"), nullptr);
  EXPECT_EQ(SourceVersionOf(*store.Find("Archive", "p", "1")), v);
}

TEST(OpApplierTest, TransportErrorsSurface) {
  FakeTableStore store;
  store.before = [](const std::string&, const std::string&) { return Status(Code::kUnavailable, "no reply"); };
  OpApplier a(&store, 4);
  OpResult r;
  EXPECT_EQ(a.Apply(Upsert("Idx", "a", "1", 1), &r).code(), Code::kUnavailable);
}

TEST(OpApplierTest, VersionHelpers) {
  EXPECT_EQ(VersionFromETag("W/\"42\""), 42u);
  EXPECT_FALSE(VersionFromETag("\"42\"").has_value());
  EXPECT_FALSE(VersionFromETag("W/\"4x2\"").has_value());
  EXPECT_FALSE(VersionFromETag("W/\"\"").has_value());
  Entity e;
  EXPECT_EQ(SourceVersionOf(e), 0u);
  e.Set("SourceVersion", Value::Int32(5));
  EXPECT_EQ(SourceVersionOf(e), 5u);
  e.Set("SourceVersion", Value::String("77"));
  EXPECT_EQ(SourceVersionOf(e), 77u);
}

}  // namespace
}  // namespace sidetable::apply
