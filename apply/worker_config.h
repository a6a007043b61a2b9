// WorkerConfig: every setting of `sidetable-worker`, with its default.
//
// Loaded from YAML (configs/worker.*.yaml document every key), then
// overridden by command-line flags. Unknown sections or keys and values out
// of range fail fast with a message naming the key; the YAML boundary is the
// one place where exceptions are caught and turned into a Status.
//
// Thread safety: a value type.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "engine/status.h"
#include "patterns/registry.h"

namespace sidetable::apply {

struct WorkerConfig {
  // kafka.*
  std::string bootstrap;                    // kafka.bootstrap: "host:port,..."
  std::string bootstrap_file;               // kafka.bootstrap_file: read when bootstrap is ""
  int bootstrap_wait_ms = 10000;            // kafka.bootstrap_wait_ms: wait for that file
  std::vector<std::string> topics = {"sidetable.sidetable-dev.changes"};  // kafka.topic
  std::string group = "sidetable-workers";  // kafka.group
  int session_timeout_ms = 10000;           // kafka.session_timeout_ms
  int commit_batch = 1000;                  // kafka.commit_batch: messages per asynchronous commit
  int commit_interval_ms = 200;             // kafka.commit_interval_ms: commit at least this often
  int poll_batch = 2000;                    // kafka.poll_batch: messages applied together at most
  std::map<std::string, std::string> properties;  // kafka.properties: any librdkafka setting

  // sidecar.*
  std::string endpoint = "tcp://127.0.0.1:5555";  // sidecar.endpoint
  int timeout_ms = 5000;                          // sidecar.timeout_ms: per request
  std::string caller = "sidetable-worker";        // sidecar.caller: writer id in the change log
  int inflight = 16;                              // sidecar.inflight: WriteMany requests in flight
  // sidecar.token_file: a signed access token for a sidecar with
  // auth.mode: tokens (docs/security.md; a worker needs r, a, u, d on its
  // derived tables and c for its watermarks). Read once, at start-up.
  std::string token_file;
  std::string token;  // its text, loaded with the file
  // CURVE to the sidecar (docs/security.md, "Transport"): both or neither.
  std::string curve_server_key_file;              // sidecar.curve_server_key_file: the sidecar's public key
  std::string curve_key_file;                     // sidecar.curve_key_file: this worker's secret key (0600)

  // retry.* (apply/retry.h)
  int max_attempts = 8;      // retry.max_attempts: per event, first try included
  // retry.max_wait_seconds: how long an event waits out a busy or
  // unreachable sidecar (ServerBusy, Unavailable, NoReply) before it is
  // dead-lettered, from the first such failure; 0 = those count against
  // max_attempts too. Long enough for a scale-out hand-over (19-30 s).
  int max_wait_seconds = 120;
  int backoff_ms = 100;      // retry.backoff_ms: first back-off, doubled per attempt
  int backoff_max_ms = 5000; // retry.backoff_max_ms
  int fence_attempts = 16;   // retry.fence_attempts: read-check-write rounds per operation

  int lag_max_seconds = 30;  // lag.max_seconds: /health says degraded beyond this lag

  std::string dead_letter_topic = "sidetable.dead-letter";  // dead_letter.topic

  std::string http = "127.0.0.1:9465";  // http ("" = off; port 0 = any)
  std::string ready_file;               // ready_file
  std::string log_level = "info";       // log.level
  std::string log_format = "text";      // log.format: text | json

  std::vector<patterns::PatternConfig> patterns;  // patterns: [{name: ..., key: value|[values]}]
};

// Reads a YAML file over the defaults in *config.
Status LoadWorkerConfigFile(const std::string& path, WorkerConfig* config);
// Same, from YAML text (`origin` names it in messages); for tests.
Status LoadWorkerConfigText(const std::string& yaml, const std::string& origin, WorkerConfig* config);
// Ranges and combinations; names the offending key.
Status ValidateWorkerConfig(const WorkerConfig& config);
// Fills config->bootstrap from kafka.bootstrap_file when it is empty, waiting
// up to bootstrap_wait_ms for the file (a sidecar with embedded Kafka writes
// it once started). With `stop` given, the wait ends (kUnavailable, "stopped") within about 50 ms
// of *stop turning true: a worker stopped before its sidecar is up exits cleanly.
Status ResolveBootstrap(WorkerConfig* config, const std::atomic<bool>* stop = nullptr);

}  // namespace sidetable::apply
