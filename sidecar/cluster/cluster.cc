#include "sidecar/cluster/cluster.h"
#include "common/kafka/log.h"

#include <spdlog/spdlog.h>

#include <future>
#include <optional>

#include "common/kafka/embedded_kafka.h"
#include "common/kafka/partitioner.h"
#include "common/process.h"
#include "common/prometheus_text.h"
#include "sidecar/cluster/cluster_impl.h"
#include "sidecar/cluster/topic_check.h"

namespace sidetable::cluster {
namespace {

constexpr int kCatalogCatchUpMs = 30000;
constexpr int kDeliveryTimeoutMs = 30000;
constexpr int kTopicCheckTimeoutMs = 1000;

// A delivery report's outcome, handed from the delivery thread to the producer.
using DeliveryPromise = std::promise<std::pair<rd_kafka_resp_err_t, int64_t>>;

}  // namespace

Cluster::Impl::Impl(const ClusterOptions& options, const changestream::KafkaOptions& kafka,
                    std::string change_topic, std::string member_id, std::string advertise, ClusterHooks hooks,
                    kafka::EmbeddedKafka* embedded, std::string curve_public_key)
    : options_(options),
      kafka_(kafka),
      change_topic_(std::move(change_topic)),
      member_(std::move(member_id)),
      advertise_(std::move(advertise)),
      curve_public_key_(std::move(curve_public_key)),
      hooks_(std::move(hooks)),
      embedded_(embedded),
      log_(spdlog::default_logger()->clone("cluster")) {
  bootstrap_ = embedded ? embedded->bootstraps() : kafka.bootstrap;
  cluster_topic_ = ExpandService(options.topic, options.service);
  if (!options.state_topic.empty()) state_topic_ = ExpandService(options.state_topic, options.service);
  group_id_ = "sidetable." + options.service + ".owners";
  shards_ = kafka.partitions;
  owners_.resize(shards_);
  incarnations_ = options.table_incarnations;
  if (!incarnations_) incarnations_ = TableIncarnations::Open("").value();
}

Cluster::Impl::~Impl() { Stop(); }

std::string Cluster::Impl::MemberValue(int64_t started_ms) const {
  return EncodeMember(
      MemberRecord{advertise_, curve_public_key_, started_ms, instance_, options_.service});
}

Result<rd_kafka_t*> Cluster::Impl::NewClient(rd_kafka_type_t type, const std::map<std::string, std::string>& settings,
                                             rd_kafka_conf_t* conf) {
  char err[512];
  if (conf == nullptr) conf = rd_kafka_conf_new();
  kafka::SendKafkaLogToOurs(conf);
  std::map<std::string, std::string> all = {{"bootstrap.servers", bootstrap_},
                                            {"client.id", "sidetable-cluster-" + member_},
                                            {"reconnect.backoff.max.ms", "1000"},
                                            {"log_level", "4"}};
  for (const auto& [k, v] : kafka_.properties) all[k] = v;
  for (const auto& [k, v] : settings) all[k] = v;
  for (const auto& [k, v] : all) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Status(Code::kInvalidInput, "cluster: kafka setting " + k + ": " + err);
    }
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
  if (rk == nullptr) return Status(Code::kInvalidInput, std::string("cluster: kafka client: ") + err);
  return rk;
}

void Cluster::Impl::OnStateDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* impl = static_cast<Impl*>(opaque);
  auto it = impl->state_deliveries_.find(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(m->_private)));
  if (it == impl->state_deliveries_.end()) return;
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    it->second.failed = true;
    impl->log_->warn("a state record was not delivered: {}", rd_kafka_err2str(m->err));
    return;
  }
  if (it->second.delivered++ == 0) it->second.first_offset = m->offset;
}

void Cluster::Impl::OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
  auto* p = static_cast<DeliveryPromise*>(m->_private);
  if (p == nullptr) return;
  p->set_value({m->err, m->offset});
  delete p;
}

