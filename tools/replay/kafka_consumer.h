// The Kafka source's dealings with librdkafka at open: the consumer handle
// and the facts that fix a replay's range (partition count, watermarks,
// offsets for a time). Internal to tools/replay.
//
// Every call is bounded by a deadline; a broker that does not answer in time
// is kUnavailable, a topic that is not there kResourceNotFound.
//
// Thread safety: as librdkafka's handle (these calls may come from any one
// thread).
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/status.h"

namespace sidetable::replay::kafka {

using Clock = std::chrono::steady_clock;

// Milliseconds left until `deadline` (0 when passed), for librdkafka timeouts.
int MsUntil(Clock::time_point deadline);

// A consumer that never joins a group: partitions are assign()ed, nothing is
// committed. Error events are routed to the consumer queue so that
// rd_kafka_consumer_poll() sees them. Unknown or invalid `properties` fail
// with InvalidInput naming the property.
Result<rd_kafka_t*> NewConsumer(const std::string& bootstrap,
                                const std::map<std::string, std::string>& properties);

// A numeric property of the handle's configuration (0 if not numeric).
int64_t ConfigNumber(rd_kafka_t* rk, const char* name);

// The topic's partition count. Lists all topics rather than asking for this
// one, because a metadata request naming a topic may auto-create it (brokers
// with auto.create.topics.enable, and librdkafka's mock always): a replay with
// a mistyped topic must fail, not create an empty topic.
Result<int> PartitionCount(rd_kafka_t* rk, const std::string& topic, Clock::time_point deadline);

struct Watermarks {
  int64_t low = 0;   // the oldest offset still held
  int64_t high = 0;  // the offset the next message will get
};
Result<Watermarks> QueryWatermarks(rd_kafka_t* rk, const std::string& topic, int32_t partition,
                                   Clock::time_point deadline);

// Every partition's watermarks, in two requests for the whole topic; partition
// by partition (QueryWatermarks) where the broker does not answer those.
Result<std::vector<Watermarks>> QueryAllWatermarks(rd_kafka_t* rk, const std::string& topic,
                                                   int partitions, Clock::time_point deadline);

// Per partition, the offset of the first message with a timestamp at or
// after `time_ms`, or -1 where the broker has none, does not implement the
// lookup by time (librdkafka 2.0's mock answers -1 for every time) or did
// not answer: the caller then starts at the low watermark and filters, which
// is always right, only slower.
std::vector<int64_t> OffsetsForTime(rd_kafka_t* rk, const std::string& topic, int partitions,
                                    int64_t time_ms, Clock::time_point deadline);

}  // namespace sidetable::replay::kafka
