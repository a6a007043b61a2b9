// The change topic of a scale-out service must keep every record forever
// (docs/scale-out.md, "What Kafka must keep"): what the sidecar sets on a
// topic it creates, and what the deployment examples' topic jobs set, agree.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sidecar/changestream/kafka_options.h"
#include "sidecar/cluster/state_records.h"

namespace sidetable::changestream {
namespace {

std::string ReadSource(const std::string& path) {
  std::ifstream in(std::string(ST_SOURCE_DIR) + "/" + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ChangeTopicConfigsTest, AScaleOutChangeTopicIsNeverCompactedNorExpired) {
  const auto c = ChangeTopicConfigs(true);
  EXPECT_EQ(c.at("cleanup.policy"), "delete");
  EXPECT_EQ(c.at("retention.ms"), "-1");
  EXPECT_EQ(c.at("retention.bytes"), "-1");
  // A lone sidecar's topic is a feed: the broker's defaults stand.
  EXPECT_TRUE(ChangeTopicConfigs(false).empty());
}

TEST(ChangeTopicConfigsTest, TheDeploymentExamplesSetWhatTheSidecarSets) {
  for (const char* file : {"deploy/kubernetes/scale-out/topics-job.yaml", "compose/docker-compose.scale-out.yml"}) {
    const std::string text = ReadSource(file);
    ASSERT_FALSE(text.empty()) << file;
    const size_t at = text.find("CHANGE_TOPIC_CONFIG");
    ASSERT_NE(at, std::string::npos) << file << " sets no CHANGE_TOPIC_CONFIG";
    const std::string line = text.substr(at, text.find('\n', at) - at);
    for (const auto& [name, value] : ChangeTopicConfigs(true)) {
      EXPECT_NE(line.find(name + "=" + value), std::string::npos) << file << ": " << line << " lacks " << name;
    }
  }
}

// The state topic (docs/scale-out.md, "Bounded restore"): compacted, and
// large enough messages for a whole entity; the examples create it so.
TEST(ChangeTopicConfigsTest, TheDeploymentExamplesCreateTheStateTopicAsTheSidecarDoes) {
  for (const char* file : {"deploy/kubernetes/scale-out/topics-job.yaml", "compose/docker-compose.scale-out.yml"}) {
    const std::string text = ReadSource(file);
    const size_t at = text.find("STATE_TOPIC_CONFIG");
    ASSERT_NE(at, std::string::npos) << file << " sets no STATE_TOPIC_CONFIG";
    const std::string line = text.substr(at, text.find('\n', at) - at);
    for (const auto& [name, value] : cluster::StateTopicConfigs()) {
      EXPECT_NE(line.find(name + "=" + value), std::string::npos) << file << ": " << line << " lacks " << name;
    }
    // With one partition per shard (compose writes $ as $$).
    EXPECT_TRUE(text.find("$STATE_TOPIC\" \"$$CHANGE_PARTITIONS\"") != std::string::npos ||
                text.find("$STATE_TOPIC\" \"$CHANGE_PARTITIONS\"") != std::string::npos)
        << file << " never creates the state topic with the change topic's partition count";
  }
}

}  // namespace
}  // namespace sidetable::changestream
