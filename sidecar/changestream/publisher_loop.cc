// The publishing thread: change log → Kafka, in order, at least once.
#include <algorithm>

#include "events/chunk.h"
#include "events/event.h"
#include "sidecar/changestream/publisher_impl.h"

namespace sidetable::changestream {
namespace {

constexpr size_t kMaxInFlight = 20000;  // records produced but not yet delivered
constexpr size_t kReadBatch = 1000;
// After a refused produce or a failed delivery, wait this long before trying
// again: a permanent refusal must not become a hot loop.
constexpr auto kRetryAfterError = std::chrono::seconds(1);
// Records waiting this long with no delivery make the stream "blocked".
constexpr auto kStallAfter = std::chrono::seconds(10);
// While blocked, the error line naming the LSN comes at most this often.
constexpr auto kBlockedLogEvery = std::chrono::seconds(10);

bool IsPurge(rd_kafka_resp_err_t e) {
  return e == RD_KAFKA_RESP_ERR__PURGE_QUEUE || e == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT;
}

}  // namespace

void Publisher::Impl::OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  static_cast<Impl*>(opaque)->Delivered(reinterpret_cast<uint64_t>(m->_private), m->err, m->len);
}

// Runs inside rd_kafka_poll, on the publishing thread.
void Publisher::Impl::Delivered(uint64_t lsn, rd_kafka_resp_err_t err, size_t bytes) {
  if (IsPurge(err)) return;  // our own rewind: those records are produced again
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    delivery_errors_.fetch_add(1, std::memory_order_relaxed);
    error_lsn_ = lsn;
    error_reason_ = std::string("Kafka refused it: ") + rd_kafka_err2str(err) +
                    (err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
                         ? " (the topic's max.message.bytes is below kafka.chunk_bytes: lower "
                           "chunk_bytes or raise max.message.bytes)"
                         : "");
    if (!rewind_) {
      rewind_ = true;
      rewind_at_ = Clock::now() + kRetryAfterError;
    }
    return;
  }
  if (in_flight_.empty() || lsn < in_flight_.front().lsn) return;  // from before a rewind
  const uint64_t index = lsn - in_flight_.front().lsn;
  if (index >= in_flight_.size()) return;
  InFlight& f = in_flight_[index];
  bytes_total_.fetch_add(bytes, std::memory_order_relaxed);
  if (f.chunks_left > 0 && --f.chunks_left == 0) {
    f.delivered = true;
    events_total_.fetch_add(1, std::memory_order_relaxed);
  }
}

rd_kafka_resp_err_t Publisher::Impl::ProduceOne(const std::string& topic, const std::string& key,
                                                uint64_t lsn, std::string_view piece, uint32_t index,
                                                uint32_t count, size_t total, uint64_t table_incarnation) {
  const std::string lsn_header = std::to_string(lsn);
  rd_kafka_headers_t* headers = rd_kafka_headers_new(count > 1 ? 5 : 3);
  rd_kafka_header_add(headers, events::kLsnHeader, -1, lsn_header.data(),
                      static_cast<ssize_t>(lsn_header.size()));
  rd_kafka_header_add(headers, "sidetable-schema", -1, "1", 1);
  if (count > 1) {
    const std::string chunk = events::FormatChunkHeader(index, count), size = std::to_string(total);
    rd_kafka_header_add(headers, events::kChunkHeader, -1, chunk.data(), static_cast<ssize_t>(chunk.size()));
    rd_kafka_header_add(headers, events::kSizeHeader, -1, size.data(), static_cast<ssize_t>(size.size()));
  }
  if (table_incarnation != 0) {  // on every chunk: a reader takes it from the one completing the event
    const std::string ti = std::to_string(table_incarnation);
    rd_kafka_header_add(headers, events::kTableIncarnationHeader, -1, ti.data(), static_cast<ssize_t>(ti.size()));
  }
  rd_kafka_resp_err_t e = rd_kafka_producev(
      rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_KEY(key.data(), key.size()),
      RD_KAFKA_V_VALUE(const_cast<char*>(piece.data()), piece.size()),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(headers),
      RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(lsn)), RD_KAFKA_V_END);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) rd_kafka_headers_destroy(headers);  // else librdkafka owns them
  return e;
}

