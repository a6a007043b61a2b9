// WorkerMetrics: the worker's counters and gauges, rendered in the
// Prometheus text format for GET /metrics.
//
// Thread safety: every method may be called from any thread. Counters are
// relaxed atomics; the per-partition lag map takes a mutex (updated once per
// statistics interval).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "apply/event_processor.h"
#include "apply/op_applier.h"
#include "patterns/pattern.h"

namespace sidetable::workers {

// Also the event processor's observer: it counts skips, retries and applied
// operations.
class WorkerMetrics final : public apply::ApplyObserver {
 public:
  using DeadLetterReason = apply::FailureKind;
  static constexpr size_t kReasons = apply::kFailureKinds;
  static const char* ReasonName(DeadLetterReason r) { return apply::FailureKindName(r); }

  void OnSkippedEvent() override { RecordSkippedEvent(); }
  void OnFencedEvent() override { fenced_.fetch_add(1, std::memory_order_relaxed); }
  void OnRetry() override { RecordRetry(); }
  // Waiting out a busy or unreachable sidecar (apply/retry.h), for /health
  // and /metrics: since when, and the last failure.
  void OnWaiting(const Status& last) override;
  void OnWaitOver() override;
  void OnOp(patterns::TableOp::Kind kind, apply::OpResult result) override { RecordOp(kind, result); }

  void RecordEvent() { events_.fetch_add(1, std::memory_order_relaxed); }
  void RecordSkippedEvent() { skipped_.fetch_add(1, std::memory_order_relaxed); }
  void RecordOp(patterns::TableOp::Kind kind, apply::OpResult result);
  void RecordRetry() { retries_.fetch_add(1, std::memory_order_relaxed); }
  void RecordDeadLetter(DeadLetterReason r) { dead_[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed); }
  void RecordCommit(bool ok) { (ok ? commits_ : commit_errors_).fetch_add(1, std::memory_order_relaxed); }
  void RecordRebalance() { rebalances_.fetch_add(1, std::memory_order_relaxed); }
  // `failed`: entities found unmovable for the first time (at their
  // version); `unmovable`: those the rules skip now.
  void RecordArchiveRun(uint64_t moved, uint64_t failed, uint64_t unmovable) {
    archive_runs_.fetch_add(1, std::memory_order_relaxed);
    archive_moved_.fetch_add(moved, std::memory_order_relaxed);
    archive_failed_.fetch_add(failed, std::memory_order_relaxed);
    archive_unmovable_.store(unmovable, std::memory_order_relaxed);
  }
  // Offsets Kafka removed before this group read them (workers/offset_gaps.h).
  void RecordLostMessages(uint64_t n) {
    history_gaps_.fetch_add(1, std::memory_order_relaxed);
    lost_messages_.fetch_add(n, std::memory_order_relaxed);
  }
  void SetLastLsn(uint64_t lsn) { last_lsn_.store(lsn, std::memory_order_relaxed); }
  void SetAssigned(int n) { assigned_.store(n, std::memory_order_relaxed); }
  // Replaces the lag of every partition (from librdkafka's statistics).
  void SetLag(std::map<std::pair<std::string, int32_t>, int64_t> lag);

  uint64_t events() const { return events_.load(std::memory_order_relaxed); }
  uint64_t fenced_events() const { return fenced_.load(std::memory_order_relaxed); }
  uint64_t dead_letters() const;
  uint64_t retries() const { return retries_.load(std::memory_order_relaxed); }
  uint64_t archive_unmovable() const { return archive_unmovable_.load(std::memory_order_relaxed); }
  uint64_t lost_messages() const { return lost_messages_.load(std::memory_order_relaxed); }
  int assigned() const { return assigned_.load(std::memory_order_relaxed); }
  uint64_t last_lsn() const { return last_lsn_.load(std::memory_order_relaxed); }
  int64_t total_lag() const;
  struct Wait {
    double seconds = 0;  // 0: not waiting
    std::string last;    // the failure waited out
  };
  Wait waiting() const;

  std::string Render() const;

 private:
  static constexpr size_t kKinds = 4, kResults = 3;
  std::atomic<uint64_t> events_{0}, skipped_{0}, retries_{0}, commits_{0}, commit_errors_{0},
      rebalances_{0}, archive_runs_{0}, archive_moved_{0}, archive_failed_{0},
      archive_unmovable_{0}, last_lsn_{0}, fenced_{0}, history_gaps_{0}, lost_messages_{0};
  std::atomic<int> assigned_{0};
  std::array<std::array<std::atomic<uint64_t>, kResults>, kKinds> ops_{};
  std::array<std::atomic<uint64_t>, kReasons> dead_{};
  mutable std::mutex wait_mu_;
  std::chrono::steady_clock::time_point wait_since_{};  // epoch: not waiting
  std::string wait_last_;
  mutable std::mutex lag_mu_;
  std::map<std::pair<std::string, int32_t>, int64_t> lag_;
};

}  // namespace sidetable::workers
