// RocksDB's info log, sent to the process's spdlog log (internal header).
//
// Why not RocksDB's own LOG file in the data directory: on a full disk a
// failed append leaves that file's writer in an error state, and the next
// line RocksDB logs (its error handler logs the very ENOSPC it is handling)
// trips an assertion in Debian's librocksdb and aborts the process. That was
// the last abort on a racing full disk (docs/reliability.md). spdlog's sinks
// report write errors through its error handler and go on.
//
// Levels: RocksDB's WARN and above keep their level; its INFO (flushes,
// compactions, the options dump at open) and DEBUG become spdlog debug and
// trace, so `--log-level debug` shows what the LOG file used to hold.
#pragma once

#include <rocksdb/env.h>

#include <atomic>
#include <cstdint>
#include <memory>

namespace sidetable::internal {

// What RocksDB's WAL recovery said through the log that the engine must
// count. Point-in-time recovery keeps a write-ahead log's records up to the
// first one that does not check and drops the rest, saying so only in a
// warning ("<n>.log: dropping <n> bytes; Corruption: ..."): a torn last
// record after a power loss, or a corrupt record in the middle, whose
// acknowledged writes after it are then gone (found from outside by session
// 39). The engine reports the sum.
struct RecoveryReport {
  std::atomic<uint64_t> wal_dropped_bytes{0};
};

// The one logger an engine's DB gets (DBOptions::info_log). Thread-safe.
// `report` (may be null) counts the bytes WAL recovery dropped.
std::shared_ptr<rocksdb::Logger> MakeRocksDbLogger(
    std::shared_ptr<RecoveryReport> report = nullptr);

}  // namespace sidetable::internal
