#include "patterns/archive/archive.h"

#include <gtest/gtest.h>

#include "patterns/registry.h"
#include "tests/patterns/table_sim.h"

namespace sidetable::patterns {
namespace {

using testing::MakeEntity;
using testing::SourceSim;
using testing::TableStore;

std::unique_ptr<Pattern> MakeArchive(std::map<std::string, std::vector<std::string>> settings) {
  auto p = CreatePattern({"archive", std::move(settings)});
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? std::move(p).value() : nullptr;
}

std::vector<TableOp> Ops(const Pattern& p, const ChangeRecord& r) {
  std::vector<TableOp> out;
  EXPECT_TRUE(p.Apply(r, &out).ok());
  return out;
}

TEST(ArchiveTest, RequestBecomesOneMovePerRowKey) {
  auto archive = MakeArchive({{"source", {"Current"}}, {"target", {"Archive"}}});
  SourceSim src("current");
  auto req = src.RequestArchive("Sales", {"r1", "r2"});
  ASSERT_TRUE(archive->Wants(req));
  auto ops = Ops(*archive, req);
  ASSERT_EQ(ops.size(), 2u);
  for (size_t i = 0; i < 2; i++) {
    EXPECT_EQ(ops[i].kind, TableOp::Kind::kMove);
    EXPECT_EQ(ops[i].table, "Archive");
    EXPECT_EQ(ops[i].source_table, "Current");
    EXPECT_EQ(ops[i].entity.partition_key, "Sales");
    EXPECT_EQ(ops[i].version, req.lsn);
  }
  EXPECT_EQ(ops[0].entity.row_key, "r1");
  EXPECT_EQ(ops[1].entity.row_key, "r2");

  auto elsewhere = Ops(*archive, src.RequestArchive("Sales", {"r3"}, "Archive2019"));
  ASSERT_EQ(elsewhere.size(), 1u);
  EXPECT_EQ(elsewhere[0].table, "Archive2019");
}

TEST(ArchiveTest, IgnoresEverythingElse) {
  auto archive = MakeArchive({{"source", {"Current"}}, {"target", {"Archive"}}});
  SourceSim src("Current");
  EXPECT_FALSE(archive->Wants(src.Write(OpKind::kInsert, MakeEntity("p", "r", {}))));
  EXPECT_FALSE(archive->Wants(src.DeleteTable()));
  SourceSim other("Other");
  auto req = other.RequestArchive("p", {"r"});
  EXPECT_FALSE(archive->Wants(req));
  EXPECT_TRUE(Ops(*archive, req).empty());
}

TEST(ArchiveTest, RuleMovesWhatTheWorkerFoundAtTheVersionItSaw) {
  auto archive = MakeArchive({{"source", {"Current"}},
                              {"target", {"Archive"}},
                              {"filter", {"Status eq 'done'"}},
                              {"min_age_seconds", {"86400"}},
                              {"interval_seconds", {"300"}}});
  const auto& config = static_cast<const ArchivePattern&>(*archive).config();
  EXPECT_TRUE(config.has_rule());
  EXPECT_EQ(config.filter(), "Status eq 'done'");
  EXPECT_EQ(config.min_age_seconds(), 86400);
  EXPECT_EQ(config.interval_seconds(), 300);

  Entity a = MakeEntity("p", "a", {});
  a.etag = "W/\"17\"";
  Entity no_etag = MakeEntity("p", "b", {});
  std::vector<TableOp> ops;
  ArchiveMoves(config, {a, no_etag}, &ops);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].kind, TableOp::Kind::kMove);
  EXPECT_EQ(ops[0].table, "Archive");
  EXPECT_EQ(ops[0].source_table, "Current");
  EXPECT_EQ(ops[0].entity.row_key, "a");
  EXPECT_EQ(ops[0].version, 17u);
}

TEST(ArchiveTest, RuleDefaultsAndNoRule) {
  auto plain = MakeArchive({{"source", {"Current"}}, {"target", {"Archive"}}});
  const auto& c = static_cast<const ArchivePattern&>(*plain).config();
  EXPECT_FALSE(c.has_rule());
  auto aged =
      MakeArchive({{"source", {"Current"}}, {"target", {"Archive"}}, {"min_age_seconds", {"60"}}});
  const auto& a = static_cast<const ArchivePattern&>(*aged).config();
  EXPECT_TRUE(a.has_rule());
  EXPECT_EQ(a.filter(), "");
  EXPECT_EQ(a.interval_seconds(), ArchiveConfig::kDefaultIntervalSeconds);
}

// Moves executed with pattern.h's semantics: the entity is in exactly one
// table afterwards, and replaying the request changes nothing.
TEST(ArchiveTest, MoveIsIdempotentUnderReplay) {
  auto archive = MakeArchive({{"source", {"Current"}}, {"target", {"Archive"}}});
  SourceSim src("Current");
  TableStore store;
  auto ins = src.Write(OpKind::kInsert, MakeEntity("p", "r", {{"V", Value::Int32(1)}}));
  store.table("Current")[{"p", "r"}] = *ins.ops[0].after;
  auto req = src.RequestArchive("p", {"r", "missing"});
  auto ops = Ops(*archive, req);
  store.ApplyAll(ops);
  TableStore once = store;
  store.ApplyAll(ops);
  EXPECT_TRUE(store == once);
  EXPECT_TRUE(store.table("Current").empty());
  ASSERT_EQ(store.table("Archive").size(), 1u);
  const Entity& copy = store.table("Archive").begin()->second;
  EXPECT_EQ(*copy.Find("V"), Value::Int32(1));
  EXPECT_EQ(*copy.Find("SourceVersion"), Value::Int64(static_cast<int64_t>(ins.lsn)));
}

// Regression for the kMove fence: replaying an old request after the entity
// was re-inserted must not move the new incarnation.
TEST(ArchiveTest, ReplayedOldRequestLeavesALaterReinsertAlone) {
  auto archive = MakeArchive({{"source", {"Current"}}, {"target", {"Archive"}}});
  SourceSim src("Current");
  TableStore store;
  auto v1 = src.Write(OpKind::kInsert, MakeEntity("p", "r", {{"V", Value::Int32(1)}}));
  store.table("Current")[{"p", "r"}] = *v1.ops[0].after;
  auto req = src.RequestArchive("p", {"r"});
  store.ApplyAll(Ops(*archive, req));
  src.mutable_rows().erase({"p", "r"});  // the move's delete, as the engine would log it
  auto v2 = src.Write(OpKind::kInsert, MakeEntity("p", "r", {{"V", Value::Int32(2)}}));
  store.table("Current")[{"p", "r"}] = *v2.ops[0].after;
  TableStore before_replay = store;
  store.ApplyAll(Ops(*archive, req));
  EXPECT_TRUE(store == before_replay);
  EXPECT_EQ(*store.table("Current").at({"p", "r"}).Find("V"), Value::Int32(2));
  EXPECT_EQ(*store.table("Archive").at({"p", "r"}).Find("V"), Value::Int32(1));
}

}  // namespace
}  // namespace sidetable::patterns
