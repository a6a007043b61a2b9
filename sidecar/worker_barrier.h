// Orders one request with every request queued on any worker before it and
// after it: a table's creation and deletion (docs/protocol.md, "Request ids").
// With shares that do not wait, only with those before it: a query that may
// read several partitions (it sees every write sent before it, and holds no
// other worker while it reads).
//
// Requests are ordered per partition because a partition's requests go to
// one worker, in the order they arrived. A table operation touches every
// partition of its table, which live on every worker, so the frontend queues
// it on one worker (the executor) and a share of one barrier on each of the
// others. A worker that reaches its share waits there until the operation
// has run; the executor runs it once every other worker has reached its
// share. Everything queued before the barrier on any worker has then run,
// and nothing queued after it can run before it.
//
// The frontend is the only producer of new jobs and pushes the shares and
// the operation in one step, so every queue holds barriers in the same
// order and two barriers cannot wait for each other. A barrier taken off a
// queue before it ran (the shutdown's RefuseQueued) is cancelled: whoever
// waits on it goes on, and the operation is not executed.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace sidetable::sidecar {

class WorkerBarrier {
 public:
  // others: the workers that get a share (all but the executor's).
  // shares_wait false: a share only counts itself in and its worker goes
  // on; the operation still runs after everything queued before it (a
  // query of several partitions: it sees every write sent before it, and
  // holds nobody while it reads).
  explicit WorkerBarrier(size_t others, bool shares_wait = true)
      : others_(others), shares_wait_(shares_wait) {}

  bool shares_wait() const { return shares_wait_; }

  // A share's worker: counts itself in, then waits until the operation ran
  // or the barrier was cancelled (unless shares do not wait).
  void ArriveAndWait() {
    std::unique_lock lock(mu_);
    arrived_++;
    cv_.notify_all();
    if (!shares_wait_) return;
    cv_.wait(lock, [&] { return released_ || cancelled_; });
  }

  // The executor: waits until every share's worker has arrived. False when
  // the barrier was cancelled instead (the operation must not run).
  bool WaitForOthers() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return arrived_ == others_ || cancelled_; });
    return !cancelled_;
  }

  // The operation ran (whatever its outcome): the shares' workers go on.
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

  // A share or the operation was taken off its queue unexecuted.
  void Cancel() {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }

 private:
  const size_t others_;
  const bool shares_wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t arrived_ = 0;
  bool released_ = false;
  bool cancelled_ = false;
};

}  // namespace sidetable::sidecar
