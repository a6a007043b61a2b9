#include "sidecar/server.h"

#include <fstream>
#include <utility>

#include "common/kafka/partitioner.h"
#include "common/process.h"
#include "sidecar/backup.h"
#include "sidecar/listener_policy.h"
#include "sidecar/republish_point.h"
#include "sidecar/server_impl.h"

namespace sidetable::sidecar {

uint64_t MicrosSince(std::chrono::steady_clock::time_point since) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now() - since)
                                   .count());
}

std::string PeerId(std::string_view identity) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : identity) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// SIGTERM must reach the stop flag, not throw out of the loop.
int Poll(zmq::pollitem_t* items, int n, int timeout_ms) {
  int rc = zmq_poll(items, n, timeout_ms);
  if (rc < 0) {
    for (int i = 0; i < n; i++) items[i].revents = 0;
    return 0;
  }
  return rc;
}

Server::Impl::Impl(Server* owner, const ServerConfig& config)
    : owner_(owner),
      config_(config),
      ctx_(1),
      router_(ctx_, zmq::socket_type::router),
      replies_(ctx_, zmq::socket_type::pull),
      handler_(owner->engine_.get(), &owner->metrics_, &config_, owner->publisher_.get(),
               owner->watermarks_.get(), owner->policies_.get(), owner->authenticator_.get()),
      admission_(std::make_shared<Admission>(
          AdmissionLimits{config.max_inflight_bytes, config.max_inflight_per_connection,
                          config.max_inflight_bytes_per_connection})),
      quotas_(config_.auth),
      log_(spdlog::default_logger()->clone("server")),
      parked_(&ctx_, kRepliesEndpoint, owner->watermarks_.get(),
              [this](Job& job, zmq::socket_t& out) { ExpireParked(job, out); }) {}

Status Server::Impl::Bind() {
  // Frames up to twice the request cap are read and answered
  // RequestBodyTooLarge; beyond that ZeroMQ itself drops the peer, so a
  // frame libzmq holds is never larger than this.
  router_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(2 * config_.max_request_bytes));
  // Replies a peer does not read: bounded per peer (ROUTER drops beyond it).
  router_.set(zmq::sockopt::sndhwm,
              static_cast<int>(std::min<uint64_t>(100000, std::max<uint64_t>(
                                                              1000, 4 * config_.max_inflight_per_connection))));
  router_.set(zmq::sockopt::rcvhwm, kRouterRcvHwm);
  router_.set(zmq::sockopt::linger, static_cast<int>(kReplyFlushMargin.count()));
  ST_RETURN_IF_ERROR(SecureRouter());
  ST_RETURN_IF_ERROR(LimitConnections());
  for (const auto& ep : config_.listen) {
    ST_RETURN_IF_ERROR(CheckIpcEndpointFree(ep));
    try {
      router_.bind(ep);
      owner_->endpoints_.push_back(router_.get(zmq::sockopt::last_endpoint));
    } catch (const zmq::error_t& e) {
      return Status(Code::kUnavailable, "cannot bind " + ep + ": " + e.what());
    }
  }
  replies_.bind(kRepliesEndpoint);
  if (!config_.http.empty()) {
    common::HttpHandlers pages;
    pages.health_json = [this] {
      return HealthJson(*owner_, Gauges(), owner_->cluster_live_.load());
    };
    pages.metrics_text = [this] {
      std::string text = MetricsText(*owner_, owner_->metrics_, Gauges());
      cluster::Cluster* cluster = owner_->cluster_live_.load();
      ClusterRouting* routing = owner_->routing_live_.load();
      if (cluster != nullptr && routing != nullptr) text += ClusterMetricsText(*cluster, *routing);
      return text;
    };
    pages.ready = [this] {
      cluster::Cluster* cluster = owner_->cluster_live_.load();
      // A cluster member whose Cluster has not started yet is joining too.
      const bool clustered = config_.cluster.enabled();
      std::vector<cluster::Route> routes;
      if (cluster != nullptr) routes = cluster->Routes();
      return ReadyJson(owner_->stop_.load(std::memory_order_relaxed), clustered ? &routes : nullptr,
                       &routed_once_, cluster != nullptr ? cluster->KafkaProblem() : std::string());
    };
    // Scale-out: who owns which shard, as this sidecar sees it.
    pages.json_pages.emplace_back("/cluster", [this] {
      cluster::Cluster* cluster = owner_->cluster_live_.load();
      return cluster != nullptr ? cluster->StatusJson() : std::string("{\"enabled\":false}");
    });
    auto http = common::HttpEndpoint::Start(config_.http, "sidecar.http", std::move(pages));
    if (!http.ok()) return http.status();
    http_ = std::move(http).value();
    owner_->http_port_ = http_->port();
    owner_->http_address_ = http_->address();
  }
  if (!config_.rest.address.empty()) {
    rest::GatewayHooks hooks;
    hooks.metrics = &owner_->metrics_;
    hooks.quotas = &quotas_;
    hooks.tenant_metrics = &owner_->tenant_metrics_;
    // As RunsInline decides for the ZeroMQ frontend: a write that waits
    // for its fsync or its replicas must not hold up the REST loop.
    hooks.writes_may_wait = [this] {
      return config_.engine.durability == Durability::kFsync || handler_.routing() != nullptr ||
             owner_->engine_->WritesMayWait();
    };
    auto gateway = rest::Gateway::Start(config_.rest, &handler_, TokensRequired(config_), hooks);
    if (!gateway.ok()) return gateway.status();
    rest_ = std::move(gateway).value();
    owner_->rest_address_ = rest_->address();
  }
  return Status::OK();
}

