#include "sidecar/server.h"

#include <spdlog/spdlog.h>
#include <xxhash.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <zmq.hpp>

#include "common/http_endpoint.h"
#include "engine/table_name.h"
#include "sidecar/handler.h"
#include "sidecar/job_queue.h"
#include "sidecar/status_pages.h"

namespace sidetable::sidecar {
namespace {

constexpr const char* kRepliesEndpoint = "inproc://sidetable-replies";

std::string PeerId(std::string_view identity) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : identity) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// zmq_poll that treats a signal (EINTR) as "nothing ready": SIGTERM must
// reach the stop flag, not throw out of the loop.
int Poll(zmq::pollitem_t* items, int n, int timeout_ms) {
  int rc = zmq_poll(items, n, timeout_ms);
  if (rc < 0) {
    for (int i = 0; i < n; i++) items[i].revents = 0;
    return 0;
  }
  return rc;
}

uint64_t Micros(std::chrono::steady_clock::time_point since) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now() - since)
                                   .count());
}

}  // namespace

class Server::Impl {
 public:
  Impl(Server* owner, const ServerConfig& config)
      : owner_(owner), config_(config), ctx_(1), router_(ctx_, zmq::socket_type::router),
        replies_(ctx_, zmq::socket_type::pull),
        handler_(owner->engine_.get(), &owner->metrics_, &config_, owner->publisher_.get()),
        log_(spdlog::default_logger()->clone("server")) {}

  Status Bind();
  void StartWorkers();
  void Serve();
  void Drain();

 private:
  void OnRequest();
  void ForwardReplies();
  void SendReply(const std::string& identity, bool delimiter, const std::string& frame);
  size_t WorkerFor(const wire::Request& r);
  void WorkerLoop(size_t index);
  void MaintenanceLoop();

  Server* owner_;
  const ServerConfig config_;
  zmq::context_t ctx_;
  zmq::socket_t router_;
  zmq::socket_t replies_;
  Handler handler_;
  std::shared_ptr<spdlog::logger> log_;

  std::vector<std::unique_ptr<JobQueue>> queues_;
  std::vector<std::thread> workers_;
  std::atomic<int> live_workers_{0};
  std::atomic<uint64_t> in_flight_{0};
  size_t round_robin_ = 0;

  std::thread maintenance_;
  std::mutex maintenance_mu_;
  std::condition_variable maintenance_cv_;
  bool maintenance_stop_ = false;

  ServerGauges Gauges() const;

  std::unique_ptr<common::HttpEndpoint> http_;

  friend class Server;
};

Status Server::Impl::Bind() {
  const int max_msg = static_cast<int>(std::min<size_t>(4 * config_.max_request_bytes, INT32_MAX));
  // Frames far beyond the request cap are refused by ZeroMQ itself (the peer
  // is disconnected); those merely above it get a RequestBodyTooLarge reply.
  router_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(max_msg));
  router_.set(zmq::sockopt::sndhwm, 100000);
  router_.set(zmq::sockopt::rcvhwm, 10000);
  router_.set(zmq::sockopt::linger, config_.shutdown_grace_ms);
  for (const auto& ep : config_.listen) {
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
    pages.health_json = [this] { return HealthJson(*owner_, Gauges()); };
    pages.metrics_text = [this] { return MetricsText(*owner_, owner_->metrics_, Gauges()); };
    auto http = common::HttpEndpoint::Start(config_.http, "sidecar.http", std::move(pages));
    if (!http.ok()) return http.status();
    http_ = std::move(http).value();
    owner_->http_port_ = http_->port();
  }
  return Status::OK();
}

void Server::Impl::StartWorkers() {
  for (int i = 0; i < config_.workers; i++) {
    queues_.push_back(std::make_unique<JobQueue>(config_.queue_depth));
  }
  live_workers_ = config_.workers;
  for (int i = 0; i < config_.workers; i++) {
    workers_.emplace_back([this, i] { WorkerLoop(static_cast<size_t>(i)); });
  }
  maintenance_ = std::thread([this] { MaintenanceLoop(); });
}

size_t Server::Impl::WorkerFor(const wire::Request& r) {
  using wire::Op;
  const std::string* pk = nullptr;
  if (r.op == Op::kWrite && !r.ops.empty()) pk = &r.ops[0].entity.partition_key;
  if (r.op == Op::kGet) pk = &r.pk;
  if (pk == nullptr) return round_robin_++ % queues_.size();
  // Same (table, PartitionKey), same worker: requests of one partition run
  // in the order they arrived. Table names are case-insensitive.
  std::string key;
  key.reserve(r.table.size() + 1 + pk->size());
  AppendTableKey(r.table, &key);
  key.push_back('\0');
  key.append(*pk);
  return XXH3_64bits(key.data(), key.size()) % queues_.size();
}

