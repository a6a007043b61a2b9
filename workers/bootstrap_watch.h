// BootstrapWatch: follows kafka.bootstrap_file after start-up.
//
// A development sidecar with embedded Kafka (librdkafka's mock cluster)
// comes back on a new port each time it restarts, and writes the new address
// to its bootstrap file. A worker that read the file once kept retrying the
// old address forever (issue 16). This thread re-reads the file every
// `interval`; when it names another address, it calls `on_change(address)`
// once and stops watching.
//
// Thread safety: Start/Stop from one thread; on_change runs on the watch
// thread. Stop() (also run by the destructor) returns within `interval`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace sidetable::workers {

class BootstrapWatch {
 public:
  BootstrapWatch(std::string path, std::string current, std::chrono::milliseconds interval,
                 std::function<void(const std::string&)> on_change);
  ~BootstrapWatch();
  BootstrapWatch(const BootstrapWatch&) = delete;
  BootstrapWatch& operator=(const BootstrapWatch&) = delete;

  void Stop();

  // The first line of `path`, trimmed; "" when missing or empty (a sidecar
  // that is rewriting it).
  static std::string ReadAddress(const std::string& path);

 private:
  void Run();

  const std::string path_, current_;
  const std::chrono::milliseconds interval_;
  const std::function<void(const std::string&)> on_change_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sidetable::workers
