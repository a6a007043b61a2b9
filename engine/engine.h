// Engine: Azure-style tables on an embedded RocksDB.
//
// Thread safety: an Engine is safe for concurrent use by many threads.
// Batches on the same (table, PartitionKey) are serialised; batches on other
// partitions run their reads and checks in parallel and share group commits.
// Reads see a consistent snapshot (a point read is atomic; a ReadView pins
// one for scans).
//
// Lifecycle: Open() recovers from the write-ahead log (acknowledged batches
// survive kill -9 in every durability mode, and power loss in kFsync), then
// serves until destroyed. A full disk does not stop it: writes are refused
// with Code::kInsufficientStorage (nothing of a refused write is visible),
// reads go on, and writes resume once space is freed and CheckStorage() (the
// owner's maintenance, about once a second) has seen it; see StorageHealth.
//
// Errors: every call returns Status/Result with an Azure error code; a failed
// call has changed nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/batch.h"
#include "engine/change_observer.h"
#include "engine/change_record.h"
#include "engine/edm.h"
#include "engine/row_view.h"
#include "engine/status.h"
#include "engine/write_group.h"

namespace sidetable {

enum class Durability : uint8_t {
  // fsync of the write-ahead log before acknowledging, group-committed:
  // survives power loss.
  kFsync,
  // written to the OS before acknowledging: survives a process crash (kill -9),
  // not power loss.
  kOs,
};

struct EngineOptions {
  Durability durability = Durability::kFsync;
  bool create_if_missing = true;
  size_t block_cache_bytes = 256 << 20;
  size_t write_buffer_bytes = 64 << 20;
  // Rows of recently read entities kept in front of RocksDB for point reads
  // (engine/internal/row_cache.h); writes erase, never fill. 0 = none.
  size_t row_cache_bytes = 64 << 20;
  // Change log retention for ApplyRetention(): records older than this, or
  // beyond this many bytes (oldest first), may be trimmed. 0 = no bound.
  int64_t changelog_max_age_seconds = 7 * 24 * 3600;
  uint64_t changelog_max_bytes = 1ull << 30;
  // Each entity written once: an EGT's change record refers to the rows it
  // wrote for its after images instead of carrying a copy, and readers of
  // the log get them resolved (engine/internal/images.h). false: records
  // carry their after images, as before 2026-12 (half the bytes per
  // write go to the copy). Records of either kind are read either way.
  bool write_images_once = true;
  // With write_images_once, the newest change records are also kept in
  // memory resolved, up to this many bytes, for a reader of the log's tail
  // (the sidecar's publisher), which would otherwise look up every image in
  // RocksDB (engine/internal/recent_records.h). 0 = none; the sidecar sets
  // 32 MiB when it publishes to Kafka.
  size_t recent_records_bytes = 0;
  // Batches queued for one group commit at most.
  size_t max_group_commit = 256;
  // A file of this size kept in the data directory and given back before
  // every open, so the engine can open (and serve reads) on a 100% full
  // disk; writes are refused until it can be re-created, which needs twice
  // its size free. Also the headroom RocksDB keeps for compactions after a
  // full disk. 0 = none (the sidecar's default is 64 MiB).
  uint64_t storage_reserve_bytes = 0;
  // Exactly-once retries (Batch::SetClientRequestId): a retry is recognised
  // for at least this many seconds after its first attempt committed, or
  // until this many newer request ids were recorded, whichever comes first.
  // At most twice the count is stored.
  int64_t request_id_window_seconds = 900;
  uint64_t request_id_window_count = 500'000;
  // A write-ahead log damaged in its middle (a record that does not check
  // with records after it; a torn last record is always tolerated): false
  // refuses the open and changes nothing, true keeps the records before the
  // damage and drops the rest, acknowledged writes among them (RocksDB's
  // point-in-time recovery). The sidecar's --accept-wal-damage, for one
  // start (docs/operations.md, "A damaged or foreign data directory").
  bool accept_wal_damage = false;
  // The wall clock in DateTime ticks (tests inject one); null = system clock.
  std::function<int64_t()> clock;
  // Told of every change record as it commits (change_observer.h); not
  // owned, must outlive the engine. Null = none.
  ChangeObserver* change_observer = nullptr;
};

struct TableInfo {
  std::string name;      // as created (names compare case-insensitively)
  uint32_t id = 0;       // never reused, so a re-created table starts empty
  int64_t created = 0;   // DateTime ticks
};

// A consistent point-in-time view for scans (a RocksDB snapshot).
class ReadView {
 public:
  virtual ~ReadView() = default;
};

// Iterates the entities of one table in (PartitionKey, RowKey) order within
// [start, end) bounds. Not thread-safe; use from one thread.
class RowCursor {
 public:
  virtual ~RowCursor() = default;
  virtual bool Valid() const = 0;
  virtual void Next() = 0;
  // Positions at the first entity >= (pk, rk).
  virtual void Seek(std::string_view pk, std::string_view rk) = 0;
  virtual const std::string& partition_key() const = 0;
  virtual const std::string& row_key() const = 0;
  // Decodes the current entity (all properties, or only `select`).
  virtual Status Read(Entity* out, const std::vector<std::string>* select = nullptr) const = 0;
  // The current entity read in place, without building an Entity (kInternal
  // for a corrupt row). Valid until the next Next() or Seek().
  virtual Result<RowView> Row() const = 0;
  // Iteration error (I/O or corruption), OK at a clean end.
  virtual Status status() const = 0;
  // Entries the cursor has passed over since it opened or last sought,
  // counted only when the scan has a bound (ScanLimits::max_skipped):
  // RocksDB's internal keys of deleted entities and superseded versions,
  // kept until compaction (a row deleted since the last flush is two, its
  // tombstone and the version it hides).
  virtual uint64_t skipped() const = 0;
  // Set when the cursor stopped because it passed over more than
  // ScanLimits::max_skipped of them: the key to resume at (an entity at or
  // after it is the next one). Valid() is then false and status() OK.
  virtual const std::optional<std::pair<std::string, std::string>>& stopped_at() const = 0;
};

// What a scan may pass over without finding an entity. Without a bound a
// range where most rows were deleted recently costs O(deleted) until
// compaction removes their tombstones (~0.2-0.3 us each: 1M deletes made a
// $top=1 query page take 0.2-0.5 s).
struct ScanLimits {
  uint64_t max_skipped = 0;  // 0: no bound
};

// Bounds of a scan: entities with (pk, rk) >= start and < end. An absent
// bound is open. A partition is [(pk, ""), (pk + U+0001, "")) — use
// ScanBounds::Partition().
struct ScanBounds {
  std::optional<std::pair<std::string, std::string>> start;
  std::optional<std::pair<std::string, std::string>> end;
  static ScanBounds Partition(std::string_view pk);
};

struct EngineStats {
  uint64_t last_lsn = 0;  // the newest durable record: the change log is read up to it
  // The newest record written (visible): above last_lsn only in
  // Durability::kFsync, until the fsync that makes it durable.
  uint64_t last_written_lsn = 0;
  uint64_t first_available_lsn = 1;
  uint64_t commits = 0;          // batches committed since open
  uint64_t group_commits = 0;    // RocksDB writes those took
  uint64_t wal_syncs = 0;        // WAL fsyncs that made them durable (kFsync)
  // Point reads answered from the row cache, and those that went to RocksDB.
  uint64_t row_cache_hits = 0;
  uint64_t row_cache_misses = 0;
  uint64_t row_cache_bytes = 0;  // held now (EngineOptions::row_cache_bytes bounds it)
  // Bytes of write-ahead log records that did not check when this open
  // recovered the WAL, and were dropped with every record after them (a torn
  // tail after a power loss, or a damaged log). 0 normally.
  uint64_t wal_recovery_dropped_bytes = 0;
};

// What Engine::Checkpoint made.
struct CheckpointInfo {
  std::string path;
  // The change log it holds: first_lsn..last_lsn (last_lsn 0: none yet).
  // Every commit up to last_lsn is in it, none after.
  uint64_t first_lsn = 1;
  uint64_t last_lsn = 0;
  uint64_t tables = 0;  // catalog entries
  // Its files and their bytes (a hard-linked file counts its whole size:
  // what copying the directory elsewhere moves).
  uint64_t files = 0;
  uint64_t bytes = 0;
  uint64_t micros = 0;  // how long it took, the read-back included
};

// The disk under the data directory, as writes see it.
enum class StorageState : uint8_t {
  kOk,       // writes are accepted
  kNoSpace,  // the disk is full: writes get InsufficientStorage, reads go on
  kFailed,   // another storage error stopped writes (ServiceUnavailable)
};
// "ok", "no_space", "failed".
std::string_view StorageStateName(StorageState state);

struct StorageHealth {
  StorageState state = StorageState::kOk;
  std::string error;            // why writes are refused; empty when ok
  int64_t since = 0;            // DateTime ticks of the last change of state; 0 = ok since open
  uint64_t free_bytes = 0;      // free on the data directory's filesystem at the last check
  // Whether that check could measure it (statvfs answered): false when the
  // data path cannot be looked up (removed), and free_bytes is then 0. Until
  // session 46 /health said 0 free bytes then, which reads as a full disk.
  bool free_known = false;
  uint64_t reserve_bytes = 0;   // EngineOptions::storage_reserve_bytes
  bool reserve_held = false;
  uint64_t write_refusals = 0;  // writes refused for storage since open
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> Open(const EngineOptions& options,
                                              const std::string& path);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // ---- tables ----
  Status CreateTable(std::string_view name, std::string_view caller = "",
                     const TableEventStamp& stamp = {});
  // Drops every entity of the table in time independent of its size.
  Status DeleteTable(std::string_view name, std::string_view caller = "",
                     const TableEventStamp& stamp = {});
  Result<TableInfo> GetTable(std::string_view name) const;
  // Sorted by name; only names starting with `prefix` (case-insensitive).
  std::vector<TableInfo> ListTables(std::string_view prefix = "") const;

