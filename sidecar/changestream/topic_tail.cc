#include "sidecar/changestream/topic_tail.h"
#include "common/kafka/log.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <set>

#include "events/chunk.h"

namespace sidetable::changestream {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kPollSliceMs = 250;

struct Consumer {
  rd_kafka_t* rk = nullptr;
  ~Consumer() {
    if (rk == nullptr) return;
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
  }
};

Result<rd_kafka_t*> NewReader(const std::string& bootstrap,
                              const std::map<std::string, std::string>& properties,
                              const std::string& group) {
  std::map<std::string, std::string> all = {
      {"bootstrap.servers", bootstrap},
      {"group.id", group},
      {"enable.auto.commit", "false"},
      {"enable.partition.eof", "true"},
      {"reconnect.backoff.max.ms", "1000"},
      // kafka.properties are the producer's: a consumer
      // warns about each producer-only one. Errors still show.
      {"log_level", "3"}};
  for (const auto& [k, v] : properties) all[k] = v;
  all["log_level"] = "3";
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  kafka::SendKafkaLogToOurs(conf);
  for (const auto& [k, v] : all) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Status(Code::kInvalidInput, "kafka." + k + ": " + err);
    }
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk == nullptr) return Status(Code::kInvalidInput, std::string("kafka reader: ") + err);
  rd_kafka_poll_set_consumer(rk);
  return rk;
}

// The LSN header of a message, 0 when it has none that reads.
uint64_t LsnOf(const rd_kafka_message_t* m) {
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(m, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return 0;
  const void* value = nullptr;
  size_t size = 0;
  if (rd_kafka_header_get_last(headers, events::kLsnHeader, &value, &size) !=
      RD_KAFKA_RESP_ERR_NO_ERROR)
    return 0;
  const char* text = static_cast<const char*>(value);
  uint64_t lsn = 0;
  auto [end, ec] = std::from_chars(text, text + size, lsn);
  return ec == std::errc() && end == text + size ? lsn : 0;
}

}  // namespace

Result<TopicTail> NewestLsnOnTopic(const std::string& bootstrap,
                                   const std::map<std::string, std::string>& properties,
                                   const std::string& group, const std::string& topic,
                                   int partitions, std::chrono::milliseconds timeout,
                                   const std::function<bool()>& stopping) {
  const auto deadline = Clock::now() + timeout;
  auto reader = NewReader(bootstrap, properties, group);
  if (!reader.ok()) return reader.status();
  Consumer c{*reader};

  // Each non-empty partition, at its last offset.
  std::unique_ptr<rd_kafka_topic_partition_list_t, decltype(&rd_kafka_topic_partition_list_destroy)>
      list(rd_kafka_topic_partition_list_new(partitions), &rd_kafka_topic_partition_list_destroy);
  std::set<int32_t> waiting;
  for (int32_t p = 0; p < partitions; p++) {
    int64_t low = 0, high = 0;
    const rd_kafka_resp_err_t e =
        rd_kafka_query_watermark_offsets(c.rk, topic.c_str(), p, &low, &high, 2000);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Status(Code::kUnavailable, "reading the end of topic " + topic + " partition " +
                                            std::to_string(p) + ": " + rd_kafka_err2str(e));
    }
    if (high <= low) continue;
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p)->offset = high - 1;
    waiting.insert(p);
  }
  TopicTail tail;
  if (waiting.empty()) return tail;
  if (rd_kafka_resp_err_t e = rd_kafka_assign(c.rk, list.get()); e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status(Code::kUnavailable, "reading topic " + topic + ": " + rd_kafka_err2str(e));
  }
  while (!waiting.empty()) {
    if (stopping()) return Status(Code::kUnavailable, "stopping");
    if (Clock::now() >= deadline) {
      return Status(Code::kUnavailable, "reading the newest message of topic " + topic + ": " +
                                            std::to_string(waiting.size()) +
                                            " partition(s) did not answer in time");
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(c.rk, kPollSliceMs);
    if (m == nullptr) continue;
    const int32_t p = m->partition;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      waiting.erase(p);
    } else if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      const std::string why = rd_kafka_message_errstr(m);
      rd_kafka_message_destroy(m);
      return Status(Code::kUnavailable, "reading topic " + topic + ": " + why);
    } else {
      // The first message read is the partition's last at the query.
      if (const uint64_t lsn = LsnOf(m); lsn > tail.newest_lsn) tail = {lsn, p, m->offset};
      waiting.erase(p);
    }
    rd_kafka_message_destroy(m);
  }
  return tail;
}

}  // namespace sidetable::changestream