void Server::Impl::SendReply(const std::string& identity, bool delimiter, const std::string& frame) {
  router_.send(zmq::buffer(identity), zmq::send_flags::sndmore);
  if (delimiter) router_.send(zmq::message_t(), zmq::send_flags::sndmore);
  router_.send(zmq::buffer(frame), zmq::send_flags::dontwait);
}

void Server::Impl::OnRequest() {
  const auto received = std::chrono::steady_clock::now();
  std::vector<zmq::message_t> frames;
  for (;;) {
    zmq::message_t m;
    if (!router_.recv(m, zmq::recv_flags::dontwait)) break;
    const bool more = m.more();
    frames.push_back(std::move(m));
    if (!more || frames.size() > 8) break;
  }
  if (frames.empty()) return;
  std::string identity = frames[0].to_string();
  bool delimiter = false;
  const zmq::message_t* payload = nullptr;
  if (frames.size() == 2) {
    payload = &frames[1];
  } else if (frames.size() == 3 && frames[1].size() == 0) {
    delimiter = true;
    payload = &frames[2];
  }
  if (payload == nullptr) {
    // Not one request frame: there is no request id to answer to.
    owner_->metrics_.RecordMalformed();
    log_->warn("peer {}: dropped a message of {} frames (one request frame expected)",
               PeerId(identity), frames.size() - 1);
    return;
  }
  std::string_view data(static_cast<const char*>(payload->data()), payload->size());
  wire::Header header;
  header.op = 0;
  wire::ParseHeader(data, &header);  // best effort, for the error reply's id

  auto reject = [&](const Status& s) {
    std::string out;
    wire::EncodeError(header, s, &out);
    SendReply(identity, delimiter, out);
    owner_->metrics_.RecordRequest(static_cast<wire::Op>(header.op <= wire::kMaxOp ? header.op : 0),
                                   s.code(), Micros(received));
  };

  if (data.size() > config_.max_request_bytes) {
    reject(Status(Code::kRequestBodyTooLarge, "request of " + std::to_string(data.size()) +
                                                  " bytes is over the limit of " +
                                                  std::to_string(config_.max_request_bytes)));
    return;
  }
  Job job;
  Status decoded = wire::DecodeRequest(data, &job.request);
  if (!decoded.ok()) {
    owner_->metrics_.RecordMalformed();
    if (log_->should_log(spdlog::level::debug)) {
      log_->debug("req {}/{}: rejected: {}", PeerId(identity), header.request_id, decoded.ToString());
    }
    reject(decoded);
    return;
  }
  if (owner_->stop_.load(std::memory_order_relaxed)) {
    reject(Status(Code::kServerBusy, "server is shutting down"));
    return;
  }
  job.envelope = std::move(identity);
  job.delimiter = delimiter;
  job.received = received;
  const size_t w = WorkerFor(job.request);
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  // TryPush only moves the job when it succeeds; on failure it is still ours.
  if (!queues_[w]->TryPush(std::move(job))) {
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    owner_->metrics_.RecordBusy();
    std::string out;
    wire::EncodeError(header, Status(Code::kServerBusy, "the server is busy; retry with back-off"), &out);
    SendReply(job.envelope, job.delimiter, out);
    owner_->metrics_.RecordRequest(job.request.op, Code::kServerBusy, Micros(received));
  }
}

void Server::Impl::ForwardReplies() {
  for (;;) {
    zmq::message_t identity, flag, reply;
    if (!replies_.recv(identity, zmq::recv_flags::dontwait)) return;
    (void)replies_.recv(flag);
    (void)replies_.recv(reply);
    router_.send(identity, zmq::send_flags::sndmore);
    if (flag.size() == 1 && *static_cast<const char*>(flag.data()) == 1) {
      router_.send(zmq::message_t(), zmq::send_flags::sndmore);
    }
    router_.send(reply, zmq::send_flags::dontwait);
  }
}

void Server::Impl::WorkerLoop(size_t index) {
  zmq::socket_t out(ctx_, zmq::socket_type::push);
  out.set(zmq::sockopt::sndhwm, 0);  // bounded by the job queue, never drop a reply
  out.connect(kRepliesEndpoint);
  Job job;
  while (queues_[index]->Pop(&job)) {
    std::string reply;
    Code code = handler_.Handle(job.request, &reply);
    const uint64_t us = Micros(job.received);
    owner_->metrics_.RecordRequest(job.request.op, code, us);
    if (log_->should_log(spdlog::level::debug)) {
      log_->debug("req {}/{}: {} {} -> {} in {} us", PeerId(job.envelope), job.request.id,
                  wire::OpName(job.request.op), job.request.table, ErrorCodeName(code), us);
    }
    const char flag = job.delimiter ? 1 : 0;
    out.send(zmq::buffer(job.envelope), zmq::send_flags::sndmore);
    out.send(zmq::buffer(&flag, 1), zmq::send_flags::sndmore);
    out.send(zmq::buffer(reply), zmq::send_flags::none);
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
  }
  out.set(zmq::sockopt::linger, -1);
  out.close();
  live_workers_.fetch_sub(1);
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
    if (std::chrono::steady_clock::now() >= next_retention) {
      next_retention = std::chrono::steady_clock::now() + retention_every;
      // Never trim what Kafka has not received.
      const uint64_t keep_from =
          owner_->publisher_ ? owner_->publisher_->published_lsn() + 1 : UINT64_MAX;
      auto first = owner_->engine_->ApplyRetention(keep_from);
      if (!first.ok()) log_->warn("change log retention: {}", first.status().ToString());
    }
    lock.lock();
  }
}

