#include "tools/replay/kafka_consumer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

namespace sidetable::replay::kafka {
namespace {

// A broker that answered without the topic is asked again for this long:
// a topic created a moment ago may not be in every broker's metadata yet.
constexpr auto kAbsentTopicGrace = std::chrono::milliseconds(2000);
// Bound of one request inside a retry loop, so that the loop gets to retry.
constexpr int kRequestSliceMs = 2000;
constexpr auto kRetryPause = std::chrono::milliseconds(100);

// Waits a little before a retry unless the deadline is nearer.
void PauseBeforeRetry(Clock::time_point deadline) {
  std::this_thread::sleep_until(std::min(deadline, Clock::now() + kRetryPause));
}

}  // namespace

int MsUntil(Clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT32_MAX));
}

Result<rd_kafka_t*> NewConsumer(const std::string& bootstrap,
                                const std::map<std::string, std::string>& properties) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const std::string& k, const std::string& v) -> Status {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      return Status(Code::kInvalidInput, "kafka property " + k + ": " + err);
    }
    return Status::OK();
  };
  // Ours first, so that the caller's properties may override them.
  const std::pair<const char*, std::string> defaults[] = {
      {"bootstrap.servers", bootstrap},
      {"group.id", "sidetable-replay"},  // required by librdkafka; never joined (assign only)
      {"enable.auto.commit", "false"},
      {"enable.auto.offset.store", "false"},
      // EOF events end a partition whose last offsets hold no message
      // (transaction markers, compaction) instead of waiting for them.
      {"enable.partition.eof", "true"},
      // History deleted under a running replay is an error, not a jump.
      {"auto.offset.reset", "error"},
      {"allow.auto.create.topics", "false"},
      // Prefetch per partition queue (we read each partition's own queue):
      // librdkafka's default is 64 MiB, times the partition count. Small, so
      // that the source decodes messages while the broker thread's copy of
      // them is still in the CPU's caches: the merge by LSN drains every
      // partition at once, and with 2 MiB each, 8 partitions held ~24 MiB of
      // message sets, first touched (6,000-9,000 page faults a replay of
      // 30,000 records) and read back from memory. 256 KiB made the source
      // ~1.4x faster (docs/performance.md, "Replay and the change log",
      // session 30). A fetch still brings up to max.partition.fetch.bytes
      // per partition; this bound only decides when the next one is asked.
      {"queued.max.messages.kbytes", "256"},
      // A replay reads history that is already in the topic. librdkafka
      // keeps one fetch in flight per broker, and a fetch whose partitions
      // have all been fetched up to the end is held by the broker for this
      // long, waiting for new messages (the default is 500 ms); a partition
      // whose queue the source has just drained waits behind it. With the
      // default, one replay in two of 30,000 records spent ~450 ms of its
      // ~300 ms of work so (docs/performance.md, "Replay and the change
      // log", session 29). The price: while a partition sits fetched to its
      // end, an empty fetch every 10 ms.
      {"fetch.wait.max.ms", "10"},
      {"client.id", "sidetable-replay"},
      {"log_level", "3"},
  };
  Status s;
  for (const auto& [k, v] : defaults) {
    if (!(s = set(k, v)).ok()) break;
  }
  for (auto it = properties.begin(); s.ok() && it != properties.end(); ++it) {
    s = set(it->first, it->second);
  }
  if (!s.ok()) {
    rd_kafka_conf_destroy(conf);
    return s;
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);  // not taken over on failure
    return Status(Code::kInvalidInput, std::string("kafka consumer: ") + err);
  }
  // Client-level errors (brokers down, authentication) become events on the
  // consumer queue, which the source polls for the message of a timeout.
  rd_kafka_poll_set_consumer(rk);
  return rk;
}

int64_t ConfigNumber(rd_kafka_t* rk, const char* name) {
  char value[64];
  size_t size = sizeof value;
  if (rd_kafka_conf_get(rd_kafka_conf(rk), name, value, &size) != RD_KAFKA_CONF_OK) return 0;
  return std::strtoll(value, nullptr, 10);
}

