// ServerConfig: every setting of the sidetable server, with its default.
//
// Loaded from a YAML file (configs/*.yaml document every key) and then
// overridden by command-line flags. Bad configuration fails fast at start-up
// with a message naming the key (this is a boundary where exceptions are
// caught and turned into a Status).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/status.h"
#include "sidecar/auth/auth_config.h"
#include "sidecar/changestream/kafka_options.h"
#include "sidecar/cluster/cluster_options.h"
#include "sidecar/rest/rest_config.h"
#include "sidecar/security_config.h"

namespace sidetable::sidecar {

struct ServerConfig {
  std::string id = "sidetable";                      // sidecar.id
  std::vector<std::string> listen = {"tcp://127.0.0.1:5555"};  // sidecar.listen
  int workers = 4;                                    // sidecar.workers
  size_t queue_depth = 1024;                          // sidecar.queue_depth (per worker)
  // Point reads and writes up to this many wire bytes run on the frontend
  // thread when their partition's worker has nothing queued or executing:
  // two thread hand-offs fewer (docs/performance.md, issue 17). Writes do not
  // run there during a RocksDB write stall; in fsync durability they do, and
  // their replies wait for the fsync on the acknowledger (durable_acks.cc),
  // not on the frontend. 0 = off.
  size_t inline_max_bytes = 16 << 10;                 // sidecar.inline_max_bytes
  // A larger write (an EGT) up to this size runs on the frontend too when it
  // is the only request in flight in the whole server: nothing waits behind
  // it, and the hand-offs it saves were a third of an EGT of 100 x 1 KiB at
  // depth 1 (1.3x EGTs/s in paired runs; docs/performance.md, session 20). Under concurrent
  // load such writes still go to the workers, in parallel. Off when
  // inline_max_bytes is 0; 0 = off.
  size_t inline_alone_max_bytes = 256 << 10;          // sidecar.inline_alone_max_bytes
  size_t max_request_bytes = 6 << 20;                 // sidecar.max_request_bytes
  std::string http = "127.0.0.1:9464";                // sidecar.http ("" = off)
  std::string ready_file;                             // sidecar.ready_file
  int shutdown_grace_ms = 10000;                      // sidecar.shutdown_grace_ms
  // Admission bounds (sidecar/admission.h): requests accepted and not yet
  // answered, charged at wire size + decoded size estimate.
  uint64_t max_inflight_bytes = 256ull << 20;                // sidecar.max_inflight_bytes
  uint64_t max_inflight_per_connection = 256;                // sidecar.max_inflight_per_connection
  uint64_t max_inflight_bytes_per_connection = 64ull << 20;  // sidecar.max_inflight_bytes_per_connection
  // Connections the ZeroMQ listener keeps open at once; the newest past it is
  // closed as it arrives (sidecar/connection_limit.h). Lowered at start to a
  // quarter of the descriptor limit. Each idle one costs 27-64 KB.
  uint64_t max_connections = 1024;  // sidecar.max_connections

  std::string data_dir = "./sidetable-data";          // storage.path
  // storage.*, changelog.*; the server keeps a 64 MiB storage reserve
  // (storage.reserve_mb) so that it can start on a full disk.
  EngineOptions engine = [] {
    EngineOptions o;
    o.storage_reserve_bytes = 64ull << 20;
    return o;
  }();
  // Backups (docs/operations.md, "Backup and restore"): the Backup operation
  // makes a checkpoint of the data directory in a new directory here ("" =
  // the operation is refused). On the data directory's filesystem the table
  // files are hard links (no copy); elsewhere they are copied.
  std::string backup_dir;  // storage.backup_dir
  // After a backup, the oldest beyond this many are removed (0 = keep all).
  uint64_t backup_keep = 0;                           // storage.backup_keep
  int retention_interval_seconds = 60;                // changelog.check_interval_seconds

  uint64_t query_max_examined = 100'000;              // query.max_examined
  // A query page with a continuation is followed at once by a scan of the
  // next page, kept for the client's request for it while this page
  // travels (sidecar/query_prefetch.h): at most this many bytes of such
  // pages are held. 0 = off.
  uint64_t query_prefetch_bytes = 64ull << 20;       // query.prefetch_mb

  changestream::KafkaOptions kafka;                   // kafka.*
  // cluster.* (docs/scale-out.md): off unless cluster.service is set; then
  // "{service}" in kafka.topic and cluster.topic is the service's name.
  cluster::ClusterOptions cluster;

  auth::AuthConfig auth;                              // auth.* (tokens, keys, tenant quotas)
  SecurityConfig security;                            // security.* (sidecar/security_config.h)
  rest::RestConfig rest;                              // rest.* (the Azure Table REST gateway, docs/rest.md)

  std::string log_level = "info";                     // log.level
  std::string log_format = "text";                    // log.format: text | json
};

// Reads a YAML file over the defaults in *config.
Status LoadConfigFile(const std::string& path, ServerConfig* config);

// Checks ranges and combinations (e.g. at least one endpoint), and the
// listener policy (sidecar/listener_policy.h).
Status ValidateConfig(const ServerConfig& config);

}  // namespace sidetable::sidecar
