// Metrics: counters and latency histograms, rendered in the Prometheus text
// format for GET /metrics.
//
// Thread safety: every method may be called from any thread. Hot-path
// updates are relaxed atomics; per-table counters take a mutex (one short
// critical section per write).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "engine/status.h"
#include "protocol/wire.h"
#include "sidecar/admission.h"

namespace sidetable::sidecar {

class Metrics {
 public:
  // Latency buckets, in microseconds (upper bounds; +Inf is implicit).
  static constexpr std::array<uint64_t, 14> kBucketsUs = {
      50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000, 5000000};

  void RecordRequest(wire::Op op, Code code, uint64_t micros);
  // Per-table counters are kept per table, not per spelling: writers may
  // spell a table in any case ("Orders", "ORDERS"), and each spelling used
  // to be a series of its own, a client's choice of case adding series
  // without bound. The label is the name as created.
  void RecordTableWrite(const std::string& table, size_t operations, size_t entities_written);
  // The table exists under this spelling (created now, or found at start).
  void NameTable(const std::string& table);
  // The table is gone: its series go with it (a table created again under
  // the name counts from 0, as Prometheus takes a counter's reset).
  void ForgetTable(const std::string& table);
  // An EGT of a WriteMany that failed: the request's reply is 200, so
  // RecordRequest does not see it, but it is an error reply all the same
  // (a pattern worker's derived writes travel this way).
  void RecordBatchError(Code code) { RecordError(code); }
  // An error answered where RecordRequest does not run: a REST request
  // refused before it became a request (its credentials).
  void RecordError(Code code) {
    if (code != Code::kOk)
      errors_[static_cast<size_t>(code)].fetch_add(1, std::memory_order_relaxed);
  }
  // A ServerBusy answered by the frontend, by reason (the handler's own
  // "backlog full" 503s count only in errors_total{code="ServerBusy"}).
  void RecordBusy(BusyReason why) {
    busy_[static_cast<size_t>(why)].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t busy(BusyReason why) const {
    return busy_[static_cast<size_t>(why)].load(std::memory_order_relaxed);
  }
  void RecordMalformed() { malformed_.fetch_add(1, std::memory_order_relaxed); }
  // A write answered with the remembered outcome of its client request id.
  void RecordReplayedWrite() { replayed_writes_.fetch_add(1, std::memory_order_relaxed); }
  // A request the frontend executed itself instead of handing it to a worker.
  void RecordInline() { inline_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t inline_requests() const { return inline_.load(std::memory_order_relaxed); }
  // A worker waited at a table operation's barrier (worker_barrier.h).
  void RecordBarrierWait(uint64_t micros) {
    barrier_waits_.fetch_add(1, std::memory_order_relaxed);
    barrier_wait_us_.fetch_add(micros, std::memory_order_relaxed);
  }
  // A query of several partitions waited for the other workers to finish
  // what was queued before it (worker_barrier.h, shares that do not wait).
  void RecordQueryOrderWait(uint64_t micros) {
    query_order_waits_.fetch_add(1, std::memory_order_relaxed);
    query_order_wait_us_.fetch_add(micros, std::memory_order_relaxed);
  }
  // A query page passed over `skipped` entries of deleted entities or
  // superseded versions (engine.h, ScanLimits) and maybe stopped because of
  // them: many mean compaction has not caught up with the deletes.
  void RecordQuerySkipped(uint64_t skipped, bool stopped) {
    if (skipped > 0) query_skipped_.fetch_add(skipped, std::memory_order_relaxed);
    if (stopped) query_stopped_at_deleted_.fetch_add(1, std::memory_order_relaxed);
  }
  // A WriteMany split into `parts` parts, one per worker thread that holds
  // some of its partitions (write_many_gather.h).
  void RecordWriteManySplit(size_t parts) {
    write_many_splits_.fetch_add(1, std::memory_order_relaxed);
    write_many_parts_.fetch_add(parts, std::memory_order_relaxed);
  }
  // Read-your-writes (docs/consistency.md): a read parked for its session
  // tokens, and how long one waited (resumed, or answered
  // ReadSessionNotAvailable when timed_out).
  void RecordSessionParked() { session_waits_.fetch_add(1, std::memory_order_relaxed); }
  void RecordSessionWait(uint64_t micros, bool timed_out);
  uint64_t session_waits() const { return session_waits_.load(std::memory_order_relaxed); }
  uint64_t session_timeouts() const { return session_timeouts_.load(std::memory_order_relaxed); }

  // A Backup operation's outcome (docs/operations.md, "Backup and
  // restore"); a success also sets the last backup's gauges.
  void RecordBackup(bool ok, int64_t unix_seconds = 0, uint64_t last_lsn = 0, uint64_t bytes = 0);
  // At start: the last backup's gauges from the newest backup on disk (no
  // count: sidetable_backups_total counts this process's backups).
  void SetLastBackup(int64_t unix_seconds, uint64_t last_lsn, uint64_t bytes);

  // Gauges read at render time.
  struct Gauges {
    uint64_t queue_depth = 0;
    uint64_t in_flight = 0;
    uint64_t inflight_bytes =
        0;  // charged bytes of requests not yet answered and large replies not yet sent
    uint64_t inflight_reply_bytes = 0;  // of which: the replies
    uint64_t inflight_bytes_peak = 0;
    uint64_t inflight_bytes_limit = 0;  // sidecar.max_inflight_bytes
    uint64_t inflight_connections = 0;  // connections with a request in flight
    uint64_t parked_reads = 0;          // reads waiting for their session tokens
    uint64_t last_lsn = 0;
    uint64_t first_available_lsn = 0;
    uint64_t commits = 0;        // engine: batches committed since start
    uint64_t group_commits = 0;  // RocksDB writes they took
    uint64_t wal_syncs = 0;      // WAL fsyncs that made them durable (fsync durability)
    uint64_t wal_recovery_dropped_bytes = 0;  // WAL bytes the recovery at this start dropped
    uint64_t row_cache_hits = 0;    // point reads answered from the engine's row cache
    uint64_t row_cache_misses = 0;  // and those that read RocksDB
    uint64_t row_cache_bytes = 0;   // held (storage.row_cache_mb bounds it)
    bool publishing = false;  // the publisher gauges below are meaningful
    uint64_t published_lsn = 0;
    uint64_t backlog_events = 0;
    uint64_t backlog_bytes = 0;
    uint64_t published_events_total = 0;
    uint64_t published_bytes_total = 0;
    uint64_t delivery_errors_total = 0;
    bool backlog_full = false;
    uint64_t blocked_lsn = 0;
    uint64_t chunked_events_total = 0;
    uint64_t refused_writes_total = 0;
    bool storage_ok = true;
    uint64_t storage_write_refusals_total = 0;
    uint64_t storage_free_bytes = 0;
    bool storage_free_known = false;  // not emitted when it could not be measured
    bool writes_stalled = false;  // RocksDB delays or stops writes (Engine::WritesMayWait)
  };
  std::string Render(const Gauges& g) const;

  uint64_t requests(wire::Op op) const;
  uint64_t errors(Code code) const;

 private:
  static constexpr size_t kOps = wire::kMaxOp + 1;
  static constexpr size_t kCodes = static_cast<size_t>(kLastCode) + 1;
  struct Histogram {
    std::array<std::atomic<uint64_t>, kBucketsUs.size() + 1> buckets{};
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> sum_us{0};
  };
  std::array<Histogram, kOps> latency_;
  std::array<std::atomic<uint64_t>, kCodes> errors_{};
  std::array<std::atomic<uint64_t>, kBusyReasons> busy_{};
  std::atomic<uint64_t> malformed_{0};
  std::atomic<uint64_t> replayed_writes_{0};
  std::atomic<uint64_t> inline_{0};
  std::atomic<uint64_t> barrier_waits_{0}, barrier_wait_us_{0};
  std::atomic<uint64_t> write_many_splits_{0}, write_many_parts_{0};
  std::atomic<uint64_t> query_order_waits_{0}, query_order_wait_us_{0};
  std::atomic<uint64_t> query_skipped_{0}, query_stopped_at_deleted_{0};
  Histogram session_wait_;
  std::atomic<uint64_t> session_waits_{0};
  std::atomic<uint64_t> session_timeouts_{0};
  std::atomic<uint64_t> backups_ok_{0}, backups_failed_{0};
  std::atomic<int64_t> backup_time_{0};
  std::atomic<uint64_t> backup_lsn_{0}, backup_bytes_{0};

  struct TableCounters {
    std::string name;  // the label
    uint64_t operations = 0;
    uint64_t batches = 0;
    uint64_t entities_written = 0;
  };
  mutable std::mutex tables_mu_;
  std::map<std::string, TableCounters> tables_;  // by TableKey
};

}  // namespace sidetable::sidecar
