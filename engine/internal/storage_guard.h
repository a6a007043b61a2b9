// StorageGuard: how the engine lives with a full disk (internal header).
//
// Three things keep "a full disk refuses writes and keeps serving reads"
// (docs/reliability.md, "A full disk"):
//  - RocksDB's own background-error handling. A write that hits ENOSPC fails
//    (no memtable insert, so nothing of it is visible) and RocksDB stops
//    writes with a hard error; reads go on. It recovers by itself through
//    its SstFileManager once free space reaches the write-buffer size; the
//    guard also calls DB::Resume() from the owner's maintenance, for errors
//    the automatic recovery does not take on or gave up on.
//  - A reserve file (EngineOptions::storage_reserve_bytes) in the data
//    directory. It is deleted before every open, so that RocksDB can open
//    (new MANIFEST, WAL, flush of the recovered memtables) even when the disk
//    is 100% full, and re-created once twice its size is free. While it is
//    missing, writes are refused: the gap between "re-created" and "full
//    again" is the hysteresis that keeps the engine from flapping.
//  - The data directory itself, looked at by every Check(): removed (rm -rf,
//    a volume unmounted lazily) or replaced by another directory at its
//    path, RocksDB goes on appending to the files it has open, now unlinked,
//    and acknowledges writes a restart can never find; it notices only when
//    it next creates a file (a flush: minutes at a low write rate). Session
//    43 saw 7,400 writes acknowledged, /health "ok", before that. The state
//    turns `failed` for good (a restart on the right directory is the way
//    back), so at most one maintenance tick's writes are acknowledged into
//    the void.
//  - One state (ok / no_space / failed) that writes consult first, the
//    health page reports, and the log records once per transition.
//  - A WAL switch after every recovery. RocksDB 7.8 resumes by flushing the
//    non-empty memtables, and only that flush starts a new WAL; when a WAL
//    write failed while every memtable was empty (typically the first write
//    after the previous recovery), it would keep the failed WAL's writer and
//    the next write trips an assertion in Debian's librocksdb (an abort).
//    So writes stay closed until one WAL-less marker is in the catalog's
//    memtable: a later failure then always has a memtable to flush, and the
//    flush always switches the WAL. The marker is needed again whenever the
//    catalog's active memtable lost it: at the start (opening flushes what
//    the WAL held, so every memtable is empty: session 31 found the abort
//    there), after every recovery, and whenever the catalog's memtable is
//    sealed (max_total_wal_size seals it in normal operation; RocksDB's
//    OnMemTableSealed, called in the write path before the next write
//    group). The maintenance tick places it too, so the gate rarely waits for
//    a write. What stays open: the one write group whose own WAL switch
//    sealed the catalog's memtable goes on to the WAL without the marker in
//    an active memtable; it aborts only if that WAL write fails while every
//    other active memtable is empty too.
//
// Thread safety: every method may be called from any thread. The listener
// callbacks run on RocksDB's threads (some with its mutex held): they only
// record, never call into the DB.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/listener.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "engine/engine.h"

namespace sidetable {

class StorageGuard : public rocksdb::EventListener {
 public:
  StorageGuard(std::string path, uint64_t reserve_bytes, std::function<int64_t()> clock);

  // Before DB::Open: gives the reserve's space back to the filesystem.
  void ReleaseReserve();
  // After DB::Open; then Check() once to re-create the reserve. `marker_cf`
  // takes the WAL-switch marker (the catalog's column family).
  void Attach(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* marker_cf);

  // The maintenance tick: re-creates the reserve when space allows and asks
  // RocksDB to resume after a background error. Returns the health after.
  StorageHealth Check();
  StorageHealth Health() const;

  // Per write, before any lock, and again by the commit leader right before
  // the WAL write: OK, or the refusal (counted). `client_write` false for the
  // engine's own bookkeeping (settings, log trimming, the leader's re-check):
  // refused the same way, not counted as a client's refusal.
  Status AdmitWrite(bool client_write = true);
  // Adds `writes` client refusals (a commit group refused by the re-check).
  void CountRefusals(size_t writes) { refusals_.fetch_add(writes, std::memory_order_relaxed); }
  // A failed RocksDB write of a group of `writes` batches: the Status each
  // gets (InsufficientStorage for a full disk), with the state updated and
  // the refusals counted.
  Status WriteFailed(const rocksdb::Status& s, size_t writes);