void Server::Impl::StartWorkers() {
  // In a cluster, threads of their own for requests that wait on another
  // sidecar (cluster_routing.h, NeedsForwarding).
  forwarders_ = handler_.routing() != nullptr ? static_cast<size_t>(std::max(8, 4 * config_.workers)) : 0;
  backup_queue_ = static_cast<size_t>(config_.workers) + forwarders_;
  const int threads = static_cast<int>(backup_queue_) + 1;
  for (int i = 0; i < threads; i++) {
    const bool backups = static_cast<size_t>(i) == backup_queue_;
    queues_.push_back(
        std::make_unique<JobQueue>(backups ? kBackupQueueDepth : config_.queue_depth));
  }
  // Not in a cluster: which rows a member serves moves with its shards.
  if (config_.query_prefetch_bytes > 0 && !config_.cluster.enabled()) {
    QueryPrefetch::Options o;
    o.max_bytes = config_.query_prefetch_bytes;
    prefetch_ = std::make_unique<QueryPrefetch>(o);
  }
  parked_.Start();
  live_workers_ = threads;
  for (int i = 0; i < threads; i++) {
    const bool backups = static_cast<size_t>(i) == backup_queue_;
    workers_.push_back(
        common::NamedThread(backups ? std::string("st-backup") : "st-worker-" + std::to_string(i),
                            [this, i] { WorkerLoop(static_cast<size_t>(i)); }));
  }
  acker_ = common::NamedThread("st-acker", [this] { AckLoop(); });
  maintenance_ = common::NamedThread("st-maintenance", [this] { MaintenanceLoop(); });
}

