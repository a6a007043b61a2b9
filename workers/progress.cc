#include "workers/progress.h"

#include <algorithm>

#include "common/prometheus_text.h"
#include "engine/edm.h"
#include "engine/table_name.h"

namespace sidetable::workers {

Progress::Progress(std::vector<patterns::Pattern::Derivation> derivations)
    : derivations_(std::move(derivations)) {
  for (const auto& d : derivations_) sources_.insert(TableKey(d.source).str());
}

bool Progress::IsSource(std::string_view table) const {
  if (sources_.size() == 1) return TableNameEquals(table, *sources_.begin());
  return sources_.count(TableKey(table).str()) > 0;
}

void Progress::SetPartitionCount(const std::string& topic, int32_t count) {
  std::lock_guard lock(mu_);
  counts_[topic] = count;
}

int32_t Progress::PartitionCount(const std::string& topic) const {
  std::lock_guard lock(mu_);
  return PartitionsOf(topic);
}

int32_t Progress::PartitionsOf(const std::string& topic) const {
  auto it = counts_.find(topic);
  return it == counts_.end() ? 0 : it->second;
}

void Progress::Assigned(const TopicPartition& tp) {
  std::lock_guard lock(mu_);
  parts_[tp];  // registered with the sidecar at the next report
}

void Progress::Revoked(const TopicPartition& tp) {
  std::lock_guard lock(mu_);
  parts_.erase(tp);
}

void Progress::BatchStarted(const TopicPartition& tp, int64_t oldest_ms, std::chrono::system_clock::time_point now) {
  std::lock_guard lock(mu_);
  Partition& p = parts_[tp];
  p.caught_up = false;
  // A producer clock ahead of ours must not show as negative lag.
  p.oldest = std::min(now, std::chrono::system_clock::time_point(std::chrono::milliseconds(oldest_ms)));
}

void Progress::FirstChangeCommitted(const TopicPartition& tp, int64_t commit_ticks) {
  if (commit_ticks <= kUnixEpochTicks) return;  // no commit time (0): the Kafka timestamp stands
  const auto committed = std::chrono::system_clock::time_point(
      std::chrono::microseconds((commit_ticks - kUnixEpochTicks) / (kTicksPerSecond / 1'000'000)));
  std::lock_guard lock(mu_);
  auto it = parts_.find(tp);
  if (it == parts_.end() || it->second.caught_up) return;  // no batch being applied
  it->second.oldest = std::min(it->second.oldest, committed);
}

void Progress::Processed(const TopicPartition& tp, uint64_t lsn, int64_t commit_time) {
  std::lock_guard lock(mu_);
  Partition& p = parts_[tp];
  if (lsn > p.lsn) {
    p.lsn = lsn;
    p.commit_time = commit_time;
    p.dirty = true;
  }
}

void Progress::BatchDone(const TopicPartition& tp, bool caught_up) {
  std::lock_guard lock(mu_);
  auto it = parts_.find(tp);
  if (it != parts_.end()) it->second.caught_up = caught_up;
}

std::vector<WatermarkReport> Progress::TakeReports() {
  std::lock_guard lock(mu_);
  std::vector<WatermarkReport> out;
  for (auto& [tp, p] : parts_) {
    const int32_t count = PartitionsOf(tp.first);
    if (count <= 0 || (p.reported && !p.dirty)) continue;
    for (const auto& d : derivations_) {
      out.push_back({d.derived, d.source, tp.second, count, p.lsn, p.commit_time});
    }
    p.reported = true;
    p.dirty = false;
  }
  return out;
}

void Progress::Restore(const std::vector<WatermarkReport>& reports) {
  std::lock_guard lock(mu_);
  for (auto& [tp, p] : parts_) {
    for (const auto& r : reports) {
      if (r.partition == tp.second && r.partitions == PartitionsOf(tp.first)) p.dirty = true;
    }
  }
}

std::vector<TableLag> Progress::Lag(uint64_t sidecar_last_lsn, std::chrono::system_clock::time_point now) const {
  std::lock_guard lock(mu_);
  double seconds = 0;
  uint64_t lowest = UINT64_MAX;
  for (const auto& [tp, p] : parts_) {
    if (p.caught_up) continue;
    seconds = std::max(seconds, std::chrono::duration<double>(now - p.oldest).count());
    lowest = std::min(lowest, p.lsn);
  }
  const uint64_t lsns = lowest == UINT64_MAX || sidecar_last_lsn < lowest ? 0 : sidecar_last_lsn - lowest;
  std::vector<TableLag> out;
  std::set<std::string> seen;
  for (const auto& d : derivations_) {
    if (!seen.insert(TableKey(d.derived).str()).second) continue;
    out.push_back({d.derived, seconds, lsns});
  }
  return out;
}

double Progress::MaxLagSeconds(std::chrono::system_clock::time_point now) const {
  double worst = 0;
  for (const auto& l : Lag(0, now)) worst = std::max(worst, l.seconds);
  return worst;
}

std::string Progress::Render(uint64_t sidecar_last_lsn) const {
  using prometheus::Escape;
  using prometheus::Header;
  std::string out;
  const auto lag = Lag(sidecar_last_lsn, std::chrono::system_clock::now());
  Header(&out, "sidetable_worker_lag_seconds", "gauge",
         "Age of the oldest change not yet applied to the derived table (0 when caught up).");
  for (const auto& l : lag) {
    out += "sidetable_worker_lag_seconds{table=\"" + Escape(l.derived) + "\"} " + std::to_string(l.seconds) + "\n";
  }
  Header(&out, "sidetable_worker_lag_lsn", "gauge",
         "The sidecar's newest LSN minus the lowest applied LSN of a lagging partition (0 when caught up).");
  for (const auto& l : lag) {
    prometheus::Line(&out, "sidetable_worker_lag_lsn", "table=\"" + Escape(l.derived) + "\"", l.lsns);
  }
  Header(&out, "sidetable_worker_applied_lsn", "gauge",
         "Highest LSN processed per assigned partition (the applied watermark reported to the sidecar).");
  std::lock_guard lock(mu_);
  for (const auto& [tp, p] : parts_) {
    prometheus::Line(&out, "sidetable_worker_applied_lsn",
                     "topic=\"" + Escape(tp.first) + "\",partition=\"" + std::to_string(tp.second) + "\"", p.lsn);
  }
  return out;
}

}  // namespace sidetable::workers
