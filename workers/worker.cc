// The consumer loop: poll, process, commit; rebalances; shutdown.
#include "workers/worker.h"

#include <librdkafka/rdkafka.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "apply/event_processor.h"
#include "apply/op_applier.h"
#include "apply/table_store.h"
#include "client/client.h"
#include "client/curve.h"
#include "common/http_endpoint.h"
#include "common/kafka/headers.h"
#include "common/process.h"
#include "events/chunk.h"
#include "events/epoch_filter.h"
#include "events/event.h"
#include "workers/archive_rules.h"
#include "workers/broker_liveness.h"
#include "workers/dead_letter.h"
#include "workers/metrics.h"
#include "workers/offset_gaps.h"
#include "workers/progress.h"
#include "workers/sidecar_probe.h"
#include "workers/stall_watch.h"

namespace sidetable::workers {

using Clock = std::chrono::steady_clock;

// A broker with requests waiting and no response for this long is not
// answering (workers/broker_liveness.h): ten times the longest a healthy
// broker holds a fetch (fetch.wait.max.ms, 500 ms).
constexpr std::chrono::milliseconds kBrokerStall{5000};

// The longest a stop waits for the sidecar to take the last applied
// watermarks: a sidecar that answers does so in milliseconds; a frozen one
// costs this, and the watermarks are reported again by the next owner.
constexpr std::chrono::milliseconds kStopReportTimeout{1000};

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
  // One poll's messages: joined, filtered, processed together (the event
  // processor groups their writes), then offsets and progress recorded in
  // order. Sets *interrupted when a stop came during a back-off.
  void HandleBatch(const std::vector<rd_kafka_message_t*>& batch, bool* interrupted);
  // Hands Progress the commit time of a batch's first change on `tp`.
  void NoteCommitTime(const TopicPartition& tp, std::string_view value);
  // Counts, logs and keeps for /health the offsets a delivered message
  // skipped over (workers/offset_gaps.h).
  void CheckContinuity(const rd_kafka_message_t* m);
  // Dead-letters one event before its offset may be committed; false when a
  // stop came first.
  bool SendDeadLetter(rd_kafka_message_t* m, std::string_view value, const apply::EventOutcome& out);
  // Once a second: the sidecar's newest LSN (lag in LSNs, reachability) and
  // partition counts not known yet; after every batch: watermarks.
  void Housekeeping(bool after_batch);
  void ReportWatermarks(client::Client* client);
  // The last report, on a stop: on a connection of its own (the worker's
  // client abandons everything once stopping) and bounded by kStopReportTimeout.
  void ReportWatermarksOnStop();
  // The event a message completes: itself, or the chunk run it ends (then
  // `joined` holds it). nullopt while a run is still partial, or for a
  // fragment that cannot be joined.
  std::optional<std::string_view> Join(rd_kafka_message_t* m, const TopicPartition& tp, std::string* joined);
  void Commit(const char* why, bool sync);
  static void OnCommitted(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* offsets,
                          void* opaque);
  bool SleepUnlessStopped(int ms);
  std::string HealthJson() const;
  // GET /ready: 200 once the group gave this member its share (none
  // included), 503 while it joins or rebalances, or stops.
  std::pair<int, std::string> ReadyJson() const;
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
  std::unique_ptr<Progress> progress_;
  // For NoteCommitTime (consumer thread only).
  events::EventDecoder commit_decoder_;
  events::Event commit_event_;
  rd_kafka_t* rk_ = nullptr;
  Clock::time_point last_housekeeping_{};
  // Reachability and the newest LSN, asked from a thread of its own.
  std::unique_ptr<SidecarProbe> probe_;
  // Why the last watermark report left entries the sidecar refused ("" when
  // none): shown in /health.
  mutable std::mutex watermarks_mu_;
  std::string watermarks_refused_;
  Clock::time_point watermarks_logged_{};
  std::atomic<bool> kafka_ok_{true};
  // Written by the statistics callback only (on the consumer's poll thread).
  BrokerLiveness liveness_{kBrokerStall};
  std::atomic<uint64_t> async_commit_errors_{0};
  // Next offset to commit per partition: one past the last processed message.
  std::map<TopicPartition, int64_t> pending_;
  // Scale-out fencing (docs/scale-out.md): one filter per assigned partition,
  // seeded on assignment from the floor its last commit stored in the
  // offset's metadata ("epoch=N"), and the floor to store with pending_.
  std::map<TopicPartition, events::EpochFilter> fences_;
  std::map<TopicPartition, uint64_t> pending_floor_;
  // The floors the last commits stored, so a commit with nothing new to say
  // still carries the partition's floor.
  std::map<TopicPartition, uint64_t> committed_floor_;
  void SeedFences(rd_kafka_topic_partition_list_t* parts);
  size_t pending_messages_ = 0;
  Clock::time_point last_commit_ = Clock::now();
  Clock::time_point commit_retry_at_ = Clock::now();
  uint64_t commit_failures_ = 0;
  std::set<TopicPartition> assigned_;
  // Where each assigned partition's next message should be (consumer thread).
  OffsetGaps gaps_;
  // The gaps found, for /health (read on the HTTP thread): the derived
  // tables miss their changes until rebuilt, so they stay until a restart.
  mutable std::mutex gaps_mu_;
  std::vector<std::string> gap_reports_;
  uint64_t gaps_not_listed_ = 0;
  // Partitions with messages waiting that hand none out (stall_watch.h):
  // fed by the statistics callback, read by /health.
  mutable std::mutex stall_mu_;
  StallWatch stalls_;
  // Where the member is in the group, for /health and /ready (read on the
  // HTTP thread). Joining: subscribed, no assignment yet. Rebalancing:
  // partitions revoked (or lost), the next assignment not come yet; under
  // the eager protocol it owns nothing then, and used to say "ok" with 0
  // partitions. Assigned: a rebalance completed (possibly with no partition
  // for it: more members than partitions, "idle").
  enum class GroupState : uint8_t { kJoining, kRebalancing, kAssigned };
  std::atomic<GroupState> group_state_{GroupState::kJoining};
  // Chunk runs being joined, per partition (events/chunk.h). A partition's
  // run is dropped when it is revoked: its offsets were never committed, so
  // the next owner reads the run again from its first chunk.
  std::map<TopicPartition, events::ChunkJoiner> joiners_;
  std::atomic<bool> running_{false};
  client::CurveClientKeys curve_;  // sidecar.curve_*_file, read at Init
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
  std::vector<patterns::Pattern::Derivation> derivations;
  for (const auto& p : patterns_) {
    for (auto& d : p->Derivations()) derivations.push_back(std::move(d));
  }
  progress_ = std::make_unique<Progress>(std::move(derivations));
  std::vector<ArchiveRule> rules;
  ST_RETURN_IF_ERROR(ParseArchiveRules(config_.patterns, &rules));

