// sidetable-worker: runs pattern workers over the change stream.
//
//   sidetable-worker --config configs/worker.dev.yaml [--group g] [--sidecar tcp://...] ...
//
// Flags override the config file; `sidetable-worker --help` lists them.
// Exit codes: 0 clean stop (SIGTERM/SIGINT), 1 start-up failure, 2 bad configuration,
// 3 a stop that overran kStopDeadline (offsets of the work in hand not committed).
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>

#include "apply/worker_config.h"
#include "common/flags.h"
#include "common/http_endpoint.h"
#include "common/logging.h"
#include "common/process.h"
#include "workers/bootstrap_watch.h"
#include "workers/worker.h"

using namespace sidetable;
using namespace sidetable::workers;

#ifndef SIDETABLE_VERSION
#define SIDETABLE_VERSION "unknown"
#endif

namespace {

std::atomic<Worker*> g_worker{nullptr};
// A stop asked for while the worker was still starting (see sidecar/main.cc).
std::atomic<bool> g_stop_requested{false};

// A stop's upper bound, from the first stop signal to the exit. The clean
// path takes well under it even with a frozen sidecar (requests in flight are
// abandoned, the last watermark report waits 1 s at most); this is for what
// nothing else bounds, e.g. a frozen embedded Kafka holding the final commit
// or the group leave. Exiting then loses nothing: offsets not committed are
// replayed by the next owner, and fencing makes the replay harmless.
constexpr std::chrono::seconds kStopDeadline{5};
constexpr int kExitStopDeadline = 3;
std::atomic<bool> g_exiting{false};

// Polls rather than waits on a condition variable: OnSignal only sets flags.
void EnforceStopDeadline() {
  while (!g_exiting.load()) {
    if (g_stop_requested.load()) {
      const auto until = std::chrono::steady_clock::now() + kStopDeadline;
      while (!g_exiting.load() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (g_exiting.load()) return;
      spdlog::error(
          "stop took longer than {} s: exiting without finishing it (offsets not committed are "
          "replayed by the next owner)",
          kStopDeadline.count());
      spdlog::default_logger()->flush();
      std::_Exit(kExitStopDeadline);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void OnSignal(int) {
  g_stop_requested = true;
  if (Worker* w = g_worker.load()) w->RequestStop();
}

constexpr int kNotGiven = std::numeric_limits<int>::min();

struct Flags {
  std::string bootstrap, bootstrap_file, group, endpoint, http, ready_file, log_level, log_format, dlq;
  std::vector<std::string> topics;
  int max_attempts = -1, backoff_ms = -1;  // -1 = not given
  // 0 is meaningful and -1 is refused by the validation, not taken as "not given".
  int max_wait_seconds = kNotGiven;
  bool http_set = false;
};

void Apply(const Flags& f, apply::WorkerConfig* c) {
  if (!f.bootstrap.empty()) c->bootstrap = f.bootstrap;
  if (!f.bootstrap_file.empty()) c->bootstrap_file = f.bootstrap_file;
  if (!f.topics.empty()) c->topics = f.topics;
  if (!f.group.empty()) c->group = f.group;
  if (!f.endpoint.empty()) c->endpoint = f.endpoint;
  if (f.http_set) c->http = f.http;
  if (!f.ready_file.empty()) c->ready_file = f.ready_file;
  if (!f.log_level.empty()) c->log_level = f.log_level;
  if (!f.log_format.empty()) c->log_format = f.log_format;
  if (!f.dlq.empty()) c->dead_letter_topic = f.dlq;
  if (f.max_attempts != -1) c->max_attempts = f.max_attempts;
  if (f.max_wait_seconds != kNotGiven) c->max_wait_seconds = f.max_wait_seconds;
  if (f.backoff_ms != -1) c->backoff_ms = f.backoff_ms;
}

// The embedded Kafka of a development sidecar came back on another address.
// Start over as a new process on it: the old cluster and its group are gone
// with the sidecar, so there is nothing to commit or leave, and a clean
// in-process close would wait on a broker that no longer answers. Offsets
// not committed are replayed, which fencing makes harmless.
[[noreturn]] void RestartOn(const std::string& address, char** argv) {
  spdlog::warn("kafka.bootstrap_file now names {}: the sidecar's embedded Kafka restarted; restarting onto it",
               address);
  spdlog::default_logger()->flush();
  // The HTTP port and the Kafka and ZeroMQ sockets must not leak into the
  // new image, but the worker's other threads still run until execv(): the
  // descriptors are marked close-on-exec, not closed, so none of them
  // disappears under a thread that polls it (common/process.h).
  if (Status s = common::CloseOnExecFrom(3); !s.ok()) spdlog::warn("restart: {}", s.message());
  ::execv("/proc/self/exe", argv);
  std::fprintf(stderr, "sidetable-worker: cannot restart (%s); exiting\n", std::strerror(errno));
  std::_Exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  common::LogUnhandledErrorsOnTerminate();
  common::NameAfterExecutable();  // not "exe" after RestartOn's exec
  CLI::App app{"sidetable-worker: pattern workers over the sidetable change stream"};
  std::string config_file;
  Flags f;
  app.add_option("-c,--config", config_file, "YAML configuration file (see configs/worker.*.yaml)");
  app.add_option("--bootstrap", f.bootstrap, "Kafka bootstrap servers (kafka.bootstrap)");
  app.add_option("--bootstrap-file", f.bootstrap_file, "file holding the bootstrap address (kafka.bootstrap_file)");
  app.add_option("--topic", f.topics, "topic(s) to consume (kafka.topic, repeatable)");
  app.add_option("--group", f.group, "consumer group id (kafka.group)");
  app.add_option("--sidecar", f.endpoint, "sidecar endpoint for table writes (sidecar.endpoint)");
  app.add_option("--http", f.http, "health and metrics host:port, '' = off (http)")->each([&](const std::string&) {
    f.http_set = true;
  });
  app.add_option(
      "--ready-file", f.ready_file,
      "file written once started and subscribed; GET /ready says when it consumes (ready_file)");
  app.add_option("--dead-letter-topic", f.dlq, "dead-letter topic (dead_letter.topic)");
  app.add_option("--max-attempts", f.max_attempts, "attempts per event (retry.max_attempts)");
  app.add_option(
      "--max-wait-seconds", f.max_wait_seconds,
      "how long an event waits out a busy or unreachable sidecar (retry.max_wait_seconds)");
  app.add_option("--backoff-ms", f.backoff_ms, "first back-off (retry.backoff_ms)");
  app.add_option("--log-level", f.log_level, "trace, debug, info, warn, error, off (log.level)");
  app.add_option("--log-format", f.log_format, "text or json (log.format)");
  app.set_version_flag("--version", std::string("sidetable-worker ") + SIDETABLE_VERSION);
  if (int code = common::ParseFlags(app, argc, argv); code >= 0) return code;

  apply::WorkerConfig config;
  if (!config_file.empty()) {
    if (Status s = apply::LoadWorkerConfigFile(config_file, &config); !s.ok()) {
      std::fprintf(stderr, "sidetable-worker: %s\n", s.message().c_str());
      return 2;
    }
  }
  Apply(f, &config);
  Status valid = apply::ValidateWorkerConfig(config);
  if (valid.ok() && !config.http.empty()) valid = common::CheckHostPort(config.http, "http");
  if (Status s = valid; !s.ok()) {
    std::fprintf(stderr, "sidetable-worker: configuration: %s\n", s.message().c_str());
    return 2;
  }
  if (Status s = common::SetupLogging(config.log_level, config.log_format, "worker"); !s.ok()) {
    std::fprintf(stderr, "sidetable-worker: %s\n", s.message().c_str());
    return 2;
  }
  const bool from_file = config.bootstrap.empty();
  // Before the wait for the bootstrap file and before any thread starts, so
  // that every thread inherits the blocked stop signals (common/process.h):
  // a SIGTERM while the sidecar is not up yet used to end the worker at once
  // (exit 143, nothing logged).
  common::InstallStopSignals(OnSignal);
  if (Status s = apply::ResolveBootstrap(&config, &g_stop_requested); !s.ok()) {
    if (g_stop_requested.load()) {
      spdlog::info("stopped before start-up finished ({})", s.message());
      return 0;
    }
    // Bad configuration exits 2; a sidecar that never wrote its address, 1.
    spdlog::error("{}{}", s.code() == Code::kInvalidInput ? "configuration: " : "start-up failed: ",
                  s.message());
    return s.code() == Code::kInvalidInput ? 2 : 1;
  }
  // Connections and RocksDB's files share the descriptor limit (common/process.h).
  common::RaiseOpenFileLimitLogged();
  std::thread deadline(EnforceStopDeadline);
  struct JoinOnExit {
    std::thread* t;
    ~JoinOnExit() {
      g_exiting = true;
      t->join();
    }
  } join_deadline{&deadline};
  common::RemoveReadyFile(config.ready_file);
  auto worker = Worker::Start(config);
  if (!worker.ok()) {
    spdlog::error("start-up failed: {}", worker.status().ToString());
    // A pattern or Kafka setting the factory rejected is a configuration error.
    return worker.status().code() == Code::kInvalidInput ? 2 : 1;
  }
  g_worker = worker->get();
  if (g_stop_requested) (*worker)->RequestStop();
  std::unique_ptr<BootstrapWatch> watch;
  if (from_file) {
    watch = std::make_unique<BootstrapWatch>(config.bootstrap_file, config.bootstrap,
                                             std::chrono::milliseconds(500),
                                             [argv](const std::string& address) { RestartOn(address, argv); });
  }
  Status s = (*worker)->Run();
  common::RemoveReadyFile(config.ready_file);
  watch.reset();
  g_worker = nullptr;
  worker->reset();
  if (!s.ok()) {
    spdlog::error("stopped with an error: {}", s.ToString());
    return 1;
  }
  spdlog::info("stopped");
  return 0;
}