Result<int64_t> Cluster::Impl::ProduceWait(const std::string& topic, int32_t partition, const std::string& key,
                                           const std::string& value, const char* header,
                                           const std::string& header_value,
                                           const std::function<bool()>& keep_going) {
  auto* promise = new DeliveryPromise();
  auto future = promise->get_future();
  rd_kafka_headers_t* headers = nullptr;
  if (header != nullptr) {
    headers = rd_kafka_headers_new(1);
    rd_kafka_header_add(headers, header, -1, header_value.data(), header_value.size());
  }
  rd_kafka_resp_err_t e = rd_kafka_producev(
      producer_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key.data(), key.size()),
      RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
      RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_OPAQUE(promise), RD_KAFKA_V_END);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (headers) rd_kafka_headers_destroy(headers);
    delete promise;
    return Status(Code::kServerBusy, "cluster: producing to " + topic + ": " + rd_kafka_err2str(e));
  }
  // In slices, so that Stop() is not held up by a delivery that will not come.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kDeliveryTimeoutMs + 5000);
  while (future.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    if (stop_.load() || std::chrono::steady_clock::now() >= deadline) {
      return Status(Code::kServerBusy, "cluster: no delivery report from " + topic);
    }
    if (keep_going && !keep_going()) {
      return Status(Code::kServerBusy, "cluster: abandoned the wait for a delivery to " + topic);
    }
  }
  auto [err, offset] = future.get();
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status(Code::kServerBusy, "cluster: producing to " + topic + ": " + rd_kafka_err2str(err));
  }
  return offset;
}

void Cluster::Impl::ProduceAsync(const std::string& topic, int32_t partition, const std::string& key,
                                 const std::string& value) {
  rd_kafka_resp_err_t e = rd_kafka_producev(
      producer_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key.data(), key.size()),
      RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()), RD_KAFKA_V_END);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) log_->warn("producing {} to {}: {}", key, topic, rd_kafka_err2str(e));
}

Status Cluster::Impl::EnsureTopic(TopicRole role, const std::string& topic, int partitions,
                                  const std::map<std::string, std::string>& configs) {
  if (embedded_ != nullptr) return embedded_->CreateTopic(topic, partitions);
  for (int attempt = 0;; attempt++) {
    rd_kafka_topic_t* t = rd_kafka_topic_new(producer_, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t e = rd_kafka_metadata(producer_, 0, t, &md, 5000);
    rd_kafka_topic_destroy(t);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      // Named by address: a member started before its Kafka (or with a
      // wrong kafka.bootstrap) said only "Local: Broker transport failure".
      return Status(Code::kUnavailable,
                    "cluster: Kafka at " + bootstrap_ +
                        " (kafka.bootstrap) did not answer: " + "looking up topic " + topic + ": " +
                        rd_kafka_err2str(e) + ". Start Kafka first, or correct kafka.bootstrap");
    }
    const bool exists = md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
                        md->topics[0].partition_cnt > 0;
    const int have = exists ? md->topics[0].partition_cnt : 0;
    rd_kafka_metadata_destroy(md);
    if (exists) {
      if (have != partitions) return PartitionCountMismatch(role, topic, have, partitions);
      return Status::OK();
    }
    if (attempt > 0) return Status(Code::kUnavailable, "cluster: topic " + topic + " not visible after creating it");
    char err[256];
    rd_kafka_NewTopic_t* nt =
        rd_kafka_NewTopic_new(topic.c_str(), partitions, kafka_.replication_factor, err, sizeof err);
    if (nt == nullptr) return Status(Code::kInvalidInput, "cluster: topic " + topic + ": " + err);
    // The cluster topic is state (compacted); the change topic is the
    // shards' history, which restores read from the beginning: kept forever.
    for (const auto& [name, value] : configs) rd_kafka_NewTopic_set_config(nt, name.c_str(), value.c_str());
    rd_kafka_queue_t* q = rd_kafka_queue_new(producer_);
    rd_kafka_CreateTopics(producer_, &nt, 1, nullptr, q);
    rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 15000);
    rd_kafka_resp_err_t ce = RD_KAFKA_RESP_ERR__TIMED_OUT;
    if (ev != nullptr) {
      const rd_kafka_CreateTopics_result_t* res = rd_kafka_event_CreateTopics_result(ev);
      size_t n = 0;
      const rd_kafka_topic_result_t** tr = res ? rd_kafka_CreateTopics_result_topics(res, &n) : nullptr;
      ce = n > 0 ? rd_kafka_topic_result_error(tr[0]) : rd_kafka_event_error(ev);
      rd_kafka_event_destroy(ev);
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    if (ce != RD_KAFKA_RESP_ERR_NO_ERROR && ce != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
      return Status(Code::kUnavailable, "cluster: creating topic " + topic + ": " + rd_kafka_err2str(ce));
    }
  }
}

