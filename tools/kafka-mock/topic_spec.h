// sidetable-kafka-mock's --topic NAME=PARTITIONS, parsed and checked.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "engine/status.h"

namespace sidetable::kafka_mock {

// At most this many partitions per topic: the mock keeps each partition's
// log in memory (about 5 MiB each at most, broker_ports.h's README).
inline constexpr int kMaxPartitions = 1024;

struct TopicSpec {
  std::string name;
  int partitions = 0;
};

// "NAME=PARTITIONS": a Kafka topic name (1 to 249 of [A-Za-z0-9._-], not "."
// or "..") and a whole number from 1 to kMaxPartitions. The error names the
// spec and what is wrong with it.
Result<TopicSpec> ParseTopicSpec(const std::string& spec);

// Every spec parsed, and no topic named twice.
Result<std::vector<TopicSpec>> ParseTopicSpecs(const std::vector<std::string>& specs);

}  // namespace sidetable::kafka_mock