void Server::Impl::WorkerLoop(size_t index) {
  zmq::socket_t out(ctx_, zmq::socket_type::push);
  out.set(zmq::sockopt::sndhwm, 0);  // bounded by admission, never drop a reply
  out.connect(kRepliesEndpoint);
  Job job;
  // Resumed reads this worker runs itself (their queues were closed).
  std::deque<Job> local;
  JobQueue& queue = *queues_[index];
  std::optional<wire::Request> next_page;
  uint64_t page_sequence = 0;
  for (;;) {
    bool popped = false;
    if (!local.empty()) {
      job = std::move(local.front());
      local.pop_front();
    } else if (queue.Pop(&job)) {
      popped = true;
    } else {
      break;
    }
    if (job.barrier_share) {
      // Another worker's table operation: nothing queued here after this
      // point runs before it (worker_barrier.h).
      const auto arrived = std::chrono::steady_clock::now();
      job.barrier->ArriveAndWait();
      if (job.barrier->shares_wait()) owner_->metrics_.RecordBarrierWait(MicrosSince(arrived));
      job.barrier.reset();
      queue.Done();
      continue;
    }
    if (job.barrier && !WaitForBarrier(job, out)) {
      queue.Done();
      continue;
    }
    // Only reads that carry session tokens pay for them.
    if (job.request.after.empty() || job.covered || job.forward || AdmitSession(job, out)) {
      if (job.parked_at != std::chrono::steady_clock::time_point{}) {
        owner_->metrics_.RecordSessionWait(MicrosSince(job.parked_at), /*timed_out=*/false);
      }
      std::string reply;
      uint64_t entities = 0, await_lsn = 0;
      std::vector<ShardEpoch> fence;
      Code code = Code::kOk;
      // A query's page: the sequence it ran at (or later), for PrefetchPage.
      if (PrefetchServes(job)) page_sequence = VisibleSequence();
      if (!TakePrefetched(job, &reply, &entities)) {
        code = handler_.HandleConsuming(job.request, job.principal.get(), &reply, &entities, &await_lsn, &fence);
      }
      // Executed: the other workers go on while its reply leaves.
      if (job.barrier) std::exchange(job.barrier, nullptr)->Release();
      // Reads parked on a forgotten table have nothing left to wait for.
      const bool advanced = (job.request.op == wire::Op::kAdvanceWatermarks ||
                             job.request.op == wire::Op::kForgetWatermarks) &&
                            code == Code::kOk;
      // A query page's continuation, read before the reply is handed away.
      next_page = NextPageRequest(job, code, reply);
      if (job.part) {
        FinishPart(job, code, reply, entities, await_lsn, out);
      } else {
        Complete(job, code, reply, out, entities, await_lsn, std::move(fence));
      }
      if (advanced) ResumeCovered(index, &local);
    }
    if (job.barrier) std::exchange(job.barrier, nullptr)->Release();  // never left waiting
    // After the reply went out (or the job was parked): the frontend may
    // now run this queue's partitions itself.
    if (popped) queue.Done();
    // The page after it, while this one travels, unless requests wait here
    // or the server is stopping.
    if (next_page) {
      if (local.empty() && queue.size() == 0 && !owner_->stop_.load(std::memory_order_relaxed)) {
        PrefetchPage(job, *next_page, page_sequence);
      }
      next_page.reset();
    }
  }
  out.set(zmq::sockopt::linger, -1);
  out.close();
  live_workers_.fetch_sub(1);
}

bool Server::Impl::WaitForBarrier(Job& job, zmq::socket_t& out) {
  const auto arrived = std::chrono::steady_clock::now();
  const bool ours = job.barrier->WaitForOthers();
  if (job.barrier->shares_wait()) {
    owner_->metrics_.RecordBarrierWait(MicrosSince(arrived));
  } else {
    owner_->metrics_.RecordQueryOrderWait(MicrosSince(arrived));
  }
  if (ours) return true;
  // A share was taken off its queue: the server is stopping.
  job.barrier.reset();
  FinishWithError(
      job,
      Status(Code::kServerBusy, "server is shutting down; not executed, retry elsewhere or later"),
      out);
  return false;
}

namespace {

// A large reply while libzmq holds it, and what it is charged to.
struct HeldReply {
  std::string bytes;
  std::shared_ptr<Admission> admission;  // null: not charged
  std::string identity;
};

// libzmq's free callback: on its I/O thread once the reply is sent, or on
// whichever thread drops it (a full queue, the peer gone, the context
// terminating).
void FreeHeldReply(void*, void* hint) {
  auto* held = static_cast<HeldReply*>(hint);
  if (held->admission) held->admission->ReleaseReply(held->identity, held->bytes.size());
  delete held;
}

// The reads whose reply may be large (a query or change-log page, an
// entity): refusing one changes nothing, and the client retries it as any
// ServerBusy. Anything else must get its reply.
bool RefusableReply(wire::Op op) {
  return op == wire::Op::kQuery || op == wire::Op::kReadChanges || op == wire::Op::kGet;
}

}  // namespace

