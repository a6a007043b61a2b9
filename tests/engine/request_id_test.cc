// Client request ids (Batch::SetClientRequestId): a retry of a committed
// write is answered with its first outcome and executes nothing; the memory
// survives a reopen, is bounded by count and age, is per caller, refuses an
// id reused for a different request, and shows in the change log.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "engine/etag.h"
#include "engine/internal/request_log.h"
#include "engine/limits.h"
#include "engine/write_group.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::testing {
namespace {

class RequestIdTest : public EngineTest {
 protected:
  void SetUp() override {
    options_.clock = [this] { return now_; };
    EngineTest::SetUp();
    ASSERT_TRUE(engine_->CreateTable("Items", "").ok());
  }

  static Batch WithId(Batch b, const std::string& id, const std::string& caller = "app") {
    b.SetClientRequestId(id).SetCaller(caller);
    return b;
  }
  Result<WriteResult> InsertWithId(const std::string& id, const std::string& rk, int n = 0,
                                   const std::string& caller = "app") {
    return Run(WithId(std::move(Batch("Items").Insert(MakeEntity("p", rk, n))), id, caller));
  }
  // Sends (id, rk) again and expects its first outcome back, nothing executed.
  void ExpectReplayed(const std::string& id, const std::string& rk) {
    auto retry = InsertWithId(id, rk);
    ASSERT_TRUE(retry.ok()) << id << ": " << retry.status().ToString();
    EXPECT_TRUE(retry->replayed) << id;
  }
  static std::string Nth(const char* prefix, int i) { return prefix + std::to_string(i); }
  // With a window of `window` ids: ids "<prefix>0".. of RowKeys "r0"..,
  // then a reopen (which rebuilds the lookups' filters from the store).
  void InsertIdsAndReopen(uint64_t window, int ids, const char* prefix) {
    options_.request_id_window_count = window;
    Reopen();
    for (int i = 0; i < ids; i++) ASSERT_TRUE(InsertWithId(Nth(prefix, i), Nth("r", i)).ok()) << i;
    Reopen();
  }
  size_t LogRecordsWithId(const std::string& id) {
    auto changes = engine_->ReadChanges(1, 100000, 1 << 30);
    EXPECT_TRUE(changes.ok());
    size_t n = 0;
    for (const auto& r : changes->records) n += r.client_request_id == id;
    return n;
  }

  int64_t now_ = 638'000'000'000'000'000;  // fixed ticks; tests move it
};

TEST_F(RequestIdTest, ARetryOfACommittedInsertGetsTheFirstOutcome) {
  auto first = InsertWithId("req-1", "r");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->replayed);
  const uint64_t lsn = engine_->Stats().last_lsn;

  // Without the id this would be EntityAlreadyExists: the retry's own first attempt.
  auto retry = InsertWithId("req-1", "r");
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(retry->replayed);
  EXPECT_EQ(retry->lsn, first->lsn);
  EXPECT_EQ(retry->timestamp, first->timestamp);
  EXPECT_EQ(retry->etags, first->etags);
  EXPECT_EQ(engine_->Stats().last_lsn, lsn) << "the retry committed something";
  EXPECT_EQ(LogRecordsWithId("req-1"), 1u);
}

TEST_F(RequestIdTest, AMergeRetriedAfterANewerWriteIsNotAppliedAgain) {
  ASSERT_TRUE(InsertWithId("a", "r", 1).ok());
  Entity m = MakeEntity("p", "r", 2);
  auto merge = Run(WithId(std::move(Batch("Items").Merge(m)), "b"));
  ASSERT_TRUE(merge.ok());
  // Someone else writes n=3 after the merge.
  ASSERT_TRUE(Run(std::move(Batch("Items").InsertOrReplace(MakeEntity("p", "r", 3)))).ok());
  auto retry = Run(WithId(std::move(Batch("Items").Merge(m)), "b"));
  ASSERT_TRUE(retry.ok());
  EXPECT_TRUE(retry->replayed);
  EXPECT_EQ(retry->etags, merge->etags);
  auto e = engine_->Get("Items", "p", "r", nullptr);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->Find("n")->ToString(), "3") << "the retried merge overwrote a newer write";
}

