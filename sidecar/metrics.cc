#include "sidecar/metrics.h"

#include "engine/table_name.h"

#include <algorithm>
#include <cstdio>

#include "common/prometheus_text.h"

namespace sidetable::sidecar {
namespace {

using prometheus::Escape;
using prometheus::Line;

// A sum kept in microseconds, as Prometheus wants it: seconds, 6 decimals.
std::string Seconds(uint64_t micros) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6f", micros / 1e6);
  return text;
}

}  // namespace

void Metrics::RecordRequest(wire::Op op, Code code, uint64_t micros) {
  auto i = static_cast<size_t>(op);
  if (i >= kOps) i = 0;
  Histogram& h = latency_[i];
  size_t b = 0;
  while (b < kBucketsUs.size() && micros > kBucketsUs[b]) b++;
  h.buckets[b].fetch_add(1, std::memory_order_relaxed);
  h.count.fetch_add(1, std::memory_order_relaxed);
  h.sum_us.fetch_add(micros, std::memory_order_relaxed);
  if (code != Code::kOk) errors_[static_cast<size_t>(code)].fetch_add(1, std::memory_order_relaxed);
}

void Metrics::RecordSessionWait(uint64_t micros, bool timed_out) {
  size_t b = 0;
  while (b < kBucketsUs.size() && micros > kBucketsUs[b]) b++;
  session_wait_.buckets[b].fetch_add(1, std::memory_order_relaxed);
  session_wait_.count.fetch_add(1, std::memory_order_relaxed);
  session_wait_.sum_us.fetch_add(micros, std::memory_order_relaxed);
  if (timed_out) session_timeouts_.fetch_add(1, std::memory_order_relaxed);
}

void Metrics::RecordTableWrite(const std::string& table, size_t operations, size_t entities) {
  std::lock_guard lock(tables_mu_);
  TableCounters& t = tables_[TableKey(table).str()];
  if (t.name.empty()) t.name = table;  // a table not named at start or creation
  t.batches++;
  t.operations += operations;
  t.entities_written += entities;
}

void Metrics::NameTable(const std::string& table) {
  std::lock_guard lock(tables_mu_);
  tables_[TableKey(table).str()].name = table;
}

void Metrics::ForgetTable(const std::string& table) {
  std::lock_guard lock(tables_mu_);
  tables_.erase(TableKey(table).str());
}

uint64_t Metrics::requests(wire::Op op) const {
  return latency_[static_cast<size_t>(op)].count.load(std::memory_order_relaxed);
}

uint64_t Metrics::errors(Code code) const {
  return errors_[static_cast<size_t>(code)].load(std::memory_order_relaxed);
}