zmq::message_t ReplyMessage(std::string& reply, std::shared_ptr<Admission> charged,
                            const std::string& identity) {
  // Copying a small reply is cheaper than a second allocation freed on
  // ZeroMQ's I/O thread; a large one (a page of a query or of the change
  // log) is handed over as it is.
  if (reply.size() < kZeroCopyReplyBytes) return zmq::message_t(reply.data(), reply.size());
  auto* held = new HeldReply{std::move(reply), nullptr, std::string()};
  if (charged) {
    held->identity = identity;
    held->admission = std::move(charged);
  }
  return zmq::message_t(held->bytes.data(), held->bytes.size(), FreeHeldReply, held);
}

bool Server::Impl::ChargeReply(const Job& job, Code* code, std::string& reply) {
  if (reply.size() < kZeroCopyReplyBytes) return false;
  BusyReason why;
  if (admission_->TryChargeReply(job.envelope, reply.size(), RefusableReply(job.request.op), &why))
    return true;
  // The connection has not read the replies queued before this one: this
  // one is dropped rather than held too (it changed nothing).
  reply.clear();
  wire::EncodeError(
      wire::Header{wire::kVersion, static_cast<uint8_t>(job.request.op), 0, job.request.id},
      Status(Code::kServerBusy, "the server is busy (" + std::string(BusyReasonName(why)) +
                                    ": replies to this connection are not being read); this "
                                    "read's reply was dropped, retry with back-off"),
      &reply);
  *code = Code::kServerBusy;
  owner_->metrics_.RecordBusy(why);
  if (log_->should_log(spdlog::level::debug)) {
    log_->debug("req {}/{}: reply refused ({}): {} bytes of replies wait for this connection",
                PeerId(job.envelope), job.request.id, BusyReasonName(why),
                admission_->reply_bytes());
  }
  return false;
}

void Server::Impl::FinishJob(Job& job, Code code, std::string& reply, zmq::socket_t& out,
                             uint64_t entities) {
  // Executed: off its worker for the connection's next query (the order
  // mark, frontend.cc) before the client can see the reply and send one.
  if (job.queued_on.any()) {
    admission_->Unqueue(job.envelope, job.queued_on);
    job.queued_on.reset();
  }
  // Before anything records the outcome: it may become ServerBusy.
  const Code executed = code;
  const bool charged = ChargeReply(job, &code, reply);
  if (code != executed) entities = 0;  // the page was dropped, not sent
  const size_t reply_bytes = reply.size();
  const uint64_t us = MicrosSince(job.received);
  owner_->metrics_.RecordRequest(job.request.op, code, us);
  if (log_->should_log(spdlog::level::debug)) {
    // The client request id and caller join this line with the client's
    // logs and with the change log's record of the write; the tenant with
    // its per-tenant metrics.
    log_->debug("req {}/{}: {} {} -> {} in {} us (tenant '{}', caller '{}', clientRequestId '{}')",
                PeerId(job.envelope), job.request.id, wire::OpName(job.request.op),
                job.request.table, ErrorCodeName(code), us,
                job.principal ? job.principal->spec.tenant : std::string(), job.request.caller,
                job.request.client_request_id);
  }
  if (code == Code::kAuthorizationFailure || code == Code::kAuthorizationPermissionMismatch) {
    log_->info("req {}/{}: {} {} refused ({}) for tenant '{}', identity '{}'", PeerId(job.envelope),
               job.request.id, wire::OpName(job.request.op), job.request.table, ErrorCodeName(code),
               job.principal ? job.principal->spec.tenant : std::string(), job.request.caller);
  }
  if (job.principal) {
    owner_->tenant_metrics_.Record(job.principal->spec.tenant, code, job.wire_bytes, reply_bytes, entities);
    quotas_.Release(job.principal->spec.tenant);
  }
  zmq::message_t message =
      charged ? ReplyMessage(reply, admission_, job.envelope) : ReplyMessage(reply);
  if (&out == &router_) {
    SendReply(job.envelope, job.delimiter, std::move(message));
  } else {
    const char flag = job.delimiter ? 1 : 0;
    out.send(zmq::buffer(job.envelope), zmq::send_flags::sndmore);
    out.send(zmq::buffer(&flag, 1), zmq::send_flags::sndmore);
    out.send(message, zmq::send_flags::none);
    replies_waiting_.fetch_add(1, std::memory_order_release);
  }
  admission_->Release(job.envelope, job.charge, job.queued_on);
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
}

