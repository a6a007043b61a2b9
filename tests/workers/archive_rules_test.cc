// Archive rules (workers/archive_rules.h) against an in-memory store that
// refuses what the engine refuses. Regression for session 35's archive
// wedge: one Shipped order with 252 properties (its copy has 253) failed
// every evaluation, every 5 s, with "moved 0"; the other orders of its page
// were copied and never deleted, and later pages were never read.
#include "workers/archive_rules.h"

#include <gtest/gtest.h>

#include "client/entity_builder.h"
#include "engine/limits.h"
#include "tests/apply/fake_table_store.h"

namespace sidetable::workers {
namespace {

Entity Order(const std::string& pk, const std::string& rk, size_t properties = 1) {
  client::EntityBuilder b(pk, rk);
  b.String("Status", "Shipped");
  for (size_t i = 1; i < properties; i++) b.String("P" + std::to_string(i), "x");
  return b.Build();
}

struct RuleFixture {
  RuleFixture() {
    patterns::PatternConfig pc{"archive",
                               {{"source", {"Orders"}},
                                {"target", {"OrdersArchive"}},
                                {"filter", {"Status eq 'Shipped'"}}}};
    std::vector<ArchiveRule> rules;
    EXPECT_TRUE(ParseArchiveRules({pc}, &rules).ok());
    rule = rules.at(0);
    store.page_size = 2;  // the fake ignores the filter: every entity matches
    store.tables["Orders"];
    store.validate = [](const Entity& e) { return ValidateEntity(e); };
  }
  Status Run(ArchiveRun* run) {
    Status s = RunArchiveRule(rule, NowTicks(), &store, &applier, stop, &known, run);
    known.Update(*run);
    return s;
  }
  bool InSource(const std::string& pk, const std::string& rk) const {
    return store.Find("Orders", pk, rk);
  }
  bool InArchive(const std::string& pk, const std::string& rk) const {
    return store.Find("OrdersArchive", pk, rk);
  }

  ArchiveRule rule;
  apply::testing::FakeTableStore store;
  apply::OpApplier applier{&store, 4};
  std::atomic<bool> stop{false};
  UnmovableEntities known;
};

TEST(ArchiveRuleTest, AnUnmovableEntityFailsAloneAndEveryOtherIsMovedOnEveryPage) {
  RuleFixture f;
  // Pages of two: (a,1) (a,3) | (a,props252) (b,1) | (b,2) (c,1)
  for (const auto& [pk, rk] : std::vector<std::pair<std::string, std::string>>{
           {"a", "1"}, {"a", "3"}, {"b", "1"}, {"b", "2"}, {"c", "1"}}) {
    f.store.Put("Orders", Order(pk, rk));
  }
  f.store.Put("Orders", Order("a", "props252", 252));

  ArchiveRun run;
  Status s = f.Run(&run);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(run.moved, 5u);
  EXPECT_TRUE(run.complete);
  for (const auto& [pk, rk] : std::vector<std::pair<std::string, std::string>>{
           {"a", "1"}, {"a", "3"}, {"b", "1"}, {"b", "2"}, {"c", "1"}}) {
    EXPECT_FALSE(f.InSource(pk, rk)) << pk << "/" << rk << " left in the source (in both tables)";
    EXPECT_TRUE(f.InArchive(pk, rk)) << pk << "/" << rk;
  }
  EXPECT_TRUE(f.InSource("a", "props252"));
  EXPECT_FALSE(f.InArchive("a", "props252"));
  ASSERT_EQ(run.failed.size(), 1u);
  EXPECT_EQ(run.failed[0].row_key, "props252");
  EXPECT_EQ(run.failed[0].status.code(), Code::kTooManyProperties);
  EXPECT_NE(run.failed[0].status.message().find("Orders(a, props252) -> OrdersArchive"),
            std::string::npos)
      << run.failed[0].status.ToString();
  EXPECT_EQ(f.known.size(), 1u);
}

TEST(ArchiveRuleTest, AnUnmovableEntityIsReportedOnceAndTriedAgainWhenItChanges) {
  RuleFixture f;
  f.store.Put("Orders", Order("a", "props252", 252));
  ArchiveRun run;
  ASSERT_TRUE(f.Run(&run).ok());
  ASSERT_EQ(run.failed.size(), 1u);

  // The next evaluations skip it: nothing new to report, not even a read.
  const size_t calls = f.store.calls["Get"] + f.store.calls["Write"];
  for (int i = 0; i < 3; i++) {
    ASSERT_TRUE(f.Run(&run).ok());
    EXPECT_TRUE(run.failed.empty());
    ASSERT_EQ(run.skipped.size(), 1u);
    EXPECT_EQ(f.known.size(), 1u);
  }
  EXPECT_EQ(f.store.calls["Get"] + f.store.calls["Write"], calls);

  // Rewritten, still too wide: a new version, reported again.
  f.store.Put("Orders", Order("a", "props252", 252));
  ASSERT_TRUE(f.Run(&run).ok());
  EXPECT_EQ(run.failed.size(), 1u);

  // Fixed by the application: moved, and forgotten.
  f.store.Put("Orders", Order("a", "props252", 200));
  ASSERT_TRUE(f.Run(&run).ok());
  EXPECT_TRUE(run.failed.empty());
  EXPECT_EQ(run.moved, 1u);
  EXPECT_EQ(f.known.size(), 0u);
}

TEST(ArchiveRuleTest, AnUnmovableEntityDeletedByHandIsForgotten) {
  RuleFixture f;
  f.store.Put("Orders", Order("a", "props252", 252));
  ArchiveRun run;
  ASSERT_TRUE(f.Run(&run).ok());
  EXPECT_EQ(f.known.size(), 1u);
  f.store.tables["Orders"].erase(std::make_pair(std::string("a"), std::string("props252")));
  ASSERT_TRUE(f.Run(&run).ok());
  EXPECT_EQ(f.known.size(), 0u);
}

TEST(ArchiveRuleTest, ATransientFailureIsTheRunsStatusAndTheOthersAreStillMoved) {
  RuleFixture f;
  f.store.Put("Orders", Order("a", "1"));
  f.store.Put("Orders", Order("b", "1"));
  f.store.write_hook = [](const Batch& b) {
    for (const Operation& op : b.operations()) {
      if (op.entity.partition_key == "a") return Status(Code::kServerBusy, "busy");
    }
    return Status::OK();
  };
  ArchiveRun run;
  Status s = f.Run(&run);
  EXPECT_EQ(s.code(), Code::kServerBusy) << s.ToString();
  EXPECT_TRUE(run.failed.empty()) << "a transient failure is not remembered";
  EXPECT_EQ(f.known.size(), 0u);
  EXPECT_TRUE(f.InSource("a", "1"));
  EXPECT_FALSE(f.InArchive("a", "1"));
  EXPECT_FALSE(f.InSource("b", "1"));
  EXPECT_TRUE(f.InArchive("b", "1"));
}

}  // namespace
}  // namespace sidetable::workers
