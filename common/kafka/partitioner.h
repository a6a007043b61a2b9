// KafkaPartitionFor: the Kafka partition a keyed message lands on, computed
// the way the change publisher's producer does (librdkafka's
// `murmur2_random`, the Java client's default): (murmur2(key) & 0x7fffffff)
// % partitions, murmur2 being Kafka's variant (seed 0x9747b28c).
//
// The sidecar uses it to find which worker partition carries a change
// record (key "<table>/<PartitionKey>", docs/change-events.md) when a read
// waits for a derived table to cover a session token; tools use it for lag.
// librdkafka picks a random partition for a null key; every change-stream
// key is non-empty, so that case is not modelled.
//
// Pure and header-light: no librdkafka here (tests compare with librdkafka's
// own partitioner), so clients and tools can link it without Kafka.
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <string_view>

namespace sidetable::kafka {

// Kafka's murmur2 of `key` (signed result as Java computes it, as uint32).
uint32_t Murmur2(std::string_view key);

// The partition in [0, partitions) for `key`; partitions must be >= 1.
int32_t KafkaPartitionFor(std::string_view key, int32_t partitions);

}  // namespace sidetable::kafka