void Server::Impl::FinishWithError(Job& job, const Status& s, zmq::socket_t& out) {
  std::string reply;
  wire::EncodeError(wire::Header{wire::kVersion, static_cast<uint8_t>(job.request.op), 0, job.request.id},
                    s, &reply);
  FinishJob(job, s.code(), reply, out);
}

void Server::Impl::MaintenanceLoop() {
  // Storage is checked every second (a full disk should stop refusing writes
  // soon after space is freed); retention runs at its own interval.
  const auto retention_every = std::chrono::seconds(config_.retention_interval_seconds);
  auto next_retention = std::chrono::steady_clock::now() + retention_every;
  std::unique_lock lock(maintenance_mu_);
  while (!maintenance_stop_) {
    maintenance_cv_.wait_for(lock, std::chrono::seconds(1));
    if (maintenance_stop_) break;
    lock.unlock();
    owner_->engine_->CheckStorage();  // logs its own transitions
    if (prefetch_) prefetch_->Expire();
    const bool retain = std::chrono::steady_clock::now() >= next_retention;
    // Never trim what Kafka has not received. Read before the session
    // routes are persisted, so that they know every record trimmed below.
    const uint64_t keep_from =
        owner_->publisher_ ? owner_->publisher_->published_lsn() + 1 : UINT64_MAX;
    // Every second: a restart reads about a second of the log's headers.
    if (owner_->routes_)
      owner_->routes_->Persist(owner_->engine_.get()).IgnoreError();  // logs its own failures
    if (retain) {
      next_retention = std::chrono::steady_clock::now() + retention_every;
      auto first = owner_->engine_->ApplyRetention(keep_from);
      if (!first.ok()) log_->warn("change log retention: {}", first.status().ToString());
    }
    lock.lock();
  }
}

void Server::Impl::StopMaintenance() {
  {
    std::lock_guard lock(maintenance_mu_);
    maintenance_stop_ = true;
    maintenance_cv_.notify_all();
  }
  if (maintenance_.joinable()) maintenance_.join();
}

void Server::Impl::Serve() {
  zmq::pollitem_t items[] = {{router_.handle(), 0, ZMQ_POLLIN, 0},
                             {replies_.handle(), 0, ZMQ_POLLIN, 0}};
  while (!owner_->stop_.load(std::memory_order_relaxed)) {
    Poll(items, 2, 100);
    if (items[0].revents == 0 && items[1].revents == 0) LogBusyOverdue();
    if (items[1].revents & ZMQ_POLLIN) ForwardReplies();
    // Bounded burst, so replies keep flowing under load.
    if (items[0].revents & ZMQ_POLLIN) ReadRequests(256);
  }
}

ServerGauges Server::Impl::Gauges() const {
  ServerGauges g;
  for (const auto& q : queues_) g.queue_depth += q->size();
  g.in_flight = in_flight_.load();
  g.inflight_bytes = admission_->bytes_in_flight();
  g.inflight_reply_bytes = admission_->reply_bytes();
  g.inflight_bytes_peak = admission_->peak_bytes_in_flight();
  g.inflight_bytes_limit = config_.max_inflight_bytes;
  g.inflight_connections = admission_->connections_in_flight();
  if (connections_) {
    g.connections_open = connections_->open();
    g.connections_limit = connections_->limit();
    g.connections_refused = connections_->refused();
  }
  g.shutting_down = owner_->stop_.load(std::memory_order_relaxed);
  g.parked_reads = parked_.size();
  if (prefetch_) g.prefetch = prefetch_->Stats();
  if (zap_) {
    g.curve = true;
    g.curve_allowed = zap_->allowed();
    g.curve_refused = zap_->refused();
  }
  if (rest_) g.rest = rest_->Stats();
  if (cluster::Cluster* cluster = owner_->cluster_live_.load()) {
    g.cluster = ServerGauges::ClusterProblems{cluster->KafkaProblem(), cluster->MemberIdProblem()};
  }
  return g;
}

// This sidecar's id in its cluster (cluster.member_id, default the sidecar id).
static std::string ClusterMemberId(const ServerConfig& config) {
  return config.cluster.member_id.empty() ? config.id : config.cluster.member_id;
}

