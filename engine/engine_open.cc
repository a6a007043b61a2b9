#include <spdlog/spdlog.h>

#include <rocksdb/sst_file_manager.h>
#include <xxhash.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "engine/internal/codec.h"
#include "engine/internal/crc32c.h"
#include "engine/internal/data_directory.h"
#include "engine/internal/engine_impl.h"
#include "engine/internal/rocksdb_options.h"
#include "engine/limits.h"

namespace sidetable {
std::mutex& PartitionLocks::For(uint32_t table_id, std::string_view pk) const {
  uint64_t h = XXH3_64bits_withSeed(pk.data(), pk.size(), table_id);
  return stripes_[h % stripes_.size()];
}

namespace {

// Why the directory's lock could not be taken. Only a lock held elsewhere is
// "in use": a path that is a file or that this user may not write was
// reported as a second sidecar too, which sent operators looking for one.
Status LockFailure(rocksdb::Env* env, const std::string& path, const rocksdb::Status& lock) {
  const std::string prefix = "cannot open database at " + path + ": ";
  if (env->FileExists(path).IsNotFound())
    return Status(Code::kUnavailable, prefix + "no such directory");
  bool is_dir = false;
  if (env->IsDirectory(path, &is_dir).ok() && !is_dir) {
    return Status(Code::kUnavailable, prefix + "it is not a directory (check storage.path)");
  }
  if (::access(path.c_str(), W_OK | X_OK) != 0) {
    const int err = errno;
    return Status(Code::kUnavailable, prefix + "this process (uid " + std::to_string(::geteuid()) +
                                          ") may not write there: " + std::strerror(err));
  }
  return Status(Code::kUnavailable, prefix +
                                        "the directory is in use by another process (another "
                                        "sidetable on the same storage.path?): " +
                                        lock.ToString());
}

// `path` and its missing parents; failures show at the lock that follows.
void CreateDirectories(rocksdb::Env* env, const std::string& path) {
  for (size_t pos = path.find('/', 1);; pos = path.find('/', pos + 1)) {
    env->CreateDirIfMissing(pos == std::string::npos ? path : path.substr(0, pos))
        .PermitUncheckedError();
    if (pos == std::string::npos) break;
  }
}

}  // namespace

Engine::Impl::~Impl() {
  reclaimer_.reset();  // cancels its compaction: before the handles go
  commits_.reset();
  if (db_) {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    db_->Close().PermitUncheckedError();
  }
  // After RocksDB's own LOCK is released by Close().
  if (dir_lock_ != nullptr) lock_env_->UnlockFile(dir_lock_).PermitUncheckedError();
}

Result<std::unique_ptr<Engine::Impl>> Engine::Impl::Open(const EngineOptions& options,
                                                         const std::string& path,
                                                         rocksdb::Env* env) {
  auto impl = std::make_unique<Impl>();
  impl->options_ = options;
  if (!impl->options_.clock) impl->options_.clock = NowTicks;

  internal::RocksDbOptionSet opts = internal::MakeRocksDbOptions(options);
  // A logger that also counts what WAL recovery drops (rocksdb_logger.h).
  impl->recovery_ = std::make_shared<internal::RecoveryReport>();
  opts.db.info_log = internal::MakeRocksDbLogger(impl->recovery_);
  if (env != nullptr) {
    opts.db.env = env;
    opts.db.sst_file_manager.reset(rocksdb::NewSstFileManager(env));
  }
  impl->storage_ =
      std::make_shared<StorageGuard>(path, options.storage_reserve_bytes, impl->options_.clock);
  if (options.create_if_missing) {
    // RocksDB creates it too, but first logs a missing directory as an error;
    // and only its last component, while storage.path is "created if missing".
    CreateDirectories(opts.db.env, path);
  }
  // Before anything in the directory changes: a second sidecar started on
  // it must not release the first one's reserve (nor find RocksDB's LOCK
  // only after doing so).
  impl->lock_env_ = opts.db.env;
  const std::string lock_file = path + "/" + kDirLockFileName;
  const bool lock_file_existed = opts.db.env->FileExists(lock_file).ok();
  if (rocksdb::Status l = opts.db.env->LockFile(lock_file, &impl->dir_lock_); !l.ok()) {
    impl->dir_lock_ = nullptr;
    return LockFailure(opts.db.env, path, l);
  }
  // Before RocksDB may create or add anything (internal/data_directory.h).
  auto dir = internal::InspectDataDirectory(opts.db.env, opts.db, path);
  if (!dir.ok()) {
    // A refused directory is left as it was found (the lock is released
    // with impl).
    if (!lock_file_existed) opts.db.env->DeleteFile(lock_file).PermitUncheckedError();
    return dir.status();
  }
  if (dir->exists) opts.db.create_if_missing = false;
  // The reserve's space is what lets RocksDB open on a full disk (a new
  // MANIFEST and WAL, the flush of the recovered memtables).
  impl->storage_->ReleaseReserve();
  opts.db.listeners.push_back(impl->storage_);
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s =
      rocksdb::DB::Open(opts.db, path, internal::ColumnFamilies(opts), &impl->handles_, &raw);
  if (s.IsCorruption() && impl->recovery_->wal_dropped_bytes.load() > 0) {
    // Only a record in the middle of a log is reported in this recovery
    // mode (rocksdb_options.cc), and the open stopped before replaying
    // anything past it: the directory is as it was.
    ST_RETURN_IF_ERROR(internal::RefuseDamagedWal(
        path, s, impl->recovery_->wal_dropped_bytes.load(), options.accept_wal_damage));
    impl->recovery_->wal_dropped_bytes = 0;  // counted again by the second recovery
    impl->handles_.clear();
    opts.db.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
    s = rocksdb::DB::Open(opts.db, path, internal::ColumnFamilies(opts), &impl->handles_, &raw);
  }
  if (!s.ok()) {
    if (s.IsNoSpace()) {
      return Status(Code::kInsufficientStorage,
                    "cannot open database at " + path + ": the disk is full (" + s.ToString() +
                        "); free space on it and start again");
    }
    return Status(Code::kUnavailable, "cannot open database at " + path + ": " + s.ToString());
  }
  impl->db_.reset(raw);
  if (const uint64_t dropped = impl->recovery_->wal_dropped_bytes.load(); dropped > 0) {
    spdlog::error(
        "engine: recovering the write-ahead log of {} dropped {} bytes that did not check "
        "(RocksDB's "
        "warnings above name the files): the records after the first bad one are gone. A torn last "
        "record after a power loss or a machine crash held only unacknowledged writes; a bad "
        "record "
        "in the middle of a log (damaged storage) lost acknowledged ones",
        path, dropped);
  }
  impl->reclaimer_ = std::make_unique<internal::SpaceReclaimer>(impl->db_.get());
  impl->meta_cf_ = impl->handles_[0];
  impl->entities_cf_ = impl->handles_[1];
  impl->log_cf_ = impl->handles_[2];
  impl->images_cf_ = impl->handles_[4];
  ST_RETURN_IF_ERROR(internal::CheckFormatVersion(opts.db.env, impl->db_.get(), impl->meta_cf_,
                                                  path, dir->format_file));
  impl->row_cache_ = std::make_unique<internal::RowCache>(options.row_cache_bytes);
  impl->recent_ = std::make_unique<internal::RecentRecords>(
      options.write_images_once ? options.recent_records_bytes : 0);
  impl->requests_ = std::make_unique<RequestLog>(
      impl->db_.get(), impl->handles_[3],
      RequestWindow{std::max<uint64_t>(1, options.request_id_window_count),
                    std::max<int64_t>(1, options.request_id_window_seconds)});
  ST_RETURN_IF_ERROR(impl->requests_->Load(impl->options_.clock()));

  ST_RETURN_IF_ERROR(impl->LoadCatalog());
  uint64_t last_lsn = 0;
  int64_t last_time = 0;
  ST_RETURN_IF_ERROR(impl->RecoverLogPosition(&last_lsn, &last_time));
  impl->storage_->Attach(impl->db_.get(), impl->meta_cf_);
  impl->storage_->Check();  // re-creates the reserve if there is room
  impl->commits_ = std::make_unique<CommitQueue>(
      impl->db_.get(), options.durability == Durability::kFsync, last_lsn, last_time,
      options.max_group_commit, impl->options_.clock, impl->storage_.get(),
      options.change_observer);
  spdlog::debug("engine: opened {} with {} tables, change log {}..{}", path,
                impl->tables_.size(), impl->first_available_lsn_.load(), last_lsn);
  // Once per process: which CRC32C checksums the WAL (internal/crc32c.h).
  static std::once_flag crc_logged;
  std::call_once(crc_logged, [] {
    spdlog::info("engine: RocksDB's WAL checksums use the {} CRC32C{}", internal::Crc32cBackend(),
                 internal::Crc32cWrapped() ? "" : " (not wrapped on this CPU architecture)");
    if (const char* forced = std::getenv("SIDETABLE_CRC32C");
        forced != nullptr && std::strcmp(forced, "rocksdb") != 0) {
      spdlog::warn("engine: SIDETABLE_CRC32C='{}' is ignored: 'rocksdb' is the only value it takes",
                   forced);
    }
  });
  return impl;
}

EngineStats Engine::Impl::Stats() const {
  EngineStats st;
  st.last_lsn = commits_->last_committed_lsn();
  st.last_written_lsn = commits_->last_written_lsn();
  st.first_available_lsn = first_available_lsn_.load();
  st.commits = commits_->commits();
  st.group_commits = commits_->groups();
  st.wal_syncs = commits_->syncs();
  const internal::RowCacheStats rc = row_cache_->Stats();
  st.row_cache_hits = rc.hits;
  st.row_cache_misses = rc.misses;
  st.row_cache_bytes = rc.bytes;
  st.wal_recovery_dropped_bytes = recovery_->wal_dropped_bytes.load();
  return st;
}

// ---- the public facade -------------------------------------------------

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options,
                                             const std::string& path) {
  auto impl = Impl::Open(options, path);
  if (!impl.ok()) return impl.status();
  return std::unique_ptr<Engine>(new Engine(std::move(impl).value()));
}