  // ---- entities ----
  // Returns once the batch is durable (Durability::kFsync: its WAL fsync;
  // kOs: written). With wait_durable false it returns once the batch is
  // written and visible: the caller must then WaitDurable(result.lsn)
  // before it acknowledges the write to anyone (see commit_queue.h); a
  // replayed result's LSN is its first attempt's, which may not be durable
  // yet either.
  Result<WriteResult> Execute(const Batch& batch, bool wait_durable = true);
  // The same, deferred into `group` (write_group.h): the result is final,
  // but the write is written (and visible) only at the group's Flush, with
  // the group's other writes; its outcome is then group->Outcome(ticket),
  // the ticket being group->deferred() before the call. Never waits for an
  // fsync.
  Result<WriteResult> Execute(const Batch& batch, WriteGroup* group);
  // Blocks until `lsn` is durable: one WAL fsync serves every caller
  // waiting meanwhile. OK at once for lsn 0, an LSN already durable, or in
  // Durability::kOs. An error means the fsync failed (the write is visible,
  // its survival of a power loss unknown).
  Status WaitDurable(uint64_t lsn);
  // The newest LSN that is durable; the change log is read up to it.
  uint64_t durable_lsn() const;
  // Records in the change log that the application wants entities (one
  // partition, 1..100 RowKeys) moved to `archive_table`; the archive pattern's
  // workers carry it out. Writes no rows. Returns the record's LSN.
  Result<uint64_t> RequestArchive(std::string_view table, std::string_view pk,
                                  const std::vector<std::string>& row_keys,
                                  std::string_view archive_table, std::string_view caller = "",
                                  uint64_t epoch = 0);  // scale-out: the shard's epoch (Batch::SetEpoch)
  Result<Entity> Get(std::string_view table, std::string_view pk, std::string_view rk,
                     const std::vector<std::string>* select = nullptr) const;
  // The same read without building an Entity: `fn` gets the stored row in
  // place (valid during the call only) and what it returns is returned.
  // Errors as Get (TableNotFound, ResourceNotFound), kInternal for a corrupt row.
  Status GetRow(std::string_view table, std::string_view pk, std::string_view rk,
                const std::function<Status(const RowView&)>& fn) const;