// Produces the next records from the change log. False when there was
// nothing to produce (or no room, or it must wait), so the caller may wait.
bool Publisher::Impl::ProduceMore(Clock::time_point now) {
  if (in_flight_.size() >= kMaxInFlight || rewind_ || now < retry_at_) return false;
  if (!empty_topic_checked_ && options_.republish_to_empty_topic_after &&
      owner_->published_.load() > 0) {
    // Something was published before: the topic is set up now, not at the
    // next write, since whether it starts empty decides where publishing
    // starts (a restored sidecar may get no write for a while).
    const std::string topic = TopicFor(options_.topic, sidecar_id_, "");
    if (!TopicReady(topic)) return false;
    if (RewindForEmptyTopic(topic)) return true;
  }
  auto batch = engine_->ReadChanges(next_lsn_, std::min(kReadBatch, kMaxInFlight - in_flight_.size()));
  if (!batch.ok()) {
    log_->error("reading the change log: {}", batch.status().ToString());
    return false;
  }
  if (batch->records.empty()) return false;
  for (const ChangeRecord& rec : batch->records) {
    if (!PublishesTableEvent(rec)) {
      // Another member's table change (or a local repair): nothing to send,
      // but the watermark passes it like a delivered record.
      in_flight_.push_back({rec.lsn, 0, true});
      next_lsn_ = rec.lsn + 1;
      continue;
    }
    const std::string topic = TopicFor(options_.topic, sidecar_id_, rec.table);
    if (!TopicReady(topic)) return false;
    if (RewindForEmptyTopic(topic)) return true;
    const std::string key = KeyFor(rec);
    const std::string value = events::EncodeEvent(rec, sidecar_id_);
    const std::vector<std::string_view> pieces = events::SplitEvent(value, options_.chunk_bytes);
    const auto count = static_cast<uint32_t>(pieces.size());
    const uint64_t incarnation = rec.kind == ChangeKind::kEntities && options_.table_incarnation
                                     ? options_.table_incarnation(rec.table_id)
                                     : 0;
    uint32_t first = 0;
    if (partial_lsn_ == rec.lsn) {
      first = partial_next_;
    } else {
      in_flight_.push_back({rec.lsn, count});
    }
    for (uint32_t i = first; i < count; i++) {
      const rd_kafka_resp_err_t e = ProduceOne(topic, key, rec.lsn, pieces[i], i, count, value.size(), incarnation);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) continue;
      // Resume at this chunk: the ones before it are on their way.
      partial_lsn_ = rec.lsn;
      partial_next_ = i;
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) return false;  // librdkafka is full: poll, then resume
      delivery_errors_.fetch_add(1, std::memory_order_relaxed);
      error_lsn_ = rec.lsn;
      error_reason_ = std::string("producing it (") + std::to_string(value.size()) + " bytes in " +
                      std::to_string(count) + " message(s)) failed: " + rd_kafka_err2str(e);
      retry_at_ = now + kRetryAfterError;
      return false;
    }
    if (count > 1) chunked_total_.fetch_add(1, std::memory_order_relaxed);
    partial_lsn_ = 0;
    next_lsn_ = rec.lsn + 1;
  }
  return true;
}

bool Publisher::Impl::TopicReady(const std::string& topic) {
  if (!topics_->Ready(topic)) {  // being set up on its own thread
    waiting_topic_ = topic;      // /health names a refused or missing topic from here on
    return false;
  }
  waiting_topic_.clear();
  return true;
}

bool Publisher::Impl::PublishesTableEvent(const ChangeRecord& rec) const {
  if (options_.table_events_of.empty()) return true;
  if (rec.kind != ChangeKind::kTableCreated && rec.kind != ChangeKind::kTableDeleted) return true;
  return rec.client_request_id.rfind(options_.table_events_of, 0) == 0;
}

bool Publisher::Impl::RewindForEmptyTopic(const std::string& topic) {
  if (empty_topic_checked_) return false;
  empty_topic_checked_ = true;
  const uint64_t published = owner_->published_.load();
  // Only before this process produced anything: the topic has nothing of ours yet.
  if (!options_.republish_to_empty_topic_after || !topics_->TakeStartedEmpty(topic) ||
      !in_flight_.empty() || next_lsn_ != published + 1) {
    return false;
  }
  // Asked only now: finding the point reads the change log (bounded), which
  // a start onto a topic that holds our history must not pay.
  const uint64_t after = options_.republish_to_empty_topic_after();
  if (after >= published) return false;
  const uint64_t from = RepublishFrom(after, published, "change topic " + topic + " starts empty");
  if (from >= published) return false;
  owner_->published_.store(from);
  persisted_ = progress_lsn_ = from;
  next_lsn_ = from + 1;
  return true;
}

void Publisher::Impl::Advance() {
  uint64_t w = owner_->published_.load(std::memory_order_relaxed);
  while (!in_flight_.empty() && in_flight_.front().delivered) {
    w = in_flight_.front().lsn;
    in_flight_.pop_front();
  }
  owner_->published_.store(w, std::memory_order_release);
}

void Publisher::Impl::PersistWatermark(bool force) {
  const uint64_t w = owner_->published_.load();
  const auto now = Clock::now();
  if (w == persisted_) return;
  if (!force && now - last_persist_ < std::chrono::milliseconds(options_.watermark_flush_ms)) return;
  // A failure waits for the next interval too, and is logged once, not
  // every pass: on a full disk it would fill the log (often on that disk)
  // twenty lines a second. Publishing goes on meanwhile; a restart repeats
  // at most what was published since the last persisted watermark.
  last_persist_ = now;
  if (Status s = engine_->PutSetting("publisher/watermark", std::to_string(w)); !s.ok()) {
    if (!persist_failing_) {
      log_->error(
          "persisting the publish watermark: {} (retried every {} ms; logged again when it works)",
          s.ToString(), options_.watermark_flush_ms);
    }
    persist_failing_ = true;
    return;
  }
  if (persist_failing_) log_->info("persisting the publish watermark works again (LSN {})", w);
  persist_failing_ = false;
  persisted_ = w;
}

