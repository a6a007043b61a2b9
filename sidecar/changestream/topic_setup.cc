#include "sidecar/changestream/topic_setup.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "common/kafka/embedded_kafka.h"
#include "common/process.h"
#include "sidecar/changestream/topic_tail.h"

namespace sidetable::changestream {
namespace {

// Each wait on Kafka is this short, so Stop() is prompt; a slow cluster just
// takes more attempts.
constexpr int kSliceMs = 250;
constexpr int kMetadataTimeoutMs = 1000;
constexpr int kCreateTimeoutMs = 10000;
constexpr std::chrono::milliseconds kFirstBackoff(200), kMaxBackoff(5000);
// A topic ahead of the change log stays so until an operator acts: checked
// again this often, not every 5 s.
constexpr std::chrono::milliseconds kRefusedBackoff(30000);
constexpr std::chrono::milliseconds kTailReadTimeout(10000);

}  // namespace

TopicSetup::TopicSetup(rd_kafka_t* rk, kafka::EmbeddedKafka* embedded, int partitions,
                       int replication_factor, std::map<std::string, std::string> configs,
                       std::unique_ptr<TailCheck> check)
    : rk_(rk),
      embedded_(embedded),
      partitions_(partitions),
      replication_factor_(replication_factor),
      configs_(std::move(configs)),
      check_(std::move(check)) {
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

bool TopicSetup::TakeStartedEmpty(const std::string& topic) {
  std::lock_guard l(mu_);
  return ready_.count(topic) > 0 && started_empty_.erase(topic) > 0;
}

std::string TopicSetup::last_error() const {
  std::lock_guard l(mu_);
  return last_error_;
}

std::string TopicSetup::Refusal(const std::string& topic) const {
  std::lock_guard l(mu_);
  auto it = refused_.find(topic);
  return it == refused_.end() ? "" : it->second;
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
    bool refused = false, empty = false;
    Status s = SetUp(topic, &refused, &empty);
    std::unique_lock l(mu_);
    if (s.ok()) {
      todo_.pop_front();
      queued_.erase(topic);
      ready_.insert(topic);
      if (empty) started_empty_.insert(topic);
      if (refused_.erase(topic))
        spdlog::info("topic {} no longer holds LSNs above the change log", topic);
      last_error_.clear();
      backoff = kFirstBackoff;
      spdlog::info("publishing to topic {}", topic);
      continue;
    }
    if (last_error_ != s.message()) {
      if (refused) {
        spdlog::error("{}", s.message());
      } else {
        spdlog::warn("topic set-up: {}; retrying", s.message());
      }
    }
    last_error_ = s.message();
    if (refused) refused_[topic] = s.message();
    // Keep the order (the first topic blocks the stream first) and back off.
    cv_.wait_for(l, refused ? kRefusedBackoff : backoff, [&] { return stop_; });
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

Status TopicSetup::SetUp(const std::string& topic, bool* refused, bool* empty) {
  // The mock lives in this process and starts empty: nothing to check (the
  // publisher's start deals with its emptiness).
  if (embedded_ != nullptr) return embedded_->CreateTopic(topic, partitions_);
  auto partitions = Partitions(topic);
  if (!partitions.ok()) return partitions.status();
  // A new topic holds nothing. One that exists (from before this start, or
  // created by an operator with its own partitioning and retention) is used
  // as it is, once its newest LSN is not ahead of the change log.
  if (*partitions == 0) {
    *empty = true;
    return Create(topic);
  }
  return check_ ? CheckTail(topic, *partitions, refused, empty) : Status::OK();
}

Status TopicSetup::CheckTail(const std::string& topic, int partitions, bool* refused, bool* empty) {
  auto tail = NewestLsnOnTopic(check_->bootstrap, check_->properties, check_->group, topic,
                               partitions, kTailReadTimeout, [this] { return Stopping(); });
  if (!tail.ok()) return tail.status();
  *empty = tail->newest_lsn == 0;
  if (tail->newest_lsn <= check_->ceiling) return Status::OK();
  *refused = true;
  return Status(
      Code::kUnavailable,
      "change topic " + topic + " holds LSN " + std::to_string(tail->newest_lsn) + " (partition " +
          std::to_string(tail->partition) + ", offset " + std::to_string(tail->offset) +
          "), above LSN " + std::to_string(check_->ceiling) +
          ", where this data directory's change log ended at start: the directory is older than "
          "the topic (restored from a backup or a snapshot, or its newest writes lost in an OS "
          "crash under os durability), and publishing would give those LSNs to other changes. "
          "Nothing is published to it; writes stay in the change log. Give the sidecar a new "
          "kafka.topic (docs/operations.md, \"A data directory older than its change topic\")");
}

Result<int> TopicSetup::Partitions(const std::string& topic) {
  rd_kafka_topic_t* t = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk_, 0, t, &md, kMetadataTimeoutMs);
  rd_kafka_topic_destroy(t);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status(Code::kUnavailable, "looking up topic " + topic + ": " + rd_kafka_err2str(e));
  }
  const int partitions = md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR
                             ? md->topics[0].partition_cnt
                             : 0;
  rd_kafka_metadata_destroy(md);
  return std::max(partitions, 0);
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
