#include "sidecar/changestream/topic_setup.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/kafka/embedded_kafka.h"
#include "common/process.h"

namespace sidetable::changestream {
namespace {

// Each wait on Kafka is this short, so Stop() is prompt; a slow cluster just
// takes more attempts.
constexpr int kSliceMs = 250;
constexpr int kMetadataTimeoutMs = 1000;
constexpr int kCreateTimeoutMs = 10000;
constexpr std::chrono::milliseconds kFirstBackoff(200), kMaxBackoff(5000);

}  // namespace

TopicSetup::TopicSetup(rd_kafka_t* rk, kafka::EmbeddedKafka* embedded, int partitions,
                       int replication_factor, std::map<std::string, std::string> configs)
    : rk_(rk),
      embedded_(embedded),
      partitions_(partitions),
      replication_factor_(replication_factor),
      configs_(std::move(configs)) {
  thread_ = common::NamedThread("st-topic-setup", [this] { Run(); });
}

TopicSetup::~TopicSetup() { Stop(); }

void TopicSetup::Stop() {
  {
    std::lock_guard l(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

bool TopicSetup::Stopping() {
  std::lock_guard l(mu_);
  return stop_;
}

bool TopicSetup::Ready(const std::string& topic) {
  std::lock_guard l(mu_);
  if (ready_.count(topic)) return true;
  if (queued_.insert(topic).second) {
    todo_.push_back(topic);
    cv_.notify_all();
  }
  return false;
}

std::string TopicSetup::last_error() const {
  std::lock_guard l(mu_);
  return last_error_;
}

void TopicSetup::Run() {
  auto backoff = kFirstBackoff;
  for (;;) {
    std::string topic;
    {
      std::unique_lock l(mu_);
      cv_.wait(l, [&] { return stop_ || !todo_.empty(); });
      if (stop_) return;
      topic = todo_.front();
    }
    Status s = SetUp(topic);
    std::unique_lock l(mu_);
    if (s.ok()) {
      todo_.pop_front();
      queued_.erase(topic);
      ready_.insert(topic);
      last_error_.clear();
      backoff = kFirstBackoff;
      spdlog::info("publishing to topic {}", topic);
      continue;
    }
    if (last_error_ != s.message()) spdlog::warn("topic set-up: {}; retrying", s.message());
    last_error_ = s.message();
    // Keep the order (the first topic blocks the stream first) and back off.
    cv_.wait_for(l, backoff, [&] { return stop_; });
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

Status TopicSetup::SetUp(const std::string& topic) {
  if (embedded_ != nullptr) return embedded_->CreateTopic(topic, partitions_);
  auto exists = Exists(topic);
  if (!exists.ok()) return exists.status();
  // Created by an operator (with its own partitioning and retention): used as is.
  return *exists ? Status::OK() : Create(topic);
}

Result<bool> TopicSetup::Exists(const std::string& topic) {
  rd_kafka_topic_t* t = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk_, 0, t, &md, kMetadataTimeoutMs);
  rd_kafka_topic_destroy(t);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status(Code::kUnavailable, "looking up topic " + topic + ": " + rd_kafka_err2str(e));
  }
  const bool exists = md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
                      md->topics[0].partition_cnt > 0;
  rd_kafka_metadata_destroy(md);
  return exists;
}

Status TopicSetup::Create(const std::string& topic) {
  char err[256];
  rd_kafka_NewTopic_t* nt =
      rd_kafka_NewTopic_new(topic.c_str(), partitions_, replication_factor_, err, sizeof err);
  if (nt == nullptr) return Status(Code::kInvalidInput, "topic " + topic + ": " + err);
  for (const auto& [name, value] : configs_) {
    if (rd_kafka_resp_err_t e = rd_kafka_NewTopic_set_config(nt, name.c_str(), value.c_str())) {
      rd_kafka_NewTopic_destroy(nt);
      return Status(Code::kInvalidInput, "topic " + topic + ": config " + name + ": " + rd_kafka_err2str(e));
    }
  }
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk_);
  rd_kafka_CreateTopics(rk_, &nt, 1, nullptr, q);
  rd_kafka_event_t* ev = nullptr;
  for (int waited = 0; ev == nullptr && waited < kCreateTimeoutMs && !Stopping(); waited += kSliceMs) {
    ev = rd_kafka_queue_poll(q, kSliceMs);
  }
  Status result(Code::kUnavailable, "creating topic " + topic + ": no answer from Kafka");
  if (ev != nullptr) {
    const rd_kafka_CreateTopics_result_t* res = rd_kafka_event_CreateTopics_result(ev);
    size_t n = 0;
    const rd_kafka_topic_result_t** tr = res ? rd_kafka_CreateTopics_result_topics(res, &n) : nullptr;
    rd_kafka_resp_err_t e = n > 0 ? rd_kafka_topic_result_error(tr[0]) : rd_kafka_event_error(ev);
    result = e == RD_KAFKA_RESP_ERR_NO_ERROR || e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS
                 ? Status::OK()
                 : Status(Code::kUnavailable, "creating topic " + topic + ": " + rd_kafka_err2str(e));
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_queue_destroy(q);  // an answer still on its way is dropped with it
  rd_kafka_NewTopic_destroy(nt);
  return result;
}

}  // namespace sidetable::changestream
