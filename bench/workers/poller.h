// The index poller of sidetable-workers-bench: finds when sampled source
// writes become readable in an index table.
//
// Samples are queued per source PartitionKey: one PartitionKey's events are
// on one Kafka partition, applied in commit order, so a later sample of it
// cannot be readable before an earlier one. Only the oldest of each queue is
// polled (Get by the index keys), again after a quarter of its age (1-25 ms);
// when it is found the next one is polled at once. That saves Gets without
// losing resolution.
//
// A "tail" sample is a PartitionKey's last write of a phase: it is polled
// like the others but left out of the latency figures; once every sample and
// tail of a phase is found, every write of the phase is in the index (commit
// order per PartitionKey), and the latest found time says when.
//
// Thread safety: TryAdd/Pending/Abandon/Results from any thread; the poller
// thread owns its client. The destructor stops and joins the thread.
#pragma once

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/harness.h"
#include "client/client.h"

namespace sidetable::wbench {

struct Sample {
  int phase = 0;
  bool tail = false;                  // completion only, not in the latency figures
  std::string src_pk;                 // the source entity's PartitionKey (the queue)
  std::string ipk, irk;               // the index entry's keys
  bench::Clock::time_point ack;       // the source write's reply
  int64_t src_ticks = 0;              // the source write's commit timestamp
  bench::Clock::time_point next;      // next poll
};
struct Resolved {
  int phase;
  bool tail;
  double ack_to_readable_ms;
  double commit_to_index_ms;
  bench::Clock::time_point found_at;  // the reply of the Get that found it
};

class Poller {
 public:
  Poller(const std::string& endpoint, std::string target, int max_pending)
      : target_(std::move(target)), max_pending_(static_cast<size_t>(max_pending)) {
    client::ClientOptions o;
    o.endpoint = endpoint;
    o.max_attempts = 1;
    o.timeout = std::chrono::milliseconds(10000);
    o.caller = "wbench-poller";
    auto c = client::Client::Connect(o);
    if (!c.ok()) bench::Die("poller: " + c.status().ToString());
    client_ = std::move(c).value();
    thread_ = std::thread([this] { Run(); });
  }
  ~Poller() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // False (not taken) when max_pending samples are being polled already;
  // `force` (tails) ignores the limit.
  bool TryAdd(Sample s, bool force = false) {
    std::lock_guard l(mu_);
    if (!force && count_ >= max_pending_) return false;
    s.next = s.ack;
    queues_[s.src_pk].push_back(std::move(s));
    count_++;
    return true;
  }
  size_t Pending(int phase) {
    std::lock_guard l(mu_);
    size_t n = 0;
    for (const auto& [pk, q] : queues_)
      for (const auto& s : q) n += s.phase == phase;
    return n;
  }
  // Drops what is still pending for `phase` (timed out); returns how many
  // samples (tails not counted) were dropped.
  size_t Abandon(int phase) {
    std::lock_guard l(mu_);
    size_t n = 0, samples = 0;
    for (auto& [pk, q] : queues_)
      n += std::erase_if(q, [&](const Sample& s) {
        if (s.phase != phase) return false;
        samples += !s.tail;
        return true;
      });
    count_ -= n;
    return samples;
  }
  std::vector<Resolved> Results(int phase) {
    std::lock_guard l(mu_);
    std::vector<Resolved> out;
    for (const auto& r : resolved_)
      if (r.phase == phase) out.push_back(r);
    return out;
  }
  uint64_t gets() const { return gets_.load(); }
  uint64_t errors() const { return errors_.load(); }

 private:
  void Run() {
    using bench::Clock;
    pthread_setname_np(pthread_self(), "wb-poller");
    struct Due {
      Sample s;
      bool found = false;
      int64_t index_ticks = 0;
      Clock::time_point at;
    };
    while (!stop_) {
      std::vector<Due> due;
      Clock::time_point earliest = Clock::now() + std::chrono::milliseconds(1);
      {
        std::lock_guard l(mu_);
        const auto now = Clock::now();
        for (const auto& [pk, q] : queues_) {
          if (q.empty()) continue;
          if (q.front().next <= now) due.push_back({q.front()});
          else earliest = std::min(earliest, q.front().next);
        }
      }
      if (due.empty()) {
        std::this_thread::sleep_until(earliest);
        continue;
      }
      for (auto& d : due) {
        gets_++;
        client_->SendGet(target_, d.s.ipk, d.s.irk, [this, &d](Result<Entity> e) {
          d.at = Clock::now();
          if (e.ok()) {
            d.found = true;
            d.index_ticks = e->timestamp;
          } else if (e.status().code() != Code::kResourceNotFound && e.status().code() != Code::kTableNotFound) {
            errors_++;
          }
        });
      }
      client_->Drain();
      std::lock_guard l(mu_);
      for (const auto& d : due) {
        auto it = queues_.find(d.s.src_pk);
        if (it == queues_.end() || it->second.empty() || it->second.front().ack != d.s.ack ||
            it->second.front().irk != d.s.irk)
          continue;  // abandoned meanwhile
        Sample& f = it->second.front();
        if (d.found) {
          resolved_.push_back({f.phase, f.tail, std::chrono::duration<double, std::milli>(d.at - f.ack).count(),
                               static_cast<double>(d.index_ticks - f.src_ticks) / 1e4, d.at});
          it->second.pop_front();
          count_--;
        } else {
          const auto age = d.at - f.ack;
          f.next = d.at + std::clamp<Clock::duration>(age / 4, std::chrono::milliseconds(1),
                                                      std::chrono::milliseconds(25));
        }
      }
    }
  }

  const std::string target_;
  const size_t max_pending_;
  std::unique_ptr<client::Client> client_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::map<std::string, std::deque<Sample>> queues_;
  size_t count_ = 0;
  std::vector<Resolved> resolved_;
  std::atomic<uint64_t> gets_{0}, errors_{0};
};

}  // namespace sidetable::wbench
