#include "engine/internal/rocksdb_options.h"

#include "engine/internal/partition_prefix.h"
#include "engine/internal/rocksdb_logger.h"

#include <rocksdb/cache.h>
#include <rocksdb/env.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/sst_file_manager.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/table_properties_collectors.h>
#include <sys/resource.h>

#include <algorithm>

namespace sidetable::internal {
namespace {

rocksdb::ColumnFamilyOptions EntityCfOptions(const EngineOptions& o, const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions cf;
  cf.write_buffer_size = o.write_buffer_bytes;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = cache;
  // Whole-key bloom filters: Insert checks existence of keys that are
  // usually absent, and point reads are the common query. 16 bits a key
  // rather than the usual 10: an EGT of 100 inserts probes every L0 file
  // and one file per level for each key, and at 10 bits (~1% false
  // positives) several probes per EGT passed the filter and read and
  // decompressed a data block for nothing. EGTs of 100 ran 1.06x faster at
  // 16 (12 paired runs, docs/performance.md session 22), for 2 bytes of
  // filter per key instead of 1.25.
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(16));
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

uint64_t SoftOpenFileLimit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<uint64_t>(rl.rlim_cur);
}

}  // namespace

int TableFilesOpenAtOnce(uint64_t soft_limit) {
  // With descriptors to spare for 16,384 table files and more (1 TB of 64
  // MiB files) every file stays open, as RocksDB does by default: each then
  // keeps its reader pinned, where a bounded table cache costs every read a
  // cache lookup per file it probes. Below that, a low limit is the risk.
  if (soft_limit == 0 || soft_limit >= kAllTableFilesOpenFrom) return -1;
  const uint64_t share = soft_limit / kTableFileShareDivisor;
  return static_cast<int>(std::max<uint64_t>(share, kMinTableFilesOpen));
}

