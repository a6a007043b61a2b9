// Engine::Impl: the state behind the public Engine (internal header).
//
// Split by concern: engine_open.cc (open, recovery, options), engine_tables.cc
// (catalog), engine_write.cc (EGT validation and execution), engine_read.cc
// (point reads and scans), engine_changelog.cc (reading and trimming the log),
// engine_storage.cc (a full disk), engine_checkpoint.cc (backups),
// engine_replicated.cc (another owner's
// records applied, partitions dropped: scale-out).
#pragma once

#include <rocksdb/db.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/internal/codec.h"
#include "engine/internal/commit_queue.h"
#include "engine/internal/recent_records.h"
#include "engine/internal/request_log.h"
#include "engine/internal/rocksdb_logger.h"
#include "engine/internal/row_cache.h"
#include "engine/internal/space_reclaimer.h"
#include "engine/internal/storage_guard.h"
#include "engine/table_name.h"

namespace sidetable {

// A live table. Writers hold `mu` shared for the whole of a batch; deletion
// takes it exclusively, so no batch can land rows after its table's range
// deletion.
struct TableState {
  TableInfo info;
  std::shared_mutex mu;
  bool deleted = false;  // guarded by mu
};

// Striped partition locks: batches on one (table, PartitionKey) queue on the
// same mutex; different partitions rarely share a stripe.
class PartitionLocks {
 public:
  // Const: a point read try-locks one to fill the row cache.
  std::mutex& For(uint32_t table_id, std::string_view pk) const;

 private:
  mutable std::array<std::mutex, 4096> stripes_;
};

class Engine::Impl {
 public:
  ~Impl();

  // engine_open.cc
  // `env` replaces RocksDB's default Env (tests inject faults with it).
  static Result<std::unique_ptr<Impl>> Open(const EngineOptions& options, const std::string& path,
                                            rocksdb::Env* env = nullptr);

  // engine_checkpoint.cc
  Result<CheckpointInfo> Checkpoint(const std::string& dir);

  // engine_tables.cc
  Status CreateTable(std::string_view name, std::string_view caller,
                     const TableEventStamp& stamp = {});
  Status DeleteTable(std::string_view name, std::string_view caller,
                     const TableEventStamp& stamp = {});
  std::shared_ptr<TableState> FindTable(std::string_view name) const;
  std::vector<TableInfo> ListTables(std::string_view prefix) const;
  Status LoadCatalog();
  // For Engine::ApplyReplicated: no change record, no LSN; idempotent (OK
  // when the table already exists / does not exist).
  Status CreateTableReplicated(std::string_view name, int64_t created);
  Status DeleteTableReplicated(std::string_view name);
  // A write outside the commit queue (no LSN): through the storage gate,
  // synced as the durability mode says.
  Status WriteUnlogged(rocksdb::WriteBatch* wb);

  // engine_write.cc
  // With a group, deferred into it (write_group.h).
  Result<WriteResult> Execute(const Batch& batch, WriteGroup::State* group = nullptr);
  Result<uint64_t> RequestArchive(std::string_view table, std::string_view pk,
                                  const std::vector<std::string>& row_keys,
                                  std::string_view archive_table, std::string_view caller,
                                  uint64_t epoch = 0);

  // engine_read.cc
  Result<Entity> Get(std::string_view table, std::string_view pk, std::string_view rk,
                     const std::vector<std::string>* select) const;
  Status GetRow(std::string_view table, std::string_view pk, std::string_view rk,
                const std::function<Status(const RowView&)>& fn) const;
  // The stored row of (pk, rk), or TableNotFound / ResourceNotFound.
  Status ReadStoredRow(std::string_view table, std::string_view pk, std::string_view rk,
                       rocksdb::PinnableSlice* value) const;
  std::unique_ptr<ReadView> NewReadView() const;
  Result<std::unique_ptr<RowCursor>> Scan(std::string_view table, const ScanBounds& bounds,
                                          const ReadView* view, ScanLimits limits) const;

  // engine_changelog.cc
  Result<ChangeBatch> ReadChanges(uint64_t from_lsn, size_t max_records, size_t max_bytes) const;
  Result<ChangeBatch> ReadChangeHeaders(uint64_t from_lsn, size_t max_records) const;
  Result<RawChangePage> ReadRawChanges(uint64_t from_lsn, size_t max_records, size_t max_bytes,
                                       std::string* out) const;
  // The stored records ReadChanges and ReadRawChanges return, each passed
  // to `each` (which may fail); sets *first and *last as ChangeBatch has them.
  template <typename Each>
  Status VisitChanges(uint64_t from_lsn, size_t max_records, size_t max_bytes, uint64_t* first,
                      uint64_t* last, Each&& each) const;
  Result<uint64_t> TrimChanges(uint64_t below_lsn);
  Result<uint64_t> ApplyRetention(uint64_t keep_from_lsn);
  Status RecoverLogPosition(uint64_t* last_lsn, int64_t* last_time);
  uint64_t ApproximateChangeBytes(uint64_t from_lsn, uint64_t to_lsn) const;