  // CURVE keys, read once for the table writes and the archive rules.
  auto curve = client::LoadCurveKeys(config_.curve_server_key_file, config_.curve_key_file);
  if (!curve.ok()) {
    return Status(Code::kInvalidInput, "sidecar.curve_server_key_file/sidecar.curve_key_file: " + curve.status().message());
  }
  curve_ = std::move(curve).value();
  client::ClientOptions co;
  co.curve = curve_;
  co.endpoint = config_.endpoint;
  co.timeout = std::chrono::milliseconds(config_.timeout_ms);
  co.max_attempts = 1;  // the event-level retry below backs off instead
  // Fenced writes are idempotent by construction: no request ids for the
  // sidecar to remember.
  co.client_request_ids = false;
  co.caller = config_.caller;
  co.token = config_.token;
  // A stop abandons the request in flight (it fails as a time-out would, so
  // its event stays uncommitted and is redone by the next owner): a frozen
  // sidecar cannot hold the exit for timeout_ms per request.
  co.abandon = stop_;
  auto c = client::Client::Connect(co);
  if (!c.ok()) return c.status();
  client_ = std::move(c).value();
  // At most 2 s a Ping: a sidecar that cannot answer one that fast is worth
  // a line in /health, and a stop never waits longer for the probe.
  client::ClientOptions po = co;
  po.timeout = std::min(co.timeout, std::chrono::milliseconds(2000));
  auto probe = SidecarProbe::Start(po, std::chrono::milliseconds(1000));
  if (!probe.ok()) return probe.status();
  probe_ = std::move(probe).value();
  store_ = apply::NewClientTableStore(client_.get(), static_cast<size_t>(config_.inflight));
  applier_ = std::make_unique<apply::OpApplier>(store_.get(), config_.fence_attempts);
  apply::RetryPolicy policy{config_.max_attempts, config_.backoff_ms, config_.backoff_max_ms,
                            int64_t{config_.max_wait_seconds} * 1000};
  processor_ = std::make_unique<apply::EventProcessor>(&patterns_, applier_.get(), policy, &metrics_,
                                                [this](int ms) { return SleepUnlessStopped(ms); });
  processor_->EnableGrouping(store_.get());

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
  rd_kafka_conf_set_offset_commit_cb(conf, OnCommitted);
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
    pages.ready = [this] { return ReadyJson(); };
    pages.metrics_text = [this] {
      return metrics_.Render() + progress_->Render(probe_->last_lsn());
    };
    auto h = common::HttpEndpoint::Start(config_.http, "http", std::move(pages));
    if (!h.ok()) return h.status();
    http_ = std::move(h).value();
  }
  if (!rules.empty()) {
    ArchiveOptions ao{config_.endpoint, config_.timeout_ms, config_.caller, config_.fence_attempts,
                      config_.token, curve_};
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
      fences_.clear();
      rd_kafka_assign(rk_, parts);
    }
    for (int i = 0; i < parts->cnt; i++) {
      const TopicPartition tp{parts->elems[i].topic, parts->elems[i].partition};
      assigned_.insert(tp);
      progress_->Assigned(tp);
    }
    SeedFences(parts);
  } else {
    group_state_ = GroupState::kRebalancing;
    spdlog::info("rebalance: revoking [{}]{}", names,
                 rd_kafka_assignment_lost(rk_) ? " (lost: another member may own them already)" : "");
    Commit("revoke", /*sync=*/true);
    for (int i = 0; i < parts->cnt; i++) {
      const TopicPartition tp{parts->elems[i].topic, parts->elems[i].partition};
      assigned_.erase(tp);
      joiners_.erase(tp);
      pending_.erase(tp);  // not committed (failed commit): the next owner replays it
      pending_floor_.erase(tp);
      fences_.erase(tp);  // re-seeded from the committed floor if it comes back
      gaps_.Forget(tp);   // checked from the committed offset if it comes back
      {
        std::lock_guard lock(stall_mu_);
        stalls_.Forget(tp);
      }
      progress_->Revoked(tp);
    }
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_unassign(rk_, parts)) {
        spdlog::error("incremental unassign: {}", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
      }
    } else {
      for (const auto& tp : assigned_) progress_->Revoked(tp);
      assigned_.clear();
      joiners_.clear();
      pending_.clear();
      pending_floor_.clear();
      fences_.clear();
      gaps_.Clear();
      {
        std::lock_guard lock(stall_mu_);
        stalls_.Clear();
      }
      rd_kafka_assign(rk_, nullptr);
    }
    pending_messages_ = pending_.size();  // approximate after a partial (cooperative) revoke
  }
  metrics_.SetAssigned(static_cast<int>(assigned_.size()));
  // After the count, so that /health never reads a new assignment with the
  // old count (an owner would look idle).
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) group_state_ = GroupState::kAssigned;
}