Status Cluster::Impl::Init() {
  if (bootstrap_.empty() || bootstrap_ == "embedded") {
    return Status(Code::kInvalidInput, "cluster: kafka.bootstrap must name a Kafka cluster");
  }
  auto known = KnownOffsets::Open(options_.known_offsets_file, change_topic_);
  if (!known.ok()) return known.status();
  known_offsets_ = std::move(known).value();
  // The producer first: it creates the topics before anyone's metadata
  // request could auto-create them with a default partition count.
  rd_kafka_conf_t* pconf = rd_kafka_conf_new();
  kafka::SendKafkaLogToOurs(pconf);
  rd_kafka_conf_set_dr_msg_cb(pconf, &Impl::OnDelivery);
  auto p = NewClient(RD_KAFKA_PRODUCER,
                     {{"enable.idempotence", "true"},
                      {"acks", "all"},
                      {"linger.ms", "0"},
                      {"message.timeout.ms", std::to_string(kDeliveryTimeoutMs)}},
                     pconf);
  if (!p.ok()) return p.status();
  producer_ = *p;
  delivery_thread_ = common::NamedThread("st-cl-delivery", [this] {
    while (!delivery_stop_.load()) rd_kafka_poll(producer_, 100);
  });
  // As the publisher creates it.
  ST_RETURN_IF_ERROR(EnsureTopic(TopicRole::kChange, change_topic_, shards_,
                                 changestream::ChangeTopicConfigs(true)));
  if (embedded_ == nullptr) {
    // A topic an operator (or an older sidecar) created: does it keep every
    // record? A real cluster answers in milliseconds; librdkafka's mock never
    // answers DescribeConfigs ("waiting for controller"), hence the short
    // wait: not checked (a warning) rather than a slow start.
    auto configs = DescribeTopicConfigs(producer_, change_topic_, kTopicCheckTimeoutMs);
    if (!configs.ok()) {
      log_->warn("the change topic's settings were not checked: {}", configs.status().message());
    } else {
      std::vector<std::string> warnings;
      ST_RETURN_IF_ERROR(CheckChangeTopicConfigs(change_topic_, *configs, &warnings));
      for (const auto& w : warnings) log_->warn("{}", w);
    }
  }
  // Keyed records whose latest value per key is the state: compacted.
  ST_RETURN_IF_ERROR(
      EnsureTopic(TopicRole::kCluster, cluster_topic_, 1, {{"cleanup.policy", "compact"}}));
  if (!state_topic_.empty()) {
    ST_RETURN_IF_ERROR(EnsureTopic(TopicRole::kState, state_topic_, shards_, StateTopicConfigs()));
    rd_kafka_conf_t* sconf = rd_kafka_conf_new();
    kafka::SendKafkaLogToOurs(sconf);
    rd_kafka_conf_set_dr_msg_cb(sconf, &Impl::OnStateDelivery);
    rd_kafka_conf_set_opaque(sconf, this);
    auto sp = NewClient(RD_KAFKA_PRODUCER,
                        {{"enable.idempotence", "true"},
                         {"acks", "all"},
                         {"linger.ms", "5"},
                         {"message.max.bytes", std::to_string(kStateMaxMessageBytes)},
                         {"message.timeout.ms", std::to_string(kDeliveryTimeoutMs)}},
                        sconf);
    if (!sp.ok()) return sp.status();
    state_producer_ = *sp;
  }

  // The readers assign partitions themselves and never join or commit; the
  // group id only lets rd_kafka_consumer_poll serve them (librdkafka 2.0
  // answers UNKNOWN_GROUP to a consumer without one).
  std::map<std::string, std::string> reader_settings = {
      {"enable.auto.commit", "false"}, {"enable.partition.eof", "true"}, {"auto.offset.reset", "earliest"},
      };
  reader_settings["group.id"] = "sidetable." + options_.service + ".restore." + member_;
  auto r = NewClient(RD_KAFKA_CONSUMER, reader_settings);
  if (!r.ok()) return r.status();
  reader_ = *r;
  reader_settings["group.id"] = "sidetable." + options_.service + ".catalog." + member_;
  auto c = NewClient(RD_KAFKA_CONSUMER, reader_settings);
  if (!c.ok()) return c.status();
  catalog_ = *c;
  if (!state_topic_.empty()) {
    for (auto [client, role] : {std::pair{&state_scan_, ".state-scan."}, std::pair{&state_follow_, ".state."}}) {
      reader_settings["group.id"] = "sidetable." + options_.service + role + member_;
      auto sr = NewClient(RD_KAFKA_CONSUMER, reader_settings);
      if (!sr.ok()) return sr.status();
      *client = *sr;
    }
  }
  if (options_.standby_replicas > 0) {
    reader_settings["group.id"] = "sidetable." + options_.service + ".standby." + member_;
    reader_settings["enable.partition.eof"] = "false";
    auto sb = NewClient(RD_KAFKA_CONSUMER, reader_settings);
    if (!sb.ok()) return sb.status();
    standby_reader_ = *sb;
  }

  // The catalog: read the cluster topic up to its end as it stands now.
  int64_t low = 0, high = 0;
  rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(catalog_, cluster_topic_.c_str(), 0, &low, &high, 10000);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status(Code::kUnavailable, "cluster: reading " + cluster_topic_ + ": " + rd_kafka_err2str(e));
  }
  // Member records from here on were written after this process started.
  announce_from_ = high;
  kafka_ok_steady_ms_ = SteadyMs();
  catalog_thread_ = common::NamedThread("st-cl-catalog", [this] { CatalogLoop(); });
  {
    std::unique_lock l(table_mu_);
    if (!table_cv_.wait_for(l, std::chrono::milliseconds(kCatalogCatchUpMs),
                            [&] { return catalog_offset_ + 1 >= high; })) {
      return Status(Code::kUnavailable, "cluster: could not read " + cluster_topic_ + " up to offset " +
                                            std::to_string(high) + " within " +
                                            std::to_string(kCatalogCatchUpMs / 1000) + " s");
    }
  }
  // Topics that belong to another service are refused before this member
  // writes anything to them.
  ST_RETURN_IF_ERROR(CheckServiceAtStartUp());
  // Shards whose partition lost what this member knew was on it: reported
  // at once (held, /health), whoever they are assigned to.
  for (int32_t shard = 0; shard < shards_; shard++) {
    Status s = CheckShardHistory(shard);
    if (!s.ok() && !Held(shard)) log_->warn("shard {}: {}", shard, s.message());
  }
  // A record of this member id from before: a restart, or another live
  // process with the same id, which answers this announcement with its own.
  std::optional<std::string> previous;
  {
    std::shared_lock l(routes_mu_);
    if (auto it = members_.find(member_); it != members_.end()) previous = it->second.endpoint;
  }
  auto m = ProduceWait(cluster_topic_, 0, "member/" + member_, MemberValue(NowMs()));
  if (!m.ok()) return m.status();
  own_announce_offset_ = *m;
  if (previous) ST_RETURN_IF_ERROR(CheckMemberIdUnused(*previous));
  StartAnsweringForeignAnnouncements();

  // The owners' group.
  rd_kafka_conf_t* gconf = rd_kafka_conf_new();
  kafka::SendKafkaLogToOurs(gconf);
  rd_kafka_conf_set_rebalance_cb(gconf, &Impl::OnRebalance);
  rd_kafka_conf_set_opaque(gconf, this);
  const int session = options_.session_timeout_ms;
  auto g = NewClient(RD_KAFKA_CONSUMER,
                     {{"group.id", group_id_},
                      {"partition.assignment.strategy", "cooperative-sticky"},
                      {"session.timeout.ms", std::to_string(session)},
                      {"heartbeat.interval.ms", std::to_string(std::max(100, session / 4))},
                      // The poll thread never waits on anything else, so a
                      // poll gap this long means the process is stuck.
                      {"max.poll.interval.ms", std::to_string(std::max(session, 1000))},
                      {"enable.auto.commit", "false"},
                      {"enable.auto.offset.store", "false"},
                      {"auto.offset.reset", "latest"}},
                     gconf);
  if (!g.ok()) return g.status();
  group_ = *g;
  rd_kafka_poll_set_consumer(group_);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, change_topic_.c_str(), RD_KAFKA_PARTITION_UA);
  e = rd_kafka_subscribe(group_, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status(Code::kUnavailable, "cluster: joining " + group_id_ + ": " + rd_kafka_err2str(e));
  }
  joined_ = true;
  restore_thread_ = common::NamedThread("st-cl-restore", [this] { RestoreLoop(); });
  fence_thread_ = common::NamedThread("st-cl-fence", [this] { FenceLoop(); });
  poll_thread_ = common::NamedThread("st-cl-poll", [this] { PollLoop(); });
  if (standby_reader_ != nullptr) {
    standby_thread_ = common::NamedThread("st-cl-standby", [this] { StandbyLoop(); });
  }
  if (state_producer_ != nullptr) {
    state_thread_ = common::NamedThread("st-cl-state", [this] { StateLoop(); });
  }
  log_->info("member {} of {} ({} shards on {}, cluster topic {})", member_, group_id_, shards_, change_topic_,
             cluster_topic_);
  return Status::OK();
}