  // engine_images.cc (internal/images.h)
  // For each record of `stored` with image references (formats 4 and 5),
  // the same record as format 2 or 3 with its after images inline, read
  // with `ro` (a snapshot: the log and the rows as one); "" for the others.
  // `lsns` are the records' (their log keys).
  Status ResolveImages(const std::vector<std::string_view>& stored,
                       const std::vector<uint64_t>& lsns, const rocksdb::ReadOptions& ro,
                       std::vector<std::string>* out) const;
  // `row`, stored at `key`, is being displaced in `wb`: if a record in the
  // log relies on it, keeps a pointer to the displacing record
  // (`displaced_by`, its LSN) or, without one (0), the row itself.
  void KeepDisplaced(std::string_view key, std::string_view row, uint64_t displaced_by,
                     rocksdb::WriteBatch* wb) const;
  // A deleted table's rows, removed once the log is trimmed past `lsn`.
  void DeferDrop(uint32_t table_id, uint64_t lsn, rocksdb::WriteBatch* wb) const;
  // Adds to `wb` the range deletions of the tables whose drops are below;
  // their ids to `dropped`, for the reclaimer once `wb` is written.
  Status DropTrimmedTables(uint64_t below_lsn, rocksdb::WriteBatch* wb,
                           std::vector<uint32_t>* dropped) const;

  EngineStats Stats() const;

  EngineOptions options_;
  std::unique_ptr<rocksdb::DB> db_;
  // The data directory's own lock (kDirLockFileName), held from before the
  // reserve is released until after the database closes: a second process
  // started on the same directory must fail before it touches anything.
  rocksdb::Env* lock_env_ = nullptr;
  // What RocksDB's recovery of the WAL dropped at this open (rocksdb_logger.h).
  std::shared_ptr<internal::RecoveryReport> recovery_;
  rocksdb::FileLock* dir_lock_ = nullptr;
  rocksdb::ColumnFamilyHandle* meta_cf_ = nullptr;      // catalog and counters
  rocksdb::ColumnFamilyHandle* entities_cf_ = nullptr;  // rows
  rocksdb::ColumnFamilyHandle* log_cf_ = nullptr;       // change log by LSN
  rocksdb::ColumnFamilyHandle* images_cf_ = nullptr;    // displaced rows' images (images.h)
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::shared_ptr<StorageGuard> storage_;  // also a listener of db_
  std::unique_ptr<CommitQueue> commits_;
  std::unique_ptr<RequestLog> requests_;
  // The ids of writes between their lookup and their commit (request_log.h).
  InflightRequestIds inflight_ids_;
  PartitionLocks partition_locks_;
  // Filled by point reads; every writer of rows erases what it writes under
  // the partition lock, before the write is visible (row_cache.h).
  std::unique_ptr<internal::RowCache> row_cache_;
  // The newest records resolved, for the log's tail (recent_records.h).
  std::unique_ptr<internal::RecentRecords> recent_;

  // Catalog: lower-case name -> table.
  mutable std::shared_mutex catalog_mu_;
  std::map<std::string, std::shared_ptr<TableState>> tables_;
  std::mutex ddl_mu_;  // serialises create and delete
  // Wider than a table id: it reaches kMaxTableId + 1 once every id is used.
  uint64_t next_table_id_ = 1;
  // The id the next table gets, or kInternal once none is left.
  Status NextTableId(uint32_t* id) const;

  std::mutex trim_mu_;
  std::atomic<uint64_t> first_available_lsn_{1};
  // Compacts the rows of dropped tables away (space_reclaimer.h); stopped
  // before db_ closes.
  std::unique_ptr<internal::SpaceReclaimer> reclaimer_;
};

// What a WriteGroup holds between flushes (write_group.cc).
struct WriteGroup::State {
  explicit State(Engine::Impl* e) : impl(e) {}
  // Takes `table` (shared) and the partition lock `part` for the next write.
  // Blocks only while the group holds nothing; otherwise it try-locks, and
  // flushes first when that fails or when `part` is already the group's.
  void Acquire(const std::shared_ptr<TableState>& table, std::mutex* part);
  // Stamps and encodes `work` into the group (taking the head of the commit
  // queue first); hands out the next ticket. Flushes when the group is full.
  Status Add(CommitWork* work, uint64_t* lsn, int64_t* commit_time);
  Status Flush();
  bool holds_anything() const { return held.leading() || !tables.empty() || !partitions.empty(); }

  Engine::Impl* const impl;
  CommitQueue::HeldGroup held;
  std::vector<std::shared_ptr<TableState>> tables;  // held shared
  std::vector<std::mutex*> partitions;              // held
  std::vector<RequestIdClaim> claims;               // the deferred writes' ids, given back at Flush
  std::vector<Status> outcomes;                     // by ticket
  size_t flushed = 0;                               // outcomes before it are final
  size_t bytes = 0;                                 // roughly, since the last flush
};

// Meta column family keys.
inline constexpr std::string_view kMetaTablePrefix = "t/";
inline constexpr std::string_view kMetaNextTableId = "next_table_id";
// The highest table id ever given out. A table's rows are the key range
// [id, id + 1), so id + 1 must fit the key's 32 bits too: for UINT32_MAX
// the range would wrap to [UINT32_MAX, 0), which RocksDB refuses when the
// log trim deletes it, and that refused write left a WAL no open accepted.
// Ids are never reused (a wrapped id would hand a new table an old one's
// rows), so past it CreateTable fails instead.
inline constexpr uint32_t kMaxTableId = UINT32_MAX - 1;
inline constexpr std::string_view kMetaLogTrimmedBelow = "log_trimmed_below";

namespace internal {
// Where a database's change log stands: its first available LSN (the trim
// watermark) and its newest record's LSN and commit time (last_lsn is
// first_lsn - 1 and last_time 0 when it holds none). Read at the open
// (engine_changelog.cc) and by a checkpoint's read-back.
struct LogPosition {
  uint64_t first_lsn = 1;
  uint64_t last_lsn = 0;
  int64_t last_time = 0;
};
Status ReadLogPosition(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta,
                       rocksdb::ColumnFamilyHandle* log, LogPosition* out);
}  // namespace internal

}  // namespace sidetable