// librdkafka's statistics (every second): consumer_lag is the high
// watermark minus the committed offset, per partition.
int Worker::Impl::OnStats(rd_kafka_t*, char* json, size_t len, void* opaque) {
  auto* self = static_cast<Impl*>(opaque);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json, len).get(root) != simdjson::SUCCESS) return 0;
  // Kafka is reachable while at least one real broker connection is UP.
  simdjson::dom::object brokers;
  if (root["brokers"].get(brokers) == simdjson::SUCCESS) {
    const auto now = BrokerLiveness::Clock::now();
    for (auto [bname, bval] : brokers) {
      int64_t nodeid = -1, waitresp = 0, rx = 0;
      std::string_view state;
      if (bval["nodeid"].get(nodeid) != simdjson::SUCCESS) continue;
      // A field missing from a report reads as its zero: not UP, nothing waiting.
      if (bval["state"].get(state) != simdjson::SUCCESS) state = {};
      if (bval["waitresp_cnt"].get(waitresp) != simdjson::SUCCESS) waitresp = 0;
      if (bval["rx"].get(rx) != simdjson::SUCCESS) rx = 0;
      self->liveness_.Observe(nodeid, state, waitresp, rx, now);
    }
    self->kafka_ok_.store(self->liveness_.EndReport(), std::memory_order_relaxed);
  }
  simdjson::dom::object topics;
  if (root["topics"].get(topics) != simdjson::SUCCESS) return 0;
  std::map<TopicPartition, int64_t> lag;
  std::lock_guard stall_lock(self->stall_mu_);
  const auto now_steady = StallWatch::Clock::now();
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
      if (!self->assigned_.count(tp)) continue;
      lag[tp] = consumer_lag;
      // -1001 (librdkafka's "invalid") until a first message is handed out.
      int64_t app_offset = -1001;
      if (pval["app_offset"].get(app_offset) != simdjson::SUCCESS) app_offset = -1001;
      self->stalls_.Observe(tp, app_offset, consumer_lag, now_steady);
    }
  }
  self->metrics_.SetLag(std::move(lag));
  return 0;  // librdkafka frees `json`
}