void Cluster::Impl::Stop() {
  if (stop_.exchange(true)) return;
  // Each waiter checks stop_ under its mutex: taking the mutex once after
  // setting it means no waiter can miss the notification (a lost wake-up
  // left the fence thread asleep and Stop() waiting for it).
  { std::lock_guard l(restore_mu_); }
  restore_cv_.notify_all();
  { std::lock_guard l(fence_mu_); }
  fence_cv_.notify_all();
  { std::unique_lock l(routes_mu_); }
  routes_cv_.notify_all();
  { std::lock_guard l(table_mu_); }
  table_cv_.notify_all();
  if (poll_thread_.joinable()) poll_thread_.join();
  if (restore_thread_.joinable()) restore_thread_.join();
  if (standby_thread_.joinable()) standby_thread_.join();
  if (state_thread_.joinable()) state_thread_.join();
  if (state_producer_ != nullptr) {
    // Records not delivered by now are lost with the process anyway: the
    // next writer of each shard copies the last mark's records again.
    rd_kafka_flush(state_producer_, 1000);
    rd_kafka_purge(state_producer_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(state_producer_, 0);
  }
  if (group_ != nullptr) {
    // Leaves the group: the revocation runs here (Lost), the others rebalance at once.
    rd_kafka_consumer_close(group_);
  }
  if (fence_thread_.joinable()) fence_thread_.join();
  catalog_stop_ = true;
  if (catalog_thread_.joinable()) catalog_thread_.join();
  if (producer_ != nullptr) rd_kafka_flush(producer_, 2000);
  delivery_stop_ = true;
  if (delivery_thread_.joinable()) delivery_thread_.join();
  if (producer_ != nullptr) {
    rd_kafka_purge(producer_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(producer_, 0);  // the purged reports free their promises
  }
  for (rd_kafka_t** rk :
       {&group_, &reader_, &catalog_, &standby_reader_, &state_follow_, &state_scan_, &state_producer_, &producer_}) {
    if (*rk != nullptr) rd_kafka_destroy(*rk);
    *rk = nullptr;
  }
  {
    std::unique_lock l(routes_mu_);
    owned_.clear();
    serving_.clear();
  }
  // A start-up that failed before subscribing never joined the group.
  if (joined_) log_->info("member {} left {}", member_, group_id_);
}

Route Cluster::Impl::RouteShardLocked(int32_t shard) const {
  Route r;
  r.shard = shard;
  if (shard < 0 || shard >= shards_) return r;
  if (auto it = serving_.find(shard); it != serving_.end()) {
    r.kind = Route::Kind::kLocal;
    r.epoch = it->second;
    r.member = member_;
    r.endpoint = advertise_;
    r.curve_public_key = curve_public_key_;
    return r;
  }
  if (owned_.count(shard)) return r;  // restoring here
  const OwnerRecord& o = owners_[shard];
  auto claim = claimed_.find(shard);
  const bool stale = claim != claimed_.end() && o.epoch < claim->second;
  if (!o.member.empty() && o.member != member_ && !stale) {
    r.kind = Route::Kind::kRemote;
    r.epoch = o.epoch;
    r.member = o.member;
    r.endpoint = o.endpoint;
    // The key is the member's, not the owner record's: a member that
    // restarts with a new key announces it before it claims anything.
    if (auto m = members_.find(o.member); m != members_.end()) r.curve_public_key = m->second.curve_public_key;
  }
  return r;
}

Route Cluster::Impl::RouteShard(int32_t shard) const {
  std::shared_lock l(routes_mu_);
  return RouteShardLocked(shard);
}

Route Cluster::Impl::AwaitRoute(int32_t shard, std::chrono::milliseconds wait) const {
  std::shared_lock l(routes_mu_);
  Route r = RouteShardLocked(shard);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (r.kind == Route::Kind::kUnavailable && !stop_.load() &&
         routes_cv_.wait_until(l, deadline) != std::cv_status::timeout) {
    r = RouteShardLocked(shard);
  }
  return RouteShardLocked(shard);
}

ClusterStats Cluster::Impl::Stats() const {
  ClusterStats s;
  {
    std::shared_lock l(routes_mu_);
    s.generation = generation_;
    for (const auto& [shard, gen] : owned_) s.owned.push_back(shard);
    for (const auto& [shard, epoch] : serving_) s.serving.push_back(shard);
    for (const auto& [shard, mark] : state_marks_) {
      if (!mark.valid()) continue;
      s.state_marks[shard] = mark.offset;
      s.state_resume[shard] = mark.resume_offset();
    }
  }
  {
    // standby_mu_ is held for as long as a new copy loads the state topic
    // (LoadStandbyState): /cluster and /metrics must not wait that long, so
    // they show the last list read when the lock is busy.
    std::unique_lock l(standby_mu_, std::try_to_lock);
    std::lock_guard c(standby_list_mu_);
    if (l.owns_lock()) {
      standby_list_.clear();
      for (const auto& [shard, copy] : standbys_) standby_list_.push_back(shard);
    }
    s.standby = standby_list_;
  }
  s.restores_total = restores_.load();
  s.restored_records_total = restored_records_.load();
  s.fenced_records_total = fenced_records_.load();
  s.fence_checks_total = fence_checks_.load();
  s.fence_failures_total = fence_failures_.load();
  s.last_restore_seconds = last_restore_seconds_.load();
  s.last_restore_records = last_restore_records_.load();
  s.warm_restores_total = warm_restores_.load();
  s.standby_records_total = standby_records_.load();
  s.state_records_total = state_records_.load();
  s.state_marks_total = state_marks_written_.load();
  s.state_failures_total = state_failures_.load();
  s.state_loaded_records_total = state_loaded_records_.load();
  s.last_restore_state_records = last_state_loaded_records_.load();
  s.restore_gaps_total = restore_gaps_.load();
  s.deleted_table_records_total = deleted_table_records_.load();
  s.stale_table_records_total = stale_table_records_.load();
  s.kafka_reachable = kafka_down_since_ms_.load() == 0;
  s.member_id_conflicts_total = member_id_conflicts_.load();
  s.state_fenced_records_total = state_fenced_records_.load();
  {
    std::lock_guard l(problems_mu_);
    s.foreign_claims_total = foreign_.size();
    for (const auto& [shard, why] : held_) s.held.push_back(shard);
  }
  s.problems = Problems();
  return s;
}

namespace {
std::string JsonInts(const std::vector<int32_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); i++) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}
}  // namespace

