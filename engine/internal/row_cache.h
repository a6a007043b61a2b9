// RowCache: the stored rows of recently read entities, in front of RocksDB
// for point reads (internal header).
//
// Why: a point read's RocksDB Get searches the memtable's skiplist first, a
// cache miss for each of the ~20 nodes it visits, and the search deepens as
// the memtable fills with other rows; it was the largest single item of a
// point read's server time (docs/performance.md, issue 17). A hit here is one
// hash lookup and a copy of the row.
//
// What it holds: a key's row exactly as stored (codec::EncodeRow), put there
// by a point read that found it. Writes never fill it (an insert-heavy load
// would pay for copies nobody reads); they erase.
//
// Consistency, kept by the engine (engine_read.cc, engine_write.cc,
// engine_tables.cc, engine_replicated.cc):
// - A reader fills a key only while it holds the key's table lock (shared)
//   and partition lock, both try-locked (a reader never waits for a writer),
//   and reads the row from RocksDB inside that hold.
// - Every writer of entity rows erases the keys it writes while holding the
//   same partition lock, before its write becomes visible; a table's
//   deletion clears the cache while holding the table's lock exclusively.
// So a key is never cached with a row older than the stored one, and from a
// write's erase until the write is visible no reader can cache the key: every
// read of it in that window goes to RocksDB. Reads of a key therefore switch
// from the old row to the new one once, as RocksDB's own do.
//
// Memory: at most `capacity_bytes` (keys, rows and a fixed overhead per
// entry). Eviction is per shard, oldest first with a second chance (CLOCK):
// a row read since it was cached, or since it last came round, is kept
// once more. A row larger than an eighth of a shard is not cached.
// Capacity 0 disables the cache.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sidetable::internal {

struct RowCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t entries = 0;
  uint64_t bytes = 0;  // charged: keys, rows and the per-entry overhead
  uint64_t capacity = 0;
};

class RowCache {
 public:
  // Bytes charged per entry beyond its key and row: the node's header
  // (48) and its share of the slot table (16-byte slots, at most half
  // full, so 32-64 per entry), rounded up.
  static constexpr size_t kEntryOverhead = 128;

  explicit RowCache(size_t capacity_bytes, size_t shards = 16);
  ~RowCache();
  RowCache(const RowCache&) = delete;
  RowCache& operator=(const RowCache&) = delete;

  bool enabled() const { return capacity_ > 0; }
  // On a hit, copies the row into *row and returns true.
  bool Lookup(std::string_view key, std::string* row);
  // Caches `row` as the stored row of `key` (replacing any).
  void Insert(std::string_view key, std::string_view row);
  void Erase(std::string_view key);
  void Clear();
  RowCacheStats Stats() const;

 private:
  struct Node;
  struct Shard;
  Shard& ShardOf(std::string_view key, uint64_t* hash);

  const size_t capacity_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace sidetable::internal
