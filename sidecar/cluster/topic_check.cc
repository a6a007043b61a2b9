#include "sidecar/cluster/topic_check.h"

namespace sidetable::cluster {

Status CheckChangeTopicConfigs(const std::string& topic, const std::map<std::string, std::string>& configs,
                               std::vector<std::string>* warnings) {
  if (auto it = configs.find("cleanup.policy"); it != configs.end() && it->second.find("compact") != std::string::npos) {
    return Status(Code::kInvalidInput, "cluster: the change topic " + topic + " is compacted (cleanup.policy=" +
                                           it->second +
                                           "): a restore needs every record; set cleanup.policy=delete "
                                           "(docs/scale-out.md, \"What Kafka must keep\")");
  }
  for (const char* key : {"retention.ms", "retention.bytes"}) {
    auto it = configs.find(key);
    if (it != configs.end() && it->second != "-1") {
      warnings->push_back("the change topic " + topic + " has " + key + "=" + it->second +
                          ": records it deletes are lost to a later restore of their shard; set -1 "
                          "(docs/scale-out.md, \"What Kafka must keep\")");
    }
  }
  return Status::OK();
}

Status PartitionCountMismatch(TopicRole role, const std::string& topic, int have, int want) {
  const std::string has = topic + " has " + std::to_string(have) + " partitions";
  switch (role) {
    case TopicRole::kChange:
      return Status(Code::kInvalidInput,
                    "cluster: the change topic " + has + ", but kafka.partitions is " +
                        std::to_string(want) +
                        ": its partitions are the service's shards, and the count is fixed for "
                        "the service's life (set kafka.partitions: " +
                        std::to_string(have) + ", or give the service a new topic)");
    case TopicRole::kCluster:
      return Status(Code::kInvalidInput,
                    "cluster: the cluster topic " + has +
                        ", but it must have exactly 1 (members, owners and tables are read in one "
                        "order); it was probably created by a broker's auto.create.topics.enable: "
                        "create it with 1 partition and cleanup.policy=compact before the "
                        "sidecars start, or name another one in cluster.topic");
    case TopicRole::kState:
      return Status(Code::kInvalidInput,
                    "cluster: the state topic " + has +
                        ", but it needs one per shard: kafka.partitions is " +
                        std::to_string(want) +
                        " (name another one in cluster.state_topic, or \"\" for none)");
  }
  return Status(Code::kInvalidInput,
                "cluster: topic " + has + ", " + std::to_string(want) + " needed");
}

Result<std::map<std::string, std::string>> DescribeTopicConfigs(rd_kafka_t* rk, const std::string& topic,
                                                                int timeout_ms) {
  rd_kafka_ConfigResource_t* resource = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  rd_kafka_AdminOptions_t* options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  char err[256];
  rd_kafka_AdminOptions_set_request_timeout(options, timeout_ms, err, sizeof err);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_DescribeConfigs(rk, &resource, 1, options, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, timeout_ms + 500);
  Result<std::map<std::string, std::string>> out =
      Status(Code::kUnavailable, "describing topic " + topic + ": no answer from Kafka");
  if (ev != nullptr) {
    if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      out = Status(Code::kUnavailable, "describing topic " + topic + ": " + rd_kafka_event_error_string(ev));
    } else {
      size_t n = 0;
      const rd_kafka_ConfigResource_t** res =
          rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
      if (n != 1 || rd_kafka_ConfigResource_error(res[0]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        out = Status(Code::kUnavailable, "describing topic " + topic + ": " +
                                             (n == 1 ? rd_kafka_err2str(rd_kafka_ConfigResource_error(res[0]))
                                                     : "no result"));
      } else {
        std::map<std::string, std::string> configs;
        size_t count = 0;
        const rd_kafka_ConfigEntry_t** entries = rd_kafka_ConfigResource_configs(res[0], &count);
        for (size_t i = 0; i < count; i++) {
          const char* value = rd_kafka_ConfigEntry_value(entries[i]);
          configs[rd_kafka_ConfigEntry_name(entries[i])] = value ? value : "";
        }
        out = std::move(configs);
      }
    }
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_queue_destroy(q);
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_ConfigResource_destroy(resource);
  return out;
}

}  // namespace sidetable::cluster
