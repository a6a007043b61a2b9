// The cluster's message formats (sidecar/cluster/records.h).
#include "sidecar/cluster/records.h"

#include <gtest/gtest.h>

#include "events/epoch_filter.h"

namespace sidetable::cluster {
namespace {

TEST(ClusterRecords, ClaimRoundTripsAndFeedsTheEpochFilter) {
  const std::string json = EncodeClaimEvent("orders-1", 7, 3);
  EXPECT_EQ(json, "{\"schema\":1,\"kind\":\"ShardClaimed\",\"source\":\"orders-1\",\"epoch\":7,\"shard\":3}");
  ChangeRecord claim;
  ASSERT_TRUE(DecodeClaim("7", json, &claim).ok());
  EXPECT_EQ(claim.kind, ChangeKind::kShardClaimed);
  EXPECT_EQ(claim.epoch, 7u);
  EXPECT_EQ(claim.shard, 3);
  events::EpochFilter f;
  EXPECT_EQ(f.Check(3, claim), events::EpochFilter::Verdict::kClaim);
  ChangeRecord old;
  old.epoch = 6;
  EXPECT_EQ(f.Check(3, old), events::EpochFilter::Verdict::kFenced);
}

// Claims name their service, after "shard" (workers find claims by the
// JSON's start); claims written before, without it, still decode.
TEST(ClusterRecords, AClaimNamesItsServiceAndOldClaimsStillDecode) {
  const std::string json = EncodeClaimEvent("orders-1", 7, 3, "orders");
  EXPECT_EQ(
      json,
      "{\"schema\":1,\"kind\":\"ShardClaimed\",\"source\":\"orders-1\",\"epoch\":7,\"shard\":3,"
      "\"service\":\"orders\"}");
  ChangeRecord claim;
  ASSERT_TRUE(DecodeClaim("7", json, &claim).ok());
  EXPECT_EQ(claim.service, "orders");
  EXPECT_EQ(claim.caller, "orders-1");
  ASSERT_TRUE(DecodeClaim("7", EncodeClaimEvent("orders-1", 7, 3), &claim).ok());
  EXPECT_EQ(claim.service, "");
  events::EpochFilter mine("orders");
  claim.service = "o2";
  EXPECT_EQ(mine.Check(3, claim), events::EpochFilter::Verdict::kForeign);
}

TEST(ClusterRecords, MalformedClaimsAreRefused) {
  ChangeRecord r;
  const std::string json = EncodeClaimEvent("x", 7, 3);
  EXPECT_EQ(DecodeClaim("", json, &r).code(), Code::kInvalidInput);
  EXPECT_EQ(DecodeClaim("7x", json, &r).code(), Code::kInvalidInput);
  EXPECT_EQ(DecodeClaim("8", json, &r).code(), Code::kInvalidInput);  // header and value disagree
  EXPECT_EQ(DecodeClaim("7", "{\"kind\":\"Entities\",\"epoch\":7,\"shard\":3}", &r).code(), Code::kInvalidInput);
  EXPECT_EQ(DecodeClaim("7", "not json", &r).code(), Code::kInvalidInput);
}

TEST(ClusterRecords, ClusterTopicRecordsRoundTrip) {
  OwnerRecord o{"m\"1", "tcp://10.0.0.5:7400", 12}, back;
  ASSERT_TRUE(DecodeOwner(EncodeOwner(o), &back).ok());
  EXPECT_EQ(back.member, o.member);
  EXPECT_EQ(back.endpoint, o.endpoint);
  EXPECT_EQ(back.epoch, 12u);
  TableRecord t{false, "m1/5", "app", 42}, tb;
  ASSERT_TRUE(DecodeTable(EncodeTable(t), &tb).ok());
  EXPECT_FALSE(tb.created);
  EXPECT_EQ(tb.request, "m1/5");
  EXPECT_EQ(tb.caller, "app");
  EXPECT_EQ(back.claim_offset, -1) << "an owner record without a claim offset (written before it)";
  o.claim_offset = 41;
  ASSERT_TRUE(DecodeOwner(EncodeOwner(o), &back).ok());
  EXPECT_EQ(back.claim_offset, 41);
  MemberRecord member;
  ASSERT_TRUE(DecodeMember(EncodeMember(MemberRecord{"tcp://x:1", "", 5}), &member).ok());
  EXPECT_EQ(member.endpoint, "tcp://x:1");
  EXPECT_EQ(member.instance, "");
  ASSERT_TRUE(DecodeMember(EncodeMember(MemberRecord{"tcp://x:1", "", 5, "9f2c"}), &member).ok());
  EXPECT_EQ(member.instance, "9f2c");
  EXPECT_EQ(member.service, "");
  ASSERT_TRUE(
      DecodeMember(EncodeMember(MemberRecord{"tcp://x:1", "", 5, "", "orders"}), &member).ok());
  EXPECT_EQ(member.service, "orders");
  EXPECT_FALSE(DecodeOwner("{}", &back).ok());
}

}  // namespace
}  // namespace sidetable::cluster
