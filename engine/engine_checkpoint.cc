// Engine::Checkpoint: a consistent copy of the whole database in a new
// directory, taken while reads and writes go on (docs/operations.md,
// "Backup and restore").
//
// RocksDB's checkpoint does the copying: it flushes the memtables when the
// live write-ahead logs are larger than kFlushAboveWalBytes, then hard-links
// the table files (or copies them on another filesystem) and copies the
// MANIFEST, OPTIONS and the live write-ahead logs, staging in
// `<dir>.tmp` and renaming at the end. The result is what a kill -9 at one
// instant would have left, so every commit made before the call is in it
// and the change log in it has no gap. The copy is then recovered once
// (Settle: its log into table files) and opened read-only: a backup nobody
// has opened is only hoped to be one, and the read-back also says exactly
// which change log it holds.
#include <rocksdb/utilities/checkpoint.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <system_error>

#include "engine/internal/codec.h"
#include "engine/internal/engine_impl.h"
#include "engine/internal/rocksdb_logger.h"
#include "engine/internal/rocksdb_options.h"

namespace sidetable {
namespace {

namespace fs = std::filesystem;

// Below this much live write-ahead log the checkpoint copies the log instead
// of flushing the memtables (Settle turns it into table files in the copy).
// Every flush left a few small table files in the data directory, one per
// column family with writes, that compaction only moves (the change log's
// keys never overlap) and each holds a descriptor open: 150 backups of a
// quiet sidecar left 462 files and 486 descriptors, and each backup took
// longer (60 ms to 290 ms), found by session 41.
constexpr uint64_t kFlushAboveWalBytes = 4 << 20;

Status Refused(const std::string& dir, const std::string& why) {
  return Status(Code::kInvalidInput, "cannot make a checkpoint at '" + dir + "': " + why);
}

// The target is new: a checkpoint never writes into, or over, a directory
// that exists (RocksDB would refuse too, but after its flush).
Status CheckTarget(const std::string& dir) {
  if (dir.empty() || dir.front() != '/') return Refused(dir, "the path must be absolute");
  if (dir.back() == '/') return Refused(dir, "the path must not end with '/'");
  std::error_code ec;
  if (fs::symlink_status(dir, ec).type() != fs::file_type::not_found) {
    return Refused(dir, "it already exists");
  }
  if (fs::symlink_status(dir + ".tmp", ec).type() != fs::file_type::not_found) {
    // RocksDB stages there and would delete what it finds.
    return Refused(dir, "'" + dir + ".tmp' exists (a checkpoint stages there)");
  }
  const fs::path parent = fs::path(dir).parent_path();
  if (!fs::is_directory(parent, ec)) {
    return Refused(dir, "its parent '" + parent.string() + "' is not a directory");
  }
  return Status::OK();
}

// What a failed checkpoint left: the staging directory, or a renamed one
// that did not read back.
void RemoveCheckpoint(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(dir + ".tmp", ec);
  fs::remove_all(dir, ec);
}

Status FromRocksDb(const rocksdb::Status& s, const std::string& dir) {
  if (s.IsNoSpace()) {
    return Status(Code::kInsufficientStorage, "the checkpoint at '" + dir + "' ran out of space (" +
                                                  s.ToString() + "); nothing was kept there");
  }
  return Status(Code::kInternal, "the checkpoint at '" + dir + "' failed: " + s.ToString() +
                                     "; nothing was kept there");
}

// The files of the checkpoint and their bytes (a hard link counts its size:
// what a copy of the directory to another machine moves).
void Measure(const std::string& dir, CheckpointInfo* info) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    info->files++;
    info->bytes += e.file_size(ec);
  }
}

// The checkpoint opened as the engine opens its database (its options and
// column families), with a logger of its own that counts what WAL recovery
// drops (RocksDB would otherwise write a LOG file into the copy).
class OpenedCopy {
 public:
  OpenedCopy() = default;
  OpenedCopy(const OpenedCopy&) = delete;
  OpenedCopy& operator=(const OpenedCopy&) = delete;
  ~OpenedCopy() { (void)Close(); }

