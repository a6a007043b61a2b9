// CommitQueue: assigns LSNs in commit order and group-commits batches.
//
// Writers that are ready to commit enqueue a CommitWork. The writer at the
// head becomes the leader: it stamps the next LSNs and commit times on a group
// of queued works, in queue order, encodes them into one RocksDB WriteBatch,
// writes it (one fsync for the whole group in Durability::kFsync) and wakes
// the others. Because LSNs are handed out in the order the WAL receives them,
// any crash leaves a contiguous prefix of the change log.
//
// A failed write (a full disk, most often) fails every batch of its group:
// none is acknowledged, and none is visible, because RocksDB inserts into
// its memtables only after the WAL write succeeded. Its LSNs are therefore
// handed out again to the next group, so the change log stays gap-free; the
// queue itself never latches shut (RocksDB refuses writes while it is stopped,
// and the StorageGuard refuses them before they queue).
//
// Durability::kFsync: a group is written to the WAL unsynced, which makes it
// visible, and made durable by SyncTo(): the first caller that needs an LSN
// durable runs one WAL fsync covering every group written so far while the
// others wait for it, so a stream of writers shares fsyncs however many
// threads they run on. last_committed_lsn() is the durable LSN: the change
// log is read (and published) only up to it. A caller that acknowledges on
// its own schedule commits with wait_durable false and calls SyncTo(lsn)
// before it acknowledges (the sidecar's acknowledger, which lets one thread
// wait for the fsync of many requests). Reads may therefore see a write up
// to one fsync before it is acknowledged; after a power loss such a write
// may be gone, as may any write whose acknowledgement was never sent.
//
// Held groups (Lead/Add/Release): one thread may keep the head of the queue
// while it prepares several writes, stamping each as it comes and writing
// them all as one WriteBatch at Release (an Engine::WriteGroup: the
// sidecar's frontend, one group per burst of small writes). Other writers
// queue behind it meanwhile and form the next group. The holder must never
// block on anything another writer holds while it waits in the queue (it
// only try-locks while holding; engine/write_group.h).
//
// Thread safety: Commit() and SyncTo() may be called from any number of
// threads; a HeldGroup by one thread at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "engine/change_observer.h"
#include "engine/status.h"

namespace rocksdb {
class DB;
class Status;
class WriteBatch;
}  // namespace rocksdb

namespace sidetable {

class StorageGuard;

class CommitWork {
 public:
  virtual ~CommitWork() = default;
  // Appends this work's rows and change record, stamped with its LSN and
  // commit time. Called once, by the leader, outside the queue lock.
  virtual void Encode(uint64_t lsn, int64_t commit_time, rocksdb::WriteBatch* batch) = 0;
  // Bytes Encode() will roughly add: bounds the size of one group.
  virtual size_t ApproximateBytes() const = 0;
  // Whether this work can take `lsn` (called by the leader under the queue
  // lock, before Encode). A refusal fails this work alone with that Status;
  // the LSN goes to the next work. Scale-out versions hold the LSN in 40
  // bits (docs/scale-out.md), which only the LSN's assignment can check.
  virtual Status Admit(uint64_t lsn) {
    (void)lsn;
    return Status::OK();
  }
};

class CommitQueue {
 public:
  struct Waiter;
  // The head of the queue held by one thread across several works
  // (Lead, Add..., Release).
  struct HeldGroup {
    HeldGroup();
    ~HeldGroup();
    bool leading() const { return waiter != nullptr; }
    size_t works = 0;        // stamped and encoded since Lead
    uint64_t first_lsn = 0;  // of the first work
    std::unique_ptr<Waiter> waiter;
    std::unique_ptr<rocksdb::WriteBatch> batch;
  };

  CommitQueue(rocksdb::DB* db, bool sync, uint64_t last_lsn, int64_t last_commit_time,
              size_t max_group, std::function<int64_t()> clock, StorageGuard* storage,
              ChangeObserver* observer = nullptr);

  // Blocks until `work` is written and, with wait_durable, durable; or
  // failed. On success fills lsn and time.
  Status Commit(CommitWork* work, uint64_t* lsn, int64_t* commit_time, bool wait_durable = true);
  // Blocks until `lsn` is durable (at once when it is, or without fsync).
  // An error means the fsync failed: the write is visible, its durability
  // unknown.
  Status SyncTo(uint64_t lsn);

  // Waits until `group` is at the head of the queue (after the groups
  // ahead of it are written). Refuses at once on a full disk.
  Status Lead(HeldGroup* group);
  // Stamps `work` with the next LSN and time and encodes it into the
  // group's batch; nothing is written yet. A refusal (Admit) takes no LSN.
  Status Add(HeldGroup* group, CommitWork* work, uint64_t* lsn, int64_t* commit_time);
  // Writes the group's works as one WriteBatch (not synced: SyncTo) and
  // gives up the head of the queue. Fails every work of the group on error
  // (nothing of it is visible; its LSNs go to the next group).
  Status Release(HeldGroup* group);

  // Durable (with fsync) and so readable from the change log.
  uint64_t last_committed_lsn() const { return last_committed_.load(std::memory_order_acquire); }
  // Written to the WAL and visible, perhaps not yet durable.
  uint64_t last_written_lsn() const { return last_written_.load(std::memory_order_acquire); }
  uint64_t commits() const { return commits_.load(std::memory_order_relaxed); }
  uint64_t groups() const { return groups_.load(std::memory_order_relaxed); }
  uint64_t syncs() const { return syncs_.load(std::memory_order_relaxed); }

 private:
  // Commit() without the wait for durability.
  Status Write(CommitWork* work, uint64_t* lsn, int64_t* commit_time);
  // The end of a group's write, under mu_: counters and LSNs after
  // RocksDB's status `s` (or the gate's refusal), the result every work of
  // the group gets.
  Status Finish(uint64_t first_lsn, uint64_t last_lsn, size_t works, const Status& refused,
                const rocksdb::Status& s);

  rocksdb::DB* const db_;
  const bool sync_;
  const size_t max_group_;
  const std::function<int64_t()> clock_;
  StorageGuard* const storage_;  // admits writes and names failures; outlives the queue
  // Told whether what the works staged was written (change_observer.h);
  // may be null. The works stage their records in Encode().
  ChangeObserver* const observer_;

  std::mutex mu_;
  std::deque<Waiter*> queue_;
  uint64_t next_lsn_;
  int64_t last_time_;

  std::atomic<uint64_t> last_written_;
  std::atomic<uint64_t> last_committed_;
  std::atomic<uint64_t> commits_{0};
  std::atomic<uint64_t> groups_{0};
  std::atomic<uint64_t> syncs_{0};

  // SyncTo(): one fsync at a time; the others wait on sync_cv_.
  std::mutex sync_mu_;
  std::condition_variable sync_cv_;
  bool syncing_ = false;
};

}  // namespace sidetable
