// DeadLetterProducer: publishes events the worker gives up on to the
// dead-letter topic, with the original key and value and headers saying why
// and where they came from:
//
//   sidetable-dlq-reason            "decode: InvalidInput: ..." / "apply: ..."
//   sidetable-dlq-source-topic      the topic the event was consumed from
//   sidetable-dlq-source-partition  decimal
//   sidetable-dlq-source-offset     decimal
//   sidetable-dlq-group             the worker's consumer group
//   sidetable-dlq-lsn               the event's LSN when it could be decoded
//
// Send() waits for the broker's acknowledgement (acks=all, idempotent
// producer), so the worker commits past a dead letter only once it is durable.
//
// Thread safety: not thread-safe; the consumer thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "engine/status.h"

typedef struct rd_kafka_s rd_kafka_t;

namespace sidetable::workers {

struct DeadLetter {
  std::string key, value;
  std::string reason;
  std::string source_topic;
  int32_t source_partition = 0;
  int64_t source_offset = 0;
  uint64_t lsn = 0;  // 0 = unknown
};

inline constexpr const char* kHeaderReason = "sidetable-dlq-reason";
inline constexpr const char* kHeaderSourceTopic = "sidetable-dlq-source-topic";
inline constexpr const char* kHeaderSourcePartition = "sidetable-dlq-source-partition";
inline constexpr const char* kHeaderSourceOffset = "sidetable-dlq-source-offset";
inline constexpr const char* kHeaderGroup = "sidetable-dlq-group";
inline constexpr const char* kHeaderLsn = "sidetable-dlq-lsn";

class DeadLetterProducer {
 public:
  static Result<std::unique_ptr<DeadLetterProducer>> Create(
      const std::string& bootstrap, const std::string& topic, const std::string& group,
      const std::map<std::string, std::string>& properties, std::chrono::milliseconds timeout);
  ~DeadLetterProducer();

  // Produces and waits for the delivery report (at most the `timeout` given
  // to Create(), librdkafka's message.timeout.ms).
  Status Send(const DeadLetter& d);

 private:
  DeadLetterProducer() = default;
  rd_kafka_t* rk_ = nullptr;
  std::string topic_, group_;
};

}  // namespace sidetable::workers
