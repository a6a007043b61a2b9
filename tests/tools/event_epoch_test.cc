// Scale-out in the change event (docs/change-events.md): "epoch" on data
// events (absent = 0), the ShardClaimed event, and the EpochFilter rule
// readers apply to them.
#include <gtest/gtest.h>

#include "engine/etag.h"
#include "events/epoch_filter.h"
#include "events/event.h"

namespace sidetable::events {
namespace {

ChangeRecord DataRecord(uint64_t epoch) {
  ChangeRecord r;
  r.lsn = 12;
  r.epoch = epoch;
  r.kind = ChangeKind::kEntities;
  r.commit_time = 638'000'000'000'000'000;
  r.table = "Orders";
  r.table_id = 3;
  r.partition_key = "p";
  r.caller = "app";
  ChangeOp op;
  op.row_key = "r";
  op.kind = OpKind::kInsert;
  op.version = epoch << 40 | r.lsn;
  op.etag = MakeETag(op.version);
  Entity e;
  e.partition_key = "p";
  e.row_key = "r";
  e.timestamp = r.commit_time;
  e.etag = op.etag;
  e.Set("n", Value::Int32(1));
  op.after = e;
  r.ops.push_back(op);
  return r;
}

TEST(EventEpochTest, AnEpochRoundTripsAndIsAbsentWhenZero) {
  const std::string zero = EncodeEvent(DataRecord(0), "s1");
  EXPECT_EQ(zero.find("\"epoch\""), std::string::npos) << zero;
  Event ev;
  ASSERT_TRUE(DecodeEvent(zero, &ev).ok());
  EXPECT_EQ(ev.record.epoch, 0u);

  const std::string seven = EncodeEvent(DataRecord(7), "s1");
  EXPECT_NE(seven.find("\"epoch\":7"), std::string::npos) << seven;
  ASSERT_TRUE(DecodeEvent(seven, &ev).ok());
  EXPECT_EQ(ev.record.epoch, 7u);
  ASSERT_EQ(ev.record.ops.size(), 1u);
  EXPECT_EQ(ev.record.ops[0].version, uint64_t{7} << 40 | 12);
  EXPECT_EQ(ev.record.ops[0].etag, MakeETag(uint64_t{7} << 40 | 12));
  // Re-encoded: the same text.
  EXPECT_EQ(EncodeEvent(ev.record, ev.source), seven);
}

TEST(EventEpochTest, AMistypedEpochIsRefused) {
  std::string text = EncodeEvent(DataRecord(7), "s1");
  text.replace(text.find("\"epoch\":7"), 9, "\"epoch\":-7");
  Event ev;
  Status s = DecodeEvent(text, &ev);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("epoch"), std::string::npos) << s.ToString();
}

ChangeRecord Claim(uint64_t epoch, int32_t shard) {
  ChangeRecord r;
  r.kind = ChangeKind::kShardClaimed;
  r.epoch = epoch;
  r.shard = shard;
  r.commit_time = 638'000'000'000'000'000;
  return r;
}

TEST(EventEpochTest, AShardClaimRoundTrips) {
  const std::string text = EncodeEvent(Claim(9, 4), "member-2");
  EXPECT_EQ(text,
            "{\"schema\":1,\"kind\":\"ShardClaimed\",\"source\":\"member-2\",\"epoch\":9,"
            "\"shard\":4,\"time\":\"" + FormatDateTime(638'000'000'000'000'000) + "\"}");
  Event ev;
  ASSERT_TRUE(DecodeEvent(text, &ev).ok()) << DecodeEvent(text, &ev).ToString();
  EXPECT_EQ(ev.source, "member-2");
  EXPECT_EQ(ev.record.kind, ChangeKind::kShardClaimed);
  EXPECT_EQ(ev.record.epoch, 9u);
  EXPECT_EQ(ev.record.shard, 4);
  EXPECT_EQ(ev.record.caller, "member-2");
  EXPECT_EQ(ev.record.commit_time, 638'000'000'000'000'000);
  EXPECT_TRUE(ev.record.ops.empty());
  EXPECT_EQ(EncodeEvent(ev.record, ev.source), text);
  // The stream decoder agrees.
  EventDecoder decoder;
  Event ev2;
  ASSERT_TRUE(decoder.Decode(text, &ev2).ok());
  EXPECT_EQ(ev2.record.shard, 4);
}

// A claim as the sidecar writes it (sidecar/cluster/records.cc,
// EncodeClaimEvent): no "time". Until session 42 DecodeEvent required one,
// so sidetable-worker dead-lettered every real claim and replay/audit
// counted each as undecodable (exit 6), and neither fenced anything.
TEST(EventEpochTest, AClaimWithoutATimeAsTheSidecarWritesItDecodes) {
  const std::string text =
      R"({"schema":1,"kind":"ShardClaimed","source":"m2","epoch":7,"shard":3,"service":"orders"})";
  for (int stream = 0; stream < 2; stream++) {
    SCOPED_TRACE(stream ? "EventDecoder" : "DecodeEvent");
    Event ev;
    EventDecoder decoder;
    Status s = stream ? decoder.Decode(text, &ev) : DecodeEvent(text, &ev);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(ev.record.kind, ChangeKind::kShardClaimed);
    EXPECT_EQ(ev.record.epoch, 7u);
    EXPECT_EQ(ev.record.shard, 3);
    EXPECT_EQ(ev.record.service, "orders");
    EXPECT_EQ(ev.record.caller, "m2");
    EXPECT_EQ(ev.record.commit_time, 0);
    // And it fences: a record of the replaced owner after it is skipped.
    EpochFilter f;
    EXPECT_EQ(f.Check(0, ev.record), EpochFilter::Verdict::kClaim);
    EXPECT_EQ(f.Check(0, DataRecord(6)), EpochFilter::Verdict::kFenced);
    EXPECT_EQ(f.Check(0, DataRecord(7)), EpochFilter::Verdict::kApply);
  }
}

TEST(EventEpochTest, BadClaimsAreRefused) {
  const std::string time = FormatDateTime(638'000'000'000'000'000);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"schema":1,"kind":"ShardClaimed","source":"m","epoch":3,"time":")" + time + "\"}",
       "shard"},
      {R"({"schema":1,"kind":"ShardClaimed","source":"m","epoch":3,"shard":-1,"time":")" + time +
           "\"}",
       "shard -1"},
      {R"({"schema":1,"kind":"ShardClaimed","source":"m","epoch":3,"shard":"2","time":")" + time +
           "\"}",
       "shard"},
      {R"({"schema":1,"kind":"ShardClaimed","source":"m","epoch":3,"shard":4294967296,"time":")" +
           time + "\"}",
       "shard"},
      {R"({"schema":1,"kind":"ShardClaimed","source":"m","epoch":0,"shard":2,"time":")" + time +
           "\"}",
       "epoch 0"},
      {R"({"schema":1,"kind":"ShardClaimed","source":"m","shard":2,"time":")" + time + "\"}",
       "epoch"},
      {R"({"schema":1,"kind":"ShardClaimed","source":"m","epoch":3,"shard":2,"time":5})",
       "envelope"},
      {R"({"schema":1,"kind":"ShardClaimed","epoch":3,"shard":2,"time":")" + time + "\"}",
       "envelope"},
      {R"({"schema":1,"kind":"ShardClaimed","source":"m","epoch":3,"shard":2,"time":"yesterday"})",
       "time"},
  };
  for (const auto& [text, what] : cases) {
    SCOPED_TRACE(text);
    Event ev;
    Status s = DecodeEvent(text, &ev);
    EXPECT_EQ(s.code(), Code::kInvalidInput);
    EXPECT_NE(s.message().find(what), std::string::npos) << s.ToString();
  }
}