std::string Cluster::Impl::StatusJson() const {
  const ClusterStats s = Stats();
  std::string out = "{\"member\":" + JsonString(member_) + ",\"service\":" + JsonString(options_.service) +
                    ",\"group\":" + JsonString(group_id_) + ",\"generation\":" + std::to_string(s.generation) +
                    ",\"shards\":" + std::to_string(shards_) + ",\"owned\":" + JsonInts(s.owned) +
                    ",\"serving\":" + JsonInts(s.serving) + ",\"standby\":" + JsonInts(s.standby) +
                    ",\"owners\":{";
  {
    std::shared_lock l(routes_mu_);
    bool first = true;
    for (int32_t shard = 0; shard < shards_; shard++) {
      const OwnerRecord& o = owners_[shard];
      if (o.member.empty()) continue;
      out += (first ? "\"" : ",\"") + std::to_string(shard) + "\":{\"member\":" + JsonString(o.member) +
             ",\"endpoint\":" + JsonString(o.endpoint) + ",\"epoch\":" + std::to_string(o.epoch) + "}";
      first = false;
    }
    out += "},\"members\":{";
    first = true;
    for (const auto& [m, record] : members_) {
      out += (first ? "" : ",") + JsonString(m) + ":" + JsonString(record.endpoint);
      first = false;
    }
  }
  out += "},\"restores\":" + std::to_string(s.restores_total) +
         ",\"restoredRecords\":" + std::to_string(s.restored_records_total) +
         ",\"fencedRecords\":" + std::to_string(s.fenced_records_total) +
         ",\"fenceChecks\":" + std::to_string(s.fence_checks_total) +
         ",\"fenceFailures\":" + std::to_string(s.fence_failures_total) +
         ",\"lastRestoreSeconds\":" + std::to_string(s.last_restore_seconds) +
         ",\"lastRestoreRecords\":" + std::to_string(s.last_restore_records) +
         ",\"warmRestores\":" + std::to_string(s.warm_restores_total) +
         ",\"standbyRecords\":" + std::to_string(s.standby_records_total) +
         ",\"stateTopic\":" + JsonString(state_topic_) +
         ",\"stateRecords\":" + std::to_string(s.state_records_total) +
         ",\"stateMarks\":" + std::to_string(s.state_marks_total) +
         ",\"stateFailures\":" + std::to_string(s.state_failures_total) +
         ",\"stateLoadedRecords\":" + std::to_string(s.state_loaded_records_total) +
         ",\"lastRestoreStateRecords\":" + std::to_string(s.last_restore_state_records) +
         ",\"restoreGaps\":" + std::to_string(s.restore_gaps_total) +
         ",\"deletedTableRecords\":" + std::to_string(s.deleted_table_records_total) +
         ",\"staleTableRecords\":" + std::to_string(s.stale_table_records_total) +
         ",\"kafkaReachable\":" + (s.kafka_reachable ? "true" : "false") +
         ",\"memberIdConflicts\":" + std::to_string(s.member_id_conflicts_total) +
         ",\"stateFencedRecords\":" + std::to_string(s.state_fenced_records_total) +
         ",\"foreignClaims\":" + std::to_string(s.foreign_claims_total) +
         ",\"held\":" + JsonInts(s.held) + ",\"problems\":[";
  bool first = true;
  for (const std::string& p : {KafkaProblem(), MemberIdProblem()}) {
    if (p.empty()) continue;
    out += (first ? "" : ",") + JsonString(p);
    first = false;
  }
  for (const std::string& p : s.problems) {
    out += (first ? "" : ",") + JsonString(p);
    first = false;
  }
  return out + "]}";
}

