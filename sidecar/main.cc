// sidetable: the sidecar server.
//
//   sidetable --config configs/sidetable.dev.yaml [--listen tcp://127.0.0.1:5555] ...
//
// Flags override the config file; `sidetable --help` lists them all.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/flags.h"
#include "common/logging.h"
#include "common/process.h"
#include "sidecar/config.h"
#include "sidecar/server.h"

using namespace sidetable;
using namespace sidetable::sidecar;

#ifndef SIDETABLE_VERSION
#define SIDETABLE_VERSION "unknown"
#endif

namespace {

std::atomic<Server*> g_server{nullptr};
// A stop asked for while the server was still starting. Set before g_server
// is read, and main() sets g_server before reading it: one side sees the other.
std::atomic<bool> g_stop_requested{false};

void OnSignal(int) {
  g_stop_requested = true;
  if (Server* s = g_server.load()) s->RequestStop();
}

// Written once everything is bound, so a test or script that waits for the
// file finds every address in it.
Status WriteReadyFile(const std::string& path, Server& server) {
  std::vector<std::pair<std::string, std::string>> lines;
  for (const auto& ep : server.endpoints()) lines.emplace_back("zmq", ep);
  // The address bound, as configured (0.0.0.0:9464 when so configured):
  // what was actually exposed, not where a local client would connect.
  if (server.http_port() > 0) lines.emplace_back("http", server.http_address());
  if (!server.rest_address().empty()) lines.emplace_back("rest", server.rest_address());
  if (!server.kafka_bootstrap().empty()) lines.emplace_back("kafka", server.kafka_bootstrap());
  return common::WriteReadyFile(path, lines);
}

// Replies of a megabyte or more (a query page of 1,000 ~1 KiB entities, a
// page of the change log) are built by a worker, copied into a ZeroMQ
// message and freed, over and over. With glibc's defaults each such block is
// mmapped or trimmed back to the kernel when freed, so every reply touches
// fresh pages: on this project's VMs those page faults cost several times
// the query itself (docs/performance.md, issue 17). Keeping blocks up to
// 32 MiB in the heap, and up to 16 MiB of free heap per arena, makes them
// reused instead, for ~10 MB more RSS under a query load.
//
// Four arenas by default (common::MallocArenas; glibc's default is 8 per
// core), each keeping up to 16 MiB of free heap: a term of the RSS ceiling
// (docs/operations.md). With one arena, the workers shared its lock with
// each other and with RocksDB's flush and compaction threads, which
// allocate a buffer per block they read or write. Four arenas ran EGTs of
// 100 x 1 KiB from four connections (on the workers) 1.12-1.23x faster, for
// ~30 MB more peak RSS; EGTs one at a time (on the frontend), inserts,
// point reads and fsync inserts stayed at parity, and eight arenas were no
// faster than four (paired runs, docs/performance.md, session 24). The
// main thread (the frontend, which runs most writes inline and so
// allocates most memtable blocks) keeps the main arena, the one glibc backs
// with huge pages (ExecWithHeapTunables); other threads' arenas are on
// 4 KiB pages. Small blocks still come from each thread's cache without a
// lock. SIDETABLE_MALLOC_ARENAS=N (1..64) sets another number; 1 is the
// layout before session 24 (everything on huge pages, one lock).
void KeepLargeBlocksInTheHeap() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 16 << 20);
  mallopt(M_ARENA_MAX, common::MallocArenas(std::getenv("SIDETABLE_MALLOC_ARENAS")));
}

// glibc's heap tunables, read only when a process starts: so the process
// execs itself once with them set (the PID, arguments and the rest of the
// environment stay the same; common::HeapTunables composes the value, and a
// tunable the caller already set is kept as it is).
//
// - glibc.malloc.hugetlb=1: transparent huge pages for the heap. Each write
//   puts ~3.5 KB into RocksDB's memtables (the row, its change record, its
//   request id), so a stream of inserts touches a fresh 4 KiB page about
//   once per write, and on this project's VMs a page fault costs more than
//   the memtable insert itself (docs/performance.md, issue 17: ~+35%
//   inserts/s, -30% CPU per insert). Needs glibc >= 2.35 and the kernel's
//   THP mode "madvise" or "always". SIDETABLE_HUGEPAGES=0 leaves it out.
// - glibc.malloc.tcache_count=256 (glibc's default: 7): an EGT of 100
//   entities is decoded on the frontend thread and freed on a worker, a few
//   hundred blocks of the same few sizes each time. With 7 cached per size
//   most of those frees and the next decode's allocations took the arena's
//   lock, then shared with RocksDB's flush and compaction threads (one
//   arena until session 24); with 256 they stay in each thread's cache.
//   Measured +6% EGTs, inserts and point reads unchanged, peak RSS +2-3 MB
//   (docs/performance.md, session 19).
//   A thread keeps at most 256 free blocks per size class up to 1,032 bytes.
void ExecWithHeapTunables(char** argv) {
  const char* opt = std::getenv("SIDETABLE_HUGEPAGES");
  const bool huge_pages = !(opt != nullptr && std::strcmp(opt, "0") == 0);
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const std::string value = common::HeapTunables(tunables, huge_pages);
  if (value.empty()) return;
  const std::string before = tunables != nullptr ? tunables : "";
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Not possible here (no /proc): go on with the default heap.
  unsetenv("GLIBC_TUNABLES");
  if (tunables != nullptr) setenv("GLIBC_TUNABLES", before.c_str(), 1);
}

}  // namespace

