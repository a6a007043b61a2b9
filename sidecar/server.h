// Server: the sidetable process's core, minus main().
//
// One frontend thread owns the ZeroMQ ROUTER socket (bound to every
// configured tcp/ipc endpoint): it reads frames, decodes requests, answers
// malformed or oversized ones itself, and hands the rest to a worker chosen
// by (table, PartitionKey), so one partition's requests run in arrival
// order while other partitions run in parallel (and share group commits in
// the engine). Workers reply through an inproc socket that the frontend
// forwards to the client. Every worker queue is bounded: when full, the
// request is answered with ServerBusy (503) at once.
//
// Lifecycle: Start() opens the engine and binds everything; Run() serves
// until RequestStop() (async-signal-safe), then stops reading new requests,
// finishes and answers everything accepted, and returns.
//
// Thread safety: RequestStop() from any thread or a signal handler; the
// accessors after Start().
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/kafka/embedded_kafka.h"
#include "engine/engine.h"
#include "sidecar/changestream/publisher.h"
#include "sidecar/config.h"
#include "sidecar/metrics.h"

namespace sidetable::sidecar {

class Server {
 public:
  static Result<std::unique_ptr<Server>> Start(const ServerConfig& config);
  ~Server();

  void Run();
  void RequestStop() { stop_.store(true, std::memory_order_relaxed); }

  // The endpoints actually bound (tcp port 0 resolved), and the HTTP port (0 = off).
  const std::vector<std::string>& endpoints() const { return endpoints_; }
  int http_port() const { return http_port_; }
  Engine& engine() { return *engine_; }
  Metrics& metrics() { return metrics_; }
  // Null when kafka.bootstrap is empty.
  changestream::Publisher* publisher() { return publisher_.get(); }
  // The Kafka bootstrap servers in use ("" when not publishing).
  std::string kafka_bootstrap() const { return publisher_ ? publisher_->bootstrap() : ""; }

  class Impl;

 private:
  Server() = default;
  Status StartChangeStream(const ServerConfig& config);
  // Destroyed in reverse order: workers, then the publisher, then Kafka, then the engine.
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<kafka::EmbeddedKafka> embedded_kafka_;
  std::unique_ptr<changestream::Publisher> publisher_;
  std::unique_ptr<Impl> impl_;
  Metrics metrics_;
  std::vector<std::string> endpoints_;
  int http_port_ = 0;
  std::atomic<bool> stop_{false};
};

}  // namespace sidetable::sidecar
