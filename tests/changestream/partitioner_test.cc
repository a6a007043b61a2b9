// KafkaPartitionFor must pick the partition librdkafka's murmur2_random
// partitioner picks (the change publisher's), or a read waiting for a
// derived table would watch the wrong worker partition.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/kafka/embedded_kafka.h"
#include "common/kafka/partitioner.h"

namespace sidetable {
namespace {

std::vector<std::string> Keys(size_t n) {
  std::mt19937 rng(13);
  std::vector<std::string> keys = {"a", "ab", "abc", "abcd", "abcde", "People/Sales",
                                   "t/\xc3\xa9\xe2\x82\xac", std::string("x/\0\xff", 4)};
  for (size_t i = keys.size(); i < n; i++) {
    std::string k = "Table" + std::to_string(i % 7) + "/" + std::to_string(i);  // unique
    const size_t len = rng() % 40;
    for (size_t j = 0; j < len; j++) k.push_back(static_cast<char>(rng() & 0xff));
    keys.push_back(std::move(k));
  }
  return keys;
}

// librdkafka's exported partitioner functions, called directly (no topic).
TEST(PartitionerTest, MatchesLibrdkafkaMurmur2) {
  for (const std::string& key : Keys(5000)) {
    for (int32_t parts : {1, 2, 3, 7, 12, 64, 1000}) {
      const int32_t theirs = rd_kafka_msg_partitioner_murmur2_random(
          nullptr, key.data(), key.size(), parts, nullptr, nullptr);
      ASSERT_EQ(kafka::KafkaPartitionFor(key, parts), theirs) << "key of " << key.size()
                                                              << " bytes, " << parts << " partitions";
    }
  }
}

// Kafka's documented values (the Java client's test vectors for murmur2).
TEST(PartitionerTest, KnownMurmur2Values) {
  EXPECT_EQ(static_cast<int32_t>(kafka::Murmur2("21")), -973932308);
  EXPECT_EQ(static_cast<int32_t>(kafka::Murmur2("foobar")), -790332482);
  EXPECT_EQ(static_cast<int32_t>(kafka::Murmur2("a-little-bit-long-string")), -985981536);
  EXPECT_EQ(static_cast<int32_t>(kafka::Murmur2("a-little-bit-longer-string")), -1486304829);
  EXPECT_EQ(static_cast<int32_t>(kafka::Murmur2("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8")),
            -58897971);
}

struct Delivered {
  std::map<std::string, int32_t> partition_of;
  int errors = 0;
};

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* d = static_cast<Delivered*>(opaque);
  if (m->err) {
    d->errors++;
    return;
  }
  d->partition_of[std::string(static_cast<const char*>(m->key), m->key_len)] = m->partition;
}

// What a real producer configured like the publisher does, through the
// mock cluster: the delivery reports say where each key went.
TEST(PartitionerTest, MatchesWhereTheProducerDelivers) {
  auto kafka = kafka::EmbeddedKafka::Start(1);
  ASSERT_TRUE(kafka.ok()) << kafka.status().ToString();
  constexpr int kPartitions = 12;
  ASSERT_TRUE((*kafka)->CreateTopic("keys", kPartitions).ok());
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  ASSERT_EQ(rd_kafka_conf_set(conf, "bootstrap.servers", (*kafka)->bootstraps().c_str(), err, sizeof err),
            RD_KAFKA_CONF_OK);
  ASSERT_EQ(rd_kafka_conf_set(conf, "partitioner", "murmur2_random", err, sizeof err), RD_KAFKA_CONF_OK);
  rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
  Delivered delivered;
  rd_kafka_conf_set_opaque(conf, &delivered);
  rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  ASSERT_NE(producer, nullptr) << err;
  const std::vector<std::string> keys = Keys(400);
  for (const std::string& key : keys) {
    ASSERT_EQ(rd_kafka_producev(producer, RD_KAFKA_V_TOPIC("keys"),
                                RD_KAFKA_V_KEY(key.data(), key.size()),
                                RD_KAFKA_V_VALUE(const_cast<char*>("v"), 1), RD_KAFKA_V_END),
              RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  ASSERT_EQ(rd_kafka_flush(producer, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(producer);
  ASSERT_EQ(delivered.errors, 0);
  ASSERT_EQ(delivered.partition_of.size(), keys.size());
  std::map<int32_t, int> used;
  for (const auto& [key, partition] : delivered.partition_of) {
    EXPECT_EQ(kafka::KafkaPartitionFor(key, kPartitions), partition) << key;
    used[partition]++;
  }
  EXPECT_GT(used.size(), 6u);  // the keys really spread: the test can fail
}

}  // namespace
}  // namespace sidetable
