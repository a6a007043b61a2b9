#include "workers/dead_letter.h"

#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

namespace sidetable::workers {
namespace {

// The delivery report lands here (msg_opaque points at the sender's slot).
void OnLog(const rd_kafka_t*, int level, const char* fac, const char* buf) {
  if (level <= 3) spdlog::error("kafka dead-letter producer {}: {}", fac, buf);
  else if (level <= 4) spdlog::warn("kafka dead-letter producer {}: {}", fac, buf);
  else spdlog::debug("kafka dead-letter producer {}: {}", fac, buf);
}

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
  auto* slot = static_cast<rd_kafka_resp_err_t*>(m->_private);
  if (slot) *slot = m->err;
}

}  // namespace

Result<std::unique_ptr<DeadLetterProducer>> DeadLetterProducer::Create(
    const std::string& bootstrap, const std::string& topic, const std::string& group,
    const std::map<std::string, std::string>& properties, std::chrono::milliseconds timeout) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const std::string& k, const std::string& v) -> Status {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      return Status(Code::kInvalidInput, "kafka.properties." + k + ": " + err);
    }
    return Status::OK();
  };
  Status s = set("bootstrap.servers", bootstrap);
  if (s.ok()) s = set("enable.idempotence", "true");
  if (s.ok()) s = set("acks", "all");
  if (s.ok()) s = set("log_level", "4");
  if (s.ok()) s = set("message.timeout.ms", std::to_string(timeout.count()));
  // Consumer-only settings are skipped here; others (security, ...) apply.
  for (const auto& [k, v] : properties) {
    if (!s.ok()) break;
    if (k.rfind("group.", 0) == 0 || k.rfind("session.", 0) == 0 || k.rfind("heartbeat.", 0) == 0 ||
        k.rfind("partition.assignment", 0) == 0 || k.rfind("auto.", 0) == 0 ||
        k.rfind("enable.auto", 0) == 0 || k.rfind("max.poll", 0) == 0 || k.rfind("fetch.", 0) == 0 ||
        k.rfind("statistics.", 0) == 0) {
      continue;
    }
    s = set(k, v);
  }
  if (!s.ok()) {
    rd_kafka_conf_destroy(conf);
    return s;
  }
  rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
  rd_kafka_conf_set_log_cb(conf, OnLog);
  std::unique_ptr<DeadLetterProducer> p(new DeadLetterProducer());
  p->rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (p->rk_ == nullptr) return Status(Code::kInvalidInput, std::string("dead-letter producer: ") + err);
  p->topic_ = topic;
  p->group_ = group;
  return p;
}

DeadLetterProducer::~DeadLetterProducer() {
  if (rk_) {
    rd_kafka_flush(rk_, 5000);
    rd_kafka_destroy(rk_);
  }
}

Status DeadLetterProducer::Send(const DeadLetter& d) {
  rd_kafka_headers_t* h = rd_kafka_headers_new(6);
  auto add = [h](const char* name, const std::string& v) {
    rd_kafka_header_add(h, name, -1, v.data(), static_cast<ssize_t>(v.size()));
  };
  add(kHeaderReason, d.reason);
  add(kHeaderSourceTopic, d.source_topic);
  add(kHeaderSourcePartition, std::to_string(d.source_partition));
  add(kHeaderSourceOffset, std::to_string(d.source_offset));
  add(kHeaderGroup, group_);
  if (d.lsn) add(kHeaderLsn, std::to_string(d.lsn));
  // Sentinel: no report yet.
  rd_kafka_resp_err_t result = RD_KAFKA_RESP_ERR__IN_PROGRESS;
  rd_kafka_resp_err_t e = rd_kafka_producev(
      rk_, RD_KAFKA_V_TOPIC(topic_.c_str()),
      RD_KAFKA_V_KEY(const_cast<char*>(d.key.data()), d.key.size()),
      RD_KAFKA_V_VALUE(const_cast<char*>(d.value.data()), d.value.size()),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_OPAQUE(&result),
      RD_KAFKA_V_END);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_headers_destroy(h);  // not taken over on failure
    return Status(Code::kUnavailable, std::string("dead-letter produce: ") + rd_kafka_err2str(e));
  }
  // message.timeout.ms bounds this wait: every message gets its report.
  while (result == RD_KAFKA_RESP_ERR__IN_PROGRESS) rd_kafka_poll(rk_, 50);
  if (result != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status(Code::kUnavailable, std::string("dead-letter produce: ") + rd_kafka_err2str(result));
  }
  return Status::OK();
}

}  // namespace sidetable::workers