// The change topic a service's sidecars share: "{service}" replaced.
static std::string ServiceTopic(const ServerConfig& config) {
  return cluster::ExpandService(config.kafka.topic, config.cluster.service);
}

Result<std::unique_ptr<Server>> Server::Start(const ServerConfig& config) {
  ST_RETURN_IF_ERROR(ValidateConfig(config));
  std::unique_ptr<Server> server(new Server());
  EngineOptions engine_options = config.engine;
  // The publisher reads the log's tail: the newest records kept resolved
  // spare it a RocksDB lookup per image (engine/internal/recent_records.h).
  if (!config.kafka.bootstrap.empty() && engine_options.recent_records_bytes == 0) {
    engine_options.recent_records_bytes = 32 << 20;
  }
  // Before the data directory is opened: a backup directory that cannot
  // be used stops the start with nothing touched.
  auto backup_lock = PrepareBackupDir(
      BackupSettings{config.backup_dir, config.backup_keep, config.data_dir, config.id, ""});
  if (!backup_lock.ok()) return backup_lock.status();
  server->backup_lock_ = std::move(backup_lock).value();
  // Session tokens (source_routes.h): the topic's partition count is the
  // one derived pairs register; other counts are tracked when asked for.
  // Not in a cluster: each member's change log holds table events it never
  // publishes (KafkaOptions::table_events_of), and its LSNs are its own on
  // a shared topic, so a token keeps waiting for its own record there.
  if (!config.cluster.enabled()) {
    server->routes_ = std::make_unique<SourceRoutes>(
        config.kafka.bootstrap.empty() ? std::vector<int32_t>{}
                                       : std::vector<int32_t>{config.kafka.partitions});
    engine_options.change_observer = server->routes_.get();
  }
  auto engine = Engine::Open(engine_options, config.data_dir);
  if (!engine.ok()) return engine.status();
  server->engine_ = std::move(engine).value();
  AdoptRestoredBackup(config.data_dir);
  if (!config.backup_dir.empty()) {
    if (auto last = NewestBackup(config.backup_dir, config.data_dir)) {
      server->metrics_.SetLastBackup(last->unix_seconds, last->last_lsn, last->bytes);
    }
  }
  // Per-table series carry each table's name as created, from the start.
  for (const TableInfo& t : server->engine_->ListTables()) server->metrics_.NameTable(t.name);
  auto watermarks = Watermarks::Load(server->engine_.get());
  if (!watermarks.ok()) return watermarks.status();
  server->watermarks_ = std::move(watermarks).value();
  if (server->routes_ != nullptr) {
    // The registered pairs' counts are tracked from the snapshot on too.
    for (const wire::WatermarkEntry& e : server->watermarks_->Read(""))
      server->routes_->Track(e.partitions);
    server->watermarks_->OnPartitionCount(
        [routes = server->routes_.get()](int32_t p) { routes->Track(p); });
    const uint64_t scan = std::max<uint64_t>(1, config.kafka.max_backlog_events / 2);
    ST_RETURN_IF_ERROR(server->routes_->Load(*server->engine_, scan));
  }
  auto policies = auth::PolicyStore::Load(server->engine_.get());
  if (!policies.ok()) return policies.status();
  server->policies_ = std::move(policies).value();
  if (config.auth.tokens) {
    auto authenticator = auth::Authenticator::Create(config.auth, server->policies_.get());
    if (!authenticator.ok()) return authenticator.status();
    server->authenticator_ = std::move(authenticator).value();
  }
  ST_RETURN_IF_ERROR(server->StartChangeStream(config));
  server->impl_ = std::make_unique<Impl>(server.get(), config);
  ST_RETURN_IF_ERROR(server->impl_->Bind());
  if (config.cluster.enabled()) ST_RETURN_IF_ERROR(server->StartCluster(config));
  server->impl_->StartWorkers();
  return server;
}

