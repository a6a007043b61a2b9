// Progress: what this worker has applied, per Kafka partition, and what
// follows from it: the applied watermarks it reports to the sidecar (for
// read-your-writes and `sidetable-cli lag`, docs/consistency.md) and the
// lag it shows in /metrics and /health.
//
// The watermark of a partition is the highest LSN processed on it (applied,
// skipped as unwanted, or dead-lettered). Events of one partition arrive in
// LSN order and are processed in order, so every event on it up to that LSN
// is done, whatever its table: each (derived, source) pair of the patterns is
// reported at that LSN for the partition, also while its source is idle.
//
// Lag of a partition: 0 once the last batch reached the partition's high
// watermark; else the age of the oldest change of the batch being applied,
// measured when the batch starts: its commit time, or its Kafka timestamp
// (set when the sidecar produced it) when that is earlier. The Kafka
// timestamp alone hid the time a change waited before it was published: the
// changes a sidecar publishes again after a restart, or its backlog after a
// Kafka outage, read as seconds old when they were minutes old. Lag of a derived table: the worst
// of its partitions, in seconds, and in LSNs as the sidecar's newest LSN minus the lowest applied
// LSN of a lagging partition.
//
// Thread safety: every method may be called from any thread (one mutex);
// the consumer thread writes, the HTTP thread renders.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "patterns/pattern.h"

namespace sidetable::workers {

using TopicPartition = std::pair<std::string, int32_t>;

// One applied watermark as the sidecar stores it.
struct WatermarkReport {
  std::string derived;
  std::string source;
  int32_t partition = 0;
  int32_t partitions = 0;
  uint64_t lsn = 0;          // 0: registration only
  int64_t commit_time = 0;   // of that LSN, DateTime ticks
};

struct TableLag {
  std::string derived;
  double seconds = 0;
  uint64_t lsns = 0;
};

class Progress {
 public:
  explicit Progress(std::vector<patterns::Pattern::Derivation> derivations);

  // Whether any pattern reads events of `table` (others are skipped unread).
  bool IsSource(std::string_view table) const;

  void SetPartitionCount(const std::string& topic, int32_t count);
  int32_t PartitionCount(const std::string& topic) const;
  void Assigned(const TopicPartition& tp);
  void Revoked(const TopicPartition& tp);

  // A batch starts; `oldest_ms` is the Kafka timestamp of its first message
  // on `tp`.
  void BatchStarted(const TopicPartition& tp, int64_t oldest_ms, std::chrono::system_clock::time_point now);
  // The batch's first change on `tp` was committed at `commit_ticks`
  // (DateTime ticks): the batch's lag counts from then if that is earlier.
  void FirstChangeCommitted(const TopicPartition& tp, int64_t commit_ticks);
  // An event processed at `lsn` (0 if unknown) on `tp`.
  void Processed(const TopicPartition& tp, uint64_t lsn, int64_t commit_time);
  // After a batch: whether `tp` is at its high watermark now.
  void BatchDone(const TopicPartition& tp, bool caught_up);

  // Watermarks that moved since the last call, plus a registration (lsn 0)
  // for each newly assigned partition, to send to the sidecar; on failure
  // the caller gives them back with Restore().
  std::vector<WatermarkReport> TakeReports();
  void Restore(const std::vector<WatermarkReport>& reports);

  std::vector<TableLag> Lag(uint64_t sidecar_last_lsn, std::chrono::system_clock::time_point now) const;
  double MaxLagSeconds(std::chrono::system_clock::time_point now) const;
  // Prometheus text: lag per derived table, applied LSN per partition.
  std::string Render(uint64_t sidecar_last_lsn) const;

 private:
  struct Partition {
    uint64_t lsn = 0;
    int64_t commit_time = 0;
    bool caught_up = true;
    std::chrono::system_clock::time_point oldest{};  // of the batch being applied
    bool reported = false;                           // registered with the sidecar
    bool dirty = false;                              // lsn moved since the last report
  };
  int32_t PartitionsOf(const std::string& topic) const;

  const std::vector<patterns::Pattern::Derivation> derivations_;
  std::set<std::string> sources_;   // TableKey strings of the sources
  mutable std::mutex mu_;
  std::map<TopicPartition, Partition> parts_;
  std::map<std::string, int32_t> counts_;
};

}  // namespace sidetable::workers