void Server::Impl::Serve() {
  zmq::pollitem_t items[] = {{router_.handle(), 0, ZMQ_POLLIN, 0},
                             {replies_.handle(), 0, ZMQ_POLLIN, 0}};
  while (!owner_->stop_.load(std::memory_order_relaxed)) {
    Poll(items, 2, 100);
    if (items[1].revents & ZMQ_POLLIN) ForwardReplies();
    if (items[0].revents & ZMQ_POLLIN) {
      // Bounded burst, so replies keep flowing under load.
      for (int i = 0; i < 256 && (router_.get(zmq::sockopt::events) & ZMQ_POLLIN); i++) OnRequest();
    }
  }
}

void Server::Impl::Drain() {
  log_->info("stopping: no new requests; finishing {} in flight", in_flight_.load());
  for (auto& q : queues_) q->Close();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.shutdown_grace_ms);
  zmq::pollitem_t item = {replies_.handle(), 0, ZMQ_POLLIN, 0};
  while (live_workers_.load() > 0 || (Poll(&item, 1, 0), item.revents & ZMQ_POLLIN)) {
    Poll(&item, 1, 20);
    if (item.revents & ZMQ_POLLIN) ForwardReplies();
    if (std::chrono::steady_clock::now() > deadline) {
      log_->warn("stopping: grace period over with {} requests in flight", in_flight_.load());
      break;
    }
  }
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  ForwardReplies();
  {
    std::lock_guard lock(maintenance_mu_);
    maintenance_stop_ = true;
    maintenance_cv_.notify_all();
  }
  if (maintenance_.joinable()) maintenance_.join();
  if (http_) http_->Stop();
  // Every accepted write is committed: let the publisher deliver what it can.
  if (owner_->publisher_) owner_->publisher_->Stop();
  router_.close();  // lingers until queued replies are sent (bounded by the grace period)
  replies_.close();
}

Result<std::unique_ptr<Server>> Server::Start(const ServerConfig& config) {
  ST_RETURN_IF_ERROR(ValidateConfig(config));
  std::unique_ptr<Server> server(new Server());
  auto engine = Engine::Open(config.engine, config.data_dir);
  if (!engine.ok()) return engine.status();
  server->engine_ = std::move(engine).value();
  ST_RETURN_IF_ERROR(server->StartChangeStream(config));
  server->impl_ = std::make_unique<Impl>(server.get(), config);
  ST_RETURN_IF_ERROR(server->impl_->Bind());
  server->impl_->StartWorkers();
  return server;
}

Status Server::StartChangeStream(const ServerConfig& config) {
  changestream::KafkaOptions k = config.kafka;
  if (k.bootstrap.empty()) return Status::OK();
  if (k.bootstrap == "embedded") {
    auto embedded = kafka::EmbeddedKafka::Start(k.embedded_brokers);
    if (!embedded.ok()) return embedded.status();
    embedded_kafka_ = std::move(embedded).value();
    const std::string file =
        k.bootstrap_file.empty() ? config.data_dir + "/kafka.bootstrap" : k.bootstrap_file;
    std::ofstream out(file, std::ios::trunc);
    out << embedded_kafka_->bootstraps() << "\n";
    if (!out) return Status(Code::kUnavailable, "cannot write " + file);
    spdlog::info("embedded Kafka (librdkafka mock cluster) at {}; address written to {}",
                 embedded_kafka_->bootstraps(), file);
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
    {
      std::lock_guard lock(impl_->maintenance_mu_);
      impl_->maintenance_stop_ = true;
      impl_->maintenance_cv_.notify_all();
    }
    if (impl_->maintenance_.joinable()) impl_->maintenance_.join();
  }
  impl_.reset();
  publisher_.reset();
  embedded_kafka_.reset();
  engine_.reset();
}

void Server::Run() {
  impl_->Serve();
  impl_->Drain();
}

ServerGauges Server::Impl::Gauges() const {
  ServerGauges g;
  for (const auto& q : queues_) g.queue_depth += q->size();
  g.in_flight = in_flight_.load();
  return g;
}

}  // namespace sidetable::sidecar
