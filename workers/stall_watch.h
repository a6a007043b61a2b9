// Partitions with messages waiting that deliver none.
//
// librdkafka reports every second, per assigned partition, `app_offset`
// (one past the last message handed to the worker) and `consumer_lag` (the
// messages the partition holds past the committed or handed-out offset). A
// partition whose lag stays above zero while its app_offset does not move
// for lag.max_seconds is stalled: the worker is not reading it, whatever
// the reason (blocked applying, or a fetch that never delivers).
//
// Why a check of its own: /health's lag_seconds is measured on the events
// applied, so a worker that receives nothing reads as 0 s behind. Session
// 38 found one on the embedded Kafka: a worker more than ~5 MiB behind kept
// resetting to an offset the mock had already removed, received no message
// for minutes with a consumer lag of 365,000, and said "ok".
//
// Thread safety: none; the worker calls it under its own lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include "workers/progress.h"

namespace sidetable::workers {

class StallWatch {
 public:
  using Clock = std::chrono::steady_clock;

  struct Stall {
    TopicPartition tp;
    int64_t waiting = 0;  // consumer lag at the last report
    double seconds = 0;   // since the partition last delivered (or had nothing waiting)
  };

  // One statistics report for `tp`.
  void Observe(const TopicPartition& tp, int64_t app_offset, int64_t consumer_lag,
               Clock::time_point now);
  // After a revocation: the next assignment starts afresh.
  void Forget(const TopicPartition& tp) { parts_.erase(tp); }
  void Clear() { parts_.clear(); }
  // The partitions with messages waiting and none delivered for longer
  // than `after`. Reports stop coming while the worker does not poll (a
  // blocked apply): the time runs on regardless.
  std::vector<Stall> Stalled(Clock::time_point now, std::chrono::seconds after) const;

 private:
  struct State {
    int64_t app_offset = 0;
    int64_t lag = 0;
    Clock::time_point since;  // the last report that moved, or had nothing waiting
  };
  std::map<TopicPartition, State> parts_;
};

}  // namespace sidetable::workers
