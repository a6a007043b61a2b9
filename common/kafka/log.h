// SendKafkaLogToOurs: librdkafka's log lines through the process's own log
// (spdlog: --log-format, --log-level), instead of librdkafka's default,
// which prints "%3|<time>|FAIL|..." straight to stderr.
//
// Before session 41 the sidecar's handles (the publisher, the topic checks,
// the cluster's clients, the embedded mock) kept the default: with
// `--log-format json` every broker error was a line no JSON reader takes,
// and `--log-level off` did not silence them. The worker already routed its
// own (workers/worker.cc). Levels as there: 0-3 error, 4 warning, the rest
// debug (librdkafka's notices are routine).
//
// Header-only, like headers.h: every user links librdkafka and spdlog.
// Thread safety: the callback runs on librdkafka's threads; spdlog's default
// logger is thread-safe.
#pragma once

#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

namespace sidetable::kafka {

inline void LogKafkaLine(const rd_kafka_t* rk, int level, const char* facility, const char* line) {
  const char* name = rk != nullptr ? rd_kafka_name(rk) : "kafka";
  if (level <= 3) {
    spdlog::error("kafka {} {}: {}", name, facility, line);
  } else if (level == 4) {
    spdlog::warn("kafka {} {}: {}", name, facility, line);
  } else {
    spdlog::debug("kafka {} {}: {}", name, facility, line);
  }
}

inline void SendKafkaLogToOurs(rd_kafka_conf_t* conf) {
  rd_kafka_conf_set_log_cb(conf, LogKafkaLine);
}

}  // namespace sidetable::kafka
