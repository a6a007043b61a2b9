#include "engine/internal/commit_queue.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <vector>

#include "engine/edm.h"
#include "engine/internal/storage_guard.h"

namespace sidetable {

namespace {
// One group's WriteBatch stays below this, so a burst of large EGTs does not
// build a giant batch in memory.
constexpr size_t kMaxGroupBytes = 32 << 20;
}  // namespace

struct CommitQueue::Waiter {
  CommitWork* work = nullptr;
  // A HeldGroup's place: a leader's group ends before it (its works are
  // stamped by their own thread).
  bool held = false;
  Status status;
  bool done = false;
  uint64_t lsn = 0;
  int64_t time = 0;
  std::condition_variable cv;
};

CommitQueue::CommitQueue(rocksdb::DB* db, bool sync, uint64_t last_lsn, int64_t last_commit_time,
                         size_t max_group, std::function<int64_t()> clock, StorageGuard* storage,
                         ChangeObserver* observer)
    : db_(db),
      sync_(sync),
      max_group_(std::max<size_t>(1, max_group)),
      clock_(std::move(clock)),
      storage_(storage),
      observer_(observer),
      next_lsn_(last_lsn + 1),
      last_time_(last_commit_time),
      last_written_(last_lsn),
      last_committed_(last_lsn) {}

Status CommitQueue::Commit(CommitWork* work, uint64_t* lsn, int64_t* commit_time, bool wait_durable) {
  Status s = Write(work, lsn, commit_time);
  if (!s.ok() || !wait_durable) return s;
  return SyncTo(*lsn);
}

Status CommitQueue::SyncTo(uint64_t lsn) {
  if (last_committed_.load(std::memory_order_acquire) >= lsn) return Status::OK();
  std::unique_lock lock(sync_mu_);
  while (last_committed_.load(std::memory_order_acquire) < lsn) {
    if (syncing_) {
      sync_cv_.wait(lock);
      continue;
    }
    // This caller syncs for everyone: every group written so far is in the
    // WAL file (groups are written one at a time, in LSN order).
    syncing_ = true;
    const uint64_t target = last_written_.load(std::memory_order_acquire);
    lock.unlock();
    const rocksdb::Status s = db_->SyncWAL();
    lock.lock();
    syncing_ = false;
    sync_cv_.notify_all();
    if (!s.ok()) {
      // The others retry on their own (RocksDB refuses at once while
      // stopped).
      if (storage_ != nullptr) (void)storage_->WriteFailed(s, 0);
      return Status(Code::kUnavailable,
                    "the write reached the write-ahead log but its fsync failed (" + s.ToString() +
                        "); it is visible, and may not survive a power loss");
    }
    syncs_.fetch_add(1, std::memory_order_relaxed);
    if (target > last_committed_.load(std::memory_order_relaxed)) {
      last_committed_.store(target, std::memory_order_release);
    }
  }
  return Status::OK();
}

Status CommitQueue::Write(CommitWork* work, uint64_t* lsn, int64_t* commit_time) {
  // A full disk refuses at once, before the batch queues behind others.
  if (storage_ != nullptr) ST_RETURN_IF_ERROR(storage_->AdmitWrite());
  Waiter w;
  w.work = work;
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(&w);
  while (!w.done && queue_.front() != &w) w.cv.wait(lock);
  if (w.done) {
    *lsn = w.lsn;
    *commit_time = w.time;
    return w.status;
  }

  // Leader: take a group from the head, stamp it in queue order.
  std::vector<Waiter*> group;
  // Works refused by Admit(): at the head with the group, done without an LSN.
  std::vector<Waiter*> refused_works;
  size_t bytes = 0;
  for (Waiter* q : queue_) {
    if (q->held) break;
    if (group.size() >= max_group_ || (!group.empty() && bytes > kMaxGroupBytes)) break;
    if (Status admit = q->work->Admit(next_lsn_); !admit.ok()) {
      q->status = admit;
      q->lsn = 0;
      refused_works.push_back(q);
      continue;
    }
    q->lsn = next_lsn_++;
    // Commit times strictly increase, even if the wall clock steps back.
    last_time_ = std::max(clock_(), last_time_ + 1);
    q->time = last_time_;
    bytes += q->work->ApproximateBytes();
    group.push_back(q);
  }
  lock.unlock();
  if (group.empty()) {
    // Every work at the head was refused: nothing to write.
    lock.lock();
    for (Waiter* q : refused_works) {
      queue_.pop_front();
      q->done = true;
      if (q != &w) q->cv.notify_one();
    }
    if (!queue_.empty()) queue_.front()->cv.notify_one();
    *lsn = 0;
    *commit_time = 0;
    return w.status;
  }

  // The gate again, right before the WAL: the disk may have filled and
  // RocksDB recovered while this group queued, and after a recovery no WAL
  // write may come before the storage guard's marker (storage_guard.h).
  rocksdb::Status s;
  Status refused = storage_ != nullptr ? storage_->AdmitWrite(/*client_write=*/false) : Status::OK();
  if (refused.ok()) {
    rocksdb::WriteBatch wb(std::min(bytes + 1024, kMaxGroupBytes * 2));
    for (Waiter* q : group) q->work->Encode(q->lsn, q->time, &wb);
    // Never synced here: SyncTo() makes groups durable, one fsync for as
    // many of them as have been written meanwhile.
    s = db_->Write(rocksdb::WriteOptions(), &wb);
    // Still the head of the queue: the next group waits, and no writer of
    // this one has been told yet.
    if (observer_ != nullptr) observer_->Settled(s.ok());
  }

  lock.lock();
  const Status result = Finish(group.front()->lsn, group.back()->lsn, group.size(), refused, s);
  for (Waiter* q : group) {
    q->status = result;
    q->done = true;
    if (q != &w) q->cv.notify_one();
  }
  for (Waiter* q : refused_works) {
    q->done = true;
    if (q != &w) q->cv.notify_one();
  }
  // The group and the refused works were the head of the queue.
  for (size_t i = 0; i < group.size() + refused_works.size(); i++) queue_.pop_front();
  // The next leader tries its own group: after a failure RocksDB (stopped)
  // refuses it at once, or it commits if the failure was passing.
  if (!queue_.empty()) queue_.front()->cv.notify_one();
  *lsn = w.lsn;
  *commit_time = w.time;
  return w.status;
}

Status CommitQueue::Finish(uint64_t first_lsn, uint64_t last_lsn, size_t works, const Status& refused,
                           const rocksdb::Status& s) {
  if (!refused.ok()) {
    next_lsn_ = first_lsn;  // nothing written: the LSNs are reused
    storage_->CountRefusals(works);
    return refused;
  }
  if (s.ok()) {
    last_written_.store(last_lsn, std::memory_order_release);
    if (!sync_) last_committed_.store(last_lsn, std::memory_order_release);
    commits_.fetch_add(works, std::memory_order_relaxed);
    groups_.fetch_add(1, std::memory_order_relaxed);
    return Status::OK();
  }
  // Nothing of the group is visible (no memtable insert after a failed WAL
  // write; a torn WAL record is dropped by point-in-time recovery or made
  // obsolete by the flush of DB::Resume()), so its LSNs are reused: the
  // next group starts where this one did. Groups commit one at a time, so
  // no later LSN has been handed out.
  next_lsn_ = first_lsn;
  return storage_ != nullptr
             ? storage_->WriteFailed(s, works)
             : Status(Code::kUnavailable, "commit failed; the write was not applied: " + s.ToString());
}

CommitQueue::HeldGroup::HeldGroup() = default;
CommitQueue::HeldGroup::~HeldGroup() = default;

Status CommitQueue::Lead(HeldGroup* group) {
  if (group->leading()) return Status::OK();
  if (storage_ != nullptr) ST_RETURN_IF_ERROR(storage_->AdmitWrite());
  auto w = std::make_unique<Waiter>();
  w->held = true;
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(w.get());
  while (queue_.front() != w.get()) w->cv.wait(lock);
  group->waiter = std::move(w);
  group->works = 0;
  group->first_lsn = 0;
  if (group->batch == nullptr) {
    group->batch = std::make_unique<rocksdb::WriteBatch>();
  } else {
    group->batch->Clear();
  }
  return Status::OK();
}

Status CommitQueue::Add(HeldGroup* group, CommitWork* work, uint64_t* lsn, int64_t* commit_time) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ST_RETURN_IF_ERROR(work->Admit(next_lsn_));
    *lsn = next_lsn_++;
    last_time_ = std::max(clock_(), last_time_ + 1);
    *commit_time = last_time_;
  }
  if (group->works++ == 0) group->first_lsn = *lsn;
  // The head of the queue is ours: no other thread encodes or writes now.
  work->Encode(*lsn, *commit_time, group->batch.get());
  return Status::OK();
}

Status CommitQueue::Release(HeldGroup* group) {
  if (!group->leading()) return Status::OK();
  // The gate again, right before the WAL, as a leader's group has it.
  rocksdb::Status s;
  Status refused;
  if (group->works > 0) {
    if (storage_ != nullptr) refused = storage_->AdmitWrite(/*client_write=*/false);
    if (refused.ok()) s = db_->Write(rocksdb::WriteOptions(), group->batch.get());
    // The works were encoded (and staged) by Add() whether or not the
    // gate let them through.
    if (observer_ != nullptr) observer_->Settled(refused.ok() && s.ok());
  }
  Status result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (group->works > 0) {
      result = Finish(group->first_lsn, group->first_lsn + group->works - 1, group->works, refused, s);
    }
    queue_.pop_front();  // the held waiter was the head all along
    if (!queue_.empty()) queue_.front()->cv.notify_one();
  }
  group->waiter.reset();
  group->works = 0;
  // A group's batch can be large once; keep the buffer modest between bursts.
  if (group->batch->GetDataSize() > (1u << 20)) group->batch.reset();
  return result;
}

}  // namespace sidetable