// The caller is checked at every entry that records one in the change log,
// so nothing downstream (audits, clients, Kafka) ever sees a bad one.
Status Engine::CreateTable(std::string_view name, std::string_view caller,
                           const TableEventStamp& stamp) {
  ST_RETURN_IF_ERROR(ValidateCaller(caller));
  return impl_->CreateTable(name, caller, stamp);
}
Status Engine::DeleteTable(std::string_view name, std::string_view caller,
                           const TableEventStamp& stamp) {
  ST_RETURN_IF_ERROR(ValidateCaller(caller));
  return impl_->DeleteTable(name, caller, stamp);
}
Result<TableInfo> Engine::GetTable(std::string_view name) const {
  auto t = impl_->FindTable(name);
  if (!t) return Status(Code::kTableNotFound, "table '" + std::string(name) + "' not found");
  return t->info;
}
std::vector<TableInfo> Engine::ListTables(std::string_view prefix) const {
  return impl_->ListTables(prefix);
}
Result<WriteResult> Engine::Execute(const Batch& batch, bool wait_durable) {
  ST_RETURN_IF_ERROR(ValidateCaller(batch.caller()));
  auto result = impl_->Execute(batch);
  // Outside the partition lock: the next write of the partition can be
  // written while this one waits for the shared fsync.
  if (result.ok() && wait_durable) ST_RETURN_IF_ERROR(impl_->commits_->SyncTo(result->lsn));
  return result;
}
Status Engine::WaitDurable(uint64_t lsn) { return impl_->commits_->SyncTo(lsn); }
uint64_t Engine::durable_lsn() const { return impl_->commits_->last_committed_lsn(); }
Result<uint64_t> Engine::RequestArchive(std::string_view table, std::string_view pk,
                                        const std::vector<std::string>& row_keys,
                                        std::string_view archive_table, std::string_view caller,
                                        uint64_t epoch) {
  ST_RETURN_IF_ERROR(ValidateCaller(caller));
  return impl_->RequestArchive(table, pk, row_keys, archive_table, caller, epoch);
}
Result<Entity> Engine::Get(std::string_view table, std::string_view pk, std::string_view rk,
                           const std::vector<std::string>* select) const {
  return impl_->Get(table, pk, rk, select);
}
std::unique_ptr<ReadView> Engine::NewReadView() const { return impl_->NewReadView(); }
uint64_t Engine::visible_sequence() const { return impl_->db_->GetLatestSequenceNumber(); }
Result<std::unique_ptr<RowCursor>> Engine::Scan(std::string_view table, const ScanBounds& bounds,
                                                const ReadView* view, ScanLimits limits) const {
  return impl_->Scan(table, bounds, view, limits);
}
Result<ChangeBatch> Engine::ReadChanges(uint64_t from_lsn, size_t max_records,
                                        size_t max_bytes) const {
  return impl_->ReadChanges(from_lsn, max_records, max_bytes);
}
Result<ChangeBatch> Engine::ReadChangeHeaders(uint64_t from_lsn, size_t max_records) const {
  return impl_->ReadChangeHeaders(from_lsn, max_records);
}
Result<uint64_t> Engine::TrimChanges(uint64_t below_lsn) { return impl_->TrimChanges(below_lsn); }
uint64_t Engine::ApproximateChangeBytes(uint64_t from_lsn) const {
  return impl_->ApproximateChangeBytes(from_lsn, impl_->commits_->last_committed_lsn());
}
Result<uint64_t> Engine::ApplyRetention(uint64_t keep_from_lsn) {
  return impl_->ApplyRetention(keep_from_lsn);
}
EngineStats Engine::Stats() const { return impl_->Stats(); }

ScanBounds ScanBounds::Partition(std::string_view pk) {
  ScanBounds b;
  b.start = std::make_pair(std::string(pk), std::string());
  std::string next(pk);
  // Keys never contain control characters, so (pk + U+0001, "") sorts after
  // every row of pk and before every longer PartitionKey starting with pk.
  next.push_back('\x01');
  b.end = std::make_pair(std::move(next), std::string());
  return b;
}

}  // namespace sidetable