RocksDbOptionSet MakeRocksDbOptions(const EngineOptions& options) {
  RocksDbOptionSet set;
  rocksdb::DBOptions& db = set.db;
  db.create_if_missing = options.create_if_missing;
  // RocksDB's default (-1) keeps every table file open for good, one
  // descriptor each, however many the store grows to. Under a low
  // RLIMIT_NOFILE (a container's or a shell's ulimit -n that the sidecar
  // cannot raise) the store outgrew it: the next flush or compaction failed
  // with "Too many open files", the storage turned `failed` and refused every
  // write until a restart, which opened the files again and failed again
  // (found from outside in session 43: at 64 descriptors after ~1,700 EGTs,
  // 29 table files). A bound makes RocksDB's table cache close the least
  // recently used files instead. The listeners keep to their shares too
  // (ZeroMQ a quarter, the REST gateway half: sidecar/transport.cc,
  // sidecar/rest/http_server.cc); the table files take a quarter. Read at
  // every open, after the sidecar raised its soft limit to the hard one.
  db.max_open_files = TableFilesOpenAtOnce(SoftOpenFileLimit());
  db.create_missing_column_families = true;
  // Two flush threads and one compaction thread (RocksDB derives one of
  // each from max_background_jobs = 2). The entity and change-log column
  // families fill their memtables together, each write putting the row in
  // one and its change record in the other, at ~230 MB/s under a stream of
  // EGTs. One flush thread flushed them in turn; a family whose second
  // memtable filled before its first was flushed stopped writes
  // (max_write_buffer_number = 2), and while writes may wait an EGT cannot
  // run inline on the frontend (engine.h, WritesMayWait). Flushing both at
  // once, in paired runs: EGTs after a load of inserts 1.14x and 1.02x (two
  // sets of 6), inserts 1.10x, the rest at parity, and peak RSS under EGTs
  // 277-333 MB instead of 337-429 since full memtables wait less
  // (docs/performance.md, session 24).
  db.max_background_flushes = 2;
  db.max_background_compactions = 1;
  // RocksDB's info log goes to our log, not to a LOG file beside the data:
  // that file's writer aborts the process on a full disk (rocksdb_logger.h).
  db.info_log = MakeRocksDbLogger();
  db.bytes_per_sync = 1 << 20;
  // The catalog column family is written rarely and would pin every WAL file
  // since its last write; bounding the WAL total makes RocksDB flush it.
  db.max_total_wal_size = 4 * options.write_buffer_bytes;
  // The storage guard's WAL-switch marker is the one write without the WAL,
  // and RocksDB flushes every memtable at close once it has seen such a
  // write. Losing the marker at close is the point (the next open places a
  // new one); the flush would only make every stop slower.
  // (crc32c_test's reopen reads the WAL back only without that flush.)
  db.avoid_flush_during_shutdown = true;
  // A torn last record of a log (a crash while it was appended: never
  // acknowledged in fsync durability) is dropped without a word; a record
  // that does not check in the middle of a log (damaged storage) fails the
  // open, before anything changes. kPointInTimeRecovery, used until session
  // 41, dropped everything after such a record, acknowledged writes
  // included, and opened (engine_open.cc: EngineOptions::accept_wal_damage
  // opens that way on purpose).
  db.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  // A failed WAL write must stop writes (a hard background error) rather than
  // let later records follow a torn one in the same WAL: the commit queue
  // reuses a failed group's LSNs on that basis. (The default, said aloud.)
  db.paranoid_checks = true;
  // The SstFileManager is what lets RocksDB recover from a full disk by
  // itself (it polls free space and resumes). After a full disk it also
  // keeps compactions from starting unless the reserve stays free beside
  // their output (SetCompactionBufferSize). No max_allowed_space: its
  // SpaceLimit error is not recovered automatically, and the disk's real
  // size is the bound that matters here.
  db.sst_file_manager.reset(rocksdb::NewSstFileManager(rocksdb::Env::Default()));
  if (options.storage_reserve_bytes > 0) {
    db.sst_file_manager->SetCompactionBufferSize(options.storage_reserve_bytes);
  }
  // The catalog is tiny, but its memtable size counts: after a full disk,
  // RocksDB resumes by itself only once the largest write buffer of any
  // column family is free, and the default (64 MiB) would hold small disks
  // stopped for good.
  set.meta.write_buffer_size = std::min<size_t>(options.write_buffer_bytes, 4 << 20);
  auto cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  set.entities = EntityCfOptions(options, cache);
  // Each partition's inserts start their memtable search where its last one
  // went (partition_prefix.h). RowKeys often grow or shrink within a
  // partition (timestamps, log tails, the loadgen's counters), so the next
  // row's place is next to the last; without the hint every insert walked
  // the skip list from its top, a cache miss a level, and that walk was
  // the frontend's largest cost under single inserts (FindSpliceForLevel
  // 14.5% of its samples, docs/performance.md session 25). Only the entity
  // family: change-log and request keys already arrive in order, which
  // RocksDB's own last-insert splice serves.
  set.entities.memtable_insert_with_hint_prefix_extractor = NewPartitionPrefixTransform();
  // A deleted row leaves a tombstone that every scan of its range passes
  // over until a compaction that reaches the bottom of that range drops
  // it, and a file full of tombstones rarely scores high enough for one by
  // size alone (a queue-like partition that deletes what it inserts makes
  // such files). These files are marked for compaction: half of any 16,384
  // consecutive entries deleted, or half of the whole file. Queries bound
  // what they pass over anyway (query.h); this brings the cost, and the
  // space, back down (engine/README.md, "Deleted rows").
  set.entities.table_properties_collector_factories.push_back(
      rocksdb::NewCompactOnDeletionCollectorFactory(16384, 8192, 0.5));
  set.changelog = LogCfOptions(options, cache);
  // Point lookups of ids that are almost always absent (a first attempt):
  // the entity options' bloom filters suit it; it is small, so a small buffer.
  set.requests = EntityCfOptions(options, cache);
  set.requests.write_buffer_size = std::min<size_t>(options.write_buffer_bytes, 16 << 20);
  // Entries left by displaced rows (internal/images.h): looked up for every
  // after image whose row has changed since, usually absent, so the
  // entity options' bloom filters; mostly pointers of a few bytes.
  set.images = EntityCfOptions(options, cache);
  set.images.write_buffer_size = std::min<size_t>(options.write_buffer_bytes, 16 << 20);
  return set;
}

std::vector<rocksdb::ColumnFamilyDescriptor> ColumnFamilies(const RocksDbOptionSet& opts) {
  return {
      {rocksdb::kDefaultColumnFamilyName, opts.meta},
      {"entities", opts.entities},
      {"changelog", opts.changelog},
      {"requests", opts.requests},
      {"images", opts.images},
  };
}

}  // namespace sidetable::internal