Result<int> PartitionCount(rd_kafka_t* rk, const std::string& topic, Clock::time_point deadline) {
  std::string last_error = "no answer from any broker";
  std::optional<Clock::time_point> absent_since;
  do {
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t e =
        rd_kafka_metadata(rk, /*all_topics=*/1, nullptr, &md,
                          std::max(1, std::min(MsUntil(deadline), kRequestSliceMs)));
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      last_error = rd_kafka_err2str(e);
      PauseBeforeRetry(deadline);
      continue;
    }
    const rd_kafka_metadata_topic_t* found = nullptr;
    for (int i = 0; i < md->topic_cnt; i++) {
      if (topic == md->topics[i].topic) found = &md->topics[i];
    }
    const int count = found && found->err == RD_KAFKA_RESP_ERR_NO_ERROR ? found->partition_cnt : 0;
    const rd_kafka_resp_err_t topic_err = found ? found->err : RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_metadata_destroy(md);
    if (count > 0) return count;
    if (topic_err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
      return Status(Code::kAuthorizationFailure, "not authorized to read topic " + topic);
    }
    if (found == nullptr) {
      if (!absent_since) absent_since = Clock::now();
      if (Clock::now() - *absent_since >= kAbsentTopicGrace) {
        return Status(Code::kResourceNotFound, "topic " + topic + " does not exist");
      }
      last_error = "topic " + topic + " does not exist";
    } else {
      last_error = std::string("topic metadata: ") + rd_kafka_err2str(topic_err);
    }
    PauseBeforeRetry(deadline);
  } while (Clock::now() < deadline);
  return Status(Code::kUnavailable, "no metadata for topic " + topic + " in time: " + last_error);
}

Result<Watermarks> QueryWatermarks(rd_kafka_t* rk, const std::string& topic, int32_t partition,
                                   Clock::time_point deadline) {
  rd_kafka_resp_err_t e;
  do {
    Watermarks w;
    e = rd_kafka_query_watermark_offsets(rk, topic.c_str(), partition, &w.low, &w.high,
                                         std::max(1, std::min(MsUntil(deadline), kRequestSliceMs)));
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return w;
    PauseBeforeRetry(deadline);
  } while (Clock::now() < deadline);
  return Status(Code::kUnavailable, "no watermarks for partition " + std::to_string(partition) +
                                        " in time: " + rd_kafka_err2str(e));
}

Result<std::vector<Watermarks>> QueryAllWatermarks(rd_kafka_t* rk, const std::string& topic,
                                                   int partitions, Clock::time_point deadline) {
  // Two ListOffsets requests for the whole topic (earliest, then latest: the
  // protocol's timestamps -2 and -1) instead of two per partition: each
  // request is a round trip to the leaders, and against librdkafka's mock an
  // occasional one took ~40 ms, which a replay of a small range paid per
  // partition. A broker that will not answer the batch gets the question
  // partition by partition, as before.
  std::vector<Watermarks> out(static_cast<size_t>(partitions));
  bool ok = true;
  for (int64_t which : {int64_t{RD_KAFKA_OFFSET_BEGINNING}, int64_t{RD_KAFKA_OFFSET_END}}) {
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; p++)
      rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = which;
    const rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(
        rk, list, std::max(1, std::min(MsUntil(deadline), kRequestSliceMs)));
    int answered = 0;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
      for (int i = 0; i < list->cnt; i++) {
        const rd_kafka_topic_partition_t& tp = list->elems[i];
        if (tp.err != RD_KAFKA_RESP_ERR_NO_ERROR || tp.offset < 0 || tp.partition < 0 ||
            tp.partition >= partitions)
          continue;
        (which == RD_KAFKA_OFFSET_BEGINNING ? out[tp.partition].low : out[tp.partition].high) =
            tp.offset;
        answered++;
      }
    }
    rd_kafka_topic_partition_list_destroy(list);
    if (answered != partitions) {
      ok = false;
      break;
    }
  }
  for (int p = 0; ok && p < partitions; p++) ok = out[p].low <= out[p].high;
  if (ok) return out;
  for (int p = 0; p < partitions; p++) {
    auto w = QueryWatermarks(rk, topic, p, deadline);
    if (!w.ok()) return w.status();
    out[p] = *w;
  }
  return out;
}

std::vector<int64_t> OffsetsForTime(rd_kafka_t* rk, const std::string& topic, int partitions,
                                    int64_t time_ms, Clock::time_point deadline) {
  std::vector<int64_t> offsets(partitions, -1);
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; p++) {
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = time_ms;
  }
  if (rd_kafka_offsets_for_times(rk, list, std::max(1, MsUntil(deadline))) ==
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    for (int i = 0; i < list->cnt; i++) {
      const rd_kafka_topic_partition_t& tp = list->elems[i];
      if (tp.err == RD_KAFKA_RESP_ERR_NO_ERROR && tp.partition >= 0 && tp.partition < partitions) {
        offsets[tp.partition] = tp.offset;
      }
    }
  }
  rd_kafka_topic_partition_list_destroy(list);
  return offsets;
}

}  // namespace sidetable::replay::kafka
