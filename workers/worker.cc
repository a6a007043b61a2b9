// The consumer loop: poll, process, commit; rebalances; shutdown.
#include "workers/worker.h"

#include <librdkafka/rdkafka.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "apply/event_processor.h"
#include "apply/op_applier.h"
#include "apply/table_store.h"
#include "client/client.h"
#include "common/http_endpoint.h"
#include "common/kafka/headers.h"
#include "events/chunk.h"
#include "common/process.h"
#include "workers/archive_rules.h"
#include "workers/dead_letter.h"
#include "workers/metrics.h"

namespace sidetable::workers {

using Clock = std::chrono::steady_clock;
using TopicPartition = std::pair<std::string, int32_t>;

class Worker::Impl {
 public:
  Impl(const apply::WorkerConfig& c, const std::atomic<bool>* stop) : config_(c), stop_(stop) {}
  ~Impl();

  Status Init();
  Status Run();
  int http_port() const { return http_ ? http_->port() : 0; }

 private:
  static void OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
                          void* opaque);
  static int OnStats(rd_kafka_t* rk, char* json, size_t len, void* opaque);
  static void OnLog(const rd_kafka_t* rk, int level, const char* fac, const char* buf);
  void Rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts);
  void Handle(rd_kafka_message_t* m, bool* interrupted);
  // The event a message completes: itself, or the chunk run it ends (then
  // `joined` holds it). nullopt while a run is still partial, or for a
  // fragment that cannot be joined.
  std::optional<std::string_view> Join(rd_kafka_message_t* m, const TopicPartition& tp, std::string* joined);
  void Commit(const char* why);
  bool SleepUnlessStopped(int ms);
  std::string HealthJson() const;
  Status WriteReadyFile();

  apply::WorkerConfig config_;
  const std::atomic<bool>* stop_;
  WorkerMetrics metrics_;
  std::vector<std::unique_ptr<patterns::Pattern>> patterns_;
  std::unique_ptr<client::Client> client_;
  std::unique_ptr<apply::TableStore> store_;
  std::unique_ptr<apply::OpApplier> applier_;
  std::unique_ptr<apply::EventProcessor> processor_;
  std::unique_ptr<DeadLetterProducer> dead_letters_;
  std::unique_ptr<common::HttpEndpoint> http_;
  std::unique_ptr<ArchiveScheduler> archive_;
  rd_kafka_t* rk_ = nullptr;
  // Next offset to commit per partition: one past the last processed message.
  std::map<TopicPartition, int64_t> pending_;
  size_t pending_messages_ = 0;
  Clock::time_point last_commit_ = Clock::now();
  Clock::time_point commit_retry_at_ = Clock::now();
  uint64_t commit_failures_ = 0;
  std::set<TopicPartition> assigned_;
  // Chunk runs being joined, per partition (events/chunk.h). A partition's
  // run is dropped when it is revoked: its offsets were never committed, so
  // the next owner reads the run again from its first chunk.
  std::map<TopicPartition, events::ChunkJoiner> joiners_;
  std::atomic<bool> running_{false};
};

Worker::Impl::~Impl() {
  if (archive_) archive_->Stop();
  if (http_) http_->Stop();
  if (rk_) rd_kafka_destroy(rk_);
}

void Worker::Impl::OnLog(const rd_kafka_t*, int level, const char* fac, const char* buf) {
  if (level <= 3) spdlog::error("kafka {}: {}", fac, buf);
  else if (level <= 4) spdlog::warn("kafka {}: {}", fac, buf);
  else spdlog::debug("kafka {}: {}", fac, buf);
}