void Publisher::Impl::SetBlocked(uint64_t lsn, std::string reason) {
  std::lock_guard l(state_mu_);
  blocked_lsn_ = lsn;
  blocked_reason_ = std::move(reason);
}

// The publishing thread's view of its health: the backlog's size in bytes,
// the warnings as it fills, and whether (and why) the stream is stuck.
void Publisher::Impl::UpdateState(Clock::time_point now) {
  const uint64_t w = owner_->published_.load();
  const uint64_t backlog = owner_->backlog_events();
  backlog_bytes_.store(backlog ? engine_->ApproximateChangeBytes(w + 1) : 0, std::memory_order_relaxed);
  if (w != progress_lsn_ || backlog == 0) {
    progress_lsn_ = w;
    progress_at_ = now;
  }
  if (error_lsn_ != 0 && error_lsn_ <= w) error_lsn_ = 0;  // it got through after all
  std::string reason;
  const std::string refusal = waiting_topic_.empty() ? "" : topics_->Refusal(waiting_topic_);
  if (error_lsn_ != 0) {
    reason = error_reason_;
  } else if (!refusal.empty()) {
    reason = refusal;  // at once: waiting will not cure it
  } else if (backlog > 0 && now - progress_at_ >= kStallAfter) {
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(now - progress_at_).count();
    const std::string topic_error = waiting_topic_.empty() ? "" : topics_->last_error();
    reason = "nothing delivered for " + std::to_string(secs) + " s" +
             (waiting_topic_.empty() ? " (is Kafka reachable?)"
                                     : "; topic " + waiting_topic_ + " not set up yet" +
                                           (topic_error.empty() ? "" : ": " + topic_error));
  }
  const uint64_t lsn = reason.empty() ? 0 : (error_lsn_ ? error_lsn_ : w + 1);
  const uint64_t was = Blocked().first;
  SetBlocked(lsn, reason);
  if (lsn != 0 && (was != lsn || now - logged_blocked_at_ >= kBlockedLogEvery)) {
    log_->error("change stream blocked at LSN {}: {}; {} change(s) waiting", lsn, reason, backlog);
    logged_blocked_at_ = now;
  } else if (lsn == 0 && was != 0) {
    log_->info("change stream moving again (published LSN {})", w);
  }
  // Warn once per level as the backlog fills, and once when it drains.
  const uint64_t max = options_.max_backlog_events;
  const bool full = backlog >= max;
  const int level = full ? 3 : backlog * 10 >= max * 8 ? 2 : backlog * 2 >= max ? 1 : 0;
  if (level > warned_level_) {
    log_->warn("change stream backlog at {} of {} events{}", backlog, max,
               full ? ": writes now get ServerBusy until Kafka catches up" : "");
  } else if (level == 0 && warned_level_ > 0) {
    log_->info("change stream backlog drained ({} events)", backlog);
  }
  warned_level_ = level;
}

void Publisher::Impl::Run() {
  auto last_state = Clock::now() - std::chrono::seconds(1);
  for (;;) {
    {
      std::lock_guard l(mu_);
      if (stop_) break;
    }
    rd_kafka_poll(rk_, 0);  // delivery reports
    auto now = Clock::now();
    if (rewind_ && now >= rewind_at_) {
      // Re-produce everything after the watermark: at-least-once. A chunk
      // run cut short here is sent again whole; consumers drop the part.
      rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      rd_kafka_poll(rk_, 0);
      in_flight_.clear();
      partial_lsn_ = 0;
      next_lsn_ = owner_->published_.load() + 1;
      rewind_ = false;
    }
    Advance();
    const bool produced = ProduceMore(now);
    PersistWatermark(false);
    now = Clock::now();
    if (now - last_state > std::chrono::milliseconds(50)) {
      UpdateState(now);
      last_state = now;
    }
    if (!produced) {
      std::unique_lock l(mu_);
      // Short waits while deliveries are outstanding, longer when idle;
      // Notify() cuts either short.
      cv_.wait_for(l, std::chrono::milliseconds(in_flight_.empty() ? 50 : 1),
                   [&] { return wake_ || stop_; });
      wake_ = false;
    }
  }
  // Stop: give in-flight records a bounded chance to be delivered, within
  // the deadline the caller of Stop() set.
  std::chrono::steady_clock::time_point flush_deadline;
  {
    std::lock_guard l(mu_);
    flush_deadline = flush_deadline_;
  }
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(flush_deadline - std::chrono::steady_clock::now());
  rd_kafka_flush(rk_, static_cast<int>(std::clamp<int64_t>(left.count(), 0, 3000)));
  rd_kafka_poll(rk_, 0);
  Advance();
  PersistWatermark(true);
  std::lock_guard l(mu_);
  done_ = true;
  done_cv_.notify_all();
}

}  // namespace sidetable::changestream