TEST_F(RequestIdTest, TheOutcomeOfEveryOperationKindIsRemembered) {
  ASSERT_TRUE(InsertWithId("seed", "d").ok());
  Batch b("Items");
  b.InsertOrMerge(MakeEntity("p", "x", 1)).Delete("p", "d").InsertOrReplace(MakeEntity("p", "y"));
  auto first = Run(WithId(b, "egt"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->etags.size(), 3u);
  EXPECT_EQ(first->etags[1], "") << "a delete has no ETag";
  auto retry = Run(WithId(b, "egt"));
  ASSERT_TRUE(retry.ok());
  EXPECT_TRUE(retry->replayed);
  EXPECT_EQ(retry->etags, first->etags);
  EXPECT_EQ(retry->etags[0], MakeETag(first->lsn));
}

TEST_F(RequestIdTest, RemembersAcrossAReopen) {
  auto first = InsertWithId("durable", "r");
  ASSERT_TRUE(first.ok());
  Reopen();
  auto retry = InsertWithId("durable", "r");
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(retry->replayed);
  EXPECT_EQ(retry->lsn, first->lsn);
}

TEST_F(RequestIdTest, AFailedAttemptIsNotRememberedAndItsRetryRunsAgain) {
  ASSERT_TRUE(Insert("Items", MakeEntity("p", "taken")).ok());
  EXPECT_FAILS_UNCHANGED(InsertWithId("f", "taken"), Code::kEntityAlreadyExists);
  ASSERT_TRUE(Run(std::move(Batch("Items").Delete("p", "taken"))).ok());
  auto retry = InsertWithId("f", "taken");
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_FALSE(retry->replayed) << "a failure changed nothing, so nothing is replayed";
}

TEST_F(RequestIdTest, AnIdReusedForADifferentRequestIsRefusedAndChangesNothing) {
  ASSERT_TRUE(InsertWithId("same", "r1", 1).ok());
  EXPECT_FAILS_UNCHANGED(InsertWithId("same", "r2", 1), Code::kInvalidInput);  // other key
  EXPECT_FAILS_UNCHANGED(InsertWithId("same", "r1", 2), Code::kInvalidInput);  // other value
  EXPECT_FAILS_UNCHANGED(
      Run(WithId(std::move(Batch("Items").InsertOrReplace(MakeEntity("p", "r1", 1))), "same")),
      Code::kInvalidInput);  // other kind
}

// Values without bytes (Int32, Int64, Double, Boolean, DateTime) are part of
// the request too: before session 20 the fingerprint left them out, and an
// id reused with only such a value changed was answered as a retry.
TEST_F(RequestIdTest, AnIdReusedWithOnlyANumberChangedIsRefused) {
  auto with = [](Value v) {
    Entity e = MakeEntity("p", "r1", 1);
    e.Set("x", std::move(v));
    return std::move(Batch("Items").Insert(std::move(e)));
  };
  ASSERT_TRUE(Run(WithId(with(Value::Int64(5)), "num")).ok());
  EXPECT_FAILS_UNCHANGED(Run(WithId(with(Value::Int64(6)), "num")), Code::kInvalidInput);
  ASSERT_TRUE(Run(WithId(std::move(Batch("Items").InsertOrReplace(MakeEntity("p", "r1", 1).Set("b", Value::Boolean(true)))), "bool")).ok());
  EXPECT_FAILS_UNCHANGED(
      Run(WithId(std::move(Batch("Items").InsertOrReplace(MakeEntity("p", "r1", 1).Set("b", Value::Boolean(false)))), "bool")),
      Code::kInvalidInput);
  // The same request again is still a retry.
  auto again = Run(WithId(std::move(Batch("Items").InsertOrReplace(MakeEntity("p", "r1", 1).Set("b", Value::Boolean(true)))), "bool"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->replayed);
}

// One id, two requests on different partitions: the partition lock does not
// serialise them, so both used to miss the request log and both committed
// (found from outside with four clients). In one WriteGroup (a WriteMany),
// the first is deferred, not yet in the log, when the second is looked up.
TEST_F(RequestIdTest, AnIdDeferredInAGroupIsRefusedForAnotherPartition) {
  WriteGroup group(engine_.get());
  auto first = engine_->Execute(
      WithId(std::move(Batch("Items").Insert(MakeEntity("p1", "r"))), "one"), &group);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = engine_->Execute(
      WithId(std::move(Batch("Items").Insert(MakeEntity("p2", "r"))), "one"), &group);
  EXPECT_EQ(second.status().code(), Code::kInvalidInput) << second.status().ToString();
  ASSERT_TRUE(group.Flush().ok());
  EXPECT_EQ(engine_->Get("Items", "p2", "r").status().code(), Code::kResourceNotFound);
  EXPECT_EQ(LogRecordsWithId("one"), 1u);
  // The first is committed: its retry is answered, and the other request
  // is still refused, now by the request log.
  auto retry = Run(WithId(std::move(Batch("Items").Insert(MakeEntity("p1", "r"))), "one"));
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_TRUE(retry->replayed);
  EXPECT_FAILS_UNCHANGED(
      Run(WithId(std::move(Batch("Items").Insert(MakeEntity("p2", "r"))), "one")),
      Code::kInvalidInput);
}

// The same, across threads: a request with the id of a write another
// thread's group holds uncommitted is refused at once; before, it missed
// the log, waited for the group's commit and committed too.
TEST_F(RequestIdTest, AnIdHeldUncommittedByAnotherThreadIsRefusedNotExecuted) {
  WriteGroup group(engine_.get());
  ASSERT_TRUE(
      engine_
          ->Execute(WithId(std::move(Batch("Items").Insert(MakeEntity("p1", "r"))), "held"), &group)
          .ok());
  std::atomic<bool> done{false};
  Result<WriteResult> other = Status(Code::kInternal, "not run");
  std::thread t([&] {
    other = Run(WithId(std::move(Batch("Items").Insert(MakeEntity("p2", "r"))), "held"));
    done = true;
  });
  // Long enough for the other thread to look the id up while the group
  // holds it (the old code then waited for the commit queue: bounded by
  // the flush below).
  for (int i = 0; i < 50 && !done; i++) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(group.Flush().ok());
  t.join();
  EXPECT_EQ(other.status().code(), Code::kInvalidInput) << other.status().ToString();
  EXPECT_EQ(engine_->Get("Items", "p2", "r").status().code(), Code::kResourceNotFound);
  EXPECT_EQ(LogRecordsWithId("held"), 1u);
}

// Many threads, one id each round, each on its own partition, started
// together: exactly one commits, the others are refused, and a retry of
// the one that committed is answered with its outcome.
TEST_F(RequestIdTest, OneIdSentOnManyPartitionsAtOnceCommitsOnce) {
  constexpr int kThreads = 6, kRounds = 40;
  std::vector<std::vector<Result<WriteResult>>> results(kThreads);
  std::atomic<int> arrived{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; r++) {
        // A bounded spin: everyone starts round r together.
        arrived.fetch_add(1);
        for (int spin = 0; arrived.load() < (r + 1) * kThreads && spin < 2'000'000; spin++)
          std::this_thread::yield();
        results[t].push_back(Run(WithId(
            std::move(Batch("Items").Insert(MakeEntity(Nth("p", t), Nth("r", r)))), Nth("id", r))));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int r = 0; r < kRounds; r++) {
    int committed = -1, count = 0;
    for (int t = 0; t < kThreads; t++) {
      const auto& res = results[t][r];
      if (res.ok()) {
        EXPECT_FALSE(res->replayed) << "round " << r;
        committed = t;
        count++;
      } else {
        EXPECT_EQ(res.status().code(), Code::kInvalidInput)
            << "round " << r << ": " << res.status().ToString();
      }
    }
    ASSERT_EQ(count, 1) << "round " << r << ": requests with one id that committed";
    EXPECT_EQ(LogRecordsWithId(Nth("id", r)), 1u) << "round " << r;
    auto retry =
        Run(WithId(std::move(Batch("Items").Insert(MakeEntity(Nth("p", committed), Nth("r", r)))),
                   Nth("id", r)));
    ASSERT_TRUE(retry.ok()) << "round " << r << ": " << retry.status().ToString();
    EXPECT_TRUE(retry->replayed) << "round " << r;
  }
}

TEST_F(RequestIdTest, IdsArePerCaller) {
  ASSERT_TRUE(InsertWithId("shared", "r1", 0, "alice").ok());
  auto bob = InsertWithId("shared", "r2", 0, "bob");
  ASSERT_TRUE(bob.ok()) << bob.status().ToString();
  EXPECT_FALSE(bob->replayed);
}

TEST_F(RequestIdTest, BadIdsAreRefusedAndChangeNothing) {
  for (const std::string& bad : {std::string(Limits::kMaxClientRequestIdBytes + 1, 'a'),
                                 std::string("with space"), std::string("tab\tid"),
                                 std::string("caf\xC3\xA9")}) {
    EXPECT_FAILS_UNCHANGED(InsertWithId(bad, "r"), Code::kInvalidInput);
  }
  ASSERT_TRUE(InsertWithId(std::string(Limits::kMaxClientRequestIdBytes, 'a'), "r").ok());
}

TEST_F(RequestIdTest, TheChangeRecordCarriesTheId) {
  ASSERT_TRUE(InsertWithId("audit-me", "r").ok());
  ASSERT_TRUE(Insert("Items", MakeEntity("p", "r2")).ok());
  auto changes = engine_->ReadChanges(1, 100, 1 << 20);
  ASSERT_TRUE(changes.ok());
  ASSERT_GE(changes->records.size(), 3u);
  const auto& recs = changes->records;
  EXPECT_EQ(recs[recs.size() - 2].client_request_id, "audit-me");
  EXPECT_EQ(recs.back().client_request_id, "");
}

TEST_F(RequestIdTest, TheWindowIsBoundedByCount) {
  options_.request_id_window_count = 10;
  Reopen();
  ASSERT_TRUE(InsertWithId("oldest", "r0").ok());
  // 10 fill the first generation; the next 10 the second; the 21st starts a
  // third, which drops the first.
  for (int i = 1; i <= 9; i++) ASSERT_TRUE(InsertWithId("id" + std::to_string(i), "r" + std::to_string(i)).ok());
  for (int i = 10; i <= 19; i++) ASSERT_TRUE(InsertWithId("id" + std::to_string(i), "r" + std::to_string(i)).ok());
  // Still remembered: fewer than `count` ids newer than its generation.
  auto retry = InsertWithId("oldest", "r0");
  ASSERT_TRUE(retry.ok());
  EXPECT_TRUE(retry->replayed);
  ASSERT_TRUE(InsertWithId("id20", "r20").ok());
  // Forgotten now: the retry runs again and meets its own first attempt.
  EXPECT_FAILS_UNCHANGED(InsertWithId("oldest", "r0"), Code::kEntityAlreadyExists);
  auto recent = InsertWithId("id15", "r15");
  ASSERT_TRUE(recent.ok());
  EXPECT_TRUE(recent->replayed);
}

TEST_F(RequestIdTest, TheWindowIsBoundedByAgeAndSurvivesReopenWithItsGeneration) {
  options_.request_id_window_seconds = 60;
  Reopen();
  ASSERT_TRUE(InsertWithId("early", "r0").ok());
  now_ += 59 * kTicksPerSecond;
  Reopen();  // the generation's start time is kept, not reset to now
  now_ += 2 * kTicksPerSecond;
  ASSERT_TRUE(InsertWithId("second-gen", "r1").ok());  // 61 s: starts generation 2
  auto retry = InsertWithId("early", "r0");
  ASSERT_TRUE(retry.ok());
  EXPECT_TRUE(retry->replayed) << "the previous generation is still read";
  now_ += 61 * kTicksPerSecond;
  ASSERT_TRUE(InsertWithId("third-gen", "r2").ok());  // drops generation 1
  EXPECT_FAILS_UNCHANGED(InsertWithId("early", "r0"), Code::kEntityAlreadyExists);
  auto kept = InsertWithId("second-gen", "r1");
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->replayed);
}

TEST_F(RequestIdTest, BothGenerationsAreReadAfterAReopen) {
  // Generation 1: ids 0..9; generation 2: ids 10..14.
  InsertIdsAndReopen(10, 15, "id");
  // Each id of both generations is still answered with its first outcome,
  // and a new id runs.
  for (int i = 0; i < 15; i++) ExpectReplayed(Nth("id", i), Nth("r", i));
  auto fresh = InsertWithId(Nth("id", 15), Nth("r", 15));
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE(fresh->replayed);
}

TEST_F(RequestIdTest, ManyIdsAcrossGenerationsAreEachRememberedUntilTheirWindowEnds) {
  // Enough ids that the lookups' filters hold many (1,000 a generation),
  // across two rolls and a reopen: no id still in the window is missed.
  InsertIdsAndReopen(1000, 2500, "bulk-");
  // Generations: 1 = ids 0..999 (dropped when 3 started), 2 = 1000..1999, 3 = 2000..2499.
  for (int i = 1000; i < 2500; i += 7) ExpectReplayed(Nth("bulk-", i), Nth("r", i));
  EXPECT_FAILS_UNCHANGED(InsertWithId(Nth("bulk-", 5), Nth("r", 5)), Code::kEntityAlreadyExists);
}

TEST_F(RequestIdTest, FencedBatchesRememberWhatWasSkipped) {
  ASSERT_TRUE(engine_->CreateTable("Idx", "").ok());
  Entity d = MakeEntity("p", "a");
  d.Set(kFenceProperty, Value::Int64(5));
  ASSERT_TRUE(Run(std::move(Batch("Idx").FencedUpsert(d, 5))).ok());
  Entity newer = MakeEntity("p", "b");
  newer.Set(kFenceProperty, Value::Int64(3));
  Batch b("Idx");
  b.FencedUpsert(d, 4).FencedUpsert(newer, 3);  // first fenced out, second written
  auto first = Run(WithId(b, "fenced"));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->skipped, std::vector<uint32_t>{0});
  auto retry = Run(WithId(b, "fenced"));
  ASSERT_TRUE(retry.ok());
  EXPECT_TRUE(retry->replayed);
  EXPECT_EQ(retry->skipped, first->skipped);
  EXPECT_EQ(retry->etags, first->etags);
}

