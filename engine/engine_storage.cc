// The engine on a full disk: StorageGuard (see internal/storage_guard.h).
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>

#include "engine/internal/engine_impl.h"
#include "engine/internal/storage_guard.h"

namespace sidetable {
namespace {

// RocksDB reports a full disk as IOError(NoSpace), and the SstFileManager's
// max_allowed_space as IOError(SpaceLimit): both are "no space" to a client.
bool IsSpaceError(const rocksdb::Status& s) {
  return s.IsNoSpace() || (s.IsIOError() && s.subcode() == rocksdb::Status::kSpaceLimit);
}

// DB::Resume() at most this often: each failed attempt on a still-full disk
// costs a flush attempt and a line in RocksDB's info log.
constexpr auto kResumeInterval = std::chrono::seconds(2);

std::string Mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

std::string_view StorageStateName(StorageState s) {
  switch (s) {
    case StorageState::kOk: return "ok";
    case StorageState::kNoSpace: return "no_space";
    case StorageState::kFailed: return "failed";
  }
  return "failed";
}

StorageGuard::StorageGuard(std::string path, uint64_t reserve_bytes,
                           std::function<int64_t()> clock)
    : path_(std::move(path)),
      reserve_file_(path_ + "/" + kReserveFileName),
      reserve_bytes_(reserve_bytes),
      clock_(std::move(clock)) {}

void StorageGuard::Attach(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* marker_cf) {
  db_ = db;
  marker_cf_ = marker_cf;
  if (marker_cf != nullptr) {
    marker_cf_name_ = marker_cf->GetName();
    attached_.store(true, std::memory_order_release);
  }
  // Opening flushed every memtable: the first write must find the marker in.
  // Only the gate: the state waits for the first Check (the reserve is not
  // re-created yet, and a state computed now would log a false no_space).
  std::lock_guard lock(mu_);
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {
    dir_dev_ = static_cast<uint64_t>(st.st_dev);
    dir_ino_ = static_cast<uint64_t>(st.st_ino);
  }
  marker_needed_ = marker_cf != nullptr;
  if (marker_needed_) writable_.store(false, std::memory_order_release);
}

void StorageGuard::ReleaseReserve() {
  std::lock_guard lock(mu_);
  if (::unlink(reserve_file_.c_str()) == 0) {
    spdlog::info("storage: released the {} reserve in {} for start-up", Mib(reserve_bytes_), path_);
  }
  reserve_held_ = false;
}

bool StorageGuard::CreateReserve() {
  int fd = ::open(reserve_file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  // posix_fallocate allocates real blocks (or writes them where the
  // filesystem cannot): a sparse file would reserve nothing.
  int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(reserve_bytes_));
  if (rc == 0) rc = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  if (rc != 0) {
    ::unlink(reserve_file_.c_str());
    return false;
  }
  return true;
}

std::optional<uint64_t> StorageGuard::FreeBytes() const {
  struct statvfs st {};
  if (::statvfs(path_.c_str(), &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

std::string StorageGuard::DirectoryProblemLocked() const {
  if (dir_ino_ == 0) return "";  // not attached (or stat failed at the open)
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) return "";  // cannot tell; RocksDB will
    return "the data directory " + path_ +
           " was removed while open (a write now would be lost with it): restart on it";
  }
  if (static_cast<uint64_t>(st.st_dev) != dir_dev_ ||
      static_cast<uint64_t>(st.st_ino) != dir_ino_) {
    return "the data directory " + path_ +
           " was replaced by another while open: restart on the one intended";
  }
  return "";
}

StorageHealth StorageGuard::Check() {
  const std::optional<uint64_t> measured = FreeBytes();
  const uint64_t free = measured.value_or(0);
  bool resume = false;
  {
    std::lock_guard lock(mu_);
    free_bytes_ = free;
    free_known_ = measured.has_value();
    if (dir_error_.empty()) dir_error_ = DirectoryProblemLocked();
    // Twice the reserve: once for the file, once left free after it, so a
    // disk that just got the reserve back is not full again at once.
    if (reserve_bytes_ > 0 && !reserve_held_ && free >= 2 * reserve_bytes_) {
      reserve_held_ = CreateReserve();
      if (reserve_held_) free_bytes_ = FreeBytes().value_or(free_bytes_);
    }
    const auto now = std::chrono::steady_clock::now();
    if (!bg_error_.ok() && db_ != nullptr && now - last_resume_ >= kResumeInterval) {
      resume = true;
      last_resume_ = now;
    }
    UpdateLocked();
  }
  if (resume) {
    // RocksDB recovers a full disk by itself once free space reaches its
    // largest write buffer (SstFileManager; Resume() meanwhile answers Busy),
    // but not other errors, and not after it gave up: Resume() covers those.
    rocksdb::Status s = db_->Resume();
    std::lock_guard lock(mu_);
    if (s.ok()) {
      if (!bg_error_.ok()) marker_needed_ = true;
      bg_error_ = rocksdb::Status::OK();
      UpdateLocked();
    } else if (!s.IsBusy()) {
      spdlog::debug("storage: resume: {}", s.ToString());
    }
  }
  PlaceMarker();  // if needed: opens the gate without waiting for a write
  return Health();
}

StorageHealth StorageGuard::Health() const {
  std::lock_guard lock(mu_);
  StorageHealth h;
  h.state = state_;
  h.error = error_;
  h.since = since_;
  h.free_bytes = free_bytes_;
  h.free_known = free_known_;
  h.reserve_bytes = reserve_bytes_;
  h.reserve_held = reserve_held_;
  h.write_refusals = refusals_.load(std::memory_order_relaxed);
  return h;
}

void StorageGuard::PlaceMarker() {
  std::lock_guard marker_lock(marker_mu_);
  {
    std::lock_guard lock(mu_);
    // Placed by another, failed again, or not attached.
    if (!marker_needed_ || !bg_error_.ok() || db_ == nullptr || marker_cf_ == nullptr) return;
  }
  const uint64_t seals = marker_seals_.load(std::memory_order_acquire);
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;   // the point: the memtable, never the WAL
  rocksdb::Status s = db_->Put(wo, marker_cf_, kWalSwitchMarkerKey, rocksdb::Slice());
  std::lock_guard lock(mu_);
  if (s.ok() && bg_error_.ok() && marker_seals_.load(std::memory_order_acquire) == seals) {
    marker_needed_ = false;
  }
  UpdateLocked();
}

Status StorageGuard::AdmitWrite(bool client_write) {
  if (writable_.load(std::memory_order_acquire)) return Status::OK();
  bool place = false;
  {
    std::lock_guard lock(mu_);
    place = marker_needed_ && bg_error_.ok() && db_ != nullptr && marker_cf_ != nullptr;
  }
  if (place) {
    PlaceMarker();
    if (writable_.load(std::memory_order_acquire)) return Status::OK();
  }
  if (client_write) refusals_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  if (state_ == StorageState::kFailed) {
    return Status(Code::kUnavailable, "storage failed; writes are refused: " + error_);
  }
  return Status(Code::kInsufficientStorage,
                "the disk is full; writes are refused until space is freed (reads work): " + error_);
}

Status StorageGuard::WriteFailed(const rocksdb::Status& s, size_t writes) {
  std::lock_guard lock(mu_);
  if (IsSpaceError(s) && !IsSpaceError(bg_error_)) {
    // Normally OnBackgroundError has recorded it already; a write error that
    // RocksDB did not escalate still closes the gate until a check resumes.
    bg_error_ = s;
  }
  UpdateLocked();
  if (IsSpaceError(s) || state_ == StorageState::kNoSpace) {
    refusals_.fetch_add(writes, std::memory_order_relaxed);
    return Status(Code::kInsufficientStorage,
                  "the disk is full; the write was not applied (reads work): " + s.ToString());
  }
  return Status(Code::kUnavailable, "commit failed; the write was not applied: " + s.ToString());
}

void StorageGuard::OnBackgroundError(rocksdb::BackgroundErrorReason, rocksdb::Status* error) {
  if (error == nullptr || error->ok()) return;
  std::lock_guard lock(mu_);
  bg_error_ = *error;
  UpdateLocked();
}

void StorageGuard::OnErrorRecoveryEnd(const rocksdb::BackgroundErrorRecoveryInfo& info) {
  std::lock_guard lock(mu_);
  if (!bg_error_.ok() && info.new_bg_error.ok()) marker_needed_ = true;
  bg_error_ = info.new_bg_error;
  UpdateLocked();
}

void StorageGuard::OnMemTableSealed(const rocksdb::MemTableInfo& info) {
  if (!attached_.load(std::memory_order_acquire) || info.cf_name != marker_cf_name_) return;
  marker_seals_.fetch_add(1, std::memory_order_acq_rel);
  std::lock_guard lock(mu_);
  marker_needed_ = true;
  UpdateLocked();
}

void StorageGuard::OnStallConditionsChanged(const rocksdb::WriteStallInfo&) {
  // Only records (the header says why a callback cannot be trusted): the
  // next call re-reads RocksDB's state, whatever the callback said.
  next_stall_check_.store(0, std::memory_order_release);
  stall_calls_.store(0, std::memory_order_relaxed);
}

bool StorageGuard::WritesStalled() {
  const bool up = stalled_.load(std::memory_order_acquire);
  // Down (nearly always): the clock is read on one call in 64, a relaxed
  // increment on the others.
  if (!up && (stall_calls_.fetch_add(1, std::memory_order_relaxed) & 63) != 0) return false;
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (now < next_stall_check_.load(std::memory_order_acquire)) return up;
  std::unique_lock lock(stall_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return up;  // another caller is re-reading
  next_stall_check_.store(now + std::chrono::nanoseconds(kStallRecheck).count(),
                          std::memory_order_release);
  const bool stalls = stall_probe_ ? stall_probe_() : RocksDbStallsWrites();
  stalled_.store(stalls, std::memory_order_release);
  return stalls;
}

void StorageGuard::SetStallProbe(std::function<bool()> probe) {
  std::lock_guard lock(stall_mu_);
  stall_probe_ = std::move(probe);
}

bool StorageGuard::RocksDbStallsWrites() const {
  if (db_ == nullptr) return false;  // not open: nothing to wait for
  uint64_t stopped = 0, delayed_rate = 0;
  // Both DB-wide (RocksDB's write controller), both read under its mutex.
  if (!db_->GetIntProperty(rocksdb::DB::Properties::kIsWriteStopped, &stopped) ||
      !db_->GetIntProperty(rocksdb::DB::Properties::kActualDelayedWriteRate, &delayed_rate)) {
    return true;
  }
  return stopped != 0 || delayed_rate != 0;
}

void StorageGuard::UpdateLocked() {
  StorageState next = StorageState::kOk;
  std::string why;
  if (!dir_error_.empty()) {
    next = StorageState::kFailed;
    why = dir_error_;
  } else if (!bg_error_.ok()) {
    next = IsSpaceError(bg_error_) ? StorageState::kNoSpace : StorageState::kFailed;
    why = "RocksDB stopped writes: " + bg_error_.ToString();
  } else if (reserve_bytes_ > 0 && !reserve_held_) {
    next = StorageState::kNoSpace;
    why = "the " + Mib(reserve_bytes_) + " storage reserve cannot be re-created: " +
          Mib(free_bytes_) + " free in " + path_ + ", " + Mib(2 * reserve_bytes_) + " needed";
  }
  if (next != state_) {
    // One line per transition, whatever the number of refused writes.
    if (next == StorageState::kOk) {
      spdlog::info("storage: writes resume after {} ({} free)", StorageStateName(state_),
                   Mib(free_bytes_));
    } else {
      spdlog::error("storage: {}: writes are refused, reads go on: {}", StorageStateName(next), why);
    }
    state_ = next;
    since_ = clock_();
  }
  error_ = std::move(why);
  // Recovered but without the marker: the state says ok (nothing is wrong
  // any more) while writes wait for the first of them to place it.
  writable_.store(next == StorageState::kOk && !marker_needed_, std::memory_order_release);
}

// ---- Engine::Impl and the facade ---------------------------------------

StorageHealth Engine::Storage() const { return impl_->storage_->Health(); }
StorageHealth Engine::CheckStorage() { return impl_->storage_->Check(); }
bool Engine::WritesMayWait() const { return impl_->storage_->WritesStalled(); }

}  // namespace sidetable