Status Server::StartCluster(const ServerConfig& config) {
  if (publisher_ == nullptr) {
    return Status(Code::kInvalidInput, "cluster.service needs kafka.bootstrap: the change topic is the cluster");
  }
  const int32_t shards = config.kafka.partitions;
  cluster::ClusterHooks hooks;
  Engine* engine = engine_.get();
  hooks.apply = [engine](const ChangeRecord& record) { return engine->ApplyReplicated(record); };
  hooks.drop_shards = [engine, shards](const std::vector<int32_t>& drop) -> Result<uint64_t> {
    std::vector<char> set(static_cast<size_t>(shards), 0);
    for (int32_t s : drop) {
      if (s >= 0 && s < shards) set[static_cast<size_t>(s)] = 1;
    }
    std::string key;
    return engine->DropPartitions([&](std::string_view table, std::string_view pk) {
      // The publisher's key, "<table as created>/<PartitionKey>".
      key.assign(table);
      key.push_back('/');
      key.append(pk);
      return set[static_cast<size_t>(kafka::KafkaPartitionFor(key, shards))] != 0;
    });
  };
  hooks.apply_table = [engine](const std::string& table, bool created,
                               const TableEventStamp& stamp) {
    Status s =
        created ? engine->CreateTable(table, "", stamp) : engine->DeleteTable(table, "", stamp);
    if (s.code() == Code::kTableAlreadyExists || s.code() == Code::kTableNotFound)
      return Status::OK();
    return s;
  };
  hooks.table_id = [engine](const std::string& table) -> uint32_t {
    auto info = engine->GetTable(table);
    return info.ok() ? info->id : 0;
  };
  const std::string member = ClusterMemberId(config);
  const std::string advertise = config.cluster.advertise.empty() ? endpoints_.at(0) : config.cluster.advertise;
  changestream::KafkaOptions kafka = config.kafka;
  kafka.bootstrap = publisher_->bootstrap();
  // With CURVE on, the peers forward to this sidecar over CURVE: they need
  // its public key (the member record), and it forwards with its key pair.
  const SecurityConfig& security = config.security;
  const std::string curve_public_key = security.curve() ? security.server_keys.public_key : std::string();
  for (const std::string& w : ClusterCurveWarnings(security)) spdlog::warn("cluster: {}", w);
  cluster::ClusterOptions cluster_options = config.cluster;
  cluster_options.table_incarnations = table_incarnations_;  // shared with the publisher's stamps
  if (!config.data_dir.empty())
    cluster_options.known_offsets_file = config.data_dir + "/cluster-change-offsets";
  // The window, and as much again (at most a minute) for the members' clock skew.
  cluster_options.retry_window_seconds =
      config.engine.request_id_window_seconds + std::min<int64_t>(60, config.engine.request_id_window_seconds);
  auto started = cluster::Cluster::Start(cluster_options, kafka, ServiceTopic(config), member, advertise,
                                         std::move(hooks), embedded_kafka_.get(), curve_public_key);
  if (!started.ok()) return started.status();
  cluster_ = std::move(started).value();
  routing_ = std::make_unique<ClusterRouting>(
      cluster_.get(), engine_.get(), publisher_.get(), config.cluster.acks == cluster::AckMode::kReplicated,
      std::chrono::milliseconds(config.cluster.rebalance_wait_ms),
      // A forward's reply, and a replicated acknowledgement, are waited for
      // as long as a rebalance: a client's own time-out (5 s in ours) should
      // see ServerBusy rather than nothing.
      std::chrono::milliseconds(std::max(1000, config.cluster.rebalance_wait_ms)), member,
      security.curve() ? security.server_keys : curve::KeyPair{});
  impl_->handler_.SetRouting(routing_.get());
  routing_live_.store(routing_.get());
  cluster_live_.store(cluster_.get());
  spdlog::info("cluster: member '{}' of service '{}' at {}, {} shards, acks {}, forwarding {}", member,
               config.cluster.service, advertise, shards,
               config.cluster.acks == cluster::AckMode::kReplicated ? "replicated" : "local",
               security.curve() ? "over CURVE" : "plain");
  return Status::OK();
}