Status Worker::Impl::Init() {
  patterns::RegisterBuiltinPatterns();
  for (const auto& pc : config_.patterns) {
    auto p = patterns::CreatePattern(pc);
    if (!p.ok()) return p.status();
    patterns_.push_back(std::move(p).value());
  }
  std::vector<ArchiveRule> rules;
  ST_RETURN_IF_ERROR(ParseArchiveRules(config_.patterns, &rules));

  client::ClientOptions co;
  co.endpoint = config_.endpoint;
  co.timeout = std::chrono::milliseconds(config_.timeout_ms);
  co.max_attempts = 1;  // the event-level retry below backs off instead
  co.caller = config_.caller;
  auto c = client::Client::Connect(co);
  if (!c.ok()) return c.status();
  client_ = std::move(c).value();
  store_ = apply::NewClientTableStore(client_.get());
  applier_ = std::make_unique<apply::OpApplier>(store_.get(), config_.fence_attempts);
  apply::RetryPolicy policy{config_.max_attempts, config_.backoff_ms, config_.backoff_max_ms};
  processor_ = std::make_unique<apply::EventProcessor>(&patterns_, applier_.get(), policy, &metrics_,
                                                [this](int ms) { return SleepUnlessStopped(ms); });

  auto dlq = DeadLetterProducer::Create(config_.bootstrap, config_.dead_letter_topic, config_.group,
                                        config_.properties, std::chrono::seconds(30));
  if (!dlq.ok()) return dlq.status();
  dead_letters_ = std::move(dlq).value();

  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::map<std::string, std::string> settings = {
      {"bootstrap.servers", config_.bootstrap},
      {"group.id", config_.group},
      {"enable.auto.commit", "false"},
      {"enable.auto.offset.store", "false"},
      {"auto.offset.reset", "earliest"},
      {"session.timeout.ms", std::to_string(config_.session_timeout_ms)},
      {"heartbeat.interval.ms", std::to_string(std::max(100, config_.session_timeout_ms / 5))},
      {"statistics.interval.ms", "1000"},
      {"client.id", "sidetable-worker-" + std::to_string(::getpid())},
  };
  for (const auto& [k, v] : config_.properties) settings[k] = v;
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Status(Code::kInvalidInput, "kafka setting " + k + ": " + err);
    }
  }
  rd_kafka_conf_set_opaque(conf, this);
  rd_kafka_conf_set_rebalance_cb(conf, OnRebalance);
  rd_kafka_conf_set_stats_cb(conf, OnStats);
  rd_kafka_conf_set_log_cb(conf, OnLog);
  rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk_ == nullptr) return Status(Code::kInvalidInput, std::string("kafka consumer: ") + err);
  rd_kafka_poll_set_consumer(rk_);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(config_.topics.size());
  for (const auto& t : config_.topics) rd_kafka_topic_partition_list_add(topics, t.c_str(), RD_KAFKA_PARTITION_UA);
  rd_kafka_resp_err_t e = rd_kafka_subscribe(rk_, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status(Code::kInvalidInput, std::string("kafka subscribe: ") + rd_kafka_err2str(e));
  }

  if (!config_.http.empty()) {
    common::HttpHandlers pages;
    pages.health_json = [this] { return HealthJson(); };
    pages.metrics_text = [this] { return metrics_.Render(); };
    auto h = common::HttpEndpoint::Start(config_.http, "http", std::move(pages));
    if (!h.ok()) return h.status();
    http_ = std::move(h).value();
  }
  if (!rules.empty()) {
    ArchiveOptions ao{config_.endpoint, config_.timeout_ms, config_.caller, config_.fence_attempts};
    auto a = ArchiveScheduler::Start(std::move(rules), ao, &metrics_);
    if (!a.ok()) return a.status();
    archive_ = std::move(a).value();
  }
  running_ = true;
  spdlog::info("worker: group {} on {} (bootstrap {}), sidecar {}, {} pattern(s){}", config_.group,
               config_.topics.front(), config_.bootstrap, config_.endpoint, patterns_.size(),
               http_ ? ", http 127.0.0.1:" + std::to_string(http_->port()) : "");
  return WriteReadyFile();
}