int main(int argc, char** argv) {
  common::LogUnhandledErrorsOnTerminate();
  common::NameAfterExecutable();  // "sidetable", not "exe", after the exec below
  ExecWithHeapTunables(argv);
  KeepLargeBlocksInTheHeap();
  ServerConfig config;
  CLI::App app{"sidetable: Azure-Table-style tables for one application, over ZeroMQ"};
  std::string config_file, durability;
  std::vector<std::string> listen;
  app.add_option("-c,--config", config_file, "YAML configuration file (see configs/)");
  app.add_option("--listen", listen, "endpoint to bind, tcp://host:port or ipc://path (repeatable)");
  app.add_option("--data", config.data_dir, "data directory (storage.path)");
  app.add_option("--durability", durability, "fsync or os (storage.durability)")
      ->check(CLI::IsMember({"fsync", "os"}));
  app.add_option("--backup-dir", config.backup_dir,
                 "directory the Backup operation makes backups in, '' = off (storage.backup_dir)");
  app.add_option("--backup-keep", config.backup_keep,
                 "backups kept in --backup-dir, the oldest removed, 0 = all (storage.backup_keep)");
  // A flag only, for one start: as a setting in a file it would drop the
  // records after the next damage too, without anyone deciding.
  app.add_flag(
      "--accept-wal-damage", config.engine.accept_wal_damage,
      "open a data directory whose write-ahead log is damaged in its middle by dropping the "
      "records after the damage (refused without it; docs/operations.md)");
  app.add_option("--id", config.id, "sidecar id (sidecar.id)");
  app.add_option("--member-id", config.cluster.member_id,
                 "scale-out member id, unique in the service (cluster.member_id; default: the sidecar id)");
  app.add_option("--advertise", config.cluster.advertise,
                 "endpoint the other members forward to, tcp://host:port (cluster.advertise; default: the "
                 "first bound --listen endpoint)");
  app.add_option("--workers", config.workers, "worker threads (sidecar.workers)");
  app.add_option("--queue-depth", config.queue_depth, "requests queued per worker (sidecar.queue_depth)");
  app.add_option("--inline-max-bytes", config.inline_max_bytes,
                 "largest point read or write run on the frontend thread, 0 = off (sidecar.inline_max_bytes)");
  app.add_option("--inline-alone-max-bytes", config.inline_alone_max_bytes,
                 "largest write run on the frontend thread when it is the only request in flight, 0 = off "
                 "(sidecar.inline_alone_max_bytes)");
  app.add_option("--max-request-bytes", config.max_request_bytes, "largest request frame");
  app.add_option_function<uint64_t>(
      "--row-cache-mb", [&config](uint64_t mb) { config.engine.row_cache_bytes = mb << 20; },
      "rows of recently read entities kept for point reads, MiB, 0 = off (storage.row_cache_mb)");
  app.add_option_function<uint64_t>(
      "--query-prefetch-mb", [&config](uint64_t mb) { config.query_prefetch_bytes = mb << 20; },
      "query pages computed ahead of the client's request, at most this many MiB held, 0 = off "
      "(query.prefetch_mb)");
  app.add_option("--max-inflight-bytes", config.max_inflight_bytes,
                 "bytes of requests accepted and not yet answered (sidecar.max_inflight_bytes)");
  app.add_option("--max-inflight-per-connection", config.max_inflight_per_connection,
                 "requests in flight per connection (sidecar.max_inflight_per_connection)");
  app.add_option("--max-inflight-bytes-per-connection", config.max_inflight_bytes_per_connection,
                 "bytes in flight per connection (sidecar.max_inflight_bytes_per_connection)");
  app.add_option(
      "--max-connections", config.max_connections,
      "ZeroMQ connections kept open at once; newer ones are closed (sidecar.max_connections)");
  app.add_option("--shutdown-grace-ms", config.shutdown_grace_ms,
                 "on SIGTERM, time to finish queued requests (sidecar.shutdown_grace_ms)");
  app.add_option("--http", config.http, "health and metrics address host:port, '' = off");
  app.add_option("--rest", config.rest.address,
                 "Azure Table REST gateway address host:port, port 0 = any (rest.address; off by default)");
  app.add_option("--ready-file", config.ready_file, "file written with the bound endpoints once serving");
  app.add_option("--log-level", config.log_level, "trace, debug, info, warn, error, off");
  app.add_option("--log-format", config.log_format, "text or json");
  std::string kafka_bootstrap;
  CLI::Option* kafka_flag = app.add_option(
      "--kafka", kafka_bootstrap,
      "Kafka bootstrap servers host:port,..., 'embedded' (an in-process mock, development only) or "
      "'none' (no change stream) (kafka.bootstrap)");
  app.set_version_flag("--version", std::string("sidetable ") + SIDETABLE_VERSION);
  // Config file first, then flags on top: parse twice.
  if (int code = common::ParseFlags(app, argc, argv); code >= 0) return code;
  if (!config_file.empty()) {
    ServerConfig from_file;
    // Unknown keys and bad values name the file and the key: a typo must not
    // silently leave a default (durability!) in force.
    Status s = LoadConfigFile(config_file, &from_file);
    if (!s.ok()) {
      std::fprintf(stderr, "sidetable: %s\n", s.message().c_str());
      return 2;
    }
    config = from_file;
    listen.clear();
    durability.clear();
    kafka_bootstrap.clear();
    if (int code = common::ParseFlags(app, argc, argv); code >= 0) return code;
  }
  // An empty --kafka is refused rather than read as "not given": it usually
  // is an unset shell variable, and the file's value would silently win.
  if (kafka_flag->count() > 0 && kafka_bootstrap.empty()) {
    std::fprintf(stderr,
                 "sidetable: --kafka '': give host:port,..., 'embedded' or 'none' (no change stream)\n");
    return 2;
  }
  if (!listen.empty()) config.listen = listen;
  if (!kafka_bootstrap.empty()) config.kafka.bootstrap = kafka_bootstrap == "none" ? "" : kafka_bootstrap;
  if (durability == "os") config.engine.durability = Durability::kOs;
  if (durability == "fsync") config.engine.durability = Durability::kFsync;

  // Before logging is set up, so that the message is plain text on stderr
  // and names where the value came from: the file, or a flag over it.
  if (Status s = ValidateConfig(config); !s.ok()) {
    std::fprintf(stderr, "sidetable: configuration%s: %s\n",
                 config_file.empty() ? "" : (" (" + config_file + " and flags)").c_str(), s.message().c_str());
    return 2;
  }
  if (Status s = common::SetupLogging(config.log_level, config.log_format); !s.ok()) {
    std::fprintf(stderr, "sidetable: %s\n", s.message().c_str());
    return 2;
  }
  // Connections and RocksDB's files share the descriptor limit (common/process.h).
  // Read before logging was set up (KeepLargeBlocksInTheHeap): a value that
  // is not used is said now, not silently replaced by the default.
  if (const char* arenas = std::getenv("SIDETABLE_MALLOC_ARENAS");
      arenas != nullptr && std::to_string(common::MallocArenas(arenas)) != arenas) {
    spdlog::warn("SIDETABLE_MALLOC_ARENAS='{}' is not a whole number from 1 to 64: using {} arenas",
                 arenas, common::MallocArenas(arenas));
  }
  common::RaiseOpenFileLimitLogged();
  if (auto stack = common::EnsureStackSize(); !stack.ok()) {
    spdlog::error("start-up failed: {}", stack.status().message());
    return 1;
  } else if (stack->soft_after != stack->soft_before) {
    spdlog::info("stack: soft limit raised from {} KiB to {} KiB", stack->soft_before >> 10,
                 stack->soft_after >> 10);
  }
  // Before any thread starts, so that every thread inherits the blocked
  // stop signals (common/process.h).
  common::InstallStopSignals(OnSignal);
  common::RemoveReadyFile(config.ready_file);
  auto server = Server::Start(config);
  if (!server.ok()) {
    spdlog::error("start-up failed: {}", server.status().ToString());
    return 1;
  }
  g_server = server->get();
  if (g_stop_requested) (*server)->RequestStop();
  for (const auto& ep : (*server)->endpoints()) spdlog::info("listening on {}", ep);
  if ((*server)->http_port() > 0) {
    spdlog::info("health and metrics on http://{}/health, /metrics", (*server)->http_address());
  }
  if (!config.ready_file.empty()) {
    if (Status s = WriteReadyFile(config.ready_file, **server); !s.ok()) {
      spdlog::error("{}", s.message());
      return 1;
    }
  }
  (*server)->Run();
  common::RemoveReadyFile(config.ready_file);
  g_server = nullptr;
  if (!(*server)->stopped_cleanly()) {
    // A worker or the publisher is still running and uses the engine:
    // destroying the server would wait for it. Every reply that could be
    // sent was sent, acknowledged writes are durable (as after kill -9) and
    // unpublished changes stay in the change log, so leave now.
    spdlog::warn("stopped without waiting for the threads still running");
    spdlog::default_logger()->flush();
    std::_Exit(0);
  }
  server->reset();
  spdlog::info("stopped");
  return 0;
}
