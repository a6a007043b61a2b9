// Publisher: the sidecar's change log, onto Kafka, in order, at least once.
//
// A background thread reads the engine's change log from the persisted
// "published" watermark and produces one Kafka message per record (one
// committed EGT or table event; a record whose event is larger than
// chunk_bytes goes out as a run of chunk messages, events/chunk.h), keyed by "<table>/<PartitionKey>" so one
// partition's changes stay in order on one Kafka partition. The producer is
// idempotent with acks=all and never times a message out, so retries across
// broker outages keep the order. The watermark advances only over a
// contiguous run of delivered records, and is persisted every
// watermark_flush_ms: after a crash the publisher resumes from it and may
// publish some records again (consumers drop duplicates by LSN).
//
// While Kafka is unreachable the change log holds the backlog. The backlog is
// counted where writes are admitted (TryAdmitWrite: the engine's last written LSN
// minus the published watermark, plus writes admitted and still running),
// not by the publishing thread, so the bound max_backlog_events holds
// exactly whatever that thread is doing; beyond it writes get ServerBusy.
// Nothing is ever dropped. Topics are found or created on a thread of their
// own (topic_setup.h): the publishing loop never waits on Kafka.
//
// A record that cannot be published (Kafka refuses it, or nothing has been
// delivered for a while) is never silent: Stats() names the blocked LSN and
// why, /health turns "degraded", and an error line naming the LSN is logged
// every 10 s while it lasts.
//
// Thread safety: all public methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/engine.h"
#include "sidecar/changestream/kafka_options.h"

namespace sidetable::kafka {
class EmbeddedKafka;
}

namespace sidetable::changestream {

using kafka::EmbeddedKafka;

struct PublisherStats {
  uint64_t published_lsn = 0;    // every record up to here is delivered
  uint64_t backlog_events = 0;   // committed but not yet delivered (counted from the change log)
  uint64_t backlog_bytes = 0;    // approximate size of those records
  uint64_t events_total = 0;     // delivered since start (may include re-sends)
  uint64_t bytes_total = 0;
  uint64_t delivery_errors = 0;  // produce and delivery errors, each attempt
  uint64_t chunked_events_total = 0;  // delivered as chunk runs
  uint64_t refused_writes = 0;   // writes refused by the backlog bound
  bool backlog_full = false;
  // The record the stream is stuck at (0 = not stuck) and why.
  uint64_t blocked_lsn = 0;
  std::string blocked_reason;
};

class Publisher {
 public:
  // `embedded` (may be null) creates topics on the in-process mock cluster;
  // otherwise topics are created through Kafka's admin API.
  static Result<std::unique_ptr<Publisher>> Start(Engine* engine, const KafkaOptions& options,
                                                  const std::string& sidecar_id,
                                                  EmbeddedKafka* embedded);
  ~Publisher();

  // Wakes the publishing thread (the sidecar calls it after each commit).
  void Notify();
  // Stops: delivers what is in flight (bounded wait) and persists the watermark.
  void Stop();
  // The same, waiting at most until `deadline`. False when the publishing
  // thread has not finished by then (e.g. blocked in a topic lookup while
  // Kafka is unreachable): it is left running, so the caller must exit the
  // process without destroying the publisher or the engine. Nothing is
  // lost: what was not published stays in the change log.
  bool Stop(std::chrono::steady_clock::time_point deadline);

  // Admission of one write under the backlog bound; exact under concurrency
  // (each admitted write counts until its LSN is in the engine's last written LSN).
  // Every true must be followed by one FinishWrite(n) once the write ran.
  // `n`: the change records the request may commit (WriteMany: its EGTs).
  bool TryAdmitWrite(uint64_t n = 1);
  void FinishWrite(uint64_t n = 1) { admitting_.fetch_sub(n, std::memory_order_acq_rel); }
  // Committed changes not yet delivered, from the change log: at once
  // accurate, whatever the publishing thread is doing.
  uint64_t backlog_events() const;
  bool backlog_full() const { return backlog_events() >= max_backlog_; }
  uint64_t published_lsn() const { return published_.load(std::memory_order_acquire); }
  PublisherStats Stats() const;
  const std::string& bootstrap() const { return bootstrap_; }

  class Impl;

 private:
  Publisher() = default;
  std::unique_ptr<Impl> impl_;
  Engine* engine_ = nullptr;
  uint64_t max_backlog_ = 0;
  std::string bootstrap_;
  std::atomic<uint64_t> published_{0};
  std::atomic<uint64_t> admitting_{0};  // writes admitted and still running
  std::atomic<uint64_t> refused_{0};
};

// The topic a record of `table` goes to under `topic_template`.
std::string TopicFor(const std::string& topic_template, const std::string& sidecar_id,
                     const std::string& table);

// The Kafka message key of a record: "<table>/<PartitionKey>" (table names
// have no '/', so the first '/' splits it).
std::string KeyFor(const ChangeRecord& record);

}  // namespace sidetable::changestream
