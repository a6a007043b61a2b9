// sidetable-kafka-mock: librdkafka's mock Kafka cluster in a process of its
// own, for trying sidetable (a scale-out cluster of sidecars, workers) on one
// machine without a Kafka installation. For trying things, never for
// production: what it does and does not do is in README.md beside this file.
//
//   sidetable-kafka-mock --port 9500 --topic sidetable.orders.changes=6
//       --topic sidetable.orders.cluster=1 --topic sidetable.orders.state=6 --ready-file
//       kafka.ready
//
// Prints the bootstrap address on stdout once it serves (and writes it to
// --ready-file), then runs until SIGTERM, SIGINT or SIGHUP (or, with
// --stop-on-stdin-eof, until its standard input closes).
// Exit codes: 0 clean stop, 1 start-up failure (a port in use), 2 bad flags.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/flags.h"
#include "common/kafka/embedded_kafka.h"
#include "common/logging.h"
#include "common/process.h"
#include "tools/kafka-mock/broker_ports.h"
#include "tools/kafka-mock/topic_spec.h"

using namespace sidetable;

#ifndef SIDETABLE_VERSION
#define SIDETABLE_VERSION "unknown"
#endif

namespace {

constexpr int kMaxBrokers = 64;

std::mutex g_mu;
std::condition_variable g_cv;
bool g_stop = false;

// Called on the signal thread (common::InstallStopSignals), not in a signal
// handler: a lock and a notify are fine here.
void OnSignal(int) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_stop = true;
  g_cv.notify_all();
}

int Refuse(const std::string& why) {
  std::fprintf(stderr, "sidetable-kafka-mock: %s\n", why.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  common::LogUnhandledErrorsOnTerminate();
  common::NameAfterExecutable();
  CLI::App app{
      "sidetable-kafka-mock: librdkafka's mock Kafka cluster on 127.0.0.1, for trying sidetable on "
      "one machine "
      "(never for production: it keeps about 5 MiB per partition, in memory, and forgets "
      "everything when it stops)"};
  int port = 0;
  int brokers = 3;
  std::vector<std::string> topic_specs;
  std::string ready_file;
  std::string log_level = "info";
  std::string log_format = "text";
  bool stop_on_stdin_eof = false;
  app.add_option(
      "--port", port,
      "the first broker's port on 127.0.0.1; the others take the next ones (0 = the system picks "
      "each)");
  app.add_option("--brokers", brokers, "how many brokers (1 to 64)");
  app.add_option(
      "--topic", topic_specs,
      "a topic to create before serving, NAME=PARTITIONS (repeatable); a topic not named is "
      "created with 4 partitions when a client first asks for it");
  app.add_option("--ready-file", ready_file,
                 "file written with the bootstrap address ('kafka HOST:PORT,...') once it serves");
  app.add_flag(
      "--stop-on-stdin-eof", stop_on_stdin_eof,
      "also stop when standard input closes: for a script or test that starts it as a child "
      "(it then stops with its parent even when the parent is killed)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off");
  app.add_option("--log-format", log_format, "text or json");
  app.set_version_flag("--version", std::string("sidetable-kafka-mock ") + SIDETABLE_VERSION);
  if (int code = common::ParseFlags(app, argc, argv); code >= 0) return code;

  if (brokers < 1 || brokers > kMaxBrokers) {
    return Refuse("--brokers " + std::to_string(brokers) + ": from 1 to " +
                  std::to_string(kMaxBrokers));
  }
  if (port < 0 || port > 65535)
    return Refuse("--port " + std::to_string(port) + ": from 0 to 65535");
  if (port > 0 && port + brokers - 1 > 65535) {
    return Refuse("--port " + std::to_string(port) + " with " + std::to_string(brokers) +
                  " brokers goes past port 65535");
  }
  auto topics = kafka_mock::ParseTopicSpecs(topic_specs);
  if (!topics.ok()) return Refuse(topics.status().message());
  if (Status s = common::SetupLogging(log_level, log_format, "kafka-mock"); !s.ok()) {
    return Refuse(s.message());
  }

  common::InstallStopSignals(OnSignal);
  common::RemoveReadyFile(ready_file);
  if (port > 0) {
    if (Status s = kafka_mock::ArmBrokerPorts(port, brokers); !s.ok()) {
      spdlog::error("start-up failed: {}", s.message());
      return 1;
    }
  }
  auto kafka = kafka::EmbeddedKafka::Start(brokers);
  const int handed_out = kafka_mock::DisarmBrokerPorts();
  if (!kafka.ok()) {
    spdlog::error("start-up failed: {}", kafka.status().message());
    return 1;
  }
  if (port > 0 && handed_out != brokers) {
    // The mock bound its listeners some other way than this program expects
    // (another librdkafka): the ports are not the ones asked for.
    spdlog::error("start-up failed: {} of {} brokers took the ports asked for (the mock is at {})",
                  handed_out, brokers, (*kafka)->bootstraps());
    return 1;
  }
  std::vector<std::pair<std::string, std::string>> ready{{"kafka", (*kafka)->bootstraps()}};
  for (const auto& t : *topics) {
    if (Status s = (*kafka)->CreateTopic(t.name, t.partitions); !s.ok()) {
      spdlog::error("start-up failed: {}", s.message());
      return 1;
    }
    spdlog::info("topic {}: {} partitions", t.name, t.partitions);
    ready.emplace_back("topic", t.name + "=" + std::to_string(t.partitions));
  }
  if (!ready_file.empty()) {
    if (Status s = common::WriteReadyFile(ready_file, ready); !s.ok()) {
      spdlog::error("start-up failed: {}", s.message());
      return 1;
    }
  }
  spdlog::info(
      "mock Kafka with {} brokers at {} (for trying things, never for production); stop with "
      "SIGTERM or "
      "Ctrl-C",
      brokers, (*kafka)->bootstraps());
  std::cout << (*kafka)->bootstraps() << std::endl;
  if (stop_on_stdin_eof) {
    // Started after InstallStopSignals: the stop signals stay blocked here.
    common::NamedThread("st-stdin", [] {
      char buf[256];
      while (::read(STDIN_FILENO, buf, sizeof buf) > 0) {
      }
      spdlog::info("standard input closed: stopping");
      OnSignal(0);
    }).detach();
  }
  {
    std::unique_lock<std::mutex> lock(g_mu);
    g_cv.wait(lock, [] { return g_stop; });
  }
  common::RemoveReadyFile(ready_file);
  kafka->reset();
  spdlog::info("stopped");
  return 0;
}
