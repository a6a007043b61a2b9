#include "workers/metrics.h"

#include "common/prometheus_text.h"

namespace sidetable::workers {
namespace {

using prometheus::Escape;
using prometheus::Header;
using prometheus::Line;

const char* ResultName(size_t r) {
  static const char* kNames[] = {"written", "fenced", "noop"};
  return kNames[r];
}

}  // namespace

void WorkerMetrics::RecordOp(patterns::TableOp::Kind kind, apply::OpResult result) {
  ops_[static_cast<size_t>(kind) % kKinds][static_cast<size_t>(result) % kResults].fetch_add(
      1, std::memory_order_relaxed);
}

void WorkerMetrics::SetLag(std::map<std::pair<std::string, int32_t>, int64_t> lag) {
  std::lock_guard lock(lag_mu_);
  lag_ = std::move(lag);
}

void WorkerMetrics::OnWaiting(const Status& last) {
  std::lock_guard lock(wait_mu_);
  if (wait_since_ == std::chrono::steady_clock::time_point{})
    wait_since_ = std::chrono::steady_clock::now();
  wait_last_ = last.ToString();
}

void WorkerMetrics::OnWaitOver() {
  std::lock_guard lock(wait_mu_);
  wait_since_ = {};
  wait_last_.clear();
}

WorkerMetrics::Wait WorkerMetrics::waiting() const {
  std::lock_guard lock(wait_mu_);
  Wait w;
  if (wait_since_ == std::chrono::steady_clock::time_point{}) return w;
  w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_since_).count();
  w.last = wait_last_;
  return w;
}

uint64_t WorkerMetrics::dead_letters() const {
  uint64_t n = 0;
  for (const auto& d : dead_) n += d.load(std::memory_order_relaxed);
  return n;
}

int64_t WorkerMetrics::total_lag() const {
  std::lock_guard lock(lag_mu_);
  int64_t n = 0;
  for (const auto& [k, v] : lag_) n += v;
  return n;
}

std::string WorkerMetrics::Render() const {
  std::string out;
  auto load = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  Header(&out, "sidetable_worker_events_total", "counter",
         "Change events fully processed (their operations acknowledged, or dead-lettered).");
  Line(&out, "sidetable_worker_events_total", "", load(events_));
  Header(&out, "sidetable_worker_events_ignored_total", "counter",
         "Change events no configured pattern wanted.");
  Line(&out, "sidetable_worker_events_ignored_total", "", load(skipped_));
  Header(&out, "sidetable_worker_fenced_events_total", "counter",
         "Change events skipped as written by a replaced owner of their shard (scale-out fencing).");
  Line(&out, "sidetable_worker_fenced_events_total", "", load(fenced_));
  Header(&out, "sidetable_worker_operations_total", "counter",
         "Table operations applied, by kind and result (written, fenced = skipped as stale, noop).");
  for (size_t k = 0; k < kKinds; k++) {
    for (size_t r = 0; r < kResults; r++) {
      Line(&out, "sidetable_worker_operations_total",
           std::string("kind=\"") + apply::TableOpKindName(static_cast<patterns::TableOp::Kind>(k)) +
               "\",result=\"" + ResultName(r) + "\"",
           load(ops_[k][r]));
    }
  }
  Header(&out, "sidetable_worker_retries_total", "counter",
         "Event re-applications after a transient failure (back-off between them).");
  Line(&out, "sidetable_worker_retries_total", "", load(retries_));
  prometheus::Single(
      &out, "sidetable_worker_waiting_seconds", "gauge",
      "How long the events being applied have waited for a busy or unreachable sidecar "
      "(retry.max_wait_seconds); 0 when not waiting.",
      static_cast<uint64_t>(waiting().seconds));
  Header(&out, "sidetable_worker_dead_letters_total", "counter",
         "Events sent to the dead-letter topic, by reason.");
  for (size_t r = 0; r < kReasons; r++) {
    Line(&out, "sidetable_worker_dead_letters_total",
         std::string("reason=\"") + ReasonName(static_cast<DeadLetterReason>(r)) + "\"", load(dead_[r]));
  }
  Header(&out, "sidetable_worker_history_gaps_total", "counter",
         "Times a partition's next message was past the offset expected: Kafka had removed the "
         "messages in between (retention) before this group read them.");
  Line(&out, "sidetable_worker_history_gaps_total", "", load(history_gaps_));
  Header(&out, "sidetable_worker_lost_messages_total", "counter",
         "Messages of those gaps: changes the derived tables never got.");
  Line(&out, "sidetable_worker_lost_messages_total", "", load(lost_messages_));
  Header(&out, "sidetable_worker_commits_total", "counter", "Synchronous offset commits that succeeded.");
  Line(&out, "sidetable_worker_commits_total", "", load(commits_));
  Header(&out, "sidetable_worker_commit_errors_total", "counter", "Offset commits that failed.");
  Line(&out, "sidetable_worker_commit_errors_total", "", load(commit_errors_));
  Header(&out, "sidetable_worker_rebalances_total", "counter", "Partition assignments and revocations.");
  Line(&out, "sidetable_worker_rebalances_total", "", load(rebalances_));
  Header(&out, "sidetable_worker_archive_runs_total", "counter", "Archive rule evaluations.");
  Line(&out, "sidetable_worker_archive_runs_total", "", load(archive_runs_));
  Header(&out, "sidetable_worker_archive_moved_total", "counter", "Entities moved by archive rules.");
  Line(&out, "sidetable_worker_archive_moved_total", "", load(archive_moved_));
  Header(&out, "sidetable_worker_archive_unmovable_total", "counter",
         "Entities archive rules found they cannot move (e.g. a copy over the entity limits), once "
         "per version.");
  Line(&out, "sidetable_worker_archive_unmovable_total", "", load(archive_failed_));
  Header(&out, "sidetable_worker_archive_unmovable", "gauge",
         "Entities archive rules skip now as unmovable, until they change.");
  Line(&out, "sidetable_worker_archive_unmovable", "", load(archive_unmovable_));
  Header(&out, "sidetable_worker_last_lsn", "gauge", "LSN of the last event processed.");
  Line(&out, "sidetable_worker_last_lsn", "", load(last_lsn_));
  Header(&out, "sidetable_worker_assigned_partitions", "gauge", "Partitions this worker owns now.");
  Line(&out, "sidetable_worker_assigned_partitions", "", static_cast<uint64_t>(assigned()));
  Header(&out, "sidetable_worker_consumer_lag", "gauge",
         "Messages between the committed offset and the high watermark, per assigned partition.");
  {
    std::lock_guard lock(lag_mu_);
    for (const auto& [k, v] : lag_) {
      Line(&out, "sidetable_worker_consumer_lag",
           "topic=\"" + Escape(k.first) + "\",partition=\"" + std::to_string(k.second) + "\"",
           static_cast<uint64_t>(v < 0 ? 0 : v));
    }
  }
  return out;
}

}  // namespace sidetable::workers