namespace {
constexpr std::string_view kFloorMetadata = "epoch=";
}  // namespace

// A partition read from a committed offset mid-way must not forget the
// claims before it: its floor travels in the commit's metadata. Without
// (a group's first start, or no claim ever seen) the floor starts at 0, which
// is right from the partition's beginning.
void Worker::Impl::SeedFences(rd_kafka_topic_partition_list_t* parts) {
  rd_kafka_topic_partition_list_t* committed = rd_kafka_topic_partition_list_copy(parts);
  const rd_kafka_resp_err_t e = rd_kafka_committed(rk_, committed, 10000);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    spdlog::warn("reading committed offsets for the fencing floors: {} (floors start at 0)", rd_kafka_err2str(e));
  }
  for (int i = 0; i < committed->cnt; i++) {
    const rd_kafka_topic_partition_t& p = committed->elems[i];
    const TopicPartition tp{p.topic, p.partition};
    events::EpochFilter& f = fences_[tp] = events::EpochFilter();
    uint64_t floor = 0;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR && p.err == RD_KAFKA_RESP_ERR_NO_ERROR && p.metadata != nullptr) {
      const std::string_view meta(static_cast<const char*>(p.metadata), p.metadata_size);
      if (meta.starts_with(kFloorMetadata)) {
        const std::string digits(meta.substr(kFloorMetadata.size()));
        floor = std::strtoull(digits.c_str(), nullptr, 10);
      }
    }
    f.SeedFloor(tp.second, floor);
    // Where the partition is read from; nothing committed (a new group, or
    // the committed offsets not read) leaves its start unchecked.
    gaps_.Expect(
        tp, e == RD_KAFKA_RESP_ERR_NO_ERROR && p.err == RD_KAFKA_RESP_ERR_NO_ERROR ? p.offset : -1);
    committed_floor_[tp] = floor;
    if (floor > 0) spdlog::info("{}/{}: fencing floor epoch {} from the committed offset", tp.first, tp.second, floor);
  }
  rd_kafka_topic_partition_list_destroy(committed);
}

// Asynchronous: the loop goes on applying while the broker answers. The
// offsets are those of applied (or dead-lettered) events only, so a commit
// that fails or arrives late costs a replay, never a skipped event. The
// revoke callback and shutdown commit synchronously.
void Worker::Impl::Commit(const char* why, bool sync) {
  if (pending_.empty()) return;
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(pending_.size()));
  for (const auto& [tp, off] : pending_) {
    rd_kafka_topic_partition_t* p = rd_kafka_topic_partition_list_add(list, tp.first.c_str(), tp.second);
    p->offset = off;
    auto fl = pending_floor_.find(tp);
    const uint64_t floor = fl != pending_floor_.end() ? fl->second : committed_floor_[tp];
    if (floor > 0) {
      // librdkafka frees it with the list.
      const std::string meta = std::string(kFloorMetadata) + std::to_string(floor);
      p->metadata = std::malloc(meta.size());
      std::memcpy(p->metadata, meta.data(), meta.size());
      p->metadata_size = meta.size();
    }
    committed_floor_[tp] = floor;
  }
  pending_floor_.clear();
  rd_kafka_resp_err_t e = rd_kafka_commit(rk_, list, sync ? 0 : 1);
  rd_kafka_topic_partition_list_destroy(list);
  last_commit_ = Clock::now();
  if (!sync && e == RD_KAFKA_RESP_ERR_NO_ERROR) {
    // Queued; OnCommitted counts the outcome.
    spdlog::debug("committing {} partition(s), {} message(s) ({})", pending_.size(), pending_messages_, why);
    pending_.clear();
    pending_messages_ = 0;
    return;
  }
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

