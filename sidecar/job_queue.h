// A bounded multi-producer queue feeding one worker thread.
//
// TryPush never blocks: a full queue is the server's signal to answer
// ServerBusy instead of growing memory. Close() lets the worker drain what is
// queued and then stop; TakeAll() empties it for whoever answers the jobs
// instead (shutdown: 503 once the grace runs out). A job is either popped
// by the worker or taken, never both, under one mutex: a request answered
// ServerBusy is never executed.
//
// Idle() tells the frontend that every job it ever gave this queue has been
// answered (its reply handed to the reply socket): a request of one of its
// partitions may then run on the frontend itself without overtaking any
// earlier request of that partition (server.cc, "inline execution"). The
// count goes up when a job is queued and down when the worker calls Done()
// after answering it, or when TakeAll() hands it to someone else.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "protocol/token.h"
#include "protocol/wire.h"
#include "sidecar/admission.h"
#include "sidecar/worker_barrier.h"

namespace sidetable::sidecar {

struct WriteManyPart;  // write_many_gather.h

struct Job {
  std::string envelope;  // the ROUTER identity
  bool delimiter = false;  // the client sent an empty delimiter frame (REQ socket)
  wire::Request request;
  std::chrono::steady_clock::time_point received;
  uint64_t charge = 0;  // bytes charged to admission, given back once answered
  WorkerSet queued_on;  // the worker queues admission counts it on (Admission::NoteQueued)
  // The verified token (auth.mode: tokens; null otherwise). Its tenant
  // holds a quota slot until the job is answered.
  std::shared_ptr<const token::Token> principal;
  uint64_t wire_bytes = 0;
  // Read-your-writes (sidecar/parked_reads.h): the session tokens are known
  // to be covered (a resumed read is not checked again), and when it parked.
  bool covered = false;
  std::chrono::steady_clock::time_point parked_at{};
  // Scale-out: queued on a forwarding thread (its shard is served by
  // another sidecar, or it fans out); the owner handles its session tokens.
  bool forward = false;
  // A table operation (its executor) or, with barrier_share, a share of its
  // barrier on another worker: not a request, nothing to answer
  // (worker_barrier.h).
  std::shared_ptr<WorkerBarrier> barrier;
  bool barrier_share = false;
  // A part of a WriteMany split by worker (write_many_gather.h): answered
  // through its gather, which holds the request's admission and in-flight
  // count; the part holds neither.
  std::shared_ptr<WriteManyPart> part;
};

class JobQueue {
 public:
  explicit JobQueue(size_t capacity) : capacity_(capacity) {}

  bool TryPush(Job&& job) {
    std::lock_guard lock(mu_);
    if (closed_ || jobs_.size() >= capacity_) return false;
    jobs_.push_back(std::move(job));
    unfinished_.fetch_add(1, std::memory_order_relaxed);
    // A worker that is busy finds the job when it next looks; only a
    // sleeping one needs the futex wake.
    if (sleeping_) cv_.notify_one();
    return true;
  }

  // A parked read whose tokens became covered: over capacity if need be
  // (it already holds its admission charge, which bounds these), never on a
  // closed queue (false: the caller executes it itself).
  bool PushResumed(Job&& job) {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    jobs_.push_back(std::move(job));
    unfinished_.fetch_add(1, std::memory_order_relaxed);
    if (sleeping_) cv_.notify_one();
    return true;
  }

  // A barrier's share: over capacity if need be (the frontend checked
  // HasRoom() of every queue before pushing one), never on a closed queue.
  bool PushShare(Job&& job) { return PushResumed(std::move(job)); }

  // Whether TryPush would take one more job now (the frontend, the only
  // producer of new jobs, pushes right after asking).
  bool HasRoom() const {
    std::lock_guard lock(mu_);
    return !closed_ && jobs_.size() < capacity_;
  }

  // Blocks for the next job; false once closed and empty. Every job popped
  // is later reported with Done().
  bool Pop(Job* job) {
    std::unique_lock lock(mu_);
    if (jobs_.empty() && !closed_) {
      sleeping_ = true;
      cv_.wait(lock, [&] { return closed_ || !jobs_.empty(); });
      sleeping_ = false;
    }
    if (jobs_.empty()) return false;
    *job = std::move(jobs_.front());
    jobs_.pop_front();
    return true;
  }

  // A popped job was answered (or handed over, e.g. parked): after its
  // reply was sent, so the frontend that sees Idle() also sees the reply.
  void Done() { unfinished_.fetch_sub(1, std::memory_order_release); }

  // Nothing queued or executing; read by the frontend, the only producer
  // of new jobs (besides resumed reads, which order nothing).
  bool Idle() const { return unfinished_.load(std::memory_order_acquire) == 0; }

  // Moves every queued job to *out (appended); they will not be executed.
  void TakeAll(std::deque<Job>* out) {
    std::lock_guard lock(mu_);
    unfinished_.fetch_sub(jobs_.size(), std::memory_order_release);
    while (!jobs_.empty()) {
      out->push_back(std::move(jobs_.front()));
      jobs_.pop_front();
    }
  }

  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }

  size_t size() const {
    std::lock_guard lock(mu_);
    return jobs_.size();
  }

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool closed_ = false;
  bool sleeping_ = false;  // the worker waits on cv_ (under mu_)
  std::atomic<uint64_t> unfinished_{0};
};

}  // namespace sidetable::sidecar
