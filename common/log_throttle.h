// LogThrottle: "one warning a second at most, with the number since the
// last", for refusals that a flood would otherwise turn into a flood of log
// lines (the frontend's ServerBusy, the ZAP handler's refused handshakes,
// the REST gateway's 5xx answers).
//
// Thread safety: Record may be called from any thread; of several calls in
// the same interval, one is told to log.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace sidetable::common {

class LogThrottle {
 public:
  explicit LogThrottle(std::chrono::steady_clock::duration every = std::chrono::seconds(1))
      : every_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(every).count()) {}

  // Counts one event. Returns the number counted since the last line, this
  // one included, when the caller should write a line now; 0 otherwise
  // (within the interval, or `may_log` false: counted all the same).
  uint64_t Record(bool may_log = true) {
    count_.fetch_add(1, std::memory_order_relaxed);
    if (!may_log) return 0;
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    int64_t last = last_ns_.load(std::memory_order_relaxed);
    if (last != 0 && now - last < every_ns_) return 0;
    if (!last_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) return 0;
    return count_.exchange(0, std::memory_order_relaxed);
  }

  // The events counted since the last line, when there are some and the
  // interval has passed: for a caller that looks now and then (a loop's
  // idle tick), so that the end of a burst is logged too. 0 otherwise.
  // Before session 42 what a burst counted after its last line was never
  // logged until the next burst.
  uint64_t TakeOverdue() {
    if (count_.load(std::memory_order_relaxed) == 0) return 0;
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    int64_t last = last_ns_.load(std::memory_order_relaxed);
    if (now - last < every_ns_) return 0;
    if (!last_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) return 0;
    return count_.exchange(0, std::memory_order_relaxed);
  }

 private:
  const int64_t every_ns_;
  std::atomic<int64_t> last_ns_{0};  // steady_clock ns of the last line; 0: none yet
  std::atomic<uint64_t> count_{0};
};

}  // namespace sidetable::common