void Worker::Impl::OnCommitted(rd_kafka_t*, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t*,
                               void* opaque) {
  auto* self = static_cast<Impl*>(opaque);
  if (err == RD_KAFKA_RESP_ERR__NO_OFFSET) return;  // nothing to commit
  self->metrics_.RecordCommit(err == RD_KAFKA_RESP_ERR_NO_ERROR);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR && self->async_commit_errors_.fetch_add(1) % 20 == 0) {
    // The next commit carries newer offsets anyway; a lost one costs a replay.
    spdlog::warn("asynchronous offset commit failed: {} (the next commit covers it)", rd_kafka_err2str(err));
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

bool Worker::Impl::SendDeadLetter(rd_kafka_message_t* m, std::string_view value, const apply::EventOutcome& out) {
  const std::string topic = rd_kafka_topic_name(m->rkt);
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
      return false;
    }
  }
  metrics_.RecordDeadLetter(out.reason_kind);
  return true;
}

namespace {

// The table a message's key names ("<table>/<PartitionKey>").
std::string_view TableOfKey(const rd_kafka_message_t* m) {
  if (m->key == nullptr) return {};
  std::string_view key(static_cast<const char*>(m->key), m->key_len);
  const size_t slash = key.find('/');
  return slash == std::string_view::npos ? std::string_view() : key.substr(0, slash);
}

// A ShardClaimed event, by the prefix EncodeEvent gives it (no decoding).
bool IsShardClaim(std::string_view value) {
  return value.starts_with(R"({"schema":1,"kind":"ShardClaimed")");
}

uint64_t LsnOf(const rd_kafka_message_t* m) {
  const auto h = kafka::HeaderValue(m, events::kLsnHeader);
  return h ? events::ParseLsnHeader(*h).value_or(0) : 0;
}

}  // namespace

// One decode per partition and poll, so the lag shows how long ago the
// oldest change waiting was committed, not when it reached Kafka.
void Worker::Impl::NoteCommitTime(const TopicPartition& tp, std::string_view value) {
  if (!commit_decoder_.Decode(value, &commit_event_).ok()) return;  // the processor dead-letters it
  progress_->FirstChangeCommitted(tp, commit_event_.record.commit_time);
}

void Worker::Impl::HandleBatch(const std::vector<rd_kafka_message_t*>& batch, bool* interrupted) {
  enum class Step : uint8_t { kPartial, kUnwanted, kEvent };
  struct Item {
    rd_kafka_message_t* m;
    TopicPartition tp;
    Step step = Step::kPartial;
    std::string joined;
    std::string_view value;
    size_t event = 0;  // index into `values` for kEvent
  };
  std::vector<Item> items(batch.size());
  std::vector<std::string_view> values;
  values.reserve(batch.size());
  std::vector<apply::EventFence> fences;
  fences.reserve(batch.size());
  const auto now = std::chrono::system_clock::now();
  std::set<TopicPartition> started;
  std::set<TopicPartition> dated;  // partitions whose first change's commit time Progress has
  for (size_t i = 0; i < batch.size(); i++) {
    Item& it = items[i];
    it.m = batch[i];
    it.tp = {rd_kafka_topic_name(it.m->rkt), it.m->partition};
    if (started.insert(it.tp).second) {
      rd_kafka_timestamp_type_t type;
      const int64_t ts = rd_kafka_message_timestamp(it.m, &type);
      progress_->BatchStarted(it.tp, ts >= 0 ? ts : 0, now);
    }
    const std::optional<std::string_view> event = Join(it.m, it.tp, &it.joined);
    if (!event) continue;  // a chunk before the end of its run: no offset yet
    it.value = *event;
    if (dated.insert(it.tp).second) NoteCommitTime(it.tp, it.value);
    // Events of tables no pattern reads are not even decoded (the workers'
    // own derived writes come back on the same topic).
    const std::string_view table = TableOfKey(it.m);
    // A claim must reach the fencing rule whatever its key says.
    if (!table.empty() && !progress_->IsSource(table) && !IsShardClaim(it.value)) {
      it.step = Step::kUnwanted;
      continue;
    }
    it.step = Step::kEvent;
    it.event = values.size();
    values.push_back(it.value);
    // A partition revoked meanwhile has no filter: a fresh one (its records
    // are not committed by us anyway).
    fences.push_back({&fences_[it.tp], it.tp.second});
  }

  std::vector<apply::EventOutcome> outs = processor_->ProcessBatch(values, &fences);
  std::set<TopicPartition> stopped;  // partitions whose offsets stop here
  for (Item& it : items) {
    if (it.step == Step::kPartial || stopped.count(it.tp)) continue;
    uint64_t lsn = 0;
    int64_t commit_time = 0;
    if (it.step == Step::kUnwanted) {
      metrics_.RecordSkippedEvent();
      lsn = LsnOf(it.m);
    } else {
      const apply::EventOutcome& out = outs[it.event];
      if (out.kind == apply::EventOutcome::Kind::kInterrupted) {
        spdlog::info("lsn={} {}/{}@{}: not finished, left uncommitted ({})", out.lsn, it.tp.first, it.tp.second,
                     it.m->offset, out.reason);
        *interrupted = true;
        stopped.insert(it.tp);
        continue;
      }
      if (out.kind == apply::EventOutcome::Kind::kDeadLetter && !SendDeadLetter(it.m, it.value, out)) {
        *interrupted = true;
        stopped.insert(it.tp);
        continue;
      }
      lsn = out.lsn;
      if (const ChangeRecord* rec = processor_->record(it.event)) commit_time = rec->commit_time;
    }
    metrics_.RecordEvent();
    if (lsn) metrics_.SetLastLsn(lsn);
    // A partition revoked while this batch was collected is the new owner's
    // now: its offsets are not ours to commit (re-applying is harmless).
    if (!assigned_.count(it.tp)) continue;
    progress_->Processed(it.tp, lsn, commit_time);
    pending_[it.tp] = it.m->offset + 1;
    if (it.step == Step::kEvent) pending_floor_[it.tp] = outs[it.event].floor;
    pending_messages_++;
  }
  for (const auto& tp : started) {
    int64_t lo = -1, hi = -1;
    // Cached from fetch responses: no broker round trip.
    rd_kafka_get_watermark_offsets(rk_, tp.first.c_str(), tp.second, &lo, &hi);
    auto p = pending_.find(tp);
    progress_->BatchDone(tp, !stopped.count(tp) && p != pending_.end() && hi >= 0 && p->second >= hi);
  }
}

