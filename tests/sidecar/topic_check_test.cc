// What the sidecar accepts as a scale-out service's existing change topic
// (sidecar/cluster/topic_check.h).
#include "sidecar/cluster/topic_check.h"

#include <gtest/gtest.h>

namespace sidetable::cluster {
namespace {

TEST(TopicCheckTest, AKeepForeverTopicPassesQuietly) {
  std::vector<std::string> warnings;
  Status s = CheckChangeTopicConfigs(
      "t", {{"cleanup.policy", "delete"}, {"retention.ms", "-1"}, {"retention.bytes", "-1"}}, &warnings);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(warnings.empty());
}

TEST(TopicCheckTest, ACompactedTopicIsRefusedNamingTheSetting) {
  for (const char* policy : {"compact", "compact,delete", "delete,compact"}) {
    std::vector<std::string> warnings;
    Status s = CheckChangeTopicConfigs("svc.changes", {{"cleanup.policy", policy}, {"retention.ms", "-1"}}, &warnings);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << policy;
    EXPECT_NE(s.message().find("cleanup.policy=" + std::string(policy)), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("svc.changes"), std::string::npos) << s.message();
  }
}

TEST(TopicCheckTest, ExpiringRecordsAreWarnedAboutOneLineEach) {
  std::vector<std::string> warnings;
  Status s = CheckChangeTopicConfigs(
      "t", {{"cleanup.policy", "delete"}, {"retention.ms", "604800000"}, {"retention.bytes", "1073741824"}},
      &warnings);
  EXPECT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("retention.ms=604800000"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("retention.bytes=1073741824"), std::string::npos) << warnings[1];
}

// The tester's case: a cluster topic auto-created with 4 partitions was
// refused as "the configuration says 1 (the shard count is fixed)", though
// no setting says 1 and the cluster topic is not the shards.
TEST(TopicCheckTest, AWrongPartitionCountIsRefusedNamingTheTopicsRole) {
  Status s = PartitionCountMismatch(TopicRole::kCluster, "sidetable.o1.cluster", 4, 1);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("the cluster topic sidetable.o1.cluster has 4 partitions"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("exactly 1"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("shard count"), std::string::npos) << s.message();
  s = PartitionCountMismatch(TopicRole::kChange, "svc.changes", 4, 6);
  EXPECT_NE(
      s.message().find("the change topic svc.changes has 4 partitions, but kafka.partitions is 6"),
      std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("set kafka.partitions: 4"), std::string::npos) << s.message();
  s = PartitionCountMismatch(TopicRole::kState, "svc.state", 4, 6);
  EXPECT_NE(
      s.message().find("the state topic svc.state has 4 partitions, but it needs one per shard"),
      std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("cluster.state_topic"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace sidetable::cluster
