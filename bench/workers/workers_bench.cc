// sidetable-workers-bench: how long a committed source write takes to show up
// in an index table kept by the real `sidetable-worker` (patterns/index_table),
// and how many change events per second one or two workers apply.
//
// Per repeat and per worker count (--workers, default 1 then 2), a fresh
// environment: a librdkafka mock cluster (EmbeddedKafka) in this process with
// the change and dead-letter topics created beforehand; the real `sidetable`
// binary (--durability os, kafka.bootstrap at the mock); W real
// `sidetable-worker` processes in one consumer group with one index_table
// pattern (Users.Email -> UsersByEmail, projecting Name).
//
// 1. Latency: InsertOrReplace of new source entities, each with a unique
//    Email, paced at each --rates rate. Every --sample-every-th acknowledged
//    write is handed to a poller thread (its own client) that Gets the index
//    entry (keys from patterns/index_table/index_keys.h, exactly as the
//    pattern computes them) until it exists, re-polling after age/4 (1-25 ms).
//    Two figures per sample:
//      ack -> readable   steady clock, the write's reply to the Get that
//                        found the entry (an upper bound: polling resolution)
//      commit -> index   the index entry's Timestamp minus the source write's
//                        commit timestamp (both the sidecar's clock, 100 ns
//                        ticks): exact, no polling in it
// 2. Throughput: the workers are stopped (SIGTERM: they commit and leave the
//    group), --preload writes are made, then W workers are started at once;
//    their /metrics events counters are summed every 20 ms until they reach
//    the preload count, then the index is counted to check it is complete.
//    events/s = preload / (done - first event processed); the group join is
//    reported separately.
//
// Every loop is bounded; children are stopped at exit (also on a fatal
// error, via atexit). See bench/workers/README.md.
#include <CLI/CLI.hpp>
#include <httplib.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/harness.h"
#include "client/client.h"
#include "common/kafka/embedded_kafka.h"
#include "engine/batch.h"
#include "engine/edm.h"
#include "patterns/index_table/index_keys.h"
#include "patterns/index_table/index_table.h"
#include "testing/sidecar_process.h"
#include "testing/worker_process.h"

