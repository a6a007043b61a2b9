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

#include <memory>

namespace sidetable::internal {

// The one logger an engine's DB gets (DBOptions::info_log). Thread-safe.
std::shared_ptr<rocksdb::Logger> MakeRocksDbLogger();

}  // namespace sidetable::internal
