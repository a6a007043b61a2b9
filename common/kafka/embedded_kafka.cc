#include "common/kafka/embedded_kafka.h"
#include "common/kafka/log.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

namespace sidetable::kafka {

Result<std::unique_ptr<EmbeddedKafka>> EmbeddedKafka::Start(int brokers) {
  std::unique_ptr<EmbeddedKafka> k(new EmbeddedKafka());
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  kafka::SendKafkaLogToOurs(conf);
  // The mock needs a client instance to live in; this one never produces.
  rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
  k->handle_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (k->handle_ == nullptr) {
    return Status(Code::kUnavailable, std::string("embedded kafka: ") + err);
  }
  k->mock_ = rd_kafka_mock_cluster_new(k->handle_, brokers);
  if (k->mock_ == nullptr) return Status(Code::kUnavailable, "embedded kafka: cannot start the mock cluster");
  k->bootstraps_ = rd_kafka_mock_cluster_bootstraps(k->mock_);
  return k;
}

EmbeddedKafka::~EmbeddedKafka() {
  if (mock_) rd_kafka_mock_cluster_destroy(mock_);
  if (handle_) rd_kafka_destroy(handle_);
}

Status EmbeddedKafka::CreateTopic(const std::string& topic, int partitions) {
  rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mock_, topic.c_str(), partitions, 1);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
    return Status(Code::kUnavailable, std::string("creating topic ") + topic + ": " + rd_kafka_err2str(e));
  }
  return Status::OK();
}

Status EmbeddedKafka::SetBrokersDown(bool down) {
  rd_kafka_resp_err_t e =
      down ? rd_kafka_mock_broker_set_down(mock_, -1) : rd_kafka_mock_broker_set_up(mock_, -1);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) return Status(Code::kInternal, rd_kafka_err2str(e));
  return Status::OK();
}

}  // namespace sidetable::kafka