namespace {
// Gaps named one by one in /health; the rest are counted.
constexpr size_t kGapsListed = 5;
}  // namespace

void Worker::Impl::CheckContinuity(const rd_kafka_message_t* m) {
  const std::optional<OffsetGaps::Gap> gap =
      gaps_.Observe({rd_kafka_topic_name(m->rkt), m->partition}, m->offset);
  if (!gap) return;
  const auto lost = static_cast<uint64_t>(gap->to - gap->from);
  metrics_.RecordLostMessages(lost);
  const std::string what = gap->tp.first + "/" + std::to_string(gap->tp.second) + " offsets " +
                           std::to_string(gap->from) + ".." + std::to_string(gap->to - 1) + " (" +
                           std::to_string(lost) +
                           " messages) were removed from Kafka before this group read them";
  // librdkafka only logs its offset reset as a warning; the changes are gone
  // for the derived tables, which no retry will bring back.
  spdlog::error(
      "history lost: {}: their changes never reach the derived tables (the topic's retention is "
      "shorter than "
      "the workers' downtime or lag); rebuild the derived tables with `sidetable-cli derive`, then "
      "restart "
      "the workers",
      what);
  std::lock_guard lock(gaps_mu_);
  if (gap_reports_.size() < kGapsListed) {
    gap_reports_.push_back(what);
  } else {
    gaps_not_listed_++;
  }
}

void Worker::Impl::ReportWatermarksOnStop() {
  client::ClientOptions o = client_->options();
  o.abandon = nullptr;
  o.max_attempts = 1;
  o.timeout = std::min(o.timeout, kStopReportTimeout);
  auto c = client::Client::Connect(o);
  if (!c.ok()) return;  // only a bad endpoint, which Init() already took
  ReportWatermarks(c->get());
}

void Worker::Impl::ReportWatermarks(client::Client* client) {
  std::vector<WatermarkReport> reports = progress_->TakeReports();
  if (reports.empty()) return;
  auto send = [client](const std::vector<WatermarkReport>& rs) {
    std::vector<client::Watermark> w;
    w.reserve(rs.size());
    for (const auto& r : rs)
      w.push_back({r.derived, r.source, r.partition, r.partitions, r.lsn, r.commit_time});
    return client->AdvanceWatermarks(w);
  };
  Status s = send(reports);
  std::vector<WatermarkReport> held;
  if (s.ok()) {
    // Nothing held back.
  } else if (s.code() != Code::kInvalidInput || reports.size() == 1) {
    held = std::move(reports);
  } else {
    // The sidecar refuses a whole request for one entry it cannot take (an
    // LSN above its change log's last, as after its log went back): the
    // entries go one at a time, so that one of them does not hold back the
    // read-your-writes of every derived table and partition.
    for (auto& r : reports) {
      Status one = send({r});
      if (one.ok()) continue;
      s = one;
      held.push_back(std::move(r));
    }
  }
  if (!held.empty()) progress_->Restore(held);
  std::lock_guard lock(watermarks_mu_);
  if (held.empty()) {
    watermarks_refused_.clear();
    return;
  }
  const std::string why = std::to_string(held.size()) + " not accepted: " + s.ToString();
  // When it starts and then once a minute, not after every batch: the report
  // is tried again each time, and a refusal lasts until the LSN catches up.
  const auto now = Clock::now();
  if (watermarks_refused_.empty() || now - watermarks_logged_ >= std::chrono::minutes(1)) {
    spdlog::warn("applied watermarks not reported to the sidecar (sent again later): {}", why);
    watermarks_logged_ = now;
  }
  // Refused content is reported in /health; a sidecar out of reach already is.
  watermarks_refused_ = s.code() == Code::kInvalidInput ? why : std::string();
}

