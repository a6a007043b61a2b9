#include "engine/internal/commit_queue.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <vector>

#include "engine/edm.h"

namespace sidetable {

namespace {
// One group's WriteBatch stays below this, so a burst of large EGTs does not
// build a giant batch in memory.
constexpr size_t kMaxGroupBytes = 32 << 20;
}  // namespace

struct CommitQueue::Waiter {
  CommitWork* work;
  Status status;
  bool done = false;
  uint64_t lsn = 0;
  int64_t time = 0;
  std::condition_variable cv;
};

CommitQueue::CommitQueue(rocksdb::DB* db, bool sync, uint64_t last_lsn,
                         int64_t last_commit_time, size_t max_group,
                         std::function<int64_t()> clock)
    : db_(db),
      sync_(sync),
      max_group_(std::max<size_t>(1, max_group)),
      clock_(std::move(clock)),
      next_lsn_(last_lsn + 1),
      last_time_(last_commit_time),
      last_committed_(last_lsn) {}

Status CommitQueue::Commit(CommitWork* work, uint64_t* lsn, int64_t* commit_time) {
  Waiter w;
  w.work = work;
  std::unique_lock<std::mutex> lock(mu_);
  if (failed_) return Status(Code::kUnavailable, "engine stopped after a write error; reopen it");
  queue_.push_back(&w);
  while (!w.done && queue_.front() != &w) w.cv.wait(lock);
  if (w.done) {
    *lsn = w.lsn;
    *commit_time = w.time;
    return w.status;
  }

  // Leader: take a group from the head, stamp it in queue order.
  std::vector<Waiter*> group;
  size_t bytes = 0;
  for (Waiter* q : queue_) {
    if (group.size() >= max_group_ || (!group.empty() && bytes > kMaxGroupBytes)) break;
    if (failed_) break;
    q->lsn = next_lsn_++;
    // Commit times strictly increase, even if the wall clock steps back.
    last_time_ = std::max(clock_(), last_time_ + 1);
    q->time = last_time_;
    bytes += q->work->ApproximateBytes();
    group.push_back(q);
  }
  lock.unlock();

  rocksdb::WriteBatch wb(std::min(bytes + 1024, kMaxGroupBytes * 2));
  for (Waiter* q : group) q->work->Encode(q->lsn, q->time, &wb);
  rocksdb::WriteOptions wo;
  wo.sync = sync_;
  rocksdb::Status s = db_->Write(wo, &wb);

  lock.lock();
  Status result;
  if (s.ok()) {
    last_committed_.store(group.back()->lsn, std::memory_order_release);
    commits_.fetch_add(group.size(), std::memory_order_relaxed);
    groups_.fetch_add(1, std::memory_order_relaxed);
  } else {
    // The LSNs of this group are burnt; refusing every later write keeps the
    // change log free of gaps until the engine is reopened and recovers.
    failed_ = true;
    result = Status(Code::kUnavailable, "commit failed: " + s.ToString());
  }
  for (Waiter* q : group) {
    queue_.pop_front();
    q->status = result;
    q->done = true;
    if (q != &w) q->cv.notify_one();
  }
  if (failed_) {
    // Everyone still queued fails too (their LSNs were never assigned).
    for (Waiter* q : queue_) {
      q->status = Status(Code::kUnavailable, "engine stopped after a write error; reopen it");
      q->done = true;
      q->cv.notify_one();
    }
    queue_.clear();
  } else if (!queue_.empty()) {
    queue_.front()->cv.notify_one();
  }
  *lsn = w.lsn;
  *commit_time = w.time;
  return w.status;
}

}  // namespace sidetable
