#include "sidecar/changestream/publisher.h"

#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <set>

#include "common/kafka/embedded_kafka.h"
#include "events/event.h"

namespace sidetable::changestream {
namespace {

constexpr const char* kWatermarkKey = "publisher/watermark";
constexpr size_t kMaxInFlight = 20000;    // records produced but not yet delivered
constexpr size_t kReadBatch = 1000;

void Replace(std::string* s, std::string_view from, const std::string& to) {
  for (size_t pos; (pos = s->find(from)) != std::string::npos;) s->replace(pos, from.size(), to);
}

}  // namespace

std::string TopicFor(const std::string& topic_template, const std::string& sidecar_id,
                     const std::string& table) {
  std::string t = topic_template;
  Replace(&t, "{sidecar}", sidecar_id);
  Replace(&t, "{table}", table);
  return t;
}

std::string KeyFor(const ChangeRecord& r) { return r.table + "/" + r.partition_key; }

class Publisher::Impl {
 public:
  Impl(Publisher* owner, Engine* engine, const KafkaOptions& options, std::string sidecar_id,
       EmbeddedKafka* embedded)
      : owner_(owner), engine_(engine), options_(options), sidecar_id_(std::move(sidecar_id)),
        embedded_(embedded), log_(spdlog::default_logger()->clone("publisher")) {}

  ~Impl() {
    if (rk_) rd_kafka_destroy(rk_);
  }

  Status Init(const std::string& bootstrap);
  void Run();
  void Wake() {
    std::lock_guard l(mu_);
    wake_ = true;
    cv_.notify_one();
  }
  void RequestStop(std::chrono::steady_clock::time_point flush_deadline) {
    std::lock_guard l(mu_);
    stop_ = true;
    flush_deadline_ = flush_deadline;
    cv_.notify_one();
  }
  // Waits for Run() to return, at most until `deadline`.
  bool WaitDone(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock l(mu_);
    return done_cv_.wait_until(l, deadline, [&] { return done_; });
  }

  std::thread thread_;
  std::atomic<uint64_t> events_total_{0}, bytes_total_{0}, delivery_errors_{0};
  std::atomic<uint64_t> backlog_events_{0}, backlog_bytes_{0};

 private:
  struct InFlight {
    uint64_t lsn;
    bool delivered = false;
  };

  static void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque);
  void Delivered(uint64_t lsn, rd_kafka_resp_err_t err, size_t bytes);
  Status EnsureTopic(const std::string& topic);
  bool TopicExists(const std::string& topic);
  bool ProduceMore();
  void Advance();
  void PersistWatermark(bool force);
  void UpdateBacklog();

  Publisher* owner_;
  Engine* engine_;
  const KafkaOptions options_;
  const std::string sidecar_id_;
  EmbeddedKafka* embedded_;
  std::shared_ptr<spdlog::logger> log_;
  rd_kafka_t* rk_ = nullptr;

  std::mutex mu_;
  std::condition_variable cv_;
  bool wake_ = false, stop_ = false;
  std::chrono::steady_clock::time_point flush_deadline_{};
  std::condition_variable done_cv_;
  bool done_ = false;

  // Publishing thread only:
  std::deque<InFlight> in_flight_;  // ascending LSNs, contiguous
  uint64_t next_lsn_ = 1;
  uint64_t persisted_ = 0;
  bool rewind_ = false;
  std::set<std::string> topics_;
  std::chrono::steady_clock::time_point last_persist_{};
  int warned_level_ = 0;
};

Status Publisher::Impl::Init(const std::string& bootstrap) {
  auto stored = engine_->GetSetting(kWatermarkKey);
  if (!stored.ok()) return stored.status();
  uint64_t watermark = stored->has_value() ? std::stoull(**stored) : 0;
  const EngineStats st = engine_->Stats();
  if (watermark + 1 < st.first_available_lsn) {
    // Records were trimmed before they were published: only possible if the
    // log was trimmed by hand. Say so loudly and go on from what exists.
    log_->error("change log starts at LSN {} but only {} was published: records {}..{} are lost "
                "to the stream", st.first_available_lsn, watermark, watermark + 1,
                st.first_available_lsn - 1);
    watermark = st.first_available_lsn - 1;
  }
  owner_->published_.store(watermark);
  persisted_ = watermark;
  next_lsn_ = watermark + 1;

  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const std::string& k, const std::string& v) -> Status {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      return Status(Code::kInvalidInput, "kafka." + k + ": " + err);
    }
    return Status::OK();
  };
  Status s;
  for (const auto& [k, v] : std::map<std::string, std::string>{
           {"bootstrap.servers", bootstrap},
           {"enable.idempotence", "true"},  // acks=all, ordered retries, no duplicates per session
           {"acks", "all"},
           {"message.timeout.ms", "0"},  // never give up a record: outages only delay
           {"linger.ms", "2"},
           // librdkafka's default backs off up to 10 s between reconnects;
           // after an outage that delays catching up by seconds.
           {"reconnect.backoff.max.ms", "1000"},
           {"partitioner", "murmur2_random"},  // the Java client's partitioning
           {"compression.type", "lz4"},
           {"queue.buffering.max.messages", "100000"},
           {"client.id", "sidetable-" + sidecar_id_},
           {"log_level", "4"}}) {
    if (!(s = set(k, v)).ok()) {
      rd_kafka_conf_destroy(conf);
      return s;
    }
  }
  for (const auto& [k, v] : options_.properties) {
    if (!(s = set(k, v)).ok()) {
      rd_kafka_conf_destroy(conf);
      return s;
    }
  }
  rd_kafka_conf_set_dr_msg_cb(conf, &Impl::OnDelivery);
  rd_kafka_conf_set_opaque(conf, this);
  rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk_ == nullptr) return Status(Code::kInvalidInput, std::string("kafka producer: ") + err);
  return Status::OK();
}

