// The grouped path (EventProcessor::ProcessBatch over GroupedWrites): one
// poll's operations coalesced per target entity, grouped per target
// partition into EGTs, sent pipelined; the same end state as applying the
// events one at a time; one group's failure confined to its events.
#include <gtest/gtest.h>

#include "apply/event_processor.h"
#include "apply/grouped_writes.h"
#include "client/entity_builder.h"
#include "events/event.h"
#include "tests/apply/copy_pattern.h"
#include "tests/apply/fake_table_store.h"

namespace sidetable::apply {
namespace {

using patterns::TableOp;

using testing::CopyPattern;

struct Counting : ApplyObserver {
  void OnRetry() override { retries++; }
  void OnOp(TableOp::Kind, OpResult r) override { (r == OpResult::kWritten ? written : fenced)++; }
  void OnWaiting(const Status&) override { waiting++; }
  void OnWaitOver() override { waits_over++; }
  int retries = 0, written = 0, fenced = 0, waiting = 0, waits_over = 0;
};

// One event: an EGT of `rks` in partition `pk` of "Src" at `lsn`; a
// negative n deletes the row.
std::string Event(uint64_t lsn, const std::string& pk, const std::vector<std::pair<std::string, int>>& rows) {
  ChangeRecord rec;
  rec.lsn = lsn;
  rec.kind = ChangeKind::kEntities;
  rec.commit_time = 1000 + static_cast<int64_t>(lsn);
  rec.table = "Src";
  rec.table_id = 1;
  rec.partition_key = pk;
  for (const auto& [rk, n] : rows) {
    ChangeOp op;
    op.row_key = rk;
    op.version = lsn;
    if (n >= 0) {
      op.kind = OpKind::kInsertOrReplace;
      Entity e = client::EntityBuilder(pk, rk).Int32("n", n).Build();
      e.etag = "W/\"" + std::to_string(lsn) + "\"";
      e.timestamp = rec.commit_time;
      op.after = e;
      op.etag = e.etag;
    } else {
      op.kind = OpKind::kDelete;
    }
    rec.ops.push_back(op);
  }
  return events::EncodeEvent(rec, "test");
}

// The sleep takes no time: it moves `now`, the processor's clock, on.
struct GroupedFixture {
  explicit GroupedFixture(int attempts = 4) : GroupedFixture(RetryPolicy{attempts, 10, 40}) {}
  explicit GroupedFixture(RetryPolicy policy) {
    patterns.push_back(std::make_unique<CopyPattern>());
    applier = std::make_unique<OpApplier>(&store, 4);
    processor = std::make_unique<EventProcessor>(
        &patterns, applier.get(), policy, &seen,
        [this](int ms) {
          if (ms > 0) slept.push_back(ms);  // 0: asks for a stop only
          now += ms;
          if (stop_at >= 0 && now >= stop_at) stop = true;
          return !stop;
        },
        [this] { return now; });
    processor->EnableGrouping(&store);
    store.tables["Derived"];
  }
  std::vector<EventOutcome> Run(const std::vector<std::string>& events) {
    std::vector<std::string_view> views(events.begin(), events.end());
    return processor->ProcessBatch(views);
  }
  int N(const std::string& pk, const std::string& rk) const {
    const Entity* e = store.Find("Derived", pk, rk);
    return e == nullptr ? -1 : e->Find("n")->as_int32();
  }
  testing::FakeTableStore store;
  std::vector<std::unique_ptr<patterns::Pattern>> patterns;
  std::unique_ptr<OpApplier> applier;
  Counting seen;
  std::vector<int> slept;
  bool stop = false;
  int64_t now = 0;       // ms
  int64_t stop_at = -1;  // the sleep reports a stop from this time on
  std::unique_ptr<EventProcessor> processor;
};

TEST(GroupedWritesTest, OnePollBecomesOneEgtPerTargetPartition) {
  GroupedFixture f;
  std::vector<std::string> events;
  for (int i = 0; i < 250; i++) events.push_back(Event(10 + i, "a", {{"r" + std::to_string(i), i}}));
  events.push_back(Event(300, "b", {{"x", 1}, {"y", 2}}));
  auto outs = f.Run(events);
  for (const auto& o : outs) ASSERT_EQ(o.kind, EventOutcome::Kind::kApplied) << o.reason;
  // 250 rows of partition a: 100 + 100 + 50; partition b: one EGT.
  ASSERT_EQ(f.store.writes.size(), 4u);
  EXPECT_EQ(f.store.writes[0].size(), 100u);
  EXPECT_EQ(f.store.writes[2].size(), 50u);
  EXPECT_EQ(f.store.writes[3].size(), 2u);
  EXPECT_EQ(f.store.calls["Get"], 0) << "the grouped path reads nothing first";
  EXPECT_EQ(f.N("a", "r249"), 249);
  EXPECT_EQ(f.N("b", "y"), 2);
  EXPECT_EQ(f.seen.written, 252);
}

TEST(GroupedWritesTest, OneEntityTouchedManyTimesEndsAsInOrderApplication) {
  GroupedFixture f;
  // Insert, update, delete, re-insert of one row, plus a stale redelivery.
  auto outs = f.Run({Event(5, "p", {{"r", 1}}), Event(6, "p", {{"r", 2}}), Event(7, "p", {{"r", -1}}),
                     Event(8, "p", {{"r", 4}}), Event(6, "p", {{"r", 2}})});
  for (const auto& o : outs) ASSERT_EQ(o.kind, EventOutcome::Kind::kApplied) << o.reason;
  ASSERT_EQ(f.store.writes.size(), 1u);
  EXPECT_EQ(f.store.writes[0].size(), 1u) << "coalesced to the newest version";
  EXPECT_EQ(f.N("p", "r"), 4);
  EXPECT_EQ(FenceOf(*f.store.Find("Derived", "p", "r")), 8u);
  EXPECT_EQ(f.seen.written, 1);
  EXPECT_EQ(f.seen.fenced, 4);

  // The next poll's stale copies are fenced by the engine, not written.
  outs = f.Run({Event(7, "p", {{"r", -1}}), Event(6, "p", {{"r", 9}})});
  EXPECT_EQ(f.N("p", "r"), 4);
  // And a delete newer than the stored entry applies.
  outs = f.Run({Event(9, "p", {{"r", -1}})});
  EXPECT_EQ(f.N("p", "r"), -1);
}

TEST(GroupedWritesTest, OneGroupFailingPermanentlyDeadLettersOnlyItsEvent) {
  GroupedFixture f;
  // Partition "bad": the EGT fails on the row "poison" (op index 1).
  f.store.write_hook = [](const Batch& b) {
    for (size_t i = 0; i < b.size(); i++) {
      if (b.operations()[i].entity.row_key == "poison") {
        return Status(Code::kPropertyValueTooLarge, "too large", static_cast<int>(i));
      }
    }
    return Status::OK();
  };
  auto outs = f.Run({Event(1, "good", {{"g1", 1}}), Event(2, "bad", {{"ok1", 1}}), Event(3, "bad", {{"poison", 1}}),
                     Event(4, "bad", {{"ok2", 2}}), Event(5, "good", {{"g2", 2}})});
  ASSERT_EQ(outs.size(), 5u);
  EXPECT_EQ(outs[0].kind, EventOutcome::Kind::kApplied);
  EXPECT_EQ(outs[1].kind, EventOutcome::Kind::kApplied);
  ASSERT_EQ(outs[2].kind, EventOutcome::Kind::kDeadLetter);
  EXPECT_EQ(outs[2].reason_kind, FailureKind::kPermanent);
  EXPECT_NE(outs[2].reason.find("PropertyValueTooLarge"), std::string::npos) << outs[2].reason;
  EXPECT_EQ(outs[3].kind, EventOutcome::Kind::kApplied);
  EXPECT_EQ(outs[4].kind, EventOutcome::Kind::kApplied);
  EXPECT_EQ(f.N("bad", "ok1"), 1) << "the rest of the failed group is sent again";
  EXPECT_EQ(f.N("bad", "ok2"), 2);
  EXPECT_EQ(f.N("bad", "poison"), -1);
  EXPECT_EQ(f.N("good", "g2"), 2);
  EXPECT_TRUE(f.slept.empty()) << "a permanent error is not backed off";
}

TEST(GroupedWritesTest, TransientGroupFailureIsRetriedAloneAfterBackOff) {
  GroupedFixture f;
  int busy = 2;
  f.store.write_hook = [&](const Batch& b) {
    if (b.operations()[0].entity.partition_key == "slow" && busy-- > 0) return Status(Code::kServerBusy, "busy");
    return Status::OK();
  };
  auto outs = f.Run({Event(1, "fast", {{"a", 1}}), Event(2, "slow", {{"b", 2}})});
  for (const auto& o : outs) ASSERT_EQ(o.kind, EventOutcome::Kind::kApplied) << o.reason;
  EXPECT_EQ(f.slept.size(), 2u);
  EXPECT_EQ(f.seen.retries, 2);
  EXPECT_EQ(f.store.writes.size(), 4u) << "fast once, slow three times";
  EXPECT_EQ(f.N("slow", "b"), 2);
}

TEST(GroupedWritesTest, RetriesRunOutForThatGroupsEventsOnly) {
  GroupedFixture f(3);
  f.store.write_hook = [](const Batch& b) {
    return b.operations()[0].entity.partition_key == "down" ? Status(Code::kInternal, "oops")
                                                            : Status::OK();
  };
  auto outs = f.Run({Event(1, "down", {{"a", 1}}), Event(2, "up", {{"b", 2}})});
  ASSERT_EQ(outs[0].kind, EventOutcome::Kind::kDeadLetter);
  EXPECT_EQ(outs[0].reason_kind, FailureKind::kRetriesExhausted);
  EXPECT_EQ(outs[0].reason, "apply: InternalError: gave up after 3 attempts: InternalError: oops");
  EXPECT_EQ(outs[1].kind, EventOutcome::Kind::kApplied);
  EXPECT_EQ(f.slept.size(), 2u);
}

// Session 46: a target partition whose shard has no serving owner (a
// scale-out hand-over, 19-30 s) answered ServerBusy past the default 8
// attempts (~13 s), and its events were dead-lettered. The group is now
// retried for retry.max_wait_seconds; the others are written at once.
TEST(GroupedWritesTest, AGroupWaitsOutAShardHandOverLongerThanTheAttempts) {
  for (Code code : {Code::kServerBusy, Code::kUnavailable, Code::kNoReply}) {
    SCOPED_TRACE(std::string(ErrorCodeName(code)));
    GroupedFixture f{RetryPolicy{}};  // the worker's defaults
    f.store.write_hook = [&](const Batch& b) {
      return b.operations()[0].entity.partition_key == "moving" && f.now < 30000
                 ? Status(code, "shard 3 has no serving owner; not executed, retry")
                 : Status::OK();
    };
    auto outs = f.Run({Event(1, "moving", {{"a", 1}}), Event(2, "up", {{"b", 2}}),
                       Event(3, "moving", {{"c", 3}})});
    for (const auto& o : outs) ASSERT_EQ(o.kind, EventOutcome::Kind::kApplied) << o.reason;
    EXPECT_EQ(f.N("moving", "a"), 1);
    EXPECT_EQ(f.N("moving", "c"), 3);
    EXPECT_EQ(f.N("up", "b"), 2);
    EXPECT_GE(f.now, 30000);
    EXPECT_LT(f.now, 30000 + 5000 * 5 / 4 + 1) << "the back-off is capped at backoff_max_ms";
    EXPECT_GT(f.seen.retries, 8);
    EXPECT_EQ(f.seen.waiting, f.seen.retries);
    EXPECT_EQ(f.seen.waits_over, 1);
    size_t up = 0;
    for (const Batch& b : f.store.writes) up += b.operations()[0].entity.partition_key == "up";
    EXPECT_EQ(up, 1u) << "a group written is not sent again";
  }
}

// Found by WorkerE2eTest.ASidecarGoneLongerThanTheAttemptsIsWaitedOutNotDeadLettered:
// a missing derived table is created and the group sent again only while
// its sends were under max_attempts, so a group that had waited out a busy
// sidecar for more sends than that was dead-lettered as TableNotFound.
TEST(GroupedWritesTest, ATableMissingAfterAWaitIsCreatedAndWritten) {
  GroupedFixture f{RetryPolicy{2, 100, 5000, 60000}};
  f.store.tables.clear();
  f.store.write_hook = [&](const Batch&) {
    return f.now < 10000 ? Status(Code::kNoReply, "the sidecar did not answer in time")
                         : Status::OK();
  };
  auto outs = f.Run({Event(1, "p", {{"a", 1}})});
  ASSERT_EQ(outs[0].kind, EventOutcome::Kind::kApplied) << outs[0].reason;
  EXPECT_EQ(f.N("p", "a"), 1);
  EXPECT_EQ(f.store.calls["CreateTable"], 1);
}

TEST(GroupedWritesTest, AGroupsWaitPastMaxWaitDeadLettersItsEventsSayingSo) {
  GroupedFixture f{RetryPolicy{}};
  f.store.write_hook = [](const Batch& b) {
    return b.operations()[0].entity.partition_key == "down" ? Status(Code::kServerBusy, "no owner")
                                                            : Status::OK();
  };
  auto outs = f.Run({Event(1, "down", {{"a", 1}}), Event(2, "up", {{"b", 2}})});
  ASSERT_EQ(outs[0].kind, EventOutcome::Kind::kDeadLetter);
  EXPECT_EQ(outs[0].reason_kind, FailureKind::kRetriesExhausted);
  EXPECT_EQ(outs[0].reason,
            "apply: ServerBusy: gave up after waiting 120 s for the service "
            "(retry.max_wait_seconds 120): "
            "ServerBusy: no owner");
  EXPECT_EQ(outs[1].kind, EventOutcome::Kind::kApplied);
  EXPECT_EQ(f.now, 120000) << "the last attempt is made at the end of the wait";
}

TEST(GroupedWritesTest, AStopDuringALongWaitReturnsAtOnce) {
  GroupedFixture f{RetryPolicy{}};
  f.stop_at = 40000;  // SIGTERM 40 s into the wait
  f.store.write_hook = [](const Batch& b) {
    return b.operations()[0].entity.partition_key == "down" ? Status(Code::kServerBusy, "no owner")
                                                            : Status::OK();
  };
  auto outs =
      f.Run({Event(1, "up", {{"a", 1}}), Event(2, "down", {{"b", 2}}), Event(3, "up", {{"c", 3}})});
  EXPECT_EQ(outs[0].kind, EventOutcome::Kind::kApplied);
  EXPECT_EQ(outs[1].kind, EventOutcome::Kind::kInterrupted) << outs[1].reason;
  EXPECT_EQ(outs[2].kind, EventOutcome::Kind::kInterrupted);
  EXPECT_LT(f.now, 40000 + 5000 * 5 / 4 + 1) << "nothing is waited after the stop";
  EXPECT_EQ(f.seen.waits_over, 1);
}

TEST(GroupedWritesTest, MissingDerivedTableIsCreated) {
  GroupedFixture f;
  f.store.tables.clear();
  auto outs = f.Run({Event(1, "p", {{"a", 1}})});
  ASSERT_EQ(outs[0].kind, EventOutcome::Kind::kApplied) << outs[0].reason;
  EXPECT_EQ(f.N("p", "a"), 1);
  EXPECT_EQ(f.store.calls["CreateTable"], 1);
}

TEST(GroupedWritesTest, StopDuringBackOffLeavesTheRestUncommitted) {
  GroupedFixture f;
  f.stop = true;  // the sleeper reports a stop
  f.store.write_hook = [](const Batch& b) {
    return b.operations()[0].entity.partition_key == "busy" ? Status(Code::kServerBusy, "busy") : Status::OK();
  };
  auto outs = f.Run({Event(1, "ok", {{"a", 1}}), Event(2, "busy", {{"b", 1}}), Event(3, "ok", {{"c", 1}})});
  EXPECT_EQ(outs[0].kind, EventOutcome::Kind::kApplied);
  EXPECT_EQ(outs[1].kind, EventOutcome::Kind::kInterrupted);
  EXPECT_EQ(outs[2].kind, EventOutcome::Kind::kInterrupted) << "after the first unfinished event nothing commits";
  // The reason of an event with no failure of its own says no more than
  // that (it read "stopped before it was applied: OK").
  EXPECT_EQ(outs[2].reason, "stopped before it was applied");
}

// A stop abandons the requests in flight, which fail as time-outs do
// (client::ClientOptions::abandon). On the last attempt that dead-lettered
// the events as "gave up after N attempts" and committed past them; they are
// interrupted instead, left for the next owner.
TEST(GroupedWritesTest, AStopOnTheLastAttemptInterruptsInsteadOfGivingUp) {
  GroupedFixture f(1);
  f.store.write_hook = [&](const Batch&) {
    f.stop = true;  // the stop comes while the request is in flight
    return Status(Code::kNoReply, "abandoned after 1 attempt(s): stopping");
  };
  auto outs = f.Run({Event(1, "p", {{"a", 1}})});
  EXPECT_EQ(outs[0].kind, EventOutcome::Kind::kInterrupted) << outs[0].reason;
  EXPECT_EQ(f.N("p", "a"), -1);
}

TEST(GroupedWritesTest, UndecodableEventsDoNotHoldUpTheOthers) {
  GroupedFixture f;
  auto outs = f.Run({"{not json", Event(2, "p", {{"a", 1}})});
  EXPECT_EQ(outs[0].kind, EventOutcome::Kind::kDeadLetter);
  EXPECT_EQ(outs[0].reason_kind, FailureKind::kDecode);
  EXPECT_EQ(outs[1].kind, EventOutcome::Kind::kApplied);
  EXPECT_EQ(f.N("p", "a"), 1);
}

}  // namespace
}  // namespace sidetable::apply