Status Worker::Impl::WriteReadyFile() {
  if (config_.ready_file.empty()) return Status::OK();
  std::vector<std::pair<std::string, std::string>> lines;
  if (http_) lines.emplace_back("http", "127.0.0.1:" + std::to_string(http_->port()));
  return common::WriteReadyFile(config_.ready_file, lines);
}

bool Worker::Impl::SleepUnlessStopped(int ms) {
  const auto until = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < until) {
    if (stop_->load(std::memory_order_relaxed)) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(50)));
  }
  return !stop_->load(std::memory_order_relaxed);
}

void Worker::Impl::OnRebalance(rd_kafka_t*, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
                               void* opaque) {
  static_cast<Impl*>(opaque)->Rebalance(err, parts);
}

// Runs inside rd_kafka_consumer_poll on the consumer thread, so no event is
// half-applied here: everything processed so far is committed before the
// partitions are given up.
void Worker::Impl::Rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts) {
  metrics_.RecordRebalance();
  const bool cooperative = std::string_view(rd_kafka_rebalance_protocol(rk_)) == "COOPERATIVE";
  std::string names;
  for (int i = 0; i < parts->cnt; i++) {
    names += (i ? "," : "") + std::string(parts->elems[i].topic) + "/" + std::to_string(parts->elems[i].partition);
  }
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    spdlog::info("rebalance: assigned [{}]", names);
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_assign(rk_, parts)) {
        spdlog::error("incremental assign: {}", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
      }
    } else {
      assigned_.clear();
      joiners_.clear();
      rd_kafka_assign(rk_, parts);
    }
    for (int i = 0; i < parts->cnt; i++) assigned_.insert({parts->elems[i].topic, parts->elems[i].partition});
  } else {
    spdlog::info("rebalance: revoking [{}]{}", names,
                 rd_kafka_assignment_lost(rk_) ? " (lost: another member may own them already)" : "");
    Commit("revoke");
    for (int i = 0; i < parts->cnt; i++) {
      const TopicPartition tp{parts->elems[i].topic, parts->elems[i].partition};
      assigned_.erase(tp);
      joiners_.erase(tp);
      pending_.erase(tp);  // not committed (failed commit): the next owner replays it
    }
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_unassign(rk_, parts)) {
        spdlog::error("incremental unassign: {}", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
      }
    } else {
      assigned_.clear();
      joiners_.clear();
      pending_.clear();
      rd_kafka_assign(rk_, nullptr);
    }
    pending_messages_ = pending_.size();  // approximate after a partial (cooperative) revoke
  }
  metrics_.SetAssigned(static_cast<int>(assigned_.size()));
}

// librdkafka's statistics (every second): consumer_lag is the high
// watermark minus the committed offset, per partition.
int Worker::Impl::OnStats(rd_kafka_t*, char* json, size_t len, void* opaque) {
  auto* self = static_cast<Impl*>(opaque);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json, len).get(root) != simdjson::SUCCESS) return 0;
  simdjson::dom::object topics;
  if (root["topics"].get(topics) != simdjson::SUCCESS) return 0;
  std::map<TopicPartition, int64_t> lag;
  for (auto [tname, tval] : topics) {
    simdjson::dom::object parts;
    if (tval["partitions"].get(parts) != simdjson::SUCCESS) continue;
    for (auto [pname, pval] : parts) {
      int64_t partition = 0, consumer_lag = -1;
      std::string_view state;
      if (pval["partition"].get(partition) != simdjson::SUCCESS || partition < 0) continue;
      if (pval["fetch_state"].get(state) != simdjson::SUCCESS || state == "none") continue;
      if (pval["consumer_lag"].get(consumer_lag) != simdjson::SUCCESS) continue;
      if (consumer_lag < 0) {
        // Nothing committed yet: everything up to the high watermark.
        int64_t hi = -1, lo = -1;
        if (pval["hi_offset"].get(hi) != simdjson::SUCCESS || hi < 0) continue;
        if (pval["lo_offset"].get(lo) != simdjson::SUCCESS || lo < 0) lo = 0;
        consumer_lag = hi - lo;
      }
      TopicPartition tp{std::string(tname), static_cast<int32_t>(partition)};
      // Served from rd_kafka_consumer_poll on the consumer thread: assigned_ is ours.
      if (self->assigned_.count(tp)) lag[tp] = consumer_lag;
    }
  }
  self->metrics_.SetLag(std::move(lag));
  return 0;  // librdkafka frees `json`
}