  // `configure` adjusts RocksDB's options before the open.
  Status Open(const EngineOptions& options, const std::string& dir, bool read_only,
              const std::function<void(rocksdb::DBOptions*)>& configure = {}) {
    internal::RocksDbOptionSet opts = internal::MakeRocksDbOptions(options);
    opts.db.info_log = internal::MakeRocksDbLogger(report_);
    opts.db.create_if_missing = false;
    if (configure) configure(&opts.db);
    rocksdb::DB* raw = nullptr;
    const auto families = internal::ColumnFamilies(opts);
    rocksdb::Status s = read_only
                            ? rocksdb::DB::OpenForReadOnly(opts.db, dir, families, &handles_, &raw)
                            : rocksdb::DB::Open(opts.db, dir, families, &handles_, &raw);
    if (!s.ok()) return Status(Code::kInternal, "the checkpoint does not open: " + s.ToString());
    db_.reset(raw);
    return Status::OK();
  }
  Status Close() {
    if (!db_) return Status::OK();
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    handles_.clear();
    rocksdb::Status s = db_->Close();
    db_.reset();
    if (!s.ok()) return Status(Code::kInternal, "closing the checkpoint: " + s.ToString());
    return Status::OK();
  }
  rocksdb::DB* db() const { return db_.get(); }
  // In the order of internal::ColumnFamilies: default (meta), entities,
  // changelog, requests, images.
  rocksdb::ColumnFamilyHandle* family(size_t i) const { return handles_[i]; }
  uint64_t wal_dropped_bytes() const { return report_->wal_dropped_bytes.load(); }

 private:
  std::shared_ptr<internal::RecoveryReport> report_ = std::make_shared<internal::RecoveryReport>();
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
};

// The write-ahead log was copied while writes went on: its last record may
// be one a writer was appending at that instant, cut short (a write not
// acknowledged when the checkpoint began). Recovery drops such a tail
// without a word (rocksdb_options.cc), but every open of the backup would
// replay the copied log again. One open that recovers and flushes it into
// table files, then closes, leaves a backup that opens from its table files
// alone; a copied log damaged in its middle fails here, and the backup
// with it.
Status Settle(const EngineOptions& options, const std::string& dir) {
  OpenedCopy copy;
  ST_RETURN_IF_ERROR(copy.Open(options, dir, /*read_only=*/false, [](rocksdb::DBOptions* db) {
    db->avoid_flush_during_recovery = false;  // the recovered log into table files
  }));
  return copy.Close();
}

// Opens the checkpoint read-only, as a sidecar started on it would see it:
// the WAL replays, and the change log's ends and the catalog are what the
// info reports.
Status ReadBack(const EngineOptions& options, const std::string& dir, CheckpointInfo* info) {
  OpenedCopy copy;
  ST_RETURN_IF_ERROR(copy.Open(options, dir, /*read_only=*/true));
  if (copy.wal_dropped_bytes() > 0) {
    // Settle left no log to recover: this is damage.
    return Status(Code::kInternal, "the checkpoint's write-ahead log did not check (" +
                                       std::to_string(copy.wal_dropped_bytes()) +
                                       " bytes dropped)");
  }
  internal::LogPosition log;
  ST_RETURN_IF_ERROR(internal::ReadLogPosition(copy.db(), copy.family(0), copy.family(2), &log));
  info->first_lsn = log.first_lsn;
  info->last_lsn = log.last_lsn;
  std::unique_ptr<rocksdb::Iterator> it(
      copy.db()->NewIterator(rocksdb::ReadOptions(), copy.family(0)));
  for (it->Seek(kMetaTablePrefix); it->Valid() && it->key().starts_with(kMetaTablePrefix);
       it->Next()) {
    info->tables++;
  }
  if (!it->status().ok()) {
    return Status(Code::kInternal, "reading the checkpoint's catalog: " + it->status().ToString());
  }
  return Status::OK();
}

}  // namespace

Result<CheckpointInfo> Engine::Impl::Checkpoint(const std::string& dir) {
  const auto started = std::chrono::steady_clock::now();
  ST_RETURN_IF_ERROR(CheckTarget(dir));
  // The checkpoint flushes the memtables into the data directory: on a disk
  // already refusing writes that flush fails as they do.
  if (const StorageHealth h = storage_->Health(); h.state != StorageState::kOk) {
    return Status(
        h.state == StorageState::kNoSpace ? Code::kInsufficientStorage : Code::kUnavailable,
        "no checkpoint while the data directory refuses writes: " + h.error);
  }
  rocksdb::Checkpoint* raw = nullptr;
  rocksdb::Status s = rocksdb::Checkpoint::Create(db_.get(), &raw);
  if (!s.ok()) return FromRocksDb(s, dir);
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  s = checkpoint->CreateCheckpoint(dir, kFlushAboveWalBytes);
  if (!s.ok()) {
    RemoveCheckpoint(dir);
    return FromRocksDb(s, dir);
  }
  CheckpointInfo info;
  info.path = dir;
  Status read = Settle(options_, dir);
  if (read.ok()) read = ReadBack(options_, dir, &info);
  if (!read.ok()) {
    RemoveCheckpoint(dir);
    return Status(read.code(), "the checkpoint at '" + dir + "' was removed: " + read.message());
  }
  Measure(dir, &info);
  info.micros = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                          std::chrono::steady_clock::now() - started)
                                          .count());
  return info;
}

Result<CheckpointInfo> Engine::Checkpoint(const std::string& dir) { return impl_->Checkpoint(dir); }

}  // namespace sidetable
