#include "engine/internal/rocksdb_options.h"

#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>

namespace sidetable::internal {
namespace {

rocksdb::ColumnFamilyOptions EntityCfOptions(const EngineOptions& o, const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions cf;
  cf.write_buffer_size = o.write_buffer_bytes;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = cache;
  // Whole-key bloom filters: Insert checks existence of keys that are
  // usually absent, and point reads are the common query.
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  t.whole_key_filtering = true;
  t.cache_index_and_filter_blocks = true;
  t.pin_l0_filter_and_index_blocks_in_cache = true;
  t.format_version = 5;
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  cf.memtable_whole_key_filtering = true;
  cf.memtable_prefix_bloom_size_ratio = 0.05;
  cf.level_compaction_dynamic_level_bytes = true;
  return cf;
}

rocksdb::ColumnFamilyOptions LogCfOptions(const EngineOptions& o, const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions cf;
  cf.write_buffer_size = o.write_buffer_bytes;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = cache;
  t.format_version = 5;
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  cf.level_compaction_dynamic_level_bytes = true;
  return cf;
}

}  // namespace

RocksDbOptionSet MakeRocksDbOptions(const EngineOptions& options) {
  RocksDbOptionSet set;
  rocksdb::DBOptions& db = set.db;
  db.create_if_missing = options.create_if_missing;
  db.create_missing_column_families = true;
  db.max_background_jobs = 2;
  db.bytes_per_sync = 1 << 20;
  // The catalog column family is written rarely and would pin every WAL file
  // since its last write; bounding the WAL total makes RocksDB flush it.
  db.max_total_wal_size = 4 * options.write_buffer_bytes;
  // A torn tail of the WAL after a crash is dropped; everything acknowledged
  // before it is kept (kPointInTimeRecovery), which keeps the log a prefix.
  db.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  auto cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  set.entities = EntityCfOptions(options, cache);
  set.changelog = LogCfOptions(options, cache);
  return set;
}

}  // namespace sidetable::internal