std::string Cluster::Impl::RenderMetrics() const {
  const ClusterStats s = Stats();
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, const std::string& value) {
    prometheus::Header(&out, name, type, help);
    out += std::string(name) + " " + value + "\n";  // a gauge may be -1 or fractional: not Line()'s uint64
  };
  metric("sidetable_cluster_generation", "gauge", "The owners' group generation this sidecar is in.",
         std::to_string(s.generation));
  metric("sidetable_cluster_owned_shards", "gauge", "Shards assigned to this sidecar.",
         std::to_string(s.owned.size()));
  metric("sidetable_cluster_serving_shards", "gauge", "Shards owned and restored (served here).",
         std::to_string(s.serving.size()));
  metric("sidetable_cluster_restores_total", "counter", "Shard restores completed.",
         std::to_string(s.restores_total));
  metric("sidetable_cluster_restored_records_total", "counter", "Change records applied by restores.",
         std::to_string(s.restored_records_total));
  metric("sidetable_cluster_fenced_records_total", "counter",
         "Change records skipped by restores (written by a replaced owner).", std::to_string(s.fenced_records_total));
  metric("sidetable_cluster_fence_checks_total", "counter", "Fence checks (offset commits) issued.",
         std::to_string(s.fence_checks_total));
  metric("sidetable_cluster_fence_failures_total", "counter", "Fence checks refused (ownership changed).",
         std::to_string(s.fence_failures_total));
  metric("sidetable_cluster_last_restore_seconds", "gauge", "Duration of the latest shard restore.",
         std::to_string(s.last_restore_seconds));
  metric("sidetable_cluster_last_restore_records", "gauge", "Change records the latest shard restore applied.",
         std::to_string(s.last_restore_records));
  metric("sidetable_cluster_warm_restores_total", "counter",
         "Shard restores that resumed from a standby copy (read only the tail).",
         std::to_string(s.warm_restores_total));
  metric("sidetable_cluster_standby_shards", "gauge", "Shards this sidecar keeps a standby copy of.",
         std::to_string(s.standby.size()));
  metric("sidetable_cluster_standby_records_total", "counter", "Change records applied to standby copies.",
         std::to_string(s.standby_records_total));
  metric("sidetable_cluster_state_records_total", "counter",
         "Records this sidecar produced to the state topic (projections of the shards it serves).",
         std::to_string(s.state_records_total));
  metric("sidetable_cluster_state_marks_total", "counter",
         "State marks written (how far a shard's projection reaches).", std::to_string(s.state_marks_total));
  metric("sidetable_cluster_state_failures_total", "counter",
         "State writers that stopped or could not start (a new one starts after 1 s).",
         std::to_string(s.state_failures_total));
  metric("sidetable_cluster_state_loaded_records_total", "counter",
         "Entity records applied from the state topic by restores and standby copies.",
         std::to_string(s.state_loaded_records_total));
  metric("sidetable_cluster_last_restore_state_records", "gauge",
         "Entity records the latest restore applied from the state topic.",
         std::to_string(s.last_restore_state_records));
  metric("sidetable_cluster_deleted_table_records_total", "counter",
         "Records of tables no longer in the cluster catalog, skipped by restores, standby copies and state loads.",
         std::to_string(s.deleted_table_records_total));
  metric("sidetable_cluster_stale_table_records_total", "counter",
         "Records stamped with an earlier incarnation of a table deleted and created again since, skipped by "
         "restores, standby copies and state loads.",
         std::to_string(s.stale_table_records_total));
  metric("sidetable_cluster_kafka_reachable", "gauge",
         "1 while Kafka answers this member (a metadata request for the cluster topic every "
         "second); 0 after 3 s without an answer.",
         s.kafka_reachable ? "1" : "0");
  metric("sidetable_cluster_member_id_conflicts_total", "counter",
         "Member records of this member id announced by another process (two sidecars sharing "
         "cluster.member_id).",
         std::to_string(s.member_id_conflicts_total));
  metric("sidetable_cluster_restore_gaps_total", "counter",
         "Restores that found change records missing (removed by retention before a mark "
         "covered them), or shards held because their partition ends before an offset this member "
         "knew was on it.",
         std::to_string(s.restore_gaps_total));
  metric("sidetable_cluster_held_shards", "gauge",
         "Shards whose change-topic partition lost records this member knew of: local rows kept, "
         "not served here.",
         std::to_string(s.held.size()));
  metric("sidetable_cluster_foreign_claims_total", "counter",
         "Claims of another service read on this service's change topic (a misconfiguration; they "
         "fence nothing).",
         std::to_string(s.foreign_claims_total));
  metric("sidetable_cluster_state_fenced_records_total", "counter",
         "Fenced change records (a replaced owner's late writes) the state writers left out of the "
         "projection.",
         std::to_string(s.state_fenced_records_total));
  return out;
}