Status Server::StartChangeStream(const ServerConfig& config) {
  changestream::KafkaOptions k = config.kafka;
  k.topic_configs = changestream::ChangeTopicConfigs(config.cluster.enabled());
  // A data directory older than its topic must not publish over it. Members
  // of a cluster share the topic, each with LSNs of its own: not for them.
  k.check_topic_tail = !config.cluster.enabled();
  if (k.bootstrap.empty()) return Status::OK();
  // How far RepublishAfter reads the log: at most what the publisher would
  // send again (half of kafka.max_backlog_events, RepublishFrom).
  const uint64_t republish_scan = std::max<uint64_t>(1, k.max_backlog_events / 2);
  if (k.bootstrap == "embedded") {
    auto embedded = kafka::EmbeddedKafka::Start(k.embedded_brokers);
    if (!embedded.ok()) return embedded.status();
    embedded_kafka_ = std::move(embedded).value();
    // Create the change topic before its address is published: a worker that
    // subscribed first had the mock auto-create it with its default of 4
    // partitions, and kafka.partitions was then ignored (issue 16).
    if (k.topic.find("{table}") == std::string::npos) {
      ST_RETURN_IF_ERROR(
          embedded_kafka_->CreateTopic(changestream::TopicFor(k.topic, config.id, ""), k.partitions));
    }
    const std::string file =
        k.bootstrap_file.empty() ? config.data_dir + "/kafka.bootstrap" : k.bootstrap_file;
    std::ofstream out(file, std::ios::trunc);
    out << embedded_kafka_->bootstraps() << "\n";
    if (!out) return Status(Code::kUnavailable, "cannot write " + file);
    spdlog::info("embedded Kafka (librdkafka mock cluster) at {}; address written to {}",
                 embedded_kafka_->bootstraps(), file);
    if (std::string warning = EmbeddedKafkaWarning(config); !warning.empty()) spdlog::warn("{}", warning);
    // The mock starts empty: changes published to the previous one that a
    // derived table had not applied would never reach its worker.
    k.republish_after =
        RepublishAfter(*engine_, *watermarks_, republish_scan, "the embedded Kafka");
  } else if (!config.cluster.enabled() && k.topic.find("{table}") == std::string::npos) {
    // A change topic that starts empty (a restore's new topic) is the same:
    // those changes went to the old topic only. Found only then, by the
    // publisher: the scan is not for every start.
    k.republish_to_empty_topic_after = [engine = engine_.get(), watermarks = watermarks_.get(),
                                        republish_scan] {
      return RepublishAfter(*engine, *watermarks, republish_scan, "the new change topic");
    };
  }
  if (config.cluster.enabled()) {
    k.topic = ServiceTopic(config);
    // Opened before the publisher starts, so that the backlog from before a
    // restart goes out stamped too (docs/scale-out.md, "Table incarnations").
    auto incarnations = cluster::TableIncarnations::Open(
        config.data_dir.empty() ? std::string() : config.data_dir + "/cluster-table-incarnations");
    if (!incarnations.ok()) return incarnations.status();
    table_incarnations_ = std::move(incarnations).value();
    k.table_incarnation = [t = table_incarnations_](uint32_t id) { return t->Of(id); };
    // Each table change once: only the table events of this member's own
    // table records (docs/scale-out.md, "Table events in a cluster").
    k.table_events_of = ClusterMemberId(config) + "/";
  }
  auto publisher = changestream::Publisher::Start(engine_.get(), k, config.id, embedded_kafka_.get());
  if (!publisher.ok()) return publisher.status();
  publisher_ = std::move(publisher).value();
  return Status::OK();
}

Server::~Server() {
  if (impl_) {
    for (auto& q : impl_->queues_) q->Close();
    for (auto& w : impl_->workers_) {
      if (w.joinable()) w.join();
    }
    impl_->StopAcks();
    impl_->StopMaintenance();
  }
  // Leaves the group: a clean hand-over of this sidecar's shards.
  cluster_live_.store(nullptr);
  routing_live_.store(nullptr);
  if (cluster_) cluster_->Stop();
  impl_.reset();
  routing_.reset();
  cluster_.reset();
  publisher_.reset();
  embedded_kafka_.reset();
  engine_.reset();
}

void Server::Run() {
  impl_->Serve();
  // No new REST requests during the drain; those being served finish first.
  if (impl_->rest_) impl_->rest_->Stop();
  stopped_cleanly_ = impl_->Drain();
}

}  // namespace sidetable::sidecar