// A request's fingerprint is kept in the request log across restarts and
// upgrades: a retry sent after an upgrade must still match it, so the
// function may not change. The value below was computed by the
// implementation that first stored fingerprints (one XXH3 state fed field
// by field); a faster implementation must give the same.
TEST(RequestFingerprintTest, SameValuesAcrossReleases) {
  Batch b("Items");
  Entity e = MakeEntity("p1", "r1", 7);
  e.Set("blob", Value::Binary(std::string(3000, 'b'))).Set("when", Value::Int64(-5));
  b.Insert(e);
  b.Update(MakeEntity("p1", "r2", 8), "W/\"datetime'2026-12-03T11%3A00%3A00.0000000Z'\"");
  b.Delete("p1", "r3");
  b.FencedUpsert(MakeEntity("p1", "r4", 9), 42);
  // Outcomes stored before session 20 (formats 1 and 2) hold this one.
  EXPECT_EQ(LegacyRequestFingerprint(b), 13276257281719135157u);
  // Format 3's, with the numeric values.
  EXPECT_EQ(RequestFingerprint(b), 17678330843760747559u);
  // And it depends on what it should: one changed byte of a value, or the fence.
  Batch c = b;
  c.FencedUpsert(MakeEntity("p1", "r5", 9), 43);
  EXPECT_NE(RequestFingerprint(c), RequestFingerprint(b));
  Batch d("Items");
  Entity e2 = MakeEntity("p1", "r1", 7);
  e2.Set("blob", Value::Binary(std::string(2999, 'b') + "c")).Set("when", Value::Int64(-5));
  d.Insert(e2);
  d.Update(MakeEntity("p1", "r2", 8), "W/\"datetime'2026-12-03T11%3A00%3A00.0000000Z'\"");
  d.Delete("p1", "r3");
  d.FencedUpsert(MakeEntity("p1", "r4", 9), 42);
  EXPECT_NE(RequestFingerprint(d), RequestFingerprint(b));
}