void Metrics::RecordBackup(bool ok, int64_t unix_seconds, uint64_t last_lsn, uint64_t bytes) {
  if (!ok) {
    backups_failed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  SetLastBackup(unix_seconds, last_lsn, bytes);
  backups_ok_.fetch_add(1, std::memory_order_relaxed);
}

void Metrics::SetLastBackup(int64_t unix_seconds, uint64_t last_lsn, uint64_t bytes) {
  backup_time_.store(unix_seconds, std::memory_order_relaxed);
  backup_lsn_.store(last_lsn, std::memory_order_relaxed);
  backup_bytes_.store(bytes, std::memory_order_relaxed);
}

std::string Metrics::Render(const Gauges& g) const {
  std::string out;
  prometheus::Header(&out, "sidetable_requests_total", "counter", "Requests answered, by operation.");
  for (size_t i = 1; i < kOps; i++) {
    Line(&out, "sidetable_requests_total",
         "op=\"" + std::string(wire::OpName(static_cast<wire::Op>(i))) + "\"",
         latency_[i].count.load(std::memory_order_relaxed));
  }
  prometheus::Header(&out, "sidetable_request_duration_seconds", "histogram", "Time from receipt to reply, by operation.");
  for (size_t i = 1; i < kOps; i++) {
    const std::string op = "op=\"" + std::string(wire::OpName(static_cast<wire::Op>(i))) + "\"";
    const Histogram& h = latency_[i];
    uint64_t cumulative = 0;
    for (size_t b = 0; b <= kBucketsUs.size(); b++) {
      cumulative += h.buckets[b].load(std::memory_order_relaxed);
      char le[32];
      if (b < kBucketsUs.size()) std::snprintf(le, sizeof le, "%g", kBucketsUs[b] / 1e6);
      else std::snprintf(le, sizeof le, "+Inf");
      Line(&out, "sidetable_request_duration_seconds_bucket", op + ",le=\"" + le + "\"", cumulative);
    }
    out += "sidetable_request_duration_seconds_sum{" + op + "} " +
           Seconds(h.sum_us.load(std::memory_order_relaxed)) + "\n";
    Line(&out, "sidetable_request_duration_seconds_count", op, h.count.load(std::memory_order_relaxed));
  }
  prometheus::Header(&out, "sidetable_errors_total", "counter", "Error replies, by Azure error code.");
  for (size_t c = 1; c < kCodes; c++) {
    uint64_t v = errors_[c].load(std::memory_order_relaxed);
    if (v == 0) continue;
    Line(&out, "sidetable_errors_total",
         "code=\"" + std::string(ErrorCodeName(static_cast<Code>(c))) + "\"", v);
  }
  prometheus::Header(&out, "sidetable_server_busy_total", "counter", "ServerBusy (503) answered, by reason: by the frontend before executing, or instead of a read's large reply to a connection that does not read its replies.");
  for (size_t i = 0; i < kBusyReasons; i++) {
    Line(&out, "sidetable_server_busy_total",
         "reason=\"" + std::string(BusyReasonName(static_cast<BusyReason>(i))) + "\"",
         busy_[i].load(std::memory_order_relaxed));
  }
  prometheus::Single(&out, "sidetable_malformed_frames_total", "counter", "Request frames refused at decoding (malformed, or declaring more than the limits allow).", malformed_.load(std::memory_order_relaxed));
  prometheus::Single(&out, "sidetable_replayed_writes_total", "counter", "Write retries answered with the first outcome of their client request id.", replayed_writes_.load(std::memory_order_relaxed));
  prometheus::Single(&out, "sidetable_inline_requests_total", "counter", "Point reads and small writes the frontend executed itself (sidecar.inline_max_bytes), and writes up to sidecar.inline_alone_max_bytes that were the only request in flight.", inline_.load(std::memory_order_relaxed));
  prometheus::Single(&out, "sidetable_table_barrier_waits_total", "counter", "Times a worker thread stopped at a CreateTable or DeleteTable so that it ran in order "
      "with every partition's requests.", barrier_waits_.load(std::memory_order_relaxed));
  prometheus::Header(&out, "sidetable_table_barrier_wait_seconds_total", "counter",
                     "Worker time spent stopped at those table operations.");
  out += "sidetable_table_barrier_wait_seconds_total " +
         Seconds(barrier_wait_us_.load(std::memory_order_relaxed)) + "\n";
  prometheus::Single(&out, "sidetable_query_order_waits_total", "counter", "Queries that may read several partitions and waited for the other worker threads to "
      "finish what was queued before them.", query_order_waits_.load(std::memory_order_relaxed));
  prometheus::Header(&out, "sidetable_query_order_wait_seconds_total", "counter",
                     "Worker time those queries spent waiting.");
  out += "sidetable_query_order_wait_seconds_total " +
         Seconds(query_order_wait_us_.load(std::memory_order_relaxed)) + "\n";
  prometheus::Single(&out, "sidetable_query_skipped_entries_total", "counter", "Entries of deleted entities and superseded versions that query pages passed "
                     "over (RocksDB keeps them until compaction).", query_skipped_.load(std::memory_order_relaxed));
  prometheus::Single(&out, "sidetable_query_pages_stopped_at_deleted_total", "counter", "Query pages that stopped early, with a continuation, after passing over as many "
      "of those as a page may examine.", query_stopped_at_deleted_.load(std::memory_order_relaxed));
  prometheus::Single(&out, "sidetable_write_many_splits_total", "counter", "WriteMany requests whose batches were split by worker thread so that each ran in its "
      "partition's order.", write_many_splits_.load(std::memory_order_relaxed));
  prometheus::Single(&out, "sidetable_write_many_parts_total", "counter", "The parts those WriteMany requests were split into.", write_many_parts_.load(std::memory_order_relaxed));
  prometheus::Single(&out, "sidetable_queue_depth", "gauge", "Requests waiting for a worker.", g.queue_depth);
  prometheus::Single(&out, "sidetable_in_flight", "gauge", "Requests accepted and not yet answered.", g.in_flight);
  prometheus::Single(&out, "sidetable_inflight_bytes", "gauge", "Requests accepted and not yet answered (wire + decoded bytes), and replies of 64 KiB or more not yet sent.", g.inflight_bytes);
  prometheus::Single(&out, "sidetable_inflight_reply_bytes", "gauge", "Replies of 64 KiB or more handed to ZeroMQ and not yet sent (part of sidetable_inflight_bytes).", g.inflight_reply_bytes);
  prometheus::Single(&out, "sidetable_inflight_bytes_peak", "gauge", "The highest sidetable_inflight_bytes since start.", g.inflight_bytes_peak);
  prometheus::Single(&out, "sidetable_inflight_bytes_limit", "gauge", "sidecar.max_inflight_bytes: past it requests get ServerBusy.", g.inflight_bytes_limit);
  prometheus::Single(&out, "sidetable_inflight_connections", "gauge", "Connections with a request in flight.", g.inflight_connections);
  prometheus::Single(&out, "sidetable_parked_reads", "gauge", "Reads waiting for a derived table to cover their session tokens.", g.parked_reads);
  prometheus::Single(&out, "sidetable_session_waits_total", "counter", "Reads that had to wait for their session tokens.", session_waits_.load(std::memory_order_relaxed));
  prometheus::Single(&out, "sidetable_session_timeouts_total", "counter", "Reads answered ReadSessionNotAvailable.", session_timeouts_.load(std::memory_order_relaxed));
  prometheus::Header(&out, "sidetable_backups_total", "counter", "Backup operations, by result (docs/operations.md).");
  Line(&out, "sidetable_backups_total", "result=\"ok\"",
       backups_ok_.load(std::memory_order_relaxed));
  Line(&out, "sidetable_backups_total", "result=\"failed\"",
       backups_failed_.load(std::memory_order_relaxed));
  prometheus::Single(&out, "sidetable_backup_last_success_seconds", "gauge", "Unix time of the last backup made (at start, the newest backup on disk; 0: none).", static_cast<uint64_t>(std::max<int64_t>(0, backup_time_.load(std::memory_order_relaxed))));
  prometheus::Single(&out, "sidetable_backup_last_lsn", "gauge", "The newest change the last backup holds.", backup_lsn_.load(std::memory_order_relaxed));
  prometheus::Single(&out, "sidetable_backup_last_bytes", "gauge", "Bytes of the last backup's files.", backup_bytes_.load(std::memory_order_relaxed));
  prometheus::Header(&out, "sidetable_session_wait_seconds", "histogram", "How long reads waited for their session tokens.");
  {
    uint64_t cumulative = 0;
    for (size_t b = 0; b <= kBucketsUs.size(); b++) {
      cumulative += session_wait_.buckets[b].load(std::memory_order_relaxed);
      char le[32];
      if (b < kBucketsUs.size()) std::snprintf(le, sizeof le, "%g", kBucketsUs[b] / 1e6);
      else std::snprintf(le, sizeof le, "+Inf");
      Line(&out, "sidetable_session_wait_seconds_bucket", std::string("le=\"") + le + "\"", cumulative);
    }
    out += "sidetable_session_wait_seconds_sum " +
           Seconds(session_wait_.sum_us.load(std::memory_order_relaxed)) + "\n";
    Line(&out, "sidetable_session_wait_seconds_count", "", session_wait_.count.load(std::memory_order_relaxed));
  }
  prometheus::Single(&out, "sidetable_changelog_lsn", "gauge", "Newest committed change log sequence number.", g.last_lsn);
  prometheus::Single(&out, "sidetable_changelog_first_lsn", "gauge", "The oldest change the change log still holds (retention trims below it).", g.first_available_lsn);
  prometheus::Single(&out, "sidetable_commits_total", "counter", "Batches (EGTs and table operations) committed since start.", g.commits);
  prometheus::Single(&out, "sidetable_group_commits_total", "counter", "RocksDB writes the commits took (commits per group = the ratio).", g.group_commits);
  prometheus::Single(&out, "sidetable_wal_syncs_total", "counter", "WAL fsyncs that made the commits durable (storage.durability fsync).", g.wal_syncs);
  prometheus::Single(&out, "sidetable_wal_recovery_dropped_bytes", "gauge", "Write-ahead log bytes that did not check when this start recovered the WAL, dropped with every record after them (0 normally).", g.wal_recovery_dropped_bytes);
  prometheus::Header(&out, "sidetable_row_cache_lookups_total", "counter", "Point reads by whether the engine's row cache had the row (storage.row_cache_mb).");
  Line(&out, "sidetable_row_cache_lookups_total", "result=\"hit\"", g.row_cache_hits);
  Line(&out, "sidetable_row_cache_lookups_total", "result=\"miss\"", g.row_cache_misses);
  prometheus::Single(&out, "sidetable_row_cache_bytes", "gauge", "Bytes the row cache holds (rows, keys and a fixed overhead each).", g.row_cache_bytes);
  prometheus::Single(&out, "sidetable_storage_ok", "gauge", "1 while writes are accepted, 0 while a full disk (or another storage error) refuses them.", g.storage_ok ? 1 : 0);
  prometheus::Single(&out, "sidetable_storage_write_refusals_total", "counter", "Writes refused because the disk was full or storage failed.", g.storage_write_refusals_total);
  if (g.storage_free_known) {
    prometheus::Single(&out, "sidetable_storage_free_bytes", "gauge",
                       "Free bytes on the data directory's filesystem (checked every second; "
                       "absent when it cannot be measured).",
                       g.storage_free_bytes);
  }
  prometheus::Single(&out, "sidetable_writes_stalled", "gauge", "1 while RocksDB delays or stops writes (a flush or compaction is behind; the frontend hands writes to its workers meanwhile), else 0.", g.writes_stalled ? 1 : 0);
  if (g.publishing) {
    prometheus::Single(&out, "sidetable_publisher_published_lsn", "gauge", "Every change up to this LSN is on Kafka.", g.published_lsn);
    prometheus::Single(&out, "sidetable_publisher_backlog_events", "gauge", "Committed changes not yet on Kafka.", g.backlog_events);
    prometheus::Single(&out, "sidetable_publisher_backlog_bytes", "gauge", "Estimated bytes of the changes not yet on Kafka.", g.backlog_bytes);
    prometheus::Single(&out, "sidetable_publisher_backlog_full", "gauge", "1 while the backlog is at kafka.max_backlog_events and writes get ServerBusy.", g.backlog_full ? 1 : 0);
    prometheus::Single(&out, "sidetable_publisher_events_total", "counter", "Events delivered to Kafka (rate() = publish rate).", g.published_events_total);
    prometheus::Single(&out, "sidetable_publisher_bytes_total", "counter", "Bytes delivered to Kafka.", g.published_bytes_total);
    prometheus::Single(&out, "sidetable_publisher_delivery_errors_total", "counter", "Kafka deliveries that failed (retried; the stream does not skip).", g.delivery_errors_total);
    prometheus::Single(&out, "sidetable_changestream_blocked_lsn", "gauge", "The LSN the change stream is stuck at (0 = moving); /health says why.", g.blocked_lsn);
    prometheus::Single(&out, "sidetable_publisher_chunked_events_total", "counter", "Events delivered as chunk runs (larger than kafka.chunk_bytes).", g.chunked_events_total);
    prometheus::Single(&out, "sidetable_publisher_refused_writes_total", "counter", "Writes answered ServerBusy by the backlog bound.", g.refused_writes_total);
  }
  std::lock_guard lock(tables_mu_);
  prometheus::Header(&out, "sidetable_table_operations_total", "counter", "Entity operations committed, by table.");
  for (const auto& [key, t] : tables_) {
    Line(&out, "sidetable_table_operations_total", "table=\"" + Escape(t.name) + "\"",
         t.operations);
  }
  prometheus::Header(&out, "sidetable_table_batches_total", "counter", "Write batches (EGTs) committed, by table.");
  for (const auto& [key, t] : tables_) {
    Line(&out, "sidetable_table_batches_total", "table=\"" + Escape(t.name) + "\"", t.batches);
  }
  prometheus::Header(&out, "sidetable_table_entities_written_total", "counter", "Entities inserted or replaced, by table.");
  for (const auto& [key, t] : tables_) {
    Line(&out, "sidetable_table_entities_written_total", "table=\"" + Escape(t.name) + "\"",
         t.entities_written);
  }
  return out;
}

}  // namespace sidetable::sidecar
