// EmbeddedKafka: librdkafka's own mock cluster, started in-process.
//
// It speaks the real Kafka protocol on loopback ports, so producers and
// consumers in other processes connect to bootstraps() like to any broker.
// Limits (librdkafka 2.0): it keeps roughly the newest 5 MiB per partition,
// and a new consumer group takes about 3 s to receive its first message.
// It is for development, the demo and tests; production points the same
// code at a real cluster (compose/).
//
// Thread safety: the mock runs its own thread; the methods are safe to call
// from any thread.
#pragma once

#include <memory>
#include <string>

#include "engine/status.h"

typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_mock_cluster_s rd_kafka_mock_cluster_t;

namespace sidetable::kafka {

class EmbeddedKafka {
 public:
  static Result<std::unique_ptr<EmbeddedKafka>> Start(int brokers);
  ~EmbeddedKafka();

  const std::string& bootstraps() const { return bootstraps_; }
  Status CreateTopic(const std::string& topic, int partitions);
  // Outage simulation for tests: all brokers down / up.
  Status SetBrokersDown(bool down);
  rd_kafka_mock_cluster_t* mock() { return mock_; }

 private:
  EmbeddedKafka() = default;
  rd_kafka_t* handle_ = nullptr;
  rd_kafka_mock_cluster_t* mock_ = nullptr;
  std::string bootstraps_;
};

}  // namespace sidetable::kafka
