// Decode, patterns, retries with back-off, dead-letter decisions.
#include "apply/event_processor.h"

#include <gtest/gtest.h>

#include "client/entity_builder.h"
#include "events/event.h"
#include "tests/apply/copy_pattern.h"
#include "tests/apply/fake_table_store.h"

namespace sidetable::apply {
namespace {

using patterns::TableOp;

// Counts what the processor reports.
struct CountingObserver : ApplyObserver {
  void OnSkippedEvent() override { skipped++; }
  void OnFencedEvent() override { fenced++; }
  void OnRetry() override { retries++; }
  void OnOp(patterns::TableOp::Kind, OpResult) override { ops++; }
  void OnWaiting(const Status& last) override {
    waiting++;
    wait_last = last.ToString();
  }
  void OnWaitOver() override { waits_over++; }
  uint64_t skipped = 0, retries = 0, ops = 0, fenced = 0, waiting = 0, waits_over = 0;
  std::string wait_last;
};

using testing::CopyPattern;

std::string EventJson(const std::string& table, uint64_t lsn, const std::string& rk, uint64_t epoch = 0) {
  ChangeRecord rec;
  rec.lsn = lsn;
  rec.epoch = epoch;
  rec.kind = ChangeKind::kEntities;
  rec.commit_time = NowTicks();
  rec.table = table;
  rec.table_id = 1;
  rec.partition_key = "p";
  ChangeOp op;
  op.row_key = rk;
  op.kind = OpKind::kInsertOrReplace;
  Entity e = client::EntityBuilder("p", rk).Int32("n", static_cast<int32_t>(lsn)).Build();
  op.version = epoch << 40 | lsn;
  e.etag = "W/\"" + std::to_string(op.version) + "\"";
  e.timestamp = rec.commit_time;
  op.after = e;
  op.etag = e.etag;
  rec.ops.push_back(op);
  return events::EncodeEvent(rec, "test");
}

// The sleep takes no time: it moves `now`, the processor's clock, on.
struct Fixture {
  explicit Fixture(Status pattern_fail = Status::OK(), int attempts = 4)
      : Fixture(RetryPolicy{attempts, 10, 40}, std::move(pattern_fail)) {}
  explicit Fixture(RetryPolicy policy, Status pattern_fail = Status::OK()) {
    patterns.push_back(std::make_unique<CopyPattern>(pattern_fail));
    applier = std::make_unique<OpApplier>(&store, 4);
    processor = std::make_unique<EventProcessor>(
        &patterns, applier.get(), policy, &metrics,
        [this](int ms) {
          if (ms > 0) slept.push_back(ms);  // 0: asks for a stop only
          now += ms;
          if (stop_at >= 0 && now >= stop_at) stop = true;
          return !stop;
        },
        [this] { return now; });
  }
  testing::FakeTableStore store;
  std::vector<std::unique_ptr<patterns::Pattern>> patterns;
  std::unique_ptr<OpApplier> applier;
  CountingObserver metrics;
  std::vector<int> slept;
  bool stop = false;
  int64_t now = 0;       // ms
  int64_t stop_at = -1;  // the sleep reports a stop from this time on
  std::unique_ptr<EventProcessor> processor;
};

TEST(EventProcessorTest, AppliesAndReappliesHarmlessly) {
  Fixture f;
  const std::string ev = EventJson("Src", 5, "r1");
  EventOutcome o = f.processor->Process(ev);
  ASSERT_EQ(o.kind, EventOutcome::Kind::kApplied) << o.reason;
  EXPECT_EQ(o.lsn, 5u);
  ASSERT_NE(f.store.Find("Derived", "p", "r1"), nullptr);
  const std::string etag = f.store.Find("Derived", "p", "r1")->etag;
  o = f.processor->Process(ev);  // redelivery
  ASSERT_EQ(o.kind, EventOutcome::Kind::kApplied);
  EXPECT_EQ(f.store.Find("Derived", "p", "r1")->etag, etag) << "a redelivered event writes nothing";
  EXPECT_TRUE(f.slept.empty());
  EXPECT_EQ(f.metrics.ops, 2u) << "the observer sees each applied operation, fenced ones too";
  EXPECT_EQ(f.metrics.skipped, 0u);
}

TEST(EventProcessorTest, EventsNoPatternWantsAreAcknowledged) {
  Fixture f;
  EventOutcome o = f.processor->Process(EventJson("Other", 5, "r1"));
  EXPECT_EQ(o.kind, EventOutcome::Kind::kApplied);
  EXPECT_EQ(o.operations, 0u);
  EXPECT_TRUE(f.store.tables.empty());
  EXPECT_EQ(f.metrics.skipped, 1u);
}

TEST(EventProcessorTest, WithoutAnObserverNothingIsCounted) {
  Fixture f;
  auto quiet = std::make_unique<EventProcessor>(&f.patterns, f.applier.get(), RetryPolicy{}, nullptr,
                                                [](int) { return true; });
  EXPECT_EQ(quiet->Process(EventJson("Src", 5, "r1")).kind, EventOutcome::Kind::kApplied);
  EXPECT_NE(f.store.Find("Derived", "p", "r1"), nullptr);
  EXPECT_EQ(f.metrics.ops, 0u);
}

TEST(EventProcessorTest, TransientFailuresBackOffExponentiallyThenSucceed) {
  Fixture f(Status::OK(), 5);
  int failures = 3;
  f.store.before = [&](const std::string&, const std::string&) {
    return failures-- > 0 ? Status(Code::kServerBusy, "busy") : Status::OK();
  };
  EventOutcome o = f.processor->Process(EventJson("Src", 7, "r1"));
  ASSERT_EQ(o.kind, EventOutcome::Kind::kApplied) << o.reason;
  ASSERT_EQ(f.slept.size(), 3u);
  EXPECT_EQ(f.metrics.retries, 3u);
  // 10, 20, 40 ms +-25%
  EXPECT_GE(f.slept[0], 7);
  EXPECT_LE(f.slept[0], 13);
  EXPECT_GE(f.slept[2], 30);
  EXPECT_LE(f.slept[2], 50);
}

// A failure the service answered (Internal here) counts attempts; a busy or
// unreachable service is waited out instead (below).
TEST(EventProcessorTest, ExhaustedRetriesBecomeADeadLetter) {
  Fixture f(Status::OK(), 3);
  f.store.before = [](const std::string&, const std::string&) {
    return Status(Code::kInternal, "oops");
  };
  EventOutcome o = f.processor->Process(EventJson("Src", 7, "r1"));
  EXPECT_EQ(o.kind, EventOutcome::Kind::kDeadLetter);
  EXPECT_EQ(o.reason_kind, FailureKind::kRetriesExhausted);
  EXPECT_NE(o.reason.find("gave up after 3 attempts: InternalError: oops"), std::string::npos)
      << o.reason;
  EXPECT_EQ(f.slept.size(), 2u);
  EXPECT_EQ(f.metrics.waiting, 0u);
}

// Session 46: a shard with no serving owner (a scale-out hand-over, 19-30 s
// after a member is killed) answered ServerBusy past the 8 attempts of the
// default policy (~13 s of back-off), and the event was dead-lettered: its
// derived row was missing for good. ServerBusy, Unavailable and NoReply are
// now retried for retry.max_wait_seconds (120 s by default).
TEST(EventProcessorTest, AShardHandOverLongerThanTheAttemptsIsWaitedOut) {
  for (Code code : {Code::kServerBusy, Code::kUnavailable, Code::kNoReply}) {
    SCOPED_TRACE(std::string(ErrorCodeName(code)));
    Fixture f{RetryPolicy{}};  // the worker's defaults: 8 attempts, 100 ms doubling to 5 s, 120 s
    f.store.before = [&](const std::string&, const std::string&) {
      return f.now < 30000
                 ? Status(code,
                          "shard 3 has no serving owner (a rebalance or restore is under way); "
                          "not executed, retry")
                 : Status::OK();
    };
    EventOutcome o = f.processor->Process(EventJson("Src", 7, "r1"));
    ASSERT_EQ(o.kind, EventOutcome::Kind::kApplied) << o.reason;
    EXPECT_NE(f.store.Find("Derived", "p", "r1"), nullptr);
    EXPECT_GE(f.now, 30000);
    EXPECT_LT(f.now, 30000 + 5000 * 5 / 4 + 1) << "the back-off is capped at backoff_max_ms";
    EXPECT_GT(f.metrics.retries, 8u);
    for (int ms : f.slept) EXPECT_LE(ms, 5000 * 5 / 4);
    EXPECT_EQ(f.metrics.waiting, f.metrics.retries);
    EXPECT_NE(f.metrics.wait_last.find("no serving owner"), std::string::npos)
        << f.metrics.wait_last;
    EXPECT_EQ(f.metrics.waits_over, 1u) << "the end of the wait is reported once";
  }
}

// A full disk on the sidecar refuses writes until space is freed (the
// write is not applied): until session 46 the worker took it as permanent
// and dead-lettered every event meanwhile.
TEST(EventProcessorTest, ASidecarsFullDiskIsWaitedOutNotDeadLettered) {
  Fixture f{RetryPolicy{}};
  f.store.before = [&](const std::string&, const std::string&) {
    return f.now < 20000 ? Status(Code::kInsufficientStorage, "the disk is full; not applied")
                         : Status::OK();
  };
  EventOutcome o = f.processor->Process(EventJson("Src", 7, "r1"));
  ASSERT_EQ(o.kind, EventOutcome::Kind::kApplied) << o.reason;
  EXPECT_NE(f.store.Find("Derived", "p", "r1"), nullptr);
  EXPECT_GE(f.now, 20000);
  EXPECT_GT(f.metrics.retries, 8u);
}

TEST(EventProcessorTest, AWaitPastMaxWaitIsADeadLetterThatSaysSo) {
  Fixture f{RetryPolicy{}};
  f.store.before = [](const std::string&, const std::string&) {
    return Status(Code::kServerBusy, "no owner");
  };
  EventOutcome o = f.processor->Process(EventJson("Src", 7, "r1"));
  ASSERT_EQ(o.kind, EventOutcome::Kind::kDeadLetter);
  EXPECT_EQ(o.reason_kind, FailureKind::kRetriesExhausted);
  EXPECT_EQ(o.reason,
            "apply: gave up after waiting 120 s for the service (retry.max_wait_seconds 120): "
            "ServerBusy: no owner");
  // The last attempt is made at the end of the wait, not a back-off past it.
  EXPECT_GE(f.now, 120000);
  EXPECT_LE(f.now, 120000);
  EXPECT_EQ(f.metrics.waits_over, 1u);
}

TEST(EventProcessorTest, AStopDuringALongWaitReturnsAtOnce) {
  Fixture f{RetryPolicy{}};
  f.stop_at = 40000;  // SIGTERM 40 s into the wait
  int tries = 0;
  f.store.before = [&](const std::string&, const std::string&) {
    tries++;
    return Status(Code::kServerBusy, "no owner");
  };
  EventOutcome o = f.processor->Process(EventJson("Src", 7, "r1"));
  EXPECT_EQ(o.kind, EventOutcome::Kind::kInterrupted) << o.reason;
  EXPECT_LT(f.now, 40000 + 5000 * 5 / 4 + 1) << "nothing is waited after the stop";
  const int at_stop = tries;
  EXPECT_EQ(f.processor->Process(EventJson("Src", 8, "r2")).kind, EventOutcome::Kind::kInterrupted);
  EXPECT_EQ(tries, at_stop + 1)
      << "a stopped processor tries once, then stops at the first back-off";
  EXPECT_EQ(f.metrics.waits_over, 2u);
}

// Waits and attempts are separate budgets: a failure the service answered
// still counts, also after a wait.
TEST(EventProcessorTest, AttemptsStillBoundWhatTheServiceAnswersDuringAWait) {
  Fixture f{RetryPolicy{3, 100, 5000, 60000}};
  int n = 0;
  f.store.before = [&](const std::string&, const std::string&) {
    return n++ % 2 == 0 ? Status(Code::kServerBusy, "busy")
                        : Status(Code::kTableBeingDeleted, "deleting");
  };
  EventOutcome o = f.processor->Process(EventJson("Src", 7, "r1"));
  ASSERT_EQ(o.kind, EventOutcome::Kind::kDeadLetter);
  EXPECT_NE(o.reason.find("gave up after 6 attempts: TableBeingDeleted"), std::string::npos)
      << o.reason;
}

// retry.max_wait_seconds 0: a busy service counts attempts, as before session 46.
TEST(EventProcessorTest, WithoutAWaitBudgetABusyServiceCountsAttempts) {
  Fixture f{RetryPolicy{3, 10, 40, 0}};
  f.store.before = [](const std::string&, const std::string&) {
    return Status(Code::kServerBusy, "busy");
  };
  EventOutcome o = f.processor->Process(EventJson("Src", 7, "r1"));
  ASSERT_EQ(o.kind, EventOutcome::Kind::kDeadLetter);
  EXPECT_NE(o.reason.find("gave up after 3 attempts: ServerBusy"), std::string::npos) << o.reason;
  EXPECT_EQ(f.metrics.waiting, 0u);
}

// A stop abandons the requests in flight (client::ClientOptions::abandon):
// on the last attempt that is no reason to dead-letter the event and commit
// past it; it is left interrupted, for the next owner.
TEST(EventProcessorTest, AStopOnTheLastAttemptInterruptsInsteadOfGivingUp) {
  Fixture f(Status::OK(), 1);
  f.store.before = [&](const std::string&, const std::string&) {
    f.stop = true;  // the stop comes while the request is in flight
    return Status(Code::kNoReply, "abandoned after 1 attempt(s): stopping");
  };
  EventOutcome o = f.processor->Process(EventJson("Src", 7, "r1"));
  EXPECT_EQ(o.kind, EventOutcome::Kind::kInterrupted) << o.reason;
}

TEST(EventProcessorTest, PermanentErrorsDeadLetterAtOnce) {
  Fixture f;
  f.store.before = [](const std::string& call, const std::string&) {
    return call == "Insert" ? Status(Code::kPropertyValueTooLarge, "too big") : Status::OK();
  };
  EventOutcome o = f.processor->Process(EventJson("Src", 7, "r1"));
  EXPECT_EQ(o.kind, EventOutcome::Kind::kDeadLetter);
  EXPECT_EQ(o.reason_kind, FailureKind::kPermanent);
  EXPECT_TRUE(f.slept.empty());
}

TEST(EventProcessorTest, PoisonEventsAndPatternErrorsDeadLetter) {
  Fixture f;
  EventOutcome o = f.processor->Process("{not json");
  EXPECT_EQ(o.kind, EventOutcome::Kind::kDeadLetter);
  EXPECT_EQ(o.reason_kind, FailureKind::kDecode);
  EXPECT_EQ(o.reason.rfind("decode: ", 0), 0u) << o.reason;
  o = f.processor->Process(R"({"schema":99})");
  EXPECT_EQ(o.kind, EventOutcome::Kind::kDeadLetter);

  Fixture g(Status(Code::kInvalidInput, "cannot index"));
  o = g.processor->Process(EventJson("Src", 7, "r1"));
  EXPECT_EQ(o.kind, EventOutcome::Kind::kDeadLetter);
  EXPECT_EQ(o.reason_kind, FailureKind::kPattern);
  EXPECT_NE(o.reason.find("pattern copy"), std::string::npos) << o.reason;
}

TEST(EventProcessorTest, StopDuringBackOffLeavesTheEventUncommitted) {
  Fixture f;
  f.stop = true;
  f.store.before = [](const std::string&, const std::string&) { return Status(Code::kServerBusy, "busy"); };
  EventOutcome o = f.processor->Process(EventJson("Src", 7, "r1"));
  EXPECT_EQ(o.kind, EventOutcome::Kind::kInterrupted);
}

TEST(EventProcessorTest, BackoffIsCapped) {
  RetryPolicy p{10, 100, 1000};
  for (int attempt = 2; attempt < 12; attempt++) {
    const int ms = BackoffMs(p, attempt, 12345);
    EXPECT_LE(ms, 1250);
    EXPECT_GE(ms, 75);
  }
  EXPECT_TRUE(IsTransient(Code::kServerBusy));
  EXPECT_TRUE(IsTransient(Code::kUnavailable));
  EXPECT_FALSE(IsTransient(Code::kInvalidInput));
  EXPECT_FALSE(IsTransient(Code::kTableNotFound));
  for (Code c : {Code::kServerBusy, Code::kUnavailable, Code::kNoReply})
    EXPECT_TRUE(WaitsForService(c));
  for (Code c : {Code::kInternal, Code::kTableBeingDeleted, Code::kUpdateConditionNotSatisfied,
                 Code::kInvalidInput})
    EXPECT_FALSE(WaitsForService(c));
}

// A claim as the sidecar writes it (sidecar/cluster/records.cc): no "time".
// Until session 42 the processor dead-lettered such a claim and fenced
// nothing after it, which a claim made by EncodeEvent (with a time) hid.
std::string ClaimJson(uint64_t epoch) {
  return R"({"schema":1,"kind":"ShardClaimed","source":"member","epoch":)" + std::to_string(epoch) +
         R"(,"shard":0,"service":"orders"})";
}

// Scale-out (docs/scale-out.md): with a partition's EpochFilter, claims are
// skipped, a replaced owner's later records are fenced (skipped, counted,
// never dead-lettered), and each outcome carries the floor to commit.
TEST(EventProcessorTest, ClaimsAndFencedRecordsAreSkippedNotApplied) {
  for (bool batch : {false, true}) {
    SCOPED_TRACE(batch ? "ProcessBatch" : "Process");
    Fixture f;
    if (batch) f.processor->EnableGrouping(&f.store);
    events::EpochFilter filter;
    const std::vector<std::string> evs = {EventJson("Src", 1, "a", 1), ClaimJson(2), EventJson("Src", 2, "b", 1),
                                          EventJson("Src", 1, "c", 2)};
    std::vector<EventOutcome> outs;
    if (batch) {
      std::vector<std::string_view> views(evs.begin(), evs.end());
      std::vector<EventFence> fences(evs.size(), EventFence{&filter, 0});
      outs = f.processor->ProcessBatch(views, &fences);
    } else {
      const EventFence fence{&filter, 0};
      for (const auto& ev : evs) outs.push_back(f.processor->Process(ev, &fence));
    }
    ASSERT_EQ(outs.size(), 4u);
    for (const auto& o : outs) EXPECT_EQ(o.kind, EventOutcome::Kind::kApplied) << o.reason;
    EXPECT_EQ(outs[0].skip, EventOutcome::Skip::kNone);
    EXPECT_EQ(outs[0].floor, 0u);
    EXPECT_EQ(outs[1].skip, EventOutcome::Skip::kClaim);
    EXPECT_EQ(outs[1].floor, 2u);
    EXPECT_EQ(outs[2].skip, EventOutcome::Skip::kFenced);
    EXPECT_EQ(outs[3].skip, EventOutcome::Skip::kNone);
    EXPECT_EQ(outs[3].floor, 2u);
    EXPECT_NE(f.store.Find("Derived", "p", "a"), nullptr);
    EXPECT_EQ(f.store.Find("Derived", "p", "b"), nullptr) << "a fenced record was applied";
    EXPECT_NE(f.store.Find("Derived", "p", "c"), nullptr);
    EXPECT_EQ(f.metrics.fenced, 1u);
    EXPECT_EQ(f.metrics.skipped, 0u) << "a claim or a fenced record is not an ignored event";
  }
}

TEST(EventProcessorTest, AnUndecodableEventKeepsTheFloor) {
  Fixture f;
  events::EpochFilter filter;
  filter.SeedFloor(3, 4);
  const EventFence fence{&filter, 3};
  EventOutcome o = f.processor->Process("{not an event", &fence);
  EXPECT_EQ(o.kind, EventOutcome::Kind::kDeadLetter);
  EXPECT_EQ(o.floor, 4u);
  // Without a fence a claim is skipped all the same.
  EXPECT_EQ(f.processor->Process(ClaimJson(5)).skip, EventOutcome::Skip::kClaim);
}

}  // namespace
}  // namespace sidetable::apply