void Worker::Impl::Housekeeping(bool after_batch) {
  const auto now = Clock::now();
  if (after_batch) ReportWatermarks(client_.get());
  if (now - last_housekeeping_ < std::chrono::seconds(1)) return;
  last_housekeeping_ = now;
  for (const auto& topic : config_.topics) {
    if (progress_->PartitionCount(topic) > 0) continue;
    // The topic's partition count, for the watermarks (the sidecar maps a
    // key to its partition with it).
    rd_kafka_topic_t* t = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    if (t != nullptr && rd_kafka_metadata(rk_, 0, t, &md, 2000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topics[0].partition_cnt > 0) {
        progress_->SetPartitionCount(topic, md->topics[0].partition_cnt);
      }
      rd_kafka_metadata_destroy(md);
    }
    if (t != nullptr) rd_kafka_topic_destroy(t);
  }
  ReportWatermarks(client_.get());
}

Status Worker::Impl::Run() {
  std::vector<rd_kafka_message_t*> batch;
  batch.reserve(static_cast<size_t>(config_.poll_batch));
  while (!stop_->load(std::memory_order_relaxed)) {
    batch.clear();
    // The first message waits up to 100 ms; the rest of the batch is what
    // librdkafka has fetched already (no wait).
    for (int wait = 100; batch.size() < static_cast<size_t>(config_.poll_batch); wait = 0) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, wait);
      if (m == nullptr) break;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        CheckContinuity(m);
        batch.push_back(m);
        continue;
      }
      if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) spdlog::warn("kafka: {}", rd_kafka_message_errstr(m));
      rd_kafka_message_destroy(m);
    }
    bool interrupted = false;
    if (!batch.empty()) HandleBatch(batch, &interrupted);
    for (rd_kafka_message_t* m : batch) rd_kafka_message_destroy(m);
    if (interrupted) break;
    const auto now = Clock::now();
    if (!pending_.empty() && now >= commit_retry_at_ &&
        (pending_messages_ >= static_cast<size_t>(config_.commit_batch) || batch.empty() ||
         now - last_commit_ >= std::chrono::milliseconds(config_.commit_interval_ms))) {
      Commit(batch.empty() ? "idle" : "batch", /*sync=*/false);
    }
    Housekeeping(!batch.empty());
  }
  spdlog::info("stopping: committing and leaving group {}", config_.group);
  Commit("shutdown", /*sync=*/true);
  ReportWatermarksOnStop();
  if (archive_) archive_->Stop();
  // Leaves the group: the revoke callback runs (and commits, nothing left).
  rd_kafka_resp_err_t e = rd_kafka_consumer_close(rk_);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) spdlog::warn("consumer close: {}", rd_kafka_err2str(e));
  running_ = false;
  return Status::OK();
}

