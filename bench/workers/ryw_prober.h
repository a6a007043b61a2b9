// Read-your-writes probe of sidetable-workers-bench: a thread with its own
// client and client::Session that writes a new source entity, then at once
// Gets its index entry through the session (the sidecar holds the read until
// the index's applied watermarks cover the write, docs/consistency.md), and
// records how long that Get took and what it returned.
//
// Probes are attributed to the phase set when the write was made; none are
// made while the phase is negative. One probe at a time, then `interval`.
//
// Thread safety: SetPhase/Take from any thread; the probe thread owns its
// client and session. The destructor stops and joins the thread.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "bench/harness.h"
#include "client/client.h"
#include "client/session.h"

namespace sidetable::wbench {

struct RywStats {
  bench::Latencies get;        // session Get durations, found entries only
  double max_ms = 0;
  uint64_t probes = 0;         // writes acknowledged
  uint64_t found = 0;          // Get returned the entry
  uint64_t not_available = 0;  // ReadSessionNotAvailable
  uint64_t missing = 0;        // ResourceNotFound: would be a read-your-writes violation
  uint64_t errors = 0;         // failed writes or other Get errors
  uint64_t Failures() const { return not_available + missing + errors; }
};

class RywProber {
 public:
  // `make(n)` gives the n-th probe entity and its index keys.
  using Make = std::function<std::pair<Entity, std::pair<std::string, std::string>>(uint64_t)>;

  RywProber(const std::string& endpoint, std::string source, std::string target, Make make,
            std::chrono::milliseconds interval, std::atomic<uint64_t>* acked)
      : source_(std::move(source)), target_(std::move(target)), make_(std::move(make)), interval_(interval),
        acked_(acked) {
    client::ClientOptions o;
    o.endpoint = endpoint;
    o.max_attempts = 1;
    o.timeout = std::chrono::milliseconds(10000);
    o.caller = "wbench-ryw";
    auto c = client::Client::Connect(o);
    if (!c.ok()) bench::Die("read-your-writes client: " + c.status().ToString());
    client_ = std::move(c).value();
    session_ = std::make_unique<client::Session>(client_.get());
    thread_ = std::thread([this] { Run(); });
  }
  ~RywProber() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  void SetPhase(int phase) { phase_.store(phase); }
  RywStats Take(int phase) {
    std::lock_guard l(mu_);
    RywStats s = std::move(stats_[phase]);
    stats_.erase(phase);
    return s;
  }

 private:
  void Run() {
    using bench::Clock;
    pthread_setname_np(pthread_self(), "wb-ryw");
    uint64_t n = 0;
    while (!stop_) {
      const int phase = phase_.load();
      if (phase < 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      auto [e, keys] = make_(n++);
      auto w = session_->InsertOrReplace(source_, std::move(e));
      if (!w.ok()) {
        std::lock_guard l(mu_);
        if (stats_[phase].errors++ == 0)
          std::fprintf(stderr, "  read-your-writes: write failed: %s\n", w.status().ToString().c_str());
        continue;
      }
      acked_->fetch_add(1);
      const auto t0 = Clock::now();
      auto g = session_->Get(target_, keys.first, keys.second, {"SourceVersion"});
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      {
        std::lock_guard l(mu_);
        RywStats& s = stats_[phase];
        s.probes++;
        if (g.ok()) {
          s.found++;
          s.get.Add(static_cast<uint64_t>(ms * 1e6));
          s.max_ms = std::max(s.max_ms, ms);
        } else {
          const Code c = g.status().code();
          if (c == Code::kReadSessionNotAvailable) s.not_available++;
          else if (c == Code::kResourceNotFound || c == Code::kTableNotFound) s.missing++;
          else s.errors++;
          if (s.Failures() == 1)
            std::fprintf(stderr, "  read-your-writes: Get after the write: %s\n", g.status().ToString().c_str());
        }
      }
      std::this_thread::sleep_for(interval_);
    }
  }

  const std::string source_, target_;
  const Make make_;
  const std::chrono::milliseconds interval_;
  std::atomic<uint64_t>* acked_;
  std::unique_ptr<client::Client> client_;
  std::unique_ptr<client::Session> session_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> phase_{-1};
  std::mutex mu_;
  std::map<int, RywStats> stats_;
};

}  // namespace sidetable::wbench
