// The change topic of a scale-out service is the shards' history: a restore
// reads it from the beginning (docs/scale-out.md, "What Kafka must keep").
// At start-up the sidecar reads the settings of the change topic it found and
// refuses one that is compacted (a compacted partition keeps one EGT per
// partition key: rows would be lost in a restore), and warns about one whose
// records expire. It also refuses any of its topics found with another
// partition count than it needs.
//
// Thread safety: pure function / one blocking admin call.
#pragma once

#include <librdkafka/rdkafka.h>

#include <map>
#include <string>
#include <vector>

#include "engine/status.h"

namespace sidetable::cluster {

// `configs`: the topic's configuration entries (name -> value). kInvalidInput
// naming the setting when the topic is compacted; *warnings gets a line per
// finite retention.
Status CheckChangeTopicConfigs(const std::string& topic, const std::map<std::string, std::string>& configs,
                               std::vector<std::string>* warnings);

// The cluster's three topics, for the refusal of one found with another
// partition count than it needs.
enum class TopicRole {
  kChange,   // the shards: kafka.partitions, fixed for the service's life
  kCluster,  // members, owners, tables: exactly one partition
  kState,    // the projections: one partition per shard
};
// kInvalidInput naming the topic's role, what it has, what it needs and why.
Status PartitionCountMismatch(TopicRole role, const std::string& topic, int have, int want);

// The topic's configuration through the admin API (DescribeConfigs), waiting
// at most timeout_ms; kUnavailable when Kafka did not answer.
Result<std::map<std::string, std::string>> DescribeTopicConfigs(rd_kafka_t* rk, const std::string& topic,
                                                                int timeout_ms);

}  // namespace sidetable::cluster
