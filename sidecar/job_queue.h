// A bounded multi-producer queue feeding one worker thread.
//
// TryPush never blocks: a full queue is the server's signal to answer
// ServerBusy instead of growing memory. Close() lets the worker drain what is
// queued and then stop; TakeAll() empties it for whoever answers the jobs
// instead (shutdown: 503 once the grace runs out). A job is either popped
// by the worker or taken, never both, under one mutex: a request answered
// ServerBusy is never executed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "protocol/token.h"
#include "protocol/wire.h"

namespace sidetable::sidecar {

struct Job {
  std::string envelope;  // the ROUTER identity
  bool delimiter = false;  // the client sent an empty delimiter frame (REQ socket)
  wire::Request request;
  std::chrono::steady_clock::time_point received;
  uint64_t charge = 0;  // bytes charged to admission, given back once answered
  // The verified token (auth.mode: tokens; null otherwise). Its tenant
  // holds a quota slot until the job is answered.
  std::shared_ptr<const token::Token> principal;
  uint64_t wire_bytes = 0;
  // Read-your-writes (sidecar/parked_reads.h): the session tokens are known
  // to be covered (a resumed read is not checked again), and when it parked.
  bool covered = false;
  std::chrono::steady_clock::time_point parked_at{};
};

class JobQueue {
 public:
  explicit JobQueue(size_t capacity) : capacity_(capacity) {}

  bool TryPush(Job&& job) {
    std::lock_guard lock(mu_);
    if (closed_ || jobs_.size() >= capacity_) return false;
    jobs_.push_back(std::move(job));
    cv_.notify_one();
    return true;
  }

  // A parked read whose tokens became covered: over capacity if need be
  // (it already holds its admission charge, which bounds these), never on a
  // closed queue (false: the caller executes it itself).
  bool PushResumed(Job&& job) {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    jobs_.push_back(std::move(job));
    cv_.notify_one();
    return true;
  }

  // Blocks for the next job; false once closed and empty.
  bool Pop(Job* job) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return closed_ || !jobs_.empty(); });
    if (jobs_.empty()) return false;
    *job = std::move(jobs_.front());
    jobs_.pop_front();
    return true;
  }

  // Moves every queued job to *out (appended); they will not be executed.
  void TakeAll(std::deque<Job>* out) {
    std::lock_guard lock(mu_);
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
};

}  // namespace sidetable::sidecar