void Publisher::Impl::OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  static_cast<Impl*>(opaque)->Delivered(reinterpret_cast<uint64_t>(m->_private), m->err, m->len);
}

void Publisher::Impl::Delivered(uint64_t lsn, rd_kafka_resp_err_t err, size_t bytes) {
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    delivery_errors_.fetch_add(1, std::memory_order_relaxed);
    log_->warn("delivery of LSN {} failed: {}; republishing from LSN {}", lsn, rd_kafka_err2str(err),
               owner_->published_.load() + 1);
    rewind_ = true;
    return;
  }
  if (in_flight_.empty() || lsn < in_flight_.front().lsn) return;  // from before a rewind
  const uint64_t index = lsn - in_flight_.front().lsn;
  if (index >= in_flight_.size()) return;
  in_flight_[index].delivered = true;
  events_total_.fetch_add(1, std::memory_order_relaxed);
  bytes_total_.fetch_add(bytes, std::memory_order_relaxed);
}

bool Publisher::Impl::TopicExists(const std::string& topic) {
  rd_kafka_topic_t* t = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk_, 0, t, &md, 5000);
  bool exists = e == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 &&
                md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topics[0].partition_cnt > 0;
  if (md) rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(t);
  return exists;
}

Status Publisher::Impl::EnsureTopic(const std::string& topic) {
  if (topics_.count(topic)) return Status::OK();
  if (embedded_ != nullptr) {
    ST_RETURN_IF_ERROR(embedded_->CreateTopic(topic, options_.partitions));
  } else if (TopicExists(topic)) {
    // Created by an operator (with its own partitioning and retention): use it as is.
  } else {
    char err[256];
    rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(topic.c_str(), options_.partitions,
                                                    options_.replication_factor, err, sizeof err);
    if (nt == nullptr) return Status(Code::kInvalidInput, std::string("topic ") + topic + ": " + err);
    rd_kafka_queue_t* q = rd_kafka_queue_new(rk_);
    rd_kafka_CreateTopics(rk_, &nt, 1, nullptr, q);
    rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 10000);
    Status result = Status(Code::kUnavailable, "creating topic " + topic + ": no answer from Kafka");
    if (ev != nullptr) {
      const rd_kafka_CreateTopics_result_t* res = rd_kafka_event_CreateTopics_result(ev);
      size_t n = 0;
      const rd_kafka_topic_result_t** tr = res ? rd_kafka_CreateTopics_result_topics(res, &n) : nullptr;
      rd_kafka_resp_err_t e = n > 0 ? rd_kafka_topic_result_error(tr[0]) : rd_kafka_event_error(ev);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR || e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        result = Status::OK();
      } else {
        result = Status(Code::kUnavailable, "creating topic " + topic + ": " + rd_kafka_err2str(e));
      }
      rd_kafka_event_destroy(ev);
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    ST_RETURN_IF_ERROR(result);
  }
  topics_.insert(topic);
  log_->info("publishing to topic {}", topic);
  return Status::OK();
}

// Produces the next records from the change log. False when there was
// nothing to produce (or no room), so the caller may wait.
bool Publisher::Impl::ProduceMore() {
  if (in_flight_.size() >= kMaxInFlight) return false;
  auto batch = engine_->ReadChanges(next_lsn_, std::min(kReadBatch, kMaxInFlight - in_flight_.size()));
  if (!batch.ok()) {
    log_->error("reading the change log: {}", batch.status().ToString());
    return false;
  }
  if (batch->records.empty()) return false;
  for (const ChangeRecord& rec : batch->records) {
    const std::string topic = TopicFor(options_.topic, sidecar_id_, rec.table);
    if (Status s = EnsureTopic(topic); !s.ok()) {
      log_->warn("{}; will retry", s.ToString());
      return false;
    }
    const std::string key = KeyFor(rec);
    const std::string value = events::EncodeEvent(rec, sidecar_id_);
    const std::string lsn_header = std::to_string(rec.lsn);
    rd_kafka_resp_err_t e = rd_kafka_producev(
        rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_KEY(key.data(), key.size()),
        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_HEADER("sidetable-lsn", lsn_header.data(), static_cast<ssize_t>(lsn_header.size())),
        RD_KAFKA_V_HEADER("sidetable-schema", "1", 1),
        RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(rec.lsn)), RD_KAFKA_V_END);
    if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) return false;  // librdkafka is full: poll, then resume here
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      log_->error("producing LSN {}: {}", rec.lsn, rd_kafka_err2str(e));
      return false;
    }
    in_flight_.push_back({rec.lsn});
    next_lsn_ = rec.lsn + 1;
  }
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
  const auto now = std::chrono::steady_clock::now();
  if (w == persisted_) return;
  if (!force && now - last_persist_ < std::chrono::milliseconds(options_.watermark_flush_ms)) return;
  if (Status s = engine_->PutSetting(kWatermarkKey, std::to_string(w)); !s.ok()) {
    log_->error("persisting the publish watermark: {}", s.ToString());
    return;
  }
  persisted_ = w;
  last_persist_ = now;
}

