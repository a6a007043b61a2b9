// ParkedReads: Get and Query requests waiting for a derived table to cover
// their session tokens (docs/consistency.md), held without a worker thread.
//
// A worker that finds a read not yet covered parks its Job here and moves
// on. The Job keeps its admission charge and its place in the in-flight
// count, so a flood of waiting reads meets the ordinary bounds (ServerBusy)
// instead of growing memory. It leaves in exactly one of three ways, each
// under the one mutex, so it is answered exactly once:
//   - TakeCovered(): after an AdvanceWatermarks, the reads it now covers go
//     back to a worker queue and are executed;
//   - its deadline (waitMs): the timer thread answers it
//     ReadSessionNotAvailable through its own PUSH socket to the replies
//     endpoint (the `expire` callback);
//   - Close() at shutdown: handed to the frontend, which answers ServerBusy
//     (a read answered so was not executed).
// Park() re-checks coverage under the mutex TakeCovered() scans under, so
// an advance that lands between a worker's check and its Park() is never
// missed.
//
// Thread safety: every method from any thread; the timer thread is the
// object's own (Start() .. Close()/destructor).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "sidecar/job_queue.h"
#include "sidecar/watermarks.h"

namespace sidetable::sidecar {

class ParkedReads {
 public:
  using Clock = std::chrono::steady_clock;
  // Answers a read whose wait ran out, on the timer thread, through `out`.
  using Expire = std::function<void(Job& job, zmq::socket_t& out)>;

  ParkedReads(zmq::context_t* ctx, std::string replies_endpoint, const Watermarks* watermarks,
              Expire expire);
  ~ParkedReads();

  void Start();

  enum class Outcome { kParked, kCovered, kClosed };
  // Parks *job (moved from only when kParked) until `reqs` are covered or
  // `deadline`. kCovered: covered meanwhile, execute it now; kClosed: the
  // server is stopping, answer ServerBusy.
  Outcome Park(Job* job, std::vector<Requirement> reqs, Clock::time_point deadline);
  // Moves every parked read that is now covered to *out.
  void TakeCovered(std::vector<Job>* out);
  // Stops the timer thread (closing its socket) and moves every parked read
  // to *out; later Park() calls return kClosed.
  void Close(std::vector<Job>* out);

  size_t size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
  }

 private:
  struct Entry {
    Job job;
    std::vector<Requirement> reqs;
    std::multimap<Clock::time_point, uint64_t>::iterator deadline;
  };
  void TimerLoop();

  zmq::context_t* ctx_;
  const std::string endpoint_;
  const Watermarks* watermarks_;
  const Expire expire_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Entry> entries_;
  std::multimap<Clock::time_point, uint64_t> deadlines_;
  uint64_t next_id_ = 0;
  bool closed_ = false;
  std::thread timer_;
};

}  // namespace sidetable::sidecar
