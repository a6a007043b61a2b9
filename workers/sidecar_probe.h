// SidecarProbe: is the sidecar answering, asked once a second from a thread
// of its own.
//
// The worker used to Ping between polls, on the consumer thread; while a
// batch sat in its retry loop against a frozen sidecar (up to max_attempts
// back-offs, two minutes with the production settings) nobody asked, and
// /health kept saying `sidecar_reachable: true`. The probe has its own
// client (a client is not shared between threads), so it answers whatever
// the consumer thread is doing.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "client/client.h"
#include "engine/status.h"

namespace sidetable::workers {

class SidecarProbe {
 public:
  // Connects (lazily: a sidecar that is not up yet is "unreachable" until it
  // is) and starts the thread. `options.timeout` bounds each Ping.
  static Result<std::unique_ptr<SidecarProbe>> Start(client::ClientOptions options,
                                                     std::chrono::milliseconds interval);
  ~SidecarProbe();  // stops the thread

  struct State {
    bool reachable = true;  // until the first Ping says otherwise
    std::string error;      // the last Ping's failure; "" when it answered
  };
  State state() const;
  uint64_t last_lsn() const { return last_lsn_.load(std::memory_order_relaxed); }

 private:
  SidecarProbe() = default;
  void Loop();

  std::unique_ptr<client::Client> client_;
  std::chrono::milliseconds interval_{1000};
  std::atomic<uint64_t> last_lsn_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  // Set by the destructor: a Ping in flight to a frozen sidecar is abandoned
  // at once instead of holding the worker's exit for its whole timeout.
  std::atomic<bool> abandon_{false};
  State state_;
  std::thread thread_;
};

}  // namespace sidetable::workers
