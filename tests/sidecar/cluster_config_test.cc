// The `cluster:` section of the sidecar's configuration (docs/scale-out.md,
// "Configuration"): loading, and every refusal naming its key.
#include <gtest/gtest.h>

#include <fstream>

#include "sidecar/config.h"
#include "testing/temp_dir.h"
#include "tests/sidecar/config_text.h"

namespace sidetable::sidecar {
namespace {

constexpr const char* kGood =
    "kafka:\n  bootstrap: k1:9092\n  topic: sidetable.{service}.changes\n"
    "cluster:\n  service: orders\n  member_id: orders-1\n  advertise: tcp://10.0.0.5:7400\n  acks: local\n"
    "  standby_replicas: 1\n  rebalance_wait_ms: 500\n  session_timeout_ms: 6000\n  topic: ops.{service}.cluster\n"
    "  state_topic: ops.{service}.state\n  state_mark_interval_ms: 250\n";

TEST(ClusterConfig, LoadsEveryKey) {
  ServerConfig c;
  ASSERT_TRUE(LoadConfigText(kGood, &c).ok());
  ASSERT_TRUE(ValidateConfig(c).ok()) << ValidateConfig(c).ToString();
  EXPECT_TRUE(c.cluster.enabled());
  EXPECT_EQ(c.cluster.service, "orders");
  EXPECT_EQ(c.cluster.member_id, "orders-1");
  EXPECT_EQ(c.cluster.advertise, "tcp://10.0.0.5:7400");
  EXPECT_EQ(c.cluster.acks, cluster::AckMode::kLocal);
  EXPECT_EQ(c.cluster.standby_replicas, 1);
  EXPECT_EQ(c.cluster.rebalance_wait_ms, 500);
  EXPECT_EQ(c.cluster.session_timeout_ms, 6000);
  EXPECT_EQ(cluster::ExpandService(c.cluster.topic, c.cluster.service), "ops.orders.cluster");
  EXPECT_EQ(cluster::ExpandService(c.kafka.topic, c.cluster.service), "sidetable.orders.changes");
  EXPECT_EQ(cluster::ExpandService(c.cluster.state_topic, c.cluster.service), "ops.orders.state");
  EXPECT_EQ(c.cluster.state_mark_interval_ms, 250);
}

TEST(ClusterConfig, OffByDefault) {
  ServerConfig c;
  EXPECT_FALSE(c.cluster.enabled());
  EXPECT_EQ(c.cluster.acks, cluster::AckMode::kReplicated);
  EXPECT_TRUE(ValidateConfig(c).ok());
}

// kGood with `section`.`key` set to `value` (added when absent).
std::string With(const std::string& section, const std::string& key, const std::string& value) {
  std::string y = kGood;
  const size_t from = y.find(section + ":\n");
  const size_t next = y.find("\n" + std::string(section == "kafka" ? "cluster" : "zzz") + ":", from);
  const std::string needle = "  " + key + ": ";
  const size_t at = y.find(needle, from);
  if (at == std::string::npos || (next != std::string::npos && at > next)) {
    return y.insert(y.find('\n', from) + 1, needle + value + "\n");
  }
  return y.replace(at, y.find('\n', at) - at, needle + value);
}

// cluster.state_topic: "" turns bounded restores off; the default is on.
TEST(ClusterConfig, TheStateTopicIsOnByDefaultAndEmptyTurnsItOff) {
  ServerConfig c;
  ASSERT_TRUE(LoadConfigText(With("cluster", "state_topic", "\"\""), &c).ok());
  EXPECT_TRUE(c.cluster.state_topic.empty());
  EXPECT_TRUE(ValidateConfig(c).ok()) << ValidateConfig(c).ToString();
  EXPECT_EQ(cluster::ClusterOptions{}.state_topic, "sidetable.{service}.state");
}

// Each bad key is refused at load or validation with its name in the message.
TEST(ClusterConfig, BadKeysAreNamed) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {With("cluster", "acks", "quorum"), "cluster.acks"},
      {With("cluster", "session_timeout_ms", "0"), "cluster.session_timeout_ms"},
      {With("cluster", "session_timeout_ms", "-5"), "cluster.session_timeout_ms"},
      {With("cluster", "rebalance_wait_ms", "0"), "cluster.rebalance_wait_ms"},
      {With("cluster", "standby_replicas", "-1"), "cluster.standby_replicas"},
      {With("cluster", "standby_replicas", "many"), "cluster.standby_replicas"},
      {With("cluster", "service", "\"orders/eu\""), "cluster.service"},
      {With("cluster", "topic", "\"\""), "cluster.topic"},
      {With("cluster", "topic", "x.{sidecar}.cluster"), "cluster.topic"},
      {With("cluster", "topic", "sidetable.{service}.changes"), "cluster.topic"},
      {With("cluster", "shards", "12"), "cluster.shards"},
      {With("cluster", "state_topic", "x.{sidecar}.state"), "cluster.state_topic"},
      {With("cluster", "state_topic", "sidetable.{service}.changes"), "cluster.state_topic"},
      {With("cluster", "state_topic", "ops.{service}.cluster"), "cluster.state_topic"},
      {With("cluster", "state_mark_interval_ms", "0"), "cluster.state_mark_interval_ms"},
      {With("kafka", "bootstrap", "\"\""), "kafka.bootstrap"},
      {With("kafka", "topic", "sidetable.{sidecar}.changes"), "kafka.topic"},
      {With("kafka", "topic", "sidetable.{table}.changes"), "kafka.topic"},
  };
  for (const auto& [yaml, key] : bad) {
    ServerConfig c;
    Status s = LoadConfigText(yaml, &c);
    if (s.ok()) s = ValidateConfig(c);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << key << "\n" << yaml;
    EXPECT_NE(s.message().find(key), std::string::npos) << s.message() << "\n" << yaml;
  }
}

// The embedded mock lives in one sidecar: members that each start their own
// are not one cluster. Before session 45 two members of one service with
// `--kafka embedded` both started, each serving every shard with tables of
// its own, both healthy.
TEST(ClusterConfig, TheEmbeddedKafkaIsRefusedNamingWhatToRunInstead) {
  ServerConfig c;
  ASSERT_TRUE(LoadConfigText(With("kafka", "bootstrap", "embedded"), &c).ok());
  Status s = ValidateConfig(c);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("kafka.bootstrap: embedded cannot hold a cluster"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("sidetable-kafka-mock"), std::string::npos) << s.message();
  // Without a cluster it stays the development default.
  ServerConfig one;
  ASSERT_TRUE(LoadConfigText("kafka:\n  bootstrap: embedded\n", &one).ok());
  EXPECT_TRUE(ValidateConfig(one).ok());
}

// {service} without a cluster has nothing to stand for.
TEST(ClusterConfig, ServicePlaceholderNeedsAService) {
  ServerConfig off;
  ASSERT_TRUE(LoadConfigText("kafka:\n  topic: sidetable.{service}.changes\n", &off).ok());
  Status s = ValidateConfig(off);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("kafka.topic"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace sidetable::sidecar