  // ---- scans (the query layer builds on these) ----
  std::unique_ptr<ReadView> NewReadView() const;
  // RocksDB's newest visible sequence number: it moves with every write
  // (rows, tables, the engine's own bookkeeping), after the write is
  // visible. A scan started after reading S and a later read that still
  // finds S saw exactly the same data (the sidecar's query prefetch relies
  // on it, sidecar/query_prefetch.h).
  uint64_t visible_sequence() const;
  // `view` may be null (latest state).
  Result<std::unique_ptr<RowCursor>> Scan(std::string_view table, const ScanBounds& bounds,
                                          const ReadView* view, ScanLimits limits = {}) const;

  // ---- change log ----
  // Records with LSN >= from_lsn, oldest first, at most max_records and about
  // max_bytes (at least one record is returned when any is available).
  Result<ChangeBatch> ReadChanges(uint64_t from_lsn, size_t max_records,
                                  size_t max_bytes = 16 << 20) const;
  // The same records undecoded: appended to *out as a raw page
  // (change_record.h), for a server that ships them as they are stored.
  // On failure *out may hold part of a page.
  Result<RawChangePage> ReadRawChanges(uint64_t from_lsn, size_t max_records, size_t max_bytes,
                                       std::string* out) const;
  // Only the headers (lsn, kind, commit time, table, PartitionKey, caller;
  // no operations, no row looked up for an image) of the records with LSN
  // >= from_lsn, at most max_records: for a reader that only needs to know
  // where records went (the embedded Kafka's restart point, a few µs a
  // record less than ReadChanges).
  Result<ChangeBatch> ReadChangeHeaders(uint64_t from_lsn, size_t max_records) const;
  // Removes the records with LSN < below_lsn. Returns the new first LSN.
  Result<uint64_t> TrimChanges(uint64_t below_lsn);
  // Approximate bytes of the records with LSN >= from_lsn (RocksDB's size
  // estimate, memtables included).
  uint64_t ApproximateChangeBytes(uint64_t from_lsn) const;
  // Trims by the age and size bounds of the options, never at or above
  // `keep_from_lsn` (the publisher passes its watermark). Returns the new
  // first available LSN.
  Result<uint64_t> ApplyRetention(uint64_t keep_from_lsn);