TEST(EpochFilterTest, ClaimsRaiseTheFloorPerPartition) {
  EpochFilter f;
  EXPECT_EQ(f.Check(0, DataRecord(0)), EpochFilter::Verdict::kApply);
  EXPECT_EQ(f.Check(0, DataRecord(1)), EpochFilter::Verdict::kApply);
  EXPECT_EQ(f.Check(0, Claim(2, 0)), EpochFilter::Verdict::kClaim);
  EXPECT_EQ(f.Check(0, DataRecord(1)), EpochFilter::Verdict::kFenced);
  EXPECT_EQ(f.Check(0, DataRecord(2)), EpochFilter::Verdict::kApply);
  EXPECT_EQ(f.Check(1, DataRecord(1)), EpochFilter::Verdict::kApply) << "another partition";
  EXPECT_EQ(f.Check(0, Claim(1, 0)), EpochFilter::Verdict::kClaim);
  EXPECT_EQ(f.Floor(0), 2u) << "an older claim lowers nothing";
  EXPECT_EQ(f.fenced(), 1u);
  f.SeedFloor(1, 5);
  EXPECT_EQ(f.Check(1, DataRecord(4)), EpochFilter::Verdict::kFenced);
}

// A sidecar of another service configured with this change topic claims its
// partitions with its own group's epochs: for a reader that knows its
// service, such a claim fences nothing (else it fenced every later write of
// this service's owners: the outside tester's finding). A claim naming no
// service (written before claims named one) still fences, and a reader that
// knows no service (a worker, replay) fences with every claim, as before.
TEST(EpochFilterTest, AClaimOfAnotherServiceFencesNothingForAReaderOfThisService) {
  ChangeRecord foreign = Claim(9, 0);
  foreign.service = "o2";
  ChangeRecord own = Claim(2, 0);
  own.service = "orders";
  EpochFilter f("orders");
  EXPECT_EQ(f.Check(0, own), EpochFilter::Verdict::kClaim);
  EXPECT_EQ(f.Check(0, foreign), EpochFilter::Verdict::kForeign);
  EXPECT_EQ(f.Floor(0), 2u);
  EXPECT_EQ(f.Check(0, DataRecord(2)), EpochFilter::Verdict::kApply);
  EXPECT_EQ(f.foreign_claims(), 1u);
  EXPECT_EQ(f.Check(0, Claim(3, 0)), EpochFilter::Verdict::kClaim)
      << "a claim without a service is this service's";
  EXPECT_EQ(f.Check(0, DataRecord(2)), EpochFilter::Verdict::kFenced);

  EpochFilter any;
  EXPECT_EQ(any.Check(0, foreign), EpochFilter::Verdict::kClaim);
  EXPECT_EQ(any.Check(0, DataRecord(2)), EpochFilter::Verdict::kFenced);
}