  // rocksdb::EventListener
  void OnBackgroundError(rocksdb::BackgroundErrorReason reason, rocksdb::Status* error) override;
  void OnErrorRecoveryEnd(const rocksdb::BackgroundErrorRecoveryInfo& info) override;
  // The marker's memtable sealed: the active one no longer holds it.
  void OnMemTableSealed(const rocksdb::MemTableInfo& info) override;
  // RocksDB delays or stops writes while flushes or compaction catch up.
  void OnStallConditionsChanged(const rocksdb::WriteStallInfo& info) override;
  // Whether RocksDB may make a write wait now (delayed or stopped): the
  // frontend then hands writes to a worker. RocksDB's stall callbacks cannot
  // say so in time: a stall found by a write is announced when that write
  // returns, after the stall, and then after the flush thread's "stopped ->
  // normal". Trusting their order left the flag up with nothing stalled and
  // every write on the workers' slower path for the rest of the process
  // (docs/performance.md, issue 17, session 27). So the flag is RocksDB's
  // write controller as re-read (`stall probe`) at most every
  // kStallRecheck: on every call while it is up, on every 64th call while
  // it is down; a callback only makes the next call re-read.
  bool WritesStalled();
  static constexpr std::chrono::milliseconds kStallRecheck{10};
  // What WritesStalled re-reads: by default the DB's "rocksdb.is-write-stopped"
  // and "rocksdb.actual-delayed-write-rate" (after Attach; never from a
  // callback, which may run under RocksDB's mutex). Tests replace it.
  void SetStallProbe(std::function<bool()> probe);

 private:
  // Recomputes the state from its inputs; logs a transition. Holds mu_.
  void UpdateLocked();
  bool CreateReserve();
  // After a recovery: puts the marker (no WAL) and opens writes. Holds
  // marker_mu_, not mu_ (a write may wait on threads whose callbacks take it).
  void PlaceMarker();
  // nullopt when the path cannot be looked up.
  std::optional<uint64_t> FreeBytes() const;
  // What is wrong with the data directory ("" if nothing): gone, or another
  // directory at its path than the one opened (dir_dev_, dir_ino_). Holds mu_.
  std::string DirectoryProblemLocked() const;

  const std::string path_;
  const std::string reserve_file_;
  const uint64_t reserve_bytes_;
  const std::function<int64_t()> clock_;
  rocksdb::DB* db_ = nullptr;
  rocksdb::ColumnFamilyHandle* marker_cf_ = nullptr;
  std::string marker_cf_name_;  // set by Attach, before any callback reads it
  std::atomic<bool> attached_{false};
  // Seals of the marker's memtable: PlaceMarker clears marker_needed_ only if
  // none happened around its Put (which may have gone into the sealed one).
  std::atomic<uint64_t> marker_seals_{0};
  std::mutex marker_mu_;

  mutable std::mutex mu_;
  rocksdb::Status bg_error_;   // RocksDB's current background error, OK if none
  std::string dir_error_;      // DirectoryProblemLocked() once seen; never cleared
  uint64_t dir_dev_ = 0, dir_ino_ = 0;  // the directory opened (set by Attach)
  bool reserve_held_ = false;
  bool marker_needed_ = false;  // started, recovered or flushed; marker not yet placed
  StorageState state_ = StorageState::kOk;
  std::string error_;
  int64_t since_ = 0;
  uint64_t free_bytes_ = 0;
  bool free_known_ = false;
  std::chrono::steady_clock::time_point last_resume_{};

  // Read on every write without the mutex.
  std::atomic<bool> writable_{true};
  std::atomic<uint64_t> refusals_{0};
  bool RocksDbStallsWrites() const;
  // One re-check at a time; guards stall_probe_.
  std::mutex stall_mu_;
  std::function<bool()> stall_probe_;
  std::atomic<bool> stalled_{false};
  // steady_clock ns of the next re-check; 0: at the next call.
  std::atomic<int64_t> next_stall_check_{0};
  // WritesStalled calls, for the one in 64 that looks at the clock.
  std::atomic<uint32_t> stall_calls_{0};
};

// The WAL-switch marker's key in the catalog column family (no other key
// there starts with "storage/").
inline constexpr const char* kWalSwitchMarkerKey = "storage/wal-switch";

// "storage.reserve" lives here, beside RocksDB's files.
inline constexpr const char* kReserveFileName = "SIDETABLE-RESERVE";
// Locked (fcntl, through rocksdb::Env) by the engine that has the directory
// open; RocksDB's own LOCK is taken later, after the reserve is released.
inline constexpr const char* kDirLockFileName = "SIDETABLE-LOCK";

}  // namespace sidetable