// Each numeric type's value changes the fingerprint; the legacy one did not
// see them (which is why it is only compared with old outcomes).
TEST(RequestFingerprintTest, NumericValuesCount) {
  const std::vector<std::pair<Value, Value>> pairs = {
      {Value::Int32(1), Value::Int32(2)},       {Value::Int64(-5), Value::Int64(-6)},
      {Value::Double(0.5), Value::Double(0.25)}, {Value::Boolean(true), Value::Boolean(false)},
      {Value::DateTime(kUnixEpochTicks), Value::DateTime(kUnixEpochTicks + 1)}};
  for (const auto& [a, b] : pairs) {
    Entity ea = MakeEntity("p", "r"), eb = MakeEntity("p", "r");
    ea.Set("v", a);
    eb.Set("v", b);
    Batch ba("T"), bb("T");
    ba.Insert(ea);
    bb.Insert(eb);
    EXPECT_NE(RequestFingerprint(ba), RequestFingerprint(bb)) << a.ToString();
    EXPECT_EQ(LegacyRequestFingerprint(ba), LegacyRequestFingerprint(bb)) << a.ToString();
  }
}

// The stored outcome says which fingerprint it holds: what this release
// writes is format 3 (the full one); formats 1 and 2, written before, are
// read as legacy, so a retry across the upgrade is compared with
// LegacyRequestFingerprint and still matches (engine_write.cc).
TEST(RememberedOutcomeTest, FormatsSayWhichFingerprint) {
  RememberedOutcome o;
  o.fingerprint = 0x1122334455667788u;
  o.lsn = 42;
  o.version = 42;
  o.time = 638'000'000'000'000'000;
  o.marks = {RememberedOutcome::kWritten, RememberedOutcome::kSkipped};
  std::string v;
  EncodeOutcome(o, &v);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0], 3);
  RememberedOutcome back;
  ASSERT_TRUE(DecodeOutcome(v, &back).ok());
  EXPECT_FALSE(back.legacy_fingerprint);
  EXPECT_EQ(back.fingerprint, o.fingerprint);
  EXPECT_EQ(back.lsn, 42u);
  EXPECT_EQ(back.version, 42u);
  EXPECT_EQ(back.time, o.time);
  EXPECT_EQ(back.marks, o.marks);

  // Format 1 as releases before scale-out wrote it (no version, no flags),
  // and format 2 (both), byte by byte.
  std::string v1(1, '\x01');
  for (int i = 0; i < 8; i++) v1.push_back(static_cast<char>(0x88 - 0x11 * i));  // fingerprint, little-endian
  v1.push_back(42);                                                              // lsn, varint
  for (int i = 0; i < 8; i++) v1.push_back(static_cast<char>((static_cast<uint64_t>(o.time) >> (8 * i)) & 0xff));
  v1.push_back(2);  // two marks
  v1.push_back(0);
  v1.push_back(2);
  ASSERT_TRUE(DecodeOutcome(v1, &back).ok());
  EXPECT_TRUE(back.legacy_fingerprint);
  EXPECT_EQ(back.fingerprint, o.fingerprint);
  EXPECT_EQ(back.version, 42u);
  EXPECT_EQ(back.marks, o.marks);
  std::string v2 = v1;
  v2[0] = 2;
  v2.push_back(43);  // version
  v2.push_back(1);   // flags: any fingerprint
  ASSERT_TRUE(DecodeOutcome(v2, &back).ok());
  EXPECT_TRUE(back.legacy_fingerprint);
  EXPECT_TRUE(back.any_fingerprint);
  EXPECT_EQ(back.version, 43u);
  // An unknown format is corruption, not an outcome.
  std::string v9 = v2;
  v9[0] = 9;
  EXPECT_EQ(DecodeOutcome(v9, &back).code(), Code::kInternal);
}

}  // namespace
}  // namespace sidetable::testing