// ---- Cluster -------------------------------------------------------------

Cluster::Cluster(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Cluster::~Cluster() { Stop(); }

Result<std::unique_ptr<Cluster>> Cluster::Start(const ClusterOptions& options,
                                                const changestream::KafkaOptions& kafka,
                                                const std::string& change_topic, const std::string& member_id,
                                                const std::string& advertise, ClusterHooks hooks,
                                                kafka::EmbeddedKafka* embedded, const std::string& curve_public_key) {
  if (!options.enabled()) return Status(Code::kInvalidInput, "cluster: cluster.service is not set");
  if (!hooks.apply || !hooks.drop_shards || !hooks.apply_table) {
    return Status(Code::kInvalidInput, "cluster: every hook (apply, drop_shards, apply_table) is needed");
  }
  if (member_id.empty()) return Status(Code::kInvalidInput, "cluster: the member id is empty");
  auto impl = std::make_unique<Impl>(options, kafka, change_topic, member_id, advertise, std::move(hooks), embedded,
                                     curve_public_key);
  Status s = impl->Init();
  if (!s.ok()) {
    impl->Stop();
    return s;
  }
  return std::unique_ptr<Cluster>(new Cluster(std::move(impl)));
}

void Cluster::Stop() {
  if (impl_) impl_->Stop();
}
int32_t Cluster::shards() const { return impl_->shards_; }
int32_t Cluster::ShardOf(std::string_view table, std::string_view pk) const {
  std::string key;
  key.reserve(table.size() + 1 + pk.size());
  key.append(table).append("/").append(pk);
  return kafka::KafkaPartitionFor(key, impl_->shards_);
}
Route Cluster::RouteShard(int32_t shard) const { return impl_->RouteShard(shard); }
Route Cluster::AwaitRoute(int32_t shard, std::chrono::milliseconds wait) const {
  return impl_->AwaitRoute(shard, wait);
}
std::vector<Route> Cluster::Routes() const {
  std::shared_lock l(impl_->routes_mu_);
  std::vector<Route> out;
  for (int32_t s = 0; s < impl_->shards_; s++) out.push_back(impl_->RouteShardLocked(s));
  return out;
}
void Cluster::CheckFence(std::function<void(Status)> done, int32_t shard, uint64_t epoch) {
  impl_->CheckFence(std::move(done), shard, epoch);
}
Status Cluster::CreateTable(const std::string& table, const std::string& caller, std::chrono::milliseconds wait) {
  return impl_->TableOp(table, true, caller, wait);
}
Status Cluster::DeleteTable(const std::string& table, const std::string& caller, std::chrono::milliseconds wait) {
  return impl_->TableOp(table, false, caller, wait);
}
bool Cluster::CatchUpCatalog(std::chrono::milliseconds wait) { return impl_->CatchUpCatalog(wait); }
uint64_t Cluster::TableIncarnation(uint32_t local_table_id) const { return impl_->incarnations_->Of(local_table_id); }
ClusterStats Cluster::Stats() const { return impl_->Stats(); }
std::string Cluster::KafkaProblem() const { return impl_->KafkaProblem(); }
std::string Cluster::MemberIdProblem() const { return impl_->MemberIdProblem(); }
std::string Cluster::StatusJson() const { return impl_->StatusJson(); }
std::string Cluster::RenderMetrics() const { return impl_->RenderMetrics(); }
void Cluster::PausePollingForTesting(bool paused) { impl_->poll_paused_ = paused; }

}  // namespace sidetable::cluster