void Worker::Impl::Commit(const char* why) {
  if (pending_.empty()) return;
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(pending_.size()));
  for (const auto& [tp, off] : pending_) {
    rd_kafka_topic_partition_list_add(list, tp.first.c_str(), tp.second)->offset = off;
  }
  rd_kafka_resp_err_t e = rd_kafka_commit(rk_, list, /*async=*/0);
  rd_kafka_topic_partition_list_destroy(list);
  last_commit_ = Clock::now();
  metrics_.RecordCommit(e == RD_KAFKA_RESP_ERR_NO_ERROR);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
    spdlog::debug("committed {} partition(s), {} message(s) ({})", pending_.size(), pending_messages_, why);
    pending_.clear();
    pending_messages_ = 0;
    commit_failures_ = 0;
    return;
  }
  // Typically a rebalance in progress: the revoke callback commits again
  // before the partitions go; until then, retry once per commit interval.
  commit_retry_at_ = last_commit_ + std::chrono::milliseconds(config_.commit_interval_ms);
  if (commit_failures_++ % 20 == 0) {
    spdlog::warn("offset commit ({}) failed: {}; retrying every {} ms (a replay after a crash is harmless)", why,
                 rd_kafka_err2str(e), config_.commit_interval_ms);
  }
}

std::optional<std::string_view> Worker::Impl::Join(rd_kafka_message_t* m, const TopicPartition& tp,
                                                   std::string* joined) {
  std::string_view value(static_cast<const char*>(m->payload), m->payload ? m->len : 0);
  const auto chunk = kafka::HeaderValue(m, events::kChunkHeader);
  if (!chunk) {
    auto it = joiners_.find(tp);
    if (it != joiners_.end() && it->second.in_run()) {
      // The publisher sends an unfinished run again in full, later.
      spdlog::info("{}/{}@{}: chunk run of LSN {} interrupted; it comes again", tp.first, tp.second, m->offset,
                   it->second.run_lsn());
      it->second.Reset();
    }
    return value;
  }
  events::ChunkInfo info;
  Status s = events::ParseChunkHeaders(kafka::HeaderValue(m, events::kLsnHeader).value_or(""), *chunk,
                                       kafka::HeaderValue(m, events::kSizeHeader).value_or(""), &info);
  if (!s.ok()) return value;  // not joinable: the event processor dead-letters it as undecodable
  events::ChunkJoiner& joiner = joiners_[tp];
  switch (joiner.Add(info, value)) {
    case events::ChunkJoiner::Step::kNeedMore:
      return std::nullopt;
    case events::ChunkJoiner::Step::kDropped:
      spdlog::warn("{}/{}@{}: {}: skipped", tp.first, tp.second, m->offset, joiner.dropped_reason());
      return std::nullopt;
    case events::ChunkJoiner::Step::kComplete:
      *joined = joiner.TakeEvent();
      return std::string_view(*joined);
  }
  return std::nullopt;
}