  // ---- scale-out (docs/scale-out.md) ----
  // Applies a change record written by another owner of its shard, exactly,
  // for restore and standbys. kEntities: each op's after image becomes the
  // stored row with the op's version, timestamp and ETag unchanged (so a
  // client's If-Match taken from the old owner still matches); no after
  // image deletes the row; an op whose stored row already has a version >=
  // op.version is skipped, so applying a record twice changes nothing. The
  // record's client request id outcome is remembered: a retry of it here is
  // answered once, with the original ETags (WriteResult::lsn 0: no local
  // commit to wait for). The table is created here when missing.
  // kTableCreated / kTableDeleted create / delete the table (idempotent);
  // kArchiveRequested and kShardClaimed change nothing. Writes no change
  // record (this sidecar's publisher must not republish another owner's
  // record) and commits each record in one atomic write. This engine's own
  // later versions stay larger than the applied ones because its epoch is
  // larger than the old owner's (epoch << 40 | lsn). Invalid input is
  // kInvalidInput naming the problem, with nothing changed.
  Status ApplyReplicated(const ChangeRecord& record);
  // Deletes every row, of every table, whose (table name as created,
  // PartitionKey) `drop` accepts: a shard given up. Bounded writes (the
  // partition's lock is held for one write of at most 1000 rows at a time),
  // no change records; other partitions are read and written meanwhile.
  // Returns the rows deleted. `drop` is called once per partition found and
  // must not create or delete tables (the table is held meanwhile).
  Result<uint64_t> DropPartitions(
      const std::function<bool(std::string_view table, std::string_view pk)>& drop);

  // ---- backup (docs/operations.md, "Backup and restore") ----
  // A consistent copy of the whole database in the new directory `dir`
  // (absolute; must not exist; its parent must), made while reads and
  // writes go on: RocksDB's checkpoint (memtables flushed, table files
  // hard-linked on the same filesystem and copied otherwise, the MANIFEST
  // and WAL copied), then recovered once (the WAL into table files, so it
  // opens later without recovering anything) and opened read-only to check
  // it and to read what it holds. It contains every commit made before the call; a sidecar started
  // on it opens it as after a kill -9 at one instant. Errors leave nothing
  // at `dir`: kInvalidInput for the path (exists, relative, no parent),
  // kInsufficientStorage when either disk is full, kInternal otherwise.
  // May take a while (a flush, and copies across filesystems): call it off
  // the request path.
  Result<CheckpointInfo> Checkpoint(const std::string& dir);

  EngineStats Stats() const;

  // ---- storage health ----
  StorageHealth Storage() const;
  // Re-creates the storage reserve when space allows and asks RocksDB to
  // resume after a background error (rate-limited). The owner calls it
  // about once a second; it may block for a flush.
  StorageHealth CheckStorage();
  // True while RocksDB delays or stops writes (a write stall: a flush or
  // compaction is behind), so a write may block for a while; cheap (one
  // atomic load, and while stalled a re-read of RocksDB's state at most
  // every 10 ms), for callers that must not block (the sidecar's frontend
  // sends writes to its workers then).
  bool WritesMayWait() const;

  // ---- small durable settings of the layers above (e.g. the change-stream
  // publisher's watermark). Keys are namespaced apart from the catalog.
  Status PutSetting(std::string_view key, std::string_view value);
  // nullopt when absent.
  Result<std::optional<std::string>> GetSetting(std::string_view key) const;
  // Several settings in one atomic, durable write (all or none).
  Status PutSettings(const std::vector<std::pair<std::string, std::string>>& settings);
  // Removes settings (absent ones are no error), atomically and durably.
  Status DeleteSettings(const std::vector<std::string>& keys);
  // Every setting whose key starts with `prefix`, in key order.
  Result<std::vector<std::pair<std::string, std::string>>> ListSettings(std::string_view prefix) const;

  class Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class WriteGroup;
};

}  // namespace sidetable
