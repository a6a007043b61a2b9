// The state topic's keys, values and marks (sidecar/cluster/state_records.h).
#include "sidecar/cluster/state_records.h"

#include <gtest/gtest.h>

#include "events/event.h"

namespace sidetable::cluster {
namespace {

TEST(StateRecordsTest, EntityKeysRoundTripWhateverTheKeysHold) {
  // Key characters the encoding itself uses, and an empty RowKey.
  for (const auto& [pk, rk] : std::vector<std::pair<std::string, std::string>>{
           {"plain", "row"}, {"a/b:c", "d/e:f"}, {"12:", "3"}, {"", ""}, {"p", ""}, {"\xc3\xa9t\xc3\xa9", "x"}}) {
    const std::string key = StateEntityKey({7, 3}, "Orders", pk, rk);
    StateKey k;
    ASSERT_TRUE(DecodeStateKey(key, &k).ok()) << key;
    EXPECT_EQ(k.writer, (StateWriterId{7, 3}));
    EXPECT_FALSE(k.begin);
    EXPECT_EQ(k.table, "Orders");
    EXPECT_EQ(k.partition_key, pk) << key;
    EXPECT_EQ(k.row_key, rk) << key;
  }
  // Two entities whose concatenated keys agree are still two keys.
  EXPECT_NE(StateEntityKey({1, 1}, "T", "ab", "c"), StateEntityKey({1, 1}, "T", "a", "bc"));
  // Writers differ in the prefix.
  EXPECT_NE(StateEntityKey({1, 1}, "T", "a", "b"), StateEntityKey({1, 2}, "T", "a", "b"));
  EXPECT_NE(StateEntityKey({1, 1}, "T", "a", "b"), StateEntityKey({2, 1}, "T", "a", "b"));
}

TEST(StateRecordsTest, TheBeginKeyAndBadKeys) {
  StateKey k;
  ASSERT_TRUE(DecodeStateKey(StateBeginKey({4, 2}), &k).ok());
  EXPECT_TRUE(k.begin);
  EXPECT_EQ(k.writer, (StateWriterId{4, 2}));
  for (std::string bad : {"", "begin", "4/begin", "x.1/begin", "4.y/T/1:ab", "4.1/T", "4.1//1:a", "4.1/T/9:ab",
                          "4.1/T/ab", "4.1/T/-1:ab", "1/2.3/T/1:a"}) {
    EXPECT_EQ(DecodeStateKey(bad, &k).code(), Code::kInvalidInput) << bad;
  }
}

TEST(StateRecordsTest, WritersOrderByEpochThenIncarnation) {
  EXPECT_TRUE((StateWriterId{1, 9}) < (StateWriterId{2, 1}));
  EXPECT_TRUE((StateWriterId{2, 1}) < (StateWriterId{2, 2}));
  EXPECT_FALSE((StateWriterId{2, 2}) < (StateWriterId{2, 2}));
}

ChangeRecord OneInsert(const std::string& pk, const std::string& rk, uint64_t version) {
  ChangeRecord r;
  r.lsn = 5;
  r.table = "Orders";
  r.partition_key = pk;
  r.client_request_id = "req-1";
  ChangeOp op;
  op.row_key = rk;
  op.kind = OpKind::kInsert;
  op.version = version;
  op.etag = "W/\"x\"";
  Entity e;
  e.partition_key = pk;
  e.row_key = rk;
  e.Set("N", Value::Int32(3));
  op.after = e;
  r.ops.push_back(op);
  return r;
}

TEST(StateRecordsTest, AValueBecomesTheEntityWithoutTheRequestId) {
  const std::string value = events::EncodeEvent(OneInsert("p", "r", 42), "owner");
  StateKey k;
  ASSERT_TRUE(DecodeStateKey(StateEntityKey({1, 1}, "Orders", "p", "r"), &k).ok());
  ChangeRecord out;
  ASSERT_TRUE(StateRecordToChange(k, value.data(), value.size(), 0, &out).ok());
  ASSERT_EQ(out.ops.size(), 1u);
  EXPECT_EQ(out.ops[0].version, 42u);
  ASSERT_TRUE(out.ops[0].after.has_value());
  EXPECT_EQ(out.ops[0].after->Find("N")->as_int32(), 3);
  // The request id's outcome is the whole EGT's: a projection of one entity
  // must not answer a retry with it.
  EXPECT_EQ(out.client_request_id, "");
}

TEST(StateRecordsTest, ATombstoneIsADeleteAtItsVersion) {
  StateKey k;
  ASSERT_TRUE(DecodeStateKey(StateEntityKey({1, 1}, "Orders", "p", "r"), &k).ok());
  ChangeRecord out;
  ASSERT_TRUE(StateRecordToChange(k, nullptr, 0, 77, &out).ok());
  EXPECT_EQ(out.table, "Orders");
  EXPECT_EQ(out.partition_key, "p");
  ASSERT_EQ(out.ops.size(), 1u);
  EXPECT_EQ(out.ops[0].row_key, "r");
  EXPECT_FALSE(out.ops[0].after.has_value());
  EXPECT_EQ(out.ops[0].version, 77u);
  // Without a version it is a clean-up's tombstone, not a delete.
  EXPECT_EQ(StateRecordToChange(k, nullptr, 0, 0, &out).code(), Code::kInvalidInput);
}

TEST(StateRecordsTest, AValueThatIsNotTheKeysEntityIsRefused) {
  StateKey k;
  ASSERT_TRUE(DecodeStateKey(StateEntityKey({1, 1}, "Orders", "p", "r"), &k).ok());
  ChangeRecord out;
  for (const auto& r : {OneInsert("other", "r", 1), OneInsert("p", "other", 1)}) {
    const std::string v = events::EncodeEvent(r, "owner");
    EXPECT_EQ(StateRecordToChange(k, v.data(), v.size(), 0, &out).code(), Code::kInvalidInput);
  }
  ChangeRecord two = OneInsert("p", "r", 1);
  two.ops.push_back(two.ops[0]);
  two.ops[1].row_key = "r2";
  two.ops[1].after->row_key = "r2";
  const std::string v = events::EncodeEvent(two, "owner");
  EXPECT_EQ(StateRecordToChange(k, v.data(), v.size(), 0, &out).code(), Code::kInvalidInput);
  const std::string junk = "{not json";
  EXPECT_EQ(StateRecordToChange(k, junk.data(), junk.size(), 0, &out).code(), Code::kInvalidInput);
}

TEST(StateRecordsTest, MarksRoundTripAndBadOnesAreRefused) {
  StateMark m{{9, 2}, 120, 4455, 8, 4456, 8, "orders-1"};
  StateMark out;
  ASSERT_TRUE(DecodeStateMark(EncodeStateMark(m), &out).ok());
  EXPECT_EQ(out.writer, m.writer);
  EXPECT_EQ(out.from, 120);
  EXPECT_EQ(out.offset, 4455);
  EXPECT_EQ(out.floor, 8u);
  EXPECT_EQ(out.member, "orders-1");
  EXPECT_TRUE(out.valid());
  // An empty partition's projection.
  ASSERT_TRUE(DecodeStateMark(EncodeStateMark({{1, 1}, 0, -1, 0, 0, 0, "m"}), &out).ok());
  EXPECT_EQ(out.offset, -1);
  for (std::string bad : {"", "[]", "{}", R"({"epoch":1,"incarnation":1,"from":-1,"offset":2,"floor":0})",
                          R"({"epoch":1,"incarnation":1,"from":0,"offset":-2,"floor":0})",
                          R"({"epoch":1,"incarnation":5000000000,"from":0,"offset":1,"floor":0})",
                          R"({"epoch":"1","incarnation":1,"from":0,"offset":1,"floor":0})"}) {
    EXPECT_EQ(DecodeStateMark(bad, &out).code(), Code::kInvalidInput) << bad;
  }
  EXPECT_FALSE(StateMark{}.valid());
}

TEST(StateRecordsTest, AMarkSaysWhereToReplayFromForTheRetryWindow) {
  StateMark m{{3, 1}, 10, 500, 3, 420, 2, "m"};
  StateMark out;
  ASSERT_TRUE(DecodeStateMark(EncodeStateMark(m), &out).ok());
  EXPECT_EQ(out.replay_from, 420);
  EXPECT_EQ(out.replay_floor, 2u);
  EXPECT_EQ(out.resume_offset(), 420);
  EXPECT_EQ(out.resume_floor(), 2u);
  // Nothing in the window: resume after the mark with its floor.
  ASSERT_TRUE(DecodeStateMark(EncodeStateMark({{3, 1}, 10, 500, 3, 501, 3, "m"}), &out).ok());
  EXPECT_EQ(out.resume_offset(), 501);
  EXPECT_EQ(out.resume_floor(), 3u);
  // A mark written without the fields (an older writer): the same.
  ASSERT_TRUE(DecodeStateMark(R"({"epoch":3,"incarnation":1,"from":10,"offset":500,"floor":3})", &out).ok());
  EXPECT_EQ(out.resume_offset(), 501);
  EXPECT_EQ(out.resume_floor(), 3u);
  // Replaying from after the mark would skip records: refused.
  EXPECT_EQ(DecodeStateMark(R"({"epoch":3,"incarnation":1,"from":10,"offset":500,"floor":3,"replayFrom":502})", &out)
                .code(),
            Code::kInvalidInput);
}

TEST(StateRecordsTest, TheTopicIsCompactedAndTakesAWholeEntity) {
  const auto c = StateTopicConfigs();
  EXPECT_EQ(c.at("cleanup.policy"), "compact");
  // 1 MiB of binary property is about 1.4 MB as base64 in JSON.
  EXPECT_GE(std::stoll(c.at("max.message.bytes")), 2 * 1024 * 1024);
}

}  // namespace
}  // namespace sidetable::cluster
