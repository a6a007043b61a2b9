// The publisher's insides, shared by publisher.cc (start-up, stats,
// admission) and publisher_loop.cc (the publishing thread). Internal to
// sidecar/changestream.
#pragma once

#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <deque>

#include "sidecar/changestream/publisher.h"
#include "sidecar/changestream/topic_setup.h"

namespace sidetable::changestream {

using Clock = std::chrono::steady_clock;

class Publisher::Impl {
 public:
  Impl(Publisher* owner, Engine* engine, const KafkaOptions& options, std::string sidecar_id,
       EmbeddedKafka* embedded)
      : owner_(owner), engine_(engine), options_(options), sidecar_id_(std::move(sidecar_id)),
        embedded_(embedded), log_(spdlog::default_logger()->clone("publisher")) {}

  ~Impl() {
    topics_.reset();  // its thread uses rk_
    if (rk_) rd_kafka_destroy(rk_);
  }

  Status Init(const std::string& bootstrap);
  void Run();
  void Wake() {
    std::lock_guard l(mu_);
    wake_ = true;
    cv_.notify_one();
  }
  // The final flush waits at most until `flush_deadline`.
  void RequestStop(std::chrono::steady_clock::time_point flush_deadline) {
    {
      std::lock_guard l(mu_);
      stop_ = true;
      flush_deadline_ = flush_deadline;
      cv_.notify_one();
    }
    if (topics_) topics_->Stop();
  }
  // Waits for Run() to return, at most until `deadline`.
  bool WaitDone(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock l(mu_);
    return done_cv_.wait_until(l, deadline, [&] { return done_; });
  }
  // Why the stream is stuck, if it is (any thread).
  std::pair<uint64_t, std::string> Blocked() const {
    std::lock_guard l(state_mu_);
    return {blocked_lsn_, blocked_reason_};
  }

  std::thread thread_;
  std::atomic<uint64_t> events_total_{0}, bytes_total_{0}, delivery_errors_{0}, chunked_total_{0};
  std::atomic<uint64_t> backlog_bytes_{0};

 private:
  struct InFlight {
    uint64_t lsn;
    uint32_t chunks_left;  // messages of this record not yet delivered
    bool delivered = false;
  };

  Status ReadWatermark(uint64_t* watermark);
  static void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque);
  void Delivered(uint64_t lsn, rd_kafka_resp_err_t err, size_t bytes);
  bool ProduceMore(Clock::time_point now);
  uint64_t RepublishFrom(uint64_t after, uint64_t watermark, std::string_view why);
  // Before the first record goes to `topic`: if it started empty, rewinds
  // to RepublishFrom (KafkaOptions::republish_to_empty_topic_after); true
  // when it did (read the log again from next_lsn_).
  bool RewindForEmptyTopic(const std::string& topic);
  // topics_->Ready(topic), keeping waiting_topic_ (what /health names) in step.
  bool TopicReady(const std::string& topic);
  // False for a table event another member publishes (table_events_of).
  bool PublishesTableEvent(const ChangeRecord& rec) const;
  rd_kafka_resp_err_t ProduceOne(const std::string& topic, const std::string& key, uint64_t lsn,
                                 std::string_view piece, uint32_t index, uint32_t count, size_t total,
                                 uint64_t table_incarnation);
  void Advance();
  void PersistWatermark(bool force);
  void UpdateState(Clock::time_point now);
  void SetBlocked(uint64_t lsn, std::string reason);

  Publisher* owner_;
  Engine* engine_;
  const KafkaOptions options_;
  const std::string sidecar_id_;
  EmbeddedKafka* embedded_;
  std::shared_ptr<spdlog::logger> log_;
  rd_kafka_t* rk_ = nullptr;
  std::unique_ptr<TopicSetup> topics_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool wake_ = false, stop_ = false;
  std::chrono::steady_clock::time_point flush_deadline_{};
  std::condition_variable done_cv_;
  bool done_ = false;

  mutable std::mutex state_mu_;
  uint64_t blocked_lsn_ = 0;
  std::string blocked_reason_;

  // Publishing thread only:
  std::deque<InFlight> in_flight_;  // ascending LSNs, contiguous
  uint64_t next_lsn_ = 1;
  uint64_t persisted_ = 0;
  bool rewind_ = false;
  bool empty_topic_checked_ = false;  // RewindForEmptyTopic ran
  Clock::time_point rewind_at_{}, retry_at_{};
  // A record whose chunks were only partly produced (librdkafka's queue was
  // full): its LSN and the next chunk to produce.
  uint64_t partial_lsn_ = 0;
  uint32_t partial_next_ = 0;
  std::string waiting_topic_;       // set-up not done yet
  std::string error_reason_;        // the last produce or delivery error
  uint64_t error_lsn_ = 0;
  uint64_t progress_lsn_ = 0;       // the watermark when it last moved...
  Clock::time_point progress_at_{}; // ...and when
  Clock::time_point logged_blocked_at_{};
  Clock::time_point last_persist_{};
  // The last attempt to persist the watermark failed (a full disk): logged
  // once, retried at the flush interval, and its recovery logged once.
  bool persist_failing_ = false;
  int warned_level_ = 0;
};

}  // namespace sidetable::changestream