namespace sidetable::wbench {
namespace {

using bench::Clock;
using bench::Die;
using bench::FormatMillis;
using bench::FormatSecondsOrDash;
using bench::Hostname;
using bench::Median;
using bench::WithCommas;
using kafka::EmbeddedKafka;

constexpr const char* kSidecarId = "wbench";
constexpr const char* kTopic = "sidetable.wbench.changes";  // the sidecar's default topic template
constexpr const char* kDlq = "sidetable.wbench.dead-letter";
constexpr const char* kGroup = "wbench-workers";
constexpr const char* kSource = "Users";
constexpr const char* kTarget = "UsersByEmail";
constexpr const char* kProperty = "Email";

// ---- children to stop at exit -------------------------------------------------
std::atomic<bool> g_stop{false};
std::array<std::atomic<pid_t>, 16> g_children{};

void OnSignal(int) { g_stop.store(true); }
void Track(pid_t p) {
  for (auto& c : g_children) {
    pid_t none = 0;
    if (c.compare_exchange_strong(none, p)) return;
  }
}
void Untrack(pid_t p) {
  for (auto& c : g_children) {
    pid_t expect = p;
    c.compare_exchange_strong(expect, 0);
  }
}
void TermChildrenAtExit() {
  for (auto& c : g_children) {
    pid_t p = c.exchange(0);
    if (p > 0) ::kill(p, SIGTERM);
  }
}

double Sec(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// CPU seconds (user + system) of a process, from /proc; -1 if it is gone.
double CpuSeconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; i++) {
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) stime = std::atof(field.c_str());
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

struct Config {
  std::string sidetable = SIDETABLE_DEFAULT_BIN;
  std::string worker = SIDETABLE_WORKER_DEFAULT_BIN;
  std::string rates = "200,1000,2000";
  std::string workers = "1,2";
  double seconds = 4;
  double warmup = 1;
  int repeat = 3;
  bool quick = false;
  int sample_every = 10;
  int max_pending = 2000;  // samples queued at once; more are not taken
  int preload = 20000;
  int partitions = 64;        // source PartitionKeys (round robin)
  int topic_partitions = 12;  // Kafka partitions of the change topic
  int window = 256;           // writes in flight (paced phases)
  int preload_window = 64;    // writes in flight (preload, as fast as it goes)
  size_t notes_bytes = 200;   // padding per source entity
  int worker_fetch_wait_ms = 1;  // the workers' fetch.wait.max.ms; -1 = librdkafka's default (500)
  std::vector<std::string> worker_props;
  std::string scratch = "/tmp";
  bool keep = false;
  bool no_throughput = false;
  bool no_latency = false;
};

// ---- the workers' /metrics ------------------------------------------------------
// The values of unlabelled metrics from one scrape; false when the worker
// does not answer or one is missing.
bool MetricsOf(const std::string& hostport, const std::vector<const char*>& names, std::vector<double>* out) {
  const size_t colon = hostport.rfind(':');
  httplib::Client http(hostport.substr(0, colon), std::stoi(hostport.substr(colon + 1)));
  http.set_connection_timeout(1, 0);
  http.set_read_timeout(2, 0);
  auto res = http.Get("/metrics");
  if (!res || res->status != 200) return false;
  out->clear();
  for (const char* name : names) {
    const std::string key = std::string("\n") + name + " ";
    const size_t at = res->body.find(key);
    if (at == std::string::npos) return false;
    out->push_back(std::atof(res->body.c_str() + at + key.size()));
  }
  return true;
}
double MetricOf(const std::string& hostport, const char* name) {
  std::vector<double> v;
  return MetricsOf(hostport, {name}, &v) ? v[0] : -1;
}

// ---- the index poller -------------------------------------------------------------
// Samples are queued per source PartitionKey: one PartitionKey's events are
// on one Kafka partition, applied in commit order, so a later sample of it
// cannot be readable before an earlier one. Only the oldest of each queue is
// polled; when it is found the next one is polled at once. That saves Gets
// without losing resolution.
struct Sample {
  int phase = 0;
  std::string src_pk;        // the source entity's PartitionKey (the queue)
  std::string ipk, irk;      // the index entry's keys
  Clock::time_point ack;     // the source write's reply
  int64_t src_ticks = 0;     // the source write's commit timestamp
  Clock::time_point next;    // next poll
};
struct Resolved {
  int phase;
  double ack_to_readable_ms;
  double commit_to_index_ms;
};

class Poller {
 public:
  Poller(const std::string& endpoint, int max_pending) : max_pending_(static_cast<size_t>(max_pending)) {
    client::ClientOptions o;
    o.endpoint = endpoint;
    o.max_attempts = 1;
    o.timeout = std::chrono::milliseconds(10000);
    o.caller = "wbench-poller";
    auto c = client::Client::Connect(o);
    if (!c.ok()) Die("poller: " + c.status().ToString());
    client_ = std::move(c).value();
    thread_ = std::thread([this] { Run(); });
  }
  ~Poller() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // False (not taken) when max_pending samples are being polled already.
  bool TryAdd(Sample s) {
    std::lock_guard l(mu_);
    if (count_ >= max_pending_) return false;
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
  // Drops what is still pending for `phase` (timed out); returns how many.
  size_t Abandon(int phase) {
    std::lock_guard l(mu_);
    size_t n = 0;
    for (auto& [pk, q] : queues_) n += std::erase_if(q, [&](const Sample& s) { return s.phase == phase; });
    count_ -= n;
    return n;
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
        client_->SendGet(kTarget, d.s.ipk, d.s.irk, [this, &d](Result<Entity> e) {
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
          resolved_.push_back({f.phase, Ms(d.at - f.ack), static_cast<double>(d.index_ticks - f.src_ticks) / 1e4});
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

// ---- results ---------------------------------------------------------------------
struct LatencyResult {
  double target = 0, writes_per_s = 0;
  uint64_t acked = 0, errors = 0, skipped_writes = 0;
  uint64_t samples = 0, sampled_skipped = 0, unresolved = 0;
  double readable_p50 = 0, readable_p99 = 0, readable_max = 0;
  double commit_p50 = 0, commit_p99 = 0, commit_max = 0;
  double gets_per_s = 0;
  double cpu_sidecar = 0, cpu_workers = 0, cpu_bench = 0;  // % of one core
};
struct ThroughputResult {
  uint64_t preloaded = 0;
  double preload_s = 0, join_s = -1, drain_s = -1, events_per_s = 0, total_s = -1;
  // Counted by the workers when done: every event, and those no pattern
  // wanted (the echoes of the workers' own index writes, which the sidecar
  // publishes on the same topic).
  double events_seen = 0, events_ignored = 0, rebalances = 0;
  double Redelivered() const { return events_seen - events_ignored - static_cast<double>(preloaded); }
  bool complete = false;
  uint64_t index_count = 0, index_expected = 0;
  double cpu_sidecar = 0, cpu_workers = 0, cpu_bench = 0;
};
struct RunResult {
  std::vector<LatencyResult> latency;
  ThroughputResult throughput;
};

// ---- one environment ----------------------------------------------------------------
class Env {
 public:
  Env(const Config& cfg, int workers, int run) : cfg_(cfg), workers_(workers), run_(run),
        dir_(cfg.scratch, "wbench-", cfg.keep) {
    auto ic = patterns::IndexTableConfig::FromSettings(
        {patterns::kIndexTableName,
         {{"source", {kSource}}, {"target", {kTarget}}, {"properties", {kProperty}}, {"project", {"Name"}}}});
    if (!ic.ok()) Die("index config: " + ic.status().ToString());
    index_ = std::move(ic).value();
    std::mt19937_64 rng(7);
    notes_.resize(cfg.notes_bytes);
    for (char& c : notes_) c = static_cast<char>('a' + rng() % 26);

    auto k = EmbeddedKafka::Start(1);
    if (!k.ok()) Die(k.status().ToString());
    kafka_ = std::move(k).value();
    if (Status s = kafka_->CreateTopic(kTopic, cfg.topic_partitions); !s.ok()) Die(s.ToString());
    if (Status s = kafka_->CreateTopic(kDlq, 1); !s.ok()) Die(s.ToString());

    const std::string scfg = dir_.path() + "/sidecar.yaml";
    std::ofstream(scfg) << "sidecar:\n  id: " << kSidecarId << "\nkafka:\n  bootstrap: " << kafka_->bootstraps()
                        << "\n  partitions: " << cfg.topic_partitions << "\n";
    server_ = std::make_unique<testing::SidecarProcess>(
        cfg.sidetable, dir_.path() + "/db",
        std::vector<std::string>{"--config", scfg, "--durability", "os", "--log-level", "warn"});
    if (!server_->Start()) Die("the sidecar did not start; its log:\n" + server_->Log());
    Track(server_->pid());

    client::ClientOptions o;
    o.endpoint = server_->endpoint();
    o.max_attempts = 1;
    o.timeout = std::chrono::milliseconds(10000);
    o.caller = "wbench";
    auto c = client::Client::Connect(o);
    if (!c.ok()) Die(c.status().ToString());
    client_ = std::move(c).value();
    if (Status s = client_->CreateTable(kSource); !s.ok()) Die("create table: " + s.ToString());

    worker_cfg_ = dir_.path() + "/worker.yaml";
    std::ofstream w(worker_cfg_);
    w << "kafka:\n  bootstrap: " << kafka_->bootstraps() << "\n  topic: " << kTopic << "\n  group: " << kGroup
      << "\n  session_timeout_ms: 6000\n";
    std::vector<std::string> props = cfg.worker_props;
    if (cfg.worker_fetch_wait_ms >= 0) props.insert(props.begin(), "fetch.wait.max.ms=" + std::to_string(cfg.worker_fetch_wait_ms));
    if (!props.empty()) {
      w << "  properties:\n";
      for (const auto& p : props) {
        const size_t eq = p.find('=');
        if (eq == std::string::npos) Die("--worker-prop wants key=value: " + p);
        w << "    \"" << p.substr(0, eq) << "\": \"" << p.substr(eq + 1) << "\"\n";
      }
    }
    w << "sidecar:\n  endpoint: " << server_->endpoint() << "\n  timeout_ms: 5000\n"
      << "dead_letter:\n  topic: " << kDlq << "\n"
      << "log:\n  level: warn\n"
      << "patterns:\n  - name: index_table\n    source: " << kSource << "\n    target: " << kTarget
      << "\n    properties: " << kProperty << "\n    project: [Name]\n";
    if (!w) Die("cannot write " + worker_cfg_);
  }
  ~Env() {
    StopWorkers();
    poller_.reset();
    client_.reset();
    if (server_) {
      const pid_t p = server_->pid();
      const int rc = server_->Stop();
      Untrack(p);
      if (rc != 0) std::fprintf(stderr, "  the sidecar exited with %d\n", rc);
    }
  }

  // Starts the workers (all at once) and returns when each answers.
  void StartWorkers() {
    for (int i = 0; i < workers_; i++) {
      auto w = std::make_unique<testing::WorkerProcess>(cfg_.worker, worker_cfg_,
                                                        dir_.path() + "/worker-" + std::to_string(++started_));
      const std::string ready = dir_.path() + "/worker-" + std::to_string(started_) + ".ready";
      if (!w->Start()) Die("a worker did not start; its log:\n" + w->Log());
      std::ifstream in(ready);
      std::string kind, value;
      pid_t pid = -1;
      while (in >> kind >> value)
        if (kind == "pid") pid = static_cast<pid_t>(std::stol(value));
      if (pid > 0) Track(pid);
      worker_pids_.push_back(pid);
      procs_.push_back(std::move(w));
    }
  }
  void StopWorkers() {
    for (size_t i = 0; i < procs_.size(); i++) {
      const int rc = procs_[i]->Stop();
      if (worker_pids_[i] > 0) Untrack(worker_pids_[i]);
      if (rc != 0) std::fprintf(stderr, "  a worker exited with %d; log:\n%s\n", rc, procs_[i]->Log().substr(0, 3000).c_str());
    }
    procs_.clear();
    worker_pids_.clear();
  }
  double WorkersCpu() const {
    double s = 0;
    for (pid_t p : worker_pids_) s += std::max(0.0, CpuSeconds(p));
    return s;
  }
  double SumMetric(const char* name) const {
    double s = 0;
    for (const auto& w : procs_) {
      const double v = MetricOf(w->http(), name);
      if (v < 0) return -1;
      s += v;
    }
    return s;
  }

  // One synchronous write and its index entry readable: the group is active.
  // With several workers, also until each owns partitions and all are owned.
  void WaitForGroup() {
    const auto t0 = Clock::now();
    Entity e = MakeEntity(seq_++);
    auto w = client_->InsertOrReplace(kSource, e);
    if (!w.ok()) Die("first write: " + w.status().ToString());
    acked_total_++;
    const auto [ipk, irk] = IndexKeys(e);
    const auto limit = t0 + std::chrono::seconds(60);
    while (!client_->Get(kTarget, ipk, irk).ok()) {
      if (Clock::now() > limit || g_stop) Die("the index entry of the first write did not appear in 60 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const double first = Sec(Clock::now() - t0);
    while (workers_ > 1) {
      int owners = 0;
      double total = 0;
      for (const auto& p : procs_) {
        const double a = MetricOf(p->http(), "sidetable_worker_assigned_partitions");
        owners += a > 0;
        total += std::max(0.0, a);
      }
      if (owners == workers_ && total == cfg_.topic_partitions) break;
      if (Clock::now() > limit || g_stop) Die("the workers did not share the partitions in 60 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::printf("  group active: first index entry after %.2f s, all %d worker(s) own partitions after %.2f s\n",
                first, workers_, Sec(Clock::now() - t0));
  }

  // Paced writes for `seconds`; every sample_every-th acknowledged write is
  // polled (phase >= 0) or nothing is (phase < 0: warm-up).
  LatencyResult Latency(int phase, double rate, double seconds) {
    LatencyResult r;
    r.target = rate;
    if (!poller_) poller_ = std::make_unique<Poller>(server_->endpoint(), cfg_.max_pending);
    uint64_t inflight = 0, scheduled = 0;
    const uint64_t max_lag = std::max<uint64_t>(cfg_.window, static_cast<uint64_t>(rate * 0.1));
    const double cpu_s0 = CpuSeconds(server_->pid()), cpu_w0 = WorkersCpu(), cpu_b0 = CpuSeconds(::getpid());
    const uint64_t gets0 = poller_->gets();
    const auto start = Clock::now();
    const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    while (!g_stop) {
      const auto now = Clock::now();
      if (now >= end) break;
      const uint64_t due = static_cast<uint64_t>(Sec(now - start) * rate) + 1;
      if (due > scheduled + max_lag) {  // too far behind: do not burst to catch up
        r.skipped_writes += due - scheduled - max_lag;
        scheduled = due - max_lag;
      }
      while (inflight < static_cast<uint64_t>(cfg_.window) && scheduled < due) {
        const uint64_t n = seq_++;
        Entity e = MakeEntity(n);
        const bool sample = phase >= 0 && n % static_cast<uint64_t>(cfg_.sample_every) == 0;
        std::string ipk, irk, src_pk;
        if (sample) {
          std::tie(ipk, irk) = IndexKeys(e);
          src_pk = e.partition_key;
        }
        Batch b(kSource);
        b.InsertOrReplace(std::move(e));
        scheduled++;
        inflight++;
        client_->SendWrite(b, [&, sample, ipk = std::move(ipk), irk = std::move(irk), src_pk = std::move(src_pk)](
                                  Result<WriteResult> w) {
          inflight--;
          if (!w.ok()) {
            if (r.errors++ == 0) std::fprintf(stderr, "write failed: %s\n", w.status().ToString().c_str());
            return;
          }
          acked_total_++;
          r.acked++;
          if (!sample) return;
          Sample smp;
          smp.phase = phase;
          smp.src_pk = src_pk;
          smp.ipk = ipk;
          smp.irk = irk;
          smp.ack = Clock::now();
          smp.src_ticks = w->timestamp;
          if (poller_->TryAdd(std::move(smp))) r.samples++;
          else r.sampled_skipped++;
        });
      }
      // Replies without blocking, then sleep until the next write is due (at
      // most 1 ms): Client::Poll(1 ms) would spin (see changestream_bench.cc).
      client_->Poll(std::chrono::milliseconds(0));
      if (inflight >= static_cast<uint64_t>(cfg_.window)) {
        client_->Poll(std::chrono::milliseconds(5));
      } else if (scheduled >= due) {
        const auto next_due = start + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(static_cast<double>(scheduled) / rate));
        std::this_thread::sleep_until(std::min(next_due, Clock::now() + std::chrono::milliseconds(1)));
      }
    }
    const auto stop_at = Clock::now();
    const double secs = Sec(stop_at - start);
    r.cpu_sidecar = 100 * (CpuSeconds(server_->pid()) - cpu_s0) / secs;
    r.cpu_workers = 100 * (WorkersCpu() - cpu_w0) / secs;
    r.cpu_bench = 100 * (CpuSeconds(::getpid()) - cpu_b0) / secs;
    r.gets_per_s = static_cast<double>(poller_->gets() - gets0) / secs;
    const auto drain_limit = Clock::now() + std::chrono::seconds(20);
    while (inflight > 0 && Clock::now() < drain_limit) client_->Poll(std::chrono::milliseconds(20));
    if (inflight > 0) Die("writes still unanswered 20 s after the phase");
    r.writes_per_s = static_cast<double>(r.acked) / seconds;
    if (phase < 0) return r;
    // Every sample found (bounded).
    const auto wait_limit = Clock::now() + std::chrono::seconds(30);
    while (poller_->Pending(phase) > 0 && Clock::now() < wait_limit && !g_stop)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    r.unresolved = poller_->Abandon(phase);
    bench::Latencies readable, commit;
    double commit_max = 0;
    for (const auto& x : poller_->Results(phase)) {
      readable.Add(static_cast<uint64_t>(x.ack_to_readable_ms * 1e6));
      commit.Add(static_cast<uint64_t>(std::max(0.0, x.commit_to_index_ms) * 1e6));
      commit_max = std::max(commit_max, x.commit_to_index_ms);
    }
    r.readable_p50 = readable.PercentileMicros(50) / 1000;
    r.readable_p99 = readable.PercentileMicros(99) / 1000;
    r.readable_max = readable.PercentileMicros(100) / 1000;
    r.commit_p50 = commit.PercentileMicros(50) / 1000;
    r.commit_p99 = commit.PercentileMicros(99) / 1000;
    r.commit_max = commit_max;
    return r;
  }

  // Stops the workers, writes `n` entities as fast as the window allows,
  // starts the workers and times them through the backlog.
  ThroughputResult Throughput(int n) {
    ThroughputResult r;
    poller_.reset();
    // Everything written so far indexed, so the new workers see only the preload.
    {
      const auto limit = Clock::now() + std::chrono::seconds(60);
      while (CountIndex() < acked_total_ && Clock::now() < limit && !g_stop)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    StopWorkers();
    // Per source PartitionKey, the index keys of its highest-LSN write: one
    // PartitionKey's events are applied in commit order, so when all these
    // entries exist every preloaded event has been applied (once at least).
    struct Last {
      uint64_t lsn = 0;
      std::string ipk, irk;
    };
    std::map<std::string, Last> last;
    const auto p0 = Clock::now();
    uint64_t inflight = 0, errors = 0;
    for (int i = 0; i < n && !g_stop; i++) {
      while (inflight >= static_cast<uint64_t>(cfg_.preload_window)) client_->Poll(std::chrono::milliseconds(5));
      Entity e = MakeEntity(seq_++);
      auto keys = IndexKeys(e);
      std::string pk = e.partition_key;
      Batch b(kSource);
      b.InsertOrReplace(std::move(e));
      inflight++;
      client_->SendWrite(b, [&, keys = std::move(keys), pk = std::move(pk)](Result<WriteResult> w) {
        inflight--;
        if (w.ok()) {
          r.preloaded++;
          acked_total_++;
          Last& l = last[pk];
          if (w->lsn > l.lsn) l = {w->lsn, keys.first, keys.second};
        } else if (errors++ == 0) {
          std::fprintf(stderr, "preload write failed: %s\n", w.status().ToString().c_str());
        }
      });
    }
    client_->Drain();
    r.preload_s = Sec(Clock::now() - p0);
    // Let the sidecar publish the backlog before the workers start (not timed).
    std::this_thread::sleep_for(std::chrono::milliseconds(300));

    const auto t0 = Clock::now();
    StartWorkers();
    double cpu_s0 = 0, cpu_b0 = 0, cpu_w0 = 0;
    Clock::time_point first{}, done{};
    double cpu_s1 = 0, cpu_b1 = 0, cpu_w1 = 0;
    const auto limit = t0 + std::chrono::seconds(180);
    while (!g_stop && Clock::now() < limit) {
      const double events = SumMetric("sidetable_worker_events_total");
      const auto now = Clock::now();
      if (events > 0 && first == Clock::time_point{}) {
        first = now;
        cpu_s0 = CpuSeconds(server_->pid());
        cpu_b0 = CpuSeconds(::getpid());
        cpu_w0 = WorkersCpu();
      }
      // Near the end (redeliveries only add to the counter): the last entries.
      if (events >= 0.9 * static_cast<double>(r.preloaded)) {
        std::vector<std::string> found;
        for (const auto& [pk, l] : last) {
          client_->SendGet(
              kTarget, l.ipk, l.irk, [&found, pk = pk](Result<Entity> e) {
                if (e.ok()) found.push_back(pk);
              },
              {"SourceVersion"});
        }
        client_->Drain();
        const auto at = Clock::now();
        for (const auto& pk : found) last.erase(pk);
        if (last.empty()) {
          done = at;
          cpu_s1 = CpuSeconds(server_->pid());
          cpu_b1 = CpuSeconds(::getpid());
          cpu_w1 = WorkersCpu();
          for (const auto& p : procs_) {
            std::vector<double> v;
            if (!MetricsOf(p->http(), {"sidetable_worker_events_total", "sidetable_worker_events_ignored_total"}, &v))
              continue;
            r.events_seen += v[0];
            r.events_ignored += v[1];
          }
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (done == Clock::time_point{}) {
      std::fprintf(stderr, "  throughput: the workers did not process %llu events in 180 s\n",
                   static_cast<unsigned long long>(r.preloaded));
      return r;
    }
    r.rebalances = SumMetric("sidetable_worker_rebalances_total");
    r.join_s = Sec(first - t0);
    r.drain_s = Sec(done - first);
    r.total_s = Sec(done - t0);
    r.events_per_s = static_cast<double>(r.preloaded) / r.drain_s;
    r.cpu_sidecar = 100 * (cpu_s1 - cpu_s0) / r.drain_s;  // while draining
    r.cpu_workers = 100 * (cpu_w1 - cpu_w0) / r.drain_s;
    r.cpu_bench = 100 * (cpu_b1 - cpu_b0) / r.drain_s;
    // The index must now hold one entry per source entity (unique values).
    r.index_expected = acked_total_;
    r.index_count = CountIndex();
    r.complete = r.index_count == r.index_expected;
    return r;
  }

 private:
  Entity MakeEntity(uint64_t n) const {
    Entity e;
    char pk[16], rk[48], email[64], name[32];
    std::snprintf(pk, sizeof pk, "p%03u", static_cast<unsigned>(n % static_cast<uint64_t>(cfg_.partitions)));
    std::snprintf(rk, sizeof rk, "r%d-%d-%010llu", run_, workers_, static_cast<unsigned long long>(n));
    std::snprintf(email, sizeof email, "user%010llu.%d.%d@example.com", static_cast<unsigned long long>(n), run_,
                  workers_);
    std::snprintf(name, sizeof name, "name-%llu", static_cast<unsigned long long>(n));
    e.partition_key = pk;
    e.row_key = rk;
    e.Set("Name", Value::String(name));
    e.Set(kProperty, Value::String(email));
    e.Set("Age", Value::Int32(static_cast<int32_t>(n % 90)));
    e.Set("Notes", Value::String(notes_));
    return e;
  }
  // The index entry's keys, as patterns/index_table computes them.
  std::pair<std::string, std::string> IndexKeys(const Entity& e) const {
    const Value* v = e.Find(kProperty);
    auto pk = index_.layout.PartitionKey(kProperty, *v);
    auto rk = patterns::MakeSourceRowKey(e.partition_key, e.row_key);
    if (!pk || !rk.ok()) Die("an entity the index cannot hold");
    return {*pk, *rk};
  }
  uint64_t CountIndex() {
    uint64_t n = 0;
    client::QueryOptions q{kTarget, "", {"SourceVersion"}, 1000};
    std::optional<std::pair<std::string, std::string>> next;
    for (int page = 0; page < 100000; page++) {
      auto p = client_->QueryPage(q, next);
      if (!p.ok()) Die("counting the index: " + p.status().ToString());
      n += p->entities.size();
      if (!p->next) break;
      next = *p->next;
    }
    return n;
  }

  const Config& cfg_;
  const int workers_, run_;
  bench::ScratchDir dir_;
  patterns::IndexTableConfig index_;
  std::string notes_;
  std::unique_ptr<EmbeddedKafka> kafka_;
  std::unique_ptr<testing::SidecarProcess> server_;
  std::unique_ptr<client::Client> client_;
  std::string worker_cfg_;
  std::vector<std::unique_ptr<testing::WorkerProcess>> procs_;
  std::vector<pid_t> worker_pids_;
  int started_ = 0;
  std::unique_ptr<Poller> poller_;
  uint64_t seq_ = 0;
  uint64_t acked_total_ = 0;
};

std::string Pct(double p) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", p);
  return buf;
}

RunResult RunOnce(const Config& cfg, const std::vector<double>& rates, int workers, int run) {
  RunResult out;
  Env env(cfg, workers, run);
  std::printf("repeat %d, %d worker(s)\n", run, workers);
  std::fflush(stdout);
  env.StartWorkers();
  env.WaitForGroup();
  if (!cfg.no_latency) {
    if (cfg.warmup > 0) env.Latency(-1, 500, cfg.warmup);
    for (size_t i = 0; i < rates.size() && !g_stop; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      LatencyResult r = env.Latency(static_cast<int>(i), rates[i], cfg.seconds);
      std::printf("  %6s w/s: acked %s w/s; %llu samples (%llu not taken, %llu never found); ack->readable p50 %s "
                  "p99 %s max %s; commit->index p50 %s p99 %s max %s; poll Gets %s/s; cpu sidecar %s workers %s "
                  "bench %s; errors %llu, writes skipped %llu\n",
                  WithCommas(rates[i]).c_str(), WithCommas(r.writes_per_s).c_str(),
                  static_cast<unsigned long long>(r.samples), static_cast<unsigned long long>(r.sampled_skipped),
                  static_cast<unsigned long long>(r.unresolved), FormatMillis(r.readable_p50).c_str(),
                  FormatMillis(r.readable_p99).c_str(), FormatMillis(r.readable_max).c_str(), FormatMillis(r.commit_p50).c_str(),
                  FormatMillis(r.commit_p99).c_str(), FormatMillis(r.commit_max).c_str(), WithCommas(r.gets_per_s).c_str(),
                  Pct(r.cpu_sidecar).c_str(), Pct(r.cpu_workers).c_str(), Pct(r.cpu_bench).c_str(),
                  static_cast<unsigned long long>(r.errors), static_cast<unsigned long long>(r.skipped_writes));
      std::fflush(stdout);
      out.latency.push_back(r);
    }
  }
  if (!cfg.no_throughput && !g_stop) {
    ThroughputResult& t = out.throughput;
    t = env.Throughput(cfg.preload);
    std::printf("  throughput: %s events preloaded in %s; workers started, first event after %s, all after "
                "%s more: %s events/s (%s from start); events counted %s (%s ignored: echoes of index writes; %s applied twice), rebalances %s; index %s/%s %s; "
                "cpu sidecar %s workers %s bench %s\n",
                WithCommas(static_cast<double>(t.preloaded)).c_str(), FormatSecondsOrDash(t.preload_s).c_str(),
                FormatSecondsOrDash(t.join_s).c_str(), FormatSecondsOrDash(t.drain_s).c_str(), WithCommas(t.events_per_s).c_str(),
                FormatSecondsOrDash(t.total_s).c_str(), WithCommas(t.events_seen).c_str(), WithCommas(t.events_ignored).c_str(),
                WithCommas(t.Redelivered()).c_str(), WithCommas(t.rebalances).c_str(),
                WithCommas(static_cast<double>(t.index_count)).c_str(),
                WithCommas(static_cast<double>(t.index_expected)).c_str(), t.complete ? "complete" : "INCOMPLETE",
                Pct(t.cpu_sidecar).c_str(), Pct(t.cpu_workers).c_str(), Pct(t.cpu_bench).c_str());
    std::fflush(stdout);
  }
  return out;
}


std::vector<double> ParseList(const std::string& text, const char* what) {
  std::vector<double> v;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      v.push_back(std::stod(item));
    } catch (...) {
      Die(std::string(what) + ": bad number " + item);
    }
    if (v.back() <= 0) Die(std::string(what) + ": must be positive");
  }
  return v;
}

int Main(int argc, char** argv) {
  Config cfg;
  CLI::App app{"sidetable-workers-bench: change-to-index latency and worker throughput (index_table pattern)"};
  app.add_option("--sidetable", cfg.sidetable, "the sidetable binary")->capture_default_str();
  app.add_option("--worker", cfg.worker, "the sidetable-worker binary")->capture_default_str();
  app.add_option("--rates", cfg.rates, "target source writes/s per latency phase")->capture_default_str();
  app.add_option("--workers", cfg.workers, "worker counts to run, each in a fresh environment")->capture_default_str();
  app.add_option("--seconds", cfg.seconds, "seconds per latency phase")->check(CLI::Range(0.5, 600.0))->capture_default_str();
  app.add_option("--warmup", cfg.warmup, "seconds of 500 w/s before the phases (not reported)")
      ->check(CLI::Range(0.0, 60.0))->capture_default_str();
  app.add_option("--repeat", cfg.repeat, "repeats; medians reported")->check(CLI::Range(1, 20))->capture_default_str();
  app.add_flag("--quick", cfg.quick, "smoke run (< 30 s): 1 and 2 workers, 500 w/s for 1 s, 2,000 preloaded, 1 repeat");
  app.add_option("--sample-every", cfg.sample_every, "poll the index entry of every n-th write")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--max-pending", cfg.max_pending, "samples polled at once; further ones are not taken")
      ->check(CLI::Range(1, 10000))->capture_default_str();
  app.add_option("--preload", cfg.preload, "events written while the workers are stopped (throughput)")
      ->check(CLI::Range(1, 10000000))->capture_default_str();
  app.add_option("--partitions", cfg.partitions, "source PartitionKeys (round robin)")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--topic-partitions", cfg.topic_partitions, "Kafka partitions of the change topic")
      ->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--window", cfg.window, "writes in flight in latency phases")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--preload-window", cfg.preload_window, "writes in flight while preloading")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--notes-bytes", cfg.notes_bytes, "padding per source entity")->check(CLI::Range(0, 100000))->capture_default_str();
  app.add_option("--worker-fetch-wait-ms", cfg.worker_fetch_wait_ms,
                 "the workers' fetch.wait.max.ms (kafka.properties); -1 = librdkafka's default, 500 (the mock "
                 "does not cut a fetch's wait short when data arrives)")
      ->check(CLI::Range(-1, 10000))->capture_default_str();
  app.add_option("--worker-prop", cfg.worker_props, "extra librdkafka consumer setting for the workers, key=value; repeatable");
  app.add_option("--scratch", cfg.scratch, "parent of the scratch directory")->capture_default_str();
  app.add_flag("--keep", cfg.keep, "keep the scratch directory (data, configs, logs)");
  app.add_flag("--no-throughput", cfg.no_throughput, "latency phases only");
  app.add_flag("--no-latency", cfg.no_latency, "throughput only");
  CLI11_PARSE(app, argc, argv);
  if (cfg.quick) {
    cfg.rates = "500";
    cfg.seconds = 1;
    cfg.warmup = 0;
    cfg.repeat = 1;
    cfg.preload = 2000;
  }
  const std::vector<double> rates = ParseList(cfg.rates, "--rates");
  std::vector<int> worker_counts;
  for (double w : ParseList(cfg.workers, "--workers")) worker_counts.push_back(static_cast<int>(w));
  if (::access(cfg.sidetable.c_str(), X_OK) != 0) Die("no sidetable binary at " + cfg.sidetable);
  if (::access(cfg.worker.c_str(), X_OK) != 0) Die("no sidetable-worker binary at " + cfg.worker);
  std::atexit(TermChildrenAtExit);
  ::signal(SIGINT, OnSignal);
  ::signal(SIGTERM, OnSignal);
  ::signal(SIGPIPE, SIG_IGN);

  const auto t0 = Clock::now();
  {
    std::time_t now = std::time(nullptr);
    char when[64];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
    double load[3] = {};
    ::getloadavg(load, 3);
    std::printf("sidetable-workers-bench: %s on %s, %ld cores, load %.2f; %d repeat(s), %.1f s per rate, every "
                "%d-th write polled, %d preloaded; %d PartitionKeys, %d Kafka partitions; workers' "
                "fetch.wait.max.ms %s; librdkafka %s\n",
                when, Hostname().c_str(), ::sysconf(_SC_NPROCESSORS_ONLN), load[0], cfg.repeat, cfg.seconds,
                cfg.sample_every, cfg.preload, cfg.partitions, cfg.topic_partitions,
                cfg.worker_fetch_wait_ms < 0 ? "default" : std::to_string(cfg.worker_fetch_wait_ms).c_str(),
                rd_kafka_version_str());
    std::fflush(stdout);
  }
  // runs[w][repeat]
  std::vector<std::vector<RunResult>> runs(worker_counts.size());
  for (int i = 0; i < cfg.repeat && !g_stop; i++)
    for (size_t w = 0; w < worker_counts.size() && !g_stop; w++)
      runs[w].push_back(RunOnce(cfg, rates, worker_counts[w], i + 1));

  uint64_t errors = 0, unresolved = 0, incomplete = 0;
  std::printf("\nMedians of %d repeat(s).\n\nChange-to-index latency (every %d-th write polled):\n\n", cfg.repeat,
              cfg.sample_every);
  bench::MarkdownTable lt({"workers", "target writes/s", "acked writes/s", "samples", "ack→readable p50", "p99",
                           "max", "commit→index p50", "p99", "max", "poll Gets/s", "CPU sidecar / workers / bench"});
  for (size_t w = 0; w < worker_counts.size(); w++) {
    if (runs[w].empty()) continue;
    for (size_t p = 0; p < rates.size(); p++) {
      auto med = [&](auto field) {
        std::vector<double> v;
        for (const auto& run : runs[w])
          if (p < run.latency.size()) v.push_back(field(run.latency[p]));
        return v.empty() ? -1.0 : Median(v);
      };
      if (runs[w][0].latency.size() <= p) continue;
      for (const auto& run : runs[w])
        if (p < run.latency.size()) {
          errors += run.latency[p].errors;
          unresolved += run.latency[p].unresolved;
        }
      lt.AddRow({std::to_string(worker_counts[w]), WithCommas(rates[p]),
                 WithCommas(med([](auto& r) { return r.writes_per_s; })),
                 WithCommas(med([](auto& r) { return static_cast<double>(r.samples); })),
                 FormatMillis(med([](auto& r) { return r.readable_p50; })), FormatMillis(med([](auto& r) { return r.readable_p99; })),
                 FormatMillis(med([](auto& r) { return r.readable_max; })), FormatMillis(med([](auto& r) { return r.commit_p50; })),
                 FormatMillis(med([](auto& r) { return r.commit_p99; })), FormatMillis(med([](auto& r) { return r.commit_max; })),
                 WithCommas(med([](auto& r) { return r.gets_per_s; })),
                 Pct(med([](auto& r) { return r.cpu_sidecar; })) + " / " +
                     Pct(med([](auto& r) { return r.cpu_workers; })) + " / " +
                     Pct(med([](auto& r) { return r.cpu_bench; }))});
    }
  }
  if (!cfg.no_latency) lt.Print(std::cout);
  if (!cfg.no_throughput) {
    std::printf("\nWorker throughput (%s events preloaded with the workers stopped):\n\n",
                WithCommas(cfg.preload).c_str());
    bench::MarkdownTable tt({"workers", "events/s", "drain", "group join (start → first event)", "start → done",
                             "preload writes/s", "rebalances", "applied twice / echoes ignored", "index complete", "CPU sidecar / workers / bench",
                             "every run (events/s)"});
    for (size_t w = 0; w < worker_counts.size(); w++) {
      if (runs[w].empty()) continue;
      auto med = [&](auto field) {
        std::vector<double> v;
        for (const auto& run : runs[w]) v.push_back(field(run.throughput));
        return Median(v);
      };
      std::string every, complete;
      int ok = 0;
      for (const auto& run : runs[w]) {
        every += (every.empty() ? "" : ", ") + WithCommas(run.throughput.events_per_s);
        ok += run.throughput.complete;
        incomplete += !run.throughput.complete;
      }
      complete = std::to_string(ok) + "/" + std::to_string(runs[w].size());
      tt.AddRow({std::to_string(worker_counts[w]), WithCommas(med([](auto& t) { return t.events_per_s; })),
                 FormatSecondsOrDash(med([](auto& t) { return t.drain_s; })), FormatSecondsOrDash(med([](auto& t) { return t.join_s; })),
                 FormatSecondsOrDash(med([](auto& t) { return t.total_s; })),
                 WithCommas(med([](auto& t) { return t.preload_s > 0 ? static_cast<double>(t.preloaded) / t.preload_s : 0; })),
                 WithCommas(med([](auto& t) { return t.rebalances; })),
                 WithCommas(med([](auto& t) { return t.Redelivered(); })) + " / " +
                     WithCommas(med([](auto& t) { return t.events_ignored; })),
                 complete,
                 Pct(med([](auto& t) { return t.cpu_sidecar; })) + " / " +
                     Pct(med([](auto& t) { return t.cpu_workers; })) + " / " +
                     Pct(med([](auto& t) { return t.cpu_bench; })),
                 every});
    }
    tt.Print(std::cout);
  }
  std::printf("\nwrite errors %llu, samples never found %llu, incomplete indexes %llu; %.1f s in all\n",
              static_cast<unsigned long long>(errors), static_cast<unsigned long long>(unresolved),
              static_cast<unsigned long long>(incomplete), bench::SecondsSince(t0));
  return errors == 0 && unresolved == 0 && incomplete == 0 ? 0 : 2;
}

}  // namespace
}  // namespace sidetable::wbench

int main(int argc, char** argv) { return sidetable::wbench::Main(argc, argv); }
