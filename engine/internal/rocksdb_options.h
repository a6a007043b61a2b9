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

// Both column families share one block cache of options.block_cache_bytes.
RocksDbOptionSet MakeRocksDbOptions(const EngineOptions& options);

// The column families an engine database opens with, in the order of the
// engine's handles: default (meta), entities, changelog, requests, images.
std::vector<rocksdb::ColumnFamilyDescriptor> ColumnFamilies(const RocksDbOptionSet& opts);

}  // namespace sidetable::internal