void Publisher::Impl::UpdateBacklog() {
  const uint64_t last = engine_->Stats().last_lsn;
  const uint64_t w = owner_->published_.load();
  const uint64_t backlog = last > w ? last - w : 0;
  backlog_events_.store(backlog, std::memory_order_relaxed);
  backlog_bytes_.store(backlog ? engine_->ApproximateChangeBytes(w + 1) : 0, std::memory_order_relaxed);
  const bool full = backlog >= options_.max_backlog_events;
  owner_->backlog_full_.store(full, std::memory_order_relaxed);
  // Warn once per level as the backlog fills, and once when it drains.
  const int level = full ? 3 : backlog * 10 >= options_.max_backlog_events * 8 ? 2
                    : backlog * 2 >= options_.max_backlog_events ? 1 : 0;
  if (level > warned_level_) {
    log_->warn("change stream backlog at {} of {} events{}", backlog, options_.max_backlog_events,
               full ? ": writes now get ServerBusy until Kafka catches up" : "");
  } else if (level == 0 && warned_level_ > 0) {
    log_->info("change stream backlog drained ({} events)", backlog);
  }
  warned_level_ = level;
}

void Publisher::Impl::Run() {
  auto last_backlog = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  for (;;) {
    {
      std::lock_guard l(mu_);
      if (stop_) break;
    }
    rd_kafka_poll(rk_, 0);  // delivery reports
    if (rewind_) {
      // Re-produce everything after the watermark: at-least-once.
      rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      rd_kafka_poll(rk_, 0);
      in_flight_.clear();
      next_lsn_ = owner_->published_.load() + 1;
      rewind_ = false;
    }
    Advance();
    const bool produced = ProduceMore();
    PersistWatermark(false);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_backlog > std::chrono::milliseconds(50)) {
      UpdateBacklog();
      last_backlog = now;
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
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      flush_deadline - std::chrono::steady_clock::now());
  rd_kafka_flush(rk_, static_cast<int>(std::clamp<int64_t>(left.count(), 0, 3000)));
  rd_kafka_poll(rk_, 0);
  Advance();
  PersistWatermark(true);
  UpdateBacklog();
  std::lock_guard l(mu_);
  done_ = true;
  done_cv_.notify_all();
}

Result<std::unique_ptr<Publisher>> Publisher::Start(Engine* engine, const KafkaOptions& options,
                                                    const std::string& sidecar_id,
                                                    EmbeddedKafka* embedded) {
  std::unique_ptr<Publisher> p(new Publisher());
  p->bootstrap_ = embedded ? embedded->bootstraps() : options.bootstrap;
  p->impl_ = std::make_unique<Impl>(p.get(), engine, options, sidecar_id, embedded);
  ST_RETURN_IF_ERROR(p->impl_->Init(p->bootstrap_));
  p->impl_->thread_ = std::thread([impl = p->impl_.get()] { impl->Run(); });
  return p;
}

Publisher::~Publisher() { Stop(); }

void Publisher::Notify() { impl_->Wake(); }

void Publisher::Stop() {
  if (!impl_ || !impl_->thread_.joinable()) return;
  impl_->RequestStop(std::chrono::steady_clock::now() + std::chrono::seconds(3));
  impl_->thread_.join();
}

bool Publisher::Stop(std::chrono::steady_clock::time_point deadline) {
  if (!impl_ || !impl_->thread_.joinable()) return true;
  impl_->RequestStop(deadline);
  if (!impl_->WaitDone(deadline)) return false;
  impl_->thread_.join();
  return true;
}

PublisherStats Publisher::Stats() const {
  PublisherStats s;
  s.published_lsn = published_.load();
  s.backlog_events = impl_->backlog_events_.load();
  s.backlog_bytes = impl_->backlog_bytes_.load();
  s.events_total = impl_->events_total_.load();
  s.bytes_total = impl_->bytes_total_.load();
  s.delivery_errors = impl_->delivery_errors_.load();
  s.backlog_full = backlog_full_.load();
  return s;
}

}  // namespace sidetable::changestream
