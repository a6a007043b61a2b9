// Reads a topic from the beginning without a consumer group (assign(), not
// subscribe()), so tests do not wait ~3 s for a group to form. Bounded waits.
// Chunked events (events/chunk.h) are joined: one KafkaMessage per event.
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/kafka/headers.h"
#include "events/chunk.h"

namespace sidetable::testing {

struct KafkaMessage {
  std::string key, value;
  int32_t partition = 0;
  int64_t offset = 0;  // of the event's first message
  uint32_t chunks = 1;  // messages it came in
};

class KafkaReader {
 public:
  KafkaReader(const std::string& bootstrap, const std::string& topic) : topic_(topic) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf, "group.id", "sidetable-test-reader", err, sizeof err);  // required, unused
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
    rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
    rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  }
  ~KafkaReader() {
    if (rk_) {
      rd_kafka_consumer_close(rk_);
      rd_kafka_destroy(rk_);
    }
  }

  // Assigns every partition of the topic at the beginning. False if the
  // topic's metadata cannot be had within `timeout`.
  bool AssignAll(std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      rd_kafka_topic_t* t = rd_kafka_topic_new(rk_, topic_.c_str(), nullptr);
      const rd_kafka_metadata_t* md = nullptr;
      rd_kafka_resp_err_t e = rd_kafka_metadata(rk_, 0, t, &md, 2000);
      rd_kafka_topic_destroy(t);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 && md->topics[0].err == 0 &&
          md->topics[0].partition_cnt > 0) {
        partitions_ = md->topics[0].partition_cnt;
        rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions_);
        for (int p = 0; p < partitions_; p++) {
          rd_kafka_topic_partition_list_add(list, topic_.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
        }
        rd_kafka_assign(rk_, list);
        rd_kafka_topic_partition_list_destroy(list);
        rd_kafka_metadata_destroy(md);
        return true;
      }
      if (md) rd_kafka_metadata_destroy(md);
    }
    return false;
  }

  // Polls until `done(all messages so far)` is true or `timeout` passes.
  std::vector<KafkaMessage> ReadUntil(const std::function<bool(const std::vector<KafkaMessage>&)>& done,
                                      std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!done(messages_) && std::chrono::steady_clock::now() < until) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 100);
      if (m == nullptr) continue;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) Add(m);
      rd_kafka_message_destroy(m);
    }
    return messages_;
  }

  int partitions() const { return partitions_; }

 private:
  void Add(const rd_kafka_message_t* m) {
    KafkaMessage km;
    if (m->key) km.key.assign(static_cast<const char*>(m->key), m->key_len);
    km.partition = m->partition;
    km.offset = m->offset;
    const std::string_view value(static_cast<const char*>(m->payload), m->payload ? m->len : 0);
    Run& run = runs_[m->partition];
    const auto chunk = kafka::HeaderValue(m, events::kChunkHeader);
    events::ChunkInfo info;
    if (!chunk || !events::ParseChunkHeaders(kafka::HeaderValue(m, events::kLsnHeader).value_or(""), *chunk,
                                             kafka::HeaderValue(m, events::kSizeHeader).value_or(""), &info)
                       .ok()) {
      run.joiner.Reset();
      km.value.assign(value);
      messages_.push_back(std::move(km));
      return;
    }
    if (info.index == 0) run.first_offset = m->offset;
    if (run.joiner.Add(info, value) != events::ChunkJoiner::Step::kComplete) return;
    km.value = run.joiner.TakeEvent();
    km.offset = run.first_offset;
    km.chunks = info.count;
    messages_.push_back(std::move(km));
  }

  struct Run {
    events::ChunkJoiner joiner;
    int64_t first_offset = 0;
  };
  std::map<int32_t, Run> runs_;
  std::string topic_;
  rd_kafka_t* rk_ = nullptr;
  int partitions_ = 0;
  std::vector<KafkaMessage> messages_;
};

}  // namespace sidetable::testing
