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

}  // namespace
}  // namespace sidetable::cluster
