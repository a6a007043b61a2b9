// The systems under test behind one small interface, so each workload is
// written once: the sidetable Engine; raw RocksDB opened with the engine's
// options for its "entities" column family ("raw"); and raw RocksDB that also
// writes an outbox record of the engine's size into a second column family in
// the same WriteBatch ("raw+outbox": the design's inherent write cost without
// the engine's own work).
//
// Both fail fast (Die) on any unexpected error: a benchmark that carries on
// after a failed write measures nothing.
//
// Thread safety: Insert, InsertBatch and Get may be called from many threads
// at once (on different partitions); the rest from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <rocksdb/options.h>

#include "bench/entity_factory.h"

namespace sidetable::bench {

class Store {
 public:
  virtual ~Store() = default;
  virtual const char* name() const = 0;
  virtual void CreateTable(int table) = 0;
  // One entity: one Batch of one Insert / one Put.
  virtual void Insert(int table, uint64_t partition, uint64_t row) = 0;
  // Rows [first_row, first_row + count) of one partition: one EGT / one WriteBatch.
  virtual void InsertBatch(int table, uint64_t partition, uint64_t first_row, size_t count) = 0;
  // False when the entity is absent.
  virtual bool Get(int table, uint64_t partition, uint64_t row) = 0;
  virtual void DeleteTable(int table) = 0;
  // Anything worth printing after a run (group commit sizes), or "".
  virtual std::string Note() const { return ""; }
};

struct StoreOptions {
  bool sync = false;  // kFsync / WriteOptions::sync
  size_t block_cache_bytes = 256 << 20;
  size_t write_buffer_bytes = 64 << 20;
};

std::unique_ptr<Store> OpenEngineStore(const std::string& path, const StoreOptions& options,
                                       const EntityFactory& factory);
std::unique_ptr<Store> OpenRawStore(const std::string& path, const StoreOptions& options,
                                    const EntityFactory& factory);
// Raw RocksDB with two column families, "entities" and "changelog" (the
// engine's options for each). Every write puts the rows into "entities" and
// one record into "changelog" under the next 8-byte big-endian LSN, in one
// WriteBatch. The record is encoded with the engine's change-record codec
// (header + per row: row key, kind, after image = the row's bytes), so it has
// exactly the size of the engine's record for the same inserts.
std::unique_ptr<Store> OpenRawOutboxStore(const std::string& path, const StoreOptions& options,
                                          const EntityFactory& factory);

// The options engine/engine_open.cc gives its database and its "entities"
// column family (the raw stores use them; so does query_bench's raw side).
rocksdb::Options RawDbOptions(const StoreOptions& options);

}  // namespace sidetable::bench
