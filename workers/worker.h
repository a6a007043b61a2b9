// Worker: the `sidetable-worker` runtime. It joins a Kafka consumer group on
// the change-event topic, runs the configured patterns on every event and
// applies the table operations they return through a sidecar (the C++
// client), with the fencing each operation kind defines (patterns/pattern.h).
//
// Thread safety: Start() and Run() belong to one thread (the consumer
// thread: polling, applying, committing and rebalance callbacks all happen
// on it, so a partition is never given up with an event half applied).
// RequestStop() is async-signal-safe and may be called from any thread or a
// signal handler. The HTTP endpoint and the archive-rule thread run on their
// own threads, each with its own client; they share only the metrics, whose
// methods are thread-safe.
//
// Delivery: at least once. The offset of a message is committed (synchronously,
// per batch) only after every operation of its event was acknowledged by the
// sidecar, or after the event went to the dead-letter topic. A crash replays
// events from the last commit; fencing by SourceVersion makes the replay
// harmless (ARCHITECTURE.md invariant 4), so the effect is exactly once.
//
// Lifecycle: Start() validates nothing (the config is validated before),
// creates the patterns, connects the client, creates the consumer and
// subscribes, binds HTTP and writes the ready file. Run() returns after
// RequestStop(): requests to the sidecar in flight are abandoned (their events
// stay uncommitted, for the next owner), offsets of finished events are
// committed and the consumer leaves the group; a frozen sidecar costs at most
// the last watermark report's 1 s. (main.cc bounds the whole stop at 5 s.)
#pragma once

#include <atomic>
#include <memory>

#include "apply/worker_config.h"
#include "engine/status.h"

namespace sidetable::workers {

class Worker {
 public:
  static Result<std::unique_ptr<Worker>> Start(const apply::WorkerConfig& config);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Consumes until RequestStop(); returns OK after a clean shutdown.
  Status Run();
  void RequestStop() { stop_.store(true, std::memory_order_relaxed); }

  int http_port() const;

  class Impl;

 private:
  Worker() = default;
  // Before impl_, whose clients read it (ClientOptions::abandon).
  std::atomic<bool> stop_{false};
  std::unique_ptr<Impl> impl_;
};

}  // namespace sidetable::workers