void Worker::Impl::Handle(rd_kafka_message_t* m, bool* interrupted) {
  const std::string topic = rd_kafka_topic_name(m->rkt);
  std::string joined;
  // A chunk that does not end its run records no offset: a commit stays
  // before the run's first chunk until the whole event is applied.
  const std::optional<std::string_view> event = Join(m, {topic, m->partition}, &joined);
  if (!event) return;
  const std::string_view value = *event;
  apply::EventOutcome out = processor_->Process(value);
  if (out.kind == apply::EventOutcome::Kind::kInterrupted) {
    spdlog::info("lsn={} {}/{}@{}: not finished, left uncommitted ({})", out.lsn, topic, m->partition,
                 m->offset, out.reason);
    *interrupted = true;
    return;
  }
  if (out.kind == apply::EventOutcome::Kind::kDeadLetter) {
    DeadLetter d;
    if (m->key) d.key.assign(static_cast<const char*>(m->key), m->key_len);
    d.value.assign(value);
    d.reason = out.reason;
    d.source_topic = topic;
    d.source_partition = m->partition;
    d.source_offset = m->offset;
    d.lsn = out.lsn;
    spdlog::error("lsn={} {}/{}@{}: to dead-letter topic {}: {}", out.lsn, topic, m->partition, m->offset,
                  config_.dead_letter_topic, out.reason);
    // Committing past it needs it safely on the dead-letter topic first.
    for (int attempt = 1;; attempt++) {
      Status s = dead_letters_->Send(d);
      if (s.ok()) break;
      spdlog::error("lsn={}: dead-letter produce failed (attempt {}): {}", out.lsn, attempt, s.ToString());
      if (!SleepUnlessStopped(std::min(config_.backoff_max_ms, config_.backoff_ms << std::min(attempt, 16)))) {
        *interrupted = true;
        return;
      }
    }
    metrics_.RecordDeadLetter(out.reason_kind);
  }
  metrics_.RecordEvent();
  if (out.lsn) metrics_.SetLastLsn(out.lsn);
  pending_[{topic, m->partition}] = m->offset + 1;
  pending_messages_++;
}

Status Worker::Impl::Run() {
  while (!stop_->load(std::memory_order_relaxed)) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 100);
    if (m != nullptr) {
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        bool interrupted = false;
        Handle(m, &interrupted);
        rd_kafka_message_destroy(m);
        if (interrupted) break;
      } else {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
          spdlog::warn("kafka: {}", rd_kafka_message_errstr(m));
        }
        rd_kafka_message_destroy(m);
      }
    }
    const auto now = Clock::now();
    if (!pending_.empty() && now >= commit_retry_at_ &&
        (pending_messages_ >= static_cast<size_t>(config_.commit_batch) || m == nullptr ||
         now - last_commit_ >= std::chrono::milliseconds(config_.commit_interval_ms))) {
      Commit(m == nullptr ? "idle" : "batch");
    }
  }
  spdlog::info("stopping: committing and leaving group {}", config_.group);
  Commit("shutdown");
  if (archive_) archive_->Stop();
  // Leaves the group: the revoke callback runs (and commits, nothing left).
  rd_kafka_resp_err_t e = rd_kafka_consumer_close(rk_);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) spdlog::warn("consumer close: {}", rd_kafka_err2str(e));
  running_ = false;
  return Status::OK();
}

std::string Worker::Impl::HealthJson() const {
  std::string s = "{\"status\":\"" + std::string(running_ ? "ok" : "stopping") + "\",\"group\":\"" + config_.group +
                  "\",\"assigned_partitions\":" + std::to_string(metrics_.assigned()) +
                  ",\"events_total\":" + std::to_string(metrics_.events()) +
                  ",\"dead_letters_total\":" + std::to_string(metrics_.dead_letters()) +
                  ",\"retries_total\":" + std::to_string(metrics_.retries()) +
                  ",\"last_lsn\":" + std::to_string(metrics_.last_lsn()) +
                  ",\"consumer_lag\":" + std::to_string(metrics_.total_lag()) + "}";
  return s;
}

Result<std::unique_ptr<Worker>> Worker::Start(const apply::WorkerConfig& config) {
  std::unique_ptr<Worker> w(new Worker());
  w->impl_ = std::make_unique<Impl>(config, &w->stop_);
  ST_RETURN_IF_ERROR(w->impl_->Init());
  return w;
}

Worker::~Worker() = default;
Status Worker::Run() { return impl_->Run(); }
int Worker::http_port() const { return impl_->http_port(); }

}  // namespace sidetable::workers
