// The RocksDB options of an engine database, in one place: the engine opens
// with them, and the benches' raw RocksDB reference opens with the same ones
// so that "engine vs raw RocksDB" compares like with like.
//
// Internal to the engine (and its benches): no other part sees RocksDB.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <vector>

#include "engine/engine.h"

namespace sidetable::internal {

struct RocksDbOptionSet {
  rocksdb::DBOptions db;
  rocksdb::ColumnFamilyOptions meta;       // "default": catalog, counters, settings
  rocksdb::ColumnFamilyOptions entities;   // "entities": rows, bloom-filtered
  rocksdb::ColumnFamilyOptions changelog;  // "changelog": the outbox, read in order
  rocksdb::ColumnFamilyOptions requests;   // "requests": recent client request ids
  rocksdb::ColumnFamilyOptions images;     // "images": what displaced rows leave (images.h)
};

// The table files RocksDB keeps open at once (DBOptions::max_open_files) under
// a soft RLIMIT_NOFILE of `soft_limit` (0: unlimited): a quarter of it, at
// least RocksDB's minimum; -1 (all of them, each reader pinned) when
// unlimited or at least kAllTableFilesOpenFrom. MakeRocksDbOptions applies
// it to the process's current limit.
inline constexpr uint64_t kTableFileShareDivisor = 4;
inline constexpr uint64_t kAllTableFilesOpenFrom = 65536;
inline constexpr uint64_t kMinTableFilesOpen = 20;  // RocksDB raises lower values to 20
int TableFilesOpenAtOnce(uint64_t soft_limit);

// Both column families share one block cache of options.block_cache_bytes.
RocksDbOptionSet MakeRocksDbOptions(const EngineOptions& options);

// The column families an engine database opens with, in the order of the
// engine's handles: default (meta), entities, changelog, requests, images.
std::vector<rocksdb::ColumnFamilyDescriptor> ColumnFamilies(const RocksDbOptionSet& opts);

}  // namespace sidetable::internal
