// NewestLsnOnTopic: the highest change-record LSN the last message of each
// partition of a change topic carries (its `sidetable-lsn` header).
//
// Why: a change topic outlives the sidecar's data directory when Kafka is a
// real cluster. A directory older than its topic (restored from a backup or
// a volume snapshot, or missing the WAL tail an OS crash took in `os`
// durability) has a change log that ends below LSNs the topic already
// holds; its next commits would take those LSNs again for other changes, so
// consumers that drop what they have seen by LSN or version (the pattern
// workers, replay, audits) would skip them or mix two histories. The
// publisher checks a topic this way before its first message to it
// (topic_setup.h) and publishes nothing there while the topic is ahead.
//
// Reads one message per non-empty partition, from a consumer of its own
// that assigns partitions itself and never commits. Messages without the
// header (another producer's) are passed over.
//
// Thread safety: a function; blocks for at most `timeout` (checking
// `stopping` every 250 ms).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "engine/status.h"

namespace sidetable::changestream {

struct TopicTail {
  uint64_t newest_lsn = 0;  // 0: no message carries one (an empty topic)
  int32_t partition = -1;   // where it is
  int64_t offset = -1;
};

// `properties`: librdkafka settings for the reader (kafka.properties:
// security.protocol, sasl.*, ...), over the defaults; `group` only lets the
// consumer poll (it never joins or commits). `partitions`: the topic's
// partition count, from the metadata the caller has just read.
Result<TopicTail> NewestLsnOnTopic(const std::string& bootstrap,
                                   const std::map<std::string, std::string>& properties,
                                   const std::string& group, const std::string& topic,
                                   int partitions, std::chrono::milliseconds timeout,
                                   const std::function<bool()>& stopping);

}  // namespace sidetable::changestream