// "degraded" names each reason: behind beyond lag.max_seconds, Kafka or the
// sidecar out of reach (a worker whose Kafka went away used to say "ok").
std::string Worker::Impl::HealthJson() const {
  const double lag = progress_->MaxLagSeconds(std::chrono::system_clock::now());
  std::vector<std::string> problems;
  if (lag > config_.lag_max_seconds) {
    problems.push_back("behind: " + std::to_string(static_cast<int64_t>(lag)) + " s > lag.max_seconds " +
                       std::to_string(config_.lag_max_seconds));
  }
  if (!kafka_ok_.load(std::memory_order_relaxed))
    problems.push_back("kafka: no broker is answering");
  const SidecarProbe::State sidecar = probe_ ? probe_->state() : SidecarProbe::State{};
  const bool sidecar_ok = sidecar.reachable;
  if (!sidecar_ok) problems.push_back("sidecar: " + sidecar.error);
  {
    std::lock_guard lock(watermarks_mu_);
    if (!watermarks_refused_.empty()) problems.push_back("watermarks: " + watermarks_refused_);
  }
  {
    std::lock_guard lock(gaps_mu_);
    for (const auto& g : gap_reports_) {
      problems.push_back("history lost: " + g +
                         "; the derived tables miss their changes: rebuild them "
                         "(sidetable-cli derive) and restart this worker");
    }
    if (gaps_not_listed_ > 0)
      problems.push_back("history lost: " + std::to_string(gaps_not_listed_) + " more gaps");
  }
  // While the consumer thread waits out a busy or unreachable sidecar
  // (retry.max_wait_seconds), no partition hands anything out: say that,
  // not "stalled", once either would be reported.
  const WorkerMetrics::Wait wait = metrics_.waiting();
  {
    std::lock_guard lock(stall_mu_);
    const auto stalled =
        stalls_.Stalled(StallWatch::Clock::now(), std::chrono::seconds(config_.lag_max_seconds));
    if (wait.seconds > 0 && (!stalled.empty() || wait.seconds > config_.lag_max_seconds)) {
      problems.push_back("waiting: the sidecar has been busy or out of reach for " +
                         std::to_string(static_cast<int64_t>(wait.seconds)) +
                         " s; events are retried for up to retry.max_wait_seconds " +
                         std::to_string(config_.max_wait_seconds) + " (" + wait.last + ")");
    } else {
      for (const auto& s : stalled) {
        problems.push_back("stalled: " + s.tp.first + "/" + std::to_string(s.tp.second) + " has " +
                           std::to_string(s.waiting) +
                           " messages waiting and handed out none for " +
                           std::to_string(static_cast<int64_t>(s.seconds)) +
                           " s > lag.max_seconds " + std::to_string(config_.lag_max_seconds));
      }
    }
  }
  const GroupState group = group_state_.load();
  const int assigned = metrics_.assigned();
  // Not a problem (it ends by itself), but not "ok" either: nothing is
  // consumed meanwhile.
  const bool settled = group == GroupState::kAssigned;
  const bool stopping = !running_ || stop_->load(std::memory_order_relaxed);
  std::string status = stopping            ? "stopping"
                       : !problems.empty() ? "degraded"
                       : settled           ? "ok"
                                           : "rebalancing";
  const char* assignment = group == GroupState::kJoining       ? "joining"
                           : group == GroupState::kRebalancing ? "rebalancing"
                           : assigned == 0                     ? "idle"
                                                               : "assigned";
  std::string s = "{\"status\":\"" + status + "\",\"group\":" + common::JsonQuote(config_.group) +
                  ",\"assignment\":\"" + assignment +
                  "\",\"ready\":" + (!stopping && settled ? "true" : "false") +
                  ",\"assigned_partitions\":" + std::to_string(assigned) +
                  ",\"events_total\":" + std::to_string(metrics_.events()) +
                  ",\"dead_letters_total\":" + std::to_string(metrics_.dead_letters()) +
                  ",\"archive_unmovable\":" + std::to_string(metrics_.archive_unmovable()) +
                  ",\"retries_total\":" + std::to_string(metrics_.retries()) +
                  ",\"waiting_seconds\":" + std::to_string(static_cast<int64_t>(wait.seconds)) +
                  ",\"last_lsn\":" + std::to_string(metrics_.last_lsn()) +
                  ",\"consumer_lag\":" + std::to_string(metrics_.total_lag()) +
                  ",\"lag_seconds\":" + std::to_string(lag) +
                  ",\"kafka_reachable\":" + (kafka_ok_.load() ? "true" : "false") +
                  ",\"sidecar_reachable\":" + (sidecar_ok ? "true" : "false") + ",\"problems\":[";
  for (size_t i = 0; i < problems.size(); i++) s += (i ? "," : "") + common::JsonQuote(problems[i]);
  return s + "]}";
}

std::pair<int, std::string> Worker::Impl::ReadyJson() const {
  if (!running_ || stop_->load(std::memory_order_relaxed))
    return {503, R"({"ready":false,"reason":"stopping"})"};
  switch (group_state_.load()) {
    case GroupState::kJoining:
      return {503, R"({"ready":false,"reason":"joining"})"};
    case GroupState::kRebalancing:
      return {503, R"({"ready":false,"reason":"rebalancing"})"};
    case GroupState::kAssigned:
      break;
  }
  return {200, R"({"ready":true})"};
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