// A table event with an epoch was published once, by the member that wrote
// its record on the cluster topic, not by an owner of the shard it lands
// on: no claim fences it (docs/scale-out.md, "Table events in a cluster").
// One with epoch 0 (every member published one before) is fenced as before.
TEST(EpochFilterTest, TableEventsWithAnEpochAreNeverFenced) {
  EpochFilter f;
  EXPECT_EQ(f.Check(0, Claim(7, 0)), EpochFilter::Verdict::kClaim);
  for (ChangeKind kind : {ChangeKind::kTableCreated, ChangeKind::kTableDeleted}) {
    ChangeRecord table;
    table.kind = kind;
    table.table = "Orders";
    table.lsn = 4;
    table.epoch = 2;  // below the floor: the highest owner epoch its member knew
    EXPECT_EQ(f.Check(0, table), EpochFilter::Verdict::kApply) << ChangeKindName(kind);
    table.epoch = 0;
    EXPECT_EQ(f.Check(0, table), EpochFilter::Verdict::kFenced) << ChangeKindName(kind);
  }
  EXPECT_EQ(f.Check(0, DataRecord(2)), EpochFilter::Verdict::kFenced) << "data records still are";
}

TEST(EventEpochTest, AClaimsServiceRoundTripsAndIsAbsentWhenEmpty) {
  ChangeRecord claim = Claim(4, 1);
  EXPECT_EQ(EncodeEvent(claim, "m1").find("service"), std::string::npos);
  claim.service = "orders";
  const std::string text = EncodeEvent(claim, "m1");
  EXPECT_TRUE(text.starts_with(R"({"schema":1,"kind":"ShardClaimed")"))
      << text;  // as workers look for it
  Event ev;
  ASSERT_TRUE(DecodeEvent(text, &ev).ok());
  EXPECT_EQ(ev.record.service, "orders");
}

}  // namespace
}  // namespace sidetable::events
