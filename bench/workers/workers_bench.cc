// sidetable-workers-bench: what the real `sidetable-worker` costs and keeps
// up with (issues 6 and 13), measured against W, the sidecar's own write
// capacity in the same run.
//
// Per repeat and per worker count (--workers, default 1 then 2), a fresh
// environment: a librdkafka mock cluster (EmbeddedKafka) in this process with
// the change and dead-letter topics created beforehand; the real `sidetable`
// binary (--durability os, kafka.bootstrap at the mock); W real
// `sidetable-worker` processes in one consumer group with one index_table
// pattern (Users.Email -> UsersByEmail, projecting Name), two with 2 workers
// (also Users.Age -> UsersByAge).
//
// 1. Capacity: single-entity writes with 256 in flight for
//    --capacity-seconds, workers running: W = acknowledged writes/s.
// 2. Latency: writes paced at each --load fraction of W (--rates: absolute
//    rates instead). Every --sample-every-th acknowledged write is polled in
//    the index (poller.h): ack -> readable (steady clock) and commit -> index
//    (the entry's Timestamp minus the write's, both the sidecar's clock).
//    Also: events applied by the workers per second (/metrics), the time
//    from the phase's last acknowledged write until the index holds every
//    write of the phase, and read-your-writes: a separate client writes
//    and at once Gets its index entry through a client::Session
//    (ryw_prober.h).
// 3. Throughput: the workers are stopped, --preload writes are made, then
//    the workers are started at once and timed through the backlog.
// 4. Archive (first environment of a repeat): the index workers are
//    stopped, an archive worker starts in its own group, --archive-entities
//    are written to Orders, then RequestArchive'd 100 RowKeys at a time;
//    moved/s = entities / (first request -> Orders empty).
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
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/harness.h"
#include "bench/workers/poller.h"
#include "bench/workers/ryw_prober.h"
#include "client/client.h"
#include "common/kafka/embedded_kafka.h"
#include "engine/batch.h"
#include "engine/edm.h"
#include "patterns/index_table/index_keys.h"
#include "patterns/index_table/index_table.h"
#include "testing/proc_stats.h"
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
using testing::ProcessCpuSeconds;

constexpr const char* kSidecarId = "wbench";
constexpr const char* kTopic = "sidetable.wbench.changes";  // the sidecar's default topic template
constexpr const char* kDlq = "sidetable.wbench.dead-letter";
constexpr const char* kGroup = "wbench-workers";
constexpr const char* kSource = "Users";
constexpr const char* kTarget = "UsersByEmail";
constexpr const char* kProperty = "Email";
constexpr const char* kTarget2 = "UsersByAge";  // the second pattern (2 workers)
constexpr const char* kProperty2 = "Age";
constexpr const char* kArchiveGroup = "wbench-archive";
constexpr const char* kOrders = "Orders";
constexpr const char* kOrdersArchive = "OrdersArchive";
constexpr int kCapacityPhase = 1000;  // poller phase id of the capacity run

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
Clock::duration Dur(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}


struct Config {
  std::string sidetable = SIDETABLE_DEFAULT_BIN;
  std::string worker = SIDETABLE_WORKER_DEFAULT_BIN;
  std::string loads = "0.5,0.8,1.0";  // fractions of W, one environment with one pattern
  std::string loads_two = "0.333";    // fractions of W with 2 workers and 2 patterns
  std::string rates;                  // absolute writes/s instead of loads (every environment)
  std::string workers = "1,2";
  double capacity_seconds = 3;
  double capacity = 0;  // W given: not measured
  double seconds = 4;
  double warmup = 1;
  int repeat = 3;
  bool quick = false;
  int sample_every = 10;
  int max_pending = 2000;  // samples queued at once; more are not taken
  int preload = 20000;
  int partitions = 64;        // source PartitionKeys (round robin)
  int topic_partitions = 12;  // Kafka partitions of the change topic
  int window = 256;           // writes in flight (paced phases and capacity)
  int preload_window = 64;    // writes in flight (preload, as fast as it goes)
  size_t notes_bytes = 200;   // padding per source entity
  int worker_fetch_wait_ms = 1;  // the workers' fetch.wait.max.ms; -1 = librdkafka's default (500)
  std::vector<std::string> worker_props;
  int ryw_interval_ms = 10;
  int archive_entities = 10000;
  int archive_partitions = 4;
  int archive_batch = 100;
  std::string scratch = "/tmp";
  bool keep = false;
  bool no_throughput = false;
  bool no_latency = false;
  bool no_ryw = false;
  bool no_archive = false;
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

// ---- results ---------------------------------------------------------------------
// One phase of writes: the capacity run (target 0 = as fast as the window
// allows) or a paced latency phase.
struct LatencyResult {
  double load = -1, target = 0, writes_per_s = 0;
  uint64_t acked = 0, errors = 0, skipped_writes = 0;
  uint64_t busy = 0;  // ServerBusy: not executed (back-pressure at the window's depth), not an error
  uint64_t samples = 0, sampled_skipped = 0, unresolved = 0;
  double readable_p50 = 0, readable_p99 = 0, readable_max = 0;
  double commit_p50 = 0, commit_p99 = 0, commit_max = 0;
  double apply_per_s = -1;  // source events the workers applied per second (events - ignored)
  double complete_ms = -1;  // last acknowledged write -> every write of the phase in the index
  double gets_per_s = 0;
  double cpu_sidecar = 0, cpu_workers = 0, cpu_bench = 0;  // % of one core
  bool ryw = false;
  double ryw_p50 = 0, ryw_p99 = 0, ryw_max = 0;
  uint64_t ryw_probes = 0, ryw_found = 0, ryw_not_available = 0, ryw_missing = 0, ryw_errors = 0;
  uint64_t RywFailures() const { return ryw_not_available + ryw_missing + ryw_errors; }
  double ApplyRatio() const { return apply_per_s >= 0 && writes_per_s > 0 ? apply_per_s / writes_per_s : -1; }
};
struct ThroughputResult {
  bool ran = false;
  uint64_t preloaded = 0;
  double preload_s = 0, join_s = -1, drain_s = -1, events_per_s = 0, total_s = -1;
  // Counted by the workers when done: every event, and those no pattern
  // wanted (the echoes of the workers' own index writes, which the sidecar
  // publishes on the same topic).
  double events_seen = 0, events_ignored = 0, rebalances = 0;
  double Redelivered() const { return events_seen - events_ignored - static_cast<double>(preloaded); }
  bool complete = false;
  uint64_t index_count = 0, index_expected = 0;
  uint64_t index2_count = 0;  // the second pattern's table (2 workers), same expectation
  double cpu_sidecar = 0, cpu_workers = 0, cpu_bench = 0;
};
struct ArchiveResult {
  bool ran = false;
  uint64_t entities = 0, requests = 0, request_errors = 0, archived = 0, source_left = 0;
  double join_s = -1, preload_s = 0, issue_s = 0, done_s = -1, moved_per_s = 0;
  bool complete = false;
  double cpu_sidecar = 0, cpu_workers = 0, cpu_bench = 0;
};
struct RunResult {
  bool capacity_measured = false;
  LatencyResult capacity;
  double w = 0;  // the W this environment's loads refer to
  std::vector<LatencyResult> latency;
  ThroughputResult throughput;
  ArchiveResult archive;
};

std::string Pct(double p) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", p);
  return buf;
}
std::string Ratio(double r) {
  if (r < 0) return "–";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", r);
  return buf;
}

// ---- one environment ----------------------------------------------------------------
class Env {
 public:
  Env(const Config& cfg, int workers, int run)
      : cfg_(cfg), workers_(workers), patterns_(workers >= 2 ? 2 : 1), run_(run),
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

    std::string pattern_yaml = std::string("  - name: index_table\n    source: ") + kSource + "\n    target: " + kTarget +
                               "\n    properties: " + kProperty + "\n    project: [Name]\n";
    if (patterns_ == 2)
      pattern_yaml += std::string("  - name: index_table\n    source: ") + kSource + "\n    target: " + kTarget2 +
                      "\n    properties: " + kProperty2 + "\n    project: [Name]\n";
    worker_cfg_ = WriteWorkerConfig("worker.yaml", kGroup, pattern_yaml);
  }
  ~Env() {
    ryw_.reset();
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

  int patterns() const { return patterns_; }

  // Starts `count` workers with `config` (all at once) and returns when each answers.
  void StartWorkers(int count, const std::string& config) {
    for (int i = 0; i < count; i++) {
      auto w = std::make_unique<testing::WorkerProcess>(cfg_.worker, config,
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
  void StartWorkers() { StartWorkers(workers_, worker_cfg_); }
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
    for (pid_t p : worker_pids_) s += std::max(0.0, ProcessCpuSeconds(p));
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
  // Source events applied so far by the running workers (events processed
  // minus those no pattern wanted); -1 if a worker does not answer.
  double SumApplied() const {
    double s = 0;
    for (const auto& w : procs_) {
      std::vector<double> v;
      if (!MetricsOf(w->http(), {"sidetable_worker_events_total", "sidetable_worker_events_ignored_total"}, &v))
        return -1;
      s += v[0] - v[1];
    }
    return s;
  }

  // One synchronous write and its index entry readable: the group is active.
  // With several workers, also until each owns partitions and all are owned.
  // Then the index's applied watermarks must be registered (read-your-writes
  // depends on them) and the read-your-writes prober starts (idle).
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
    size_t marks = 0;
    while (true) {
      auto wm = client_->ReadWatermarks(kTarget);
      if (!wm.ok()) Die("ReadWatermarks: " + wm.status().ToString());
      marks = wm->size();
      if (marks > 0) break;
      if (Clock::now() > limit || g_stop) Die("no applied watermarks of " + std::string(kTarget) + " after 60 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::printf("  group active: first index entry after %.2f s, all %d worker(s) own partitions after %.2f s; "
                "%zu applied watermarks of %s\n",
                first, workers_, Sec(Clock::now() - t0), marks, kTarget);
    if (!cfg_.no_ryw)
      ryw_ = std::make_unique<RywProber>(
          server_->endpoint(), kSource, kTarget,
          [this](uint64_t n) {
            Entity e = MakeEntity(n, "ryw");
            auto keys = IndexKeys(e);
            return std::make_pair(std::move(e), std::move(keys));
          },
          std::chrono::milliseconds(cfg_.ryw_interval_ms), &acked_total_);
  }

  // Writes for `seconds`: paced at `rate` (0: as fast as the window allows,
  // the capacity run). Phase >= 0: every sample_every-th acknowledged write
  // is polled (not for kCapacityPhase), each source PartitionKey's last write
  // too (the tails: completion), and the read-your-writes prober runs
  // (not for kCapacityPhase). Phase < 0: warm-up, nothing measured.
  LatencyResult RunPhase(int phase, double rate, double seconds) {
    LatencyResult r;
    r.target = rate;
    const bool measured = phase >= 0;
    const bool sampled = measured && phase != kCapacityPhase;
    if (!poller_) poller_ = std::make_unique<Poller>(server_->endpoint(), kTarget, cfg_.max_pending);
    struct Tail {
      uint64_t lsn = 0;
      int64_t ticks = 0;
      Clock::time_point ack;
      std::string ipk, irk;
    };
    std::map<std::string, Tail> tails;
    Clock::time_point last_ack{};
    uint64_t inflight = 0, scheduled = 0;
    const uint64_t max_lag = std::max<uint64_t>(cfg_.window, static_cast<uint64_t>(rate * 0.1));
    const double applied0 = measured ? SumApplied() : -1;
    const double cpu_s0 = ProcessCpuSeconds(server_->pid()), cpu_w0 = WorkersCpu(), cpu_b0 = ProcessCpuSeconds(::getpid());
    const uint64_t gets0 = poller_->gets();
    if (ryw_ && sampled) ryw_->SetPhase(phase);
    const auto start = Clock::now();
    const auto end = start + Dur(seconds);
    while (!g_stop) {
      const auto now = Clock::now();
      if (now >= end) break;
      uint64_t due = ~uint64_t{0};
      if (rate > 0) {
        due = static_cast<uint64_t>(Sec(now - start) * rate) + 1;
        if (due > scheduled + max_lag) {  // too far behind: do not burst to catch up
          r.skipped_writes += due - scheduled - max_lag;
          scheduled = due - max_lag;
        }
      }
      while (inflight < static_cast<uint64_t>(cfg_.window) && scheduled < due) {
        const uint64_t n = seq_++;
        Entity e = MakeEntity(n);
        const bool sample = sampled && n % static_cast<uint64_t>(cfg_.sample_every) == 0;
        std::string ipk, irk, src_pk;
        if (measured) {
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
            if (w.status().code() == Code::kServerBusy) r.busy++;
            else if (r.errors++ == 0) std::fprintf(stderr, "write failed: %s\n", w.status().ToString().c_str());
            return;
          }
          acked_total_++;
          r.acked++;
          if (!measured) return;
          const auto at = Clock::now();
          last_ack = at;
          Tail& t = tails[src_pk];
          if (w->lsn > t.lsn) t = {w->lsn, w->timestamp, at, ipk, irk};
          if (!sample) return;
          Sample smp;
          smp.phase = phase;
          smp.src_pk = src_pk;
          smp.ipk = ipk;
          smp.irk = irk;
          smp.ack = at;
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
        const auto next_due = start + Dur(static_cast<double>(scheduled) / rate);
        std::this_thread::sleep_until(std::min(next_due, Clock::now() + std::chrono::milliseconds(1)));
      }
    }
    const auto stop_at = Clock::now();
    if (ryw_) ryw_->SetPhase(-1);
    const double secs = Sec(stop_at - start);
    const double applied1 = measured ? SumApplied() : -1;
    r.cpu_sidecar = 100 * (ProcessCpuSeconds(server_->pid()) - cpu_s0) / secs;
    r.cpu_workers = 100 * (WorkersCpu() - cpu_w0) / secs;
    r.cpu_bench = 100 * (ProcessCpuSeconds(::getpid()) - cpu_b0) / secs;
    r.gets_per_s = static_cast<double>(poller_->gets() - gets0) / secs;
    const auto drain_limit = Clock::now() + std::chrono::seconds(20);
    while (inflight > 0 && Clock::now() < drain_limit) client_->Poll(std::chrono::milliseconds(20));
    if (inflight > 0) Die("writes still unanswered 20 s after the phase");
    r.writes_per_s = static_cast<double>(r.acked) / secs;
    if (applied0 >= 0 && applied1 >= 0) r.apply_per_s = (applied1 - applied0) / secs;
    if (!measured) return r;
    // Every sample and every PartitionKey's last write found (bounded).
    for (auto& [pk, t] : tails) {
      Sample s;
      s.phase = phase;
      s.tail = true;
      s.src_pk = pk;
      s.ipk = t.ipk;
      s.irk = t.irk;
      s.ack = t.ack;
      s.src_ticks = t.ticks;
      poller_->TryAdd(std::move(s), /*force=*/true);
    }
    const auto wait_limit = Clock::now() + std::chrono::seconds(phase == kCapacityPhase ? 90 : 30);
    while (poller_->Pending(phase) > 0 && Clock::now() < wait_limit && !g_stop)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const bool all_found = poller_->Pending(phase) == 0;
    r.unresolved = poller_->Abandon(phase);
    bench::Latencies readable, commit;
    double commit_max = 0;
    Clock::time_point last_found = last_ack;
    for (const auto& x : poller_->Results(phase)) {
      last_found = std::max(last_found, x.found_at);
      if (x.tail) continue;
      readable.Add(static_cast<uint64_t>(x.ack_to_readable_ms * 1e6));
      commit.Add(static_cast<uint64_t>(std::max(0.0, x.commit_to_index_ms) * 1e6));
      commit_max = std::max(commit_max, x.commit_to_index_ms);
    }
    if (all_found && !tails.empty()) r.complete_ms = std::chrono::duration<double, std::milli>(last_found - last_ack).count();
    r.readable_p50 = readable.PercentileMicros(50) / 1000;
    r.readable_p99 = readable.PercentileMicros(99) / 1000;
    r.readable_max = readable.PercentileMicros(100) / 1000;
    r.commit_p50 = commit.PercentileMicros(50) / 1000;
    r.commit_p99 = commit.PercentileMicros(99) / 1000;
    r.commit_max = commit_max;
    if (ryw_ && sampled) {
      RywStats s = ryw_->Take(phase);
      r.ryw = true;
      r.ryw_p50 = s.get.PercentileMicros(50) / 1000;
      r.ryw_p99 = s.get.PercentileMicros(99) / 1000;
      r.ryw_max = s.max_ms;
      r.ryw_probes = s.probes;
      r.ryw_found = s.found;
      r.ryw_not_available = s.not_available;
      r.ryw_missing = s.missing;
      r.ryw_errors = s.errors;
    }
    return r;
  }

  // Stops the workers, writes `n` entities as fast as the window allows,
  // starts the workers and times them through the backlog.
  ThroughputResult Throughput(int n) {
    ThroughputResult r;
    r.ran = true;
    ryw_.reset();
    poller_.reset();
    // Everything written so far indexed, so the new workers see only the preload.
    {
      const auto limit = Clock::now() + std::chrono::seconds(60);
      while (CountTable(kTarget) < acked_total_ && Clock::now() < limit && !g_stop)
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
        cpu_s0 = ProcessCpuSeconds(server_->pid());
        cpu_b0 = ProcessCpuSeconds(::getpid());
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
          cpu_s1 = ProcessCpuSeconds(server_->pid());
          cpu_b1 = ProcessCpuSeconds(::getpid());
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
    r.index_count = CountTable(kTarget);
    r.complete = r.index_count == r.index_expected;
    if (patterns_ == 2) {
      // The second pattern ran behind the first in the same events: bounded wait.
      const auto limit2 = Clock::now() + std::chrono::seconds(30);
      while ((r.index2_count = CountTable(kTarget2)) < r.index_expected && Clock::now() < limit2 && !g_stop)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      r.complete = r.complete && r.index2_count == r.index_expected;
    }
    return r;
  }

  // The archive pattern alone (the index workers are stopped): one worker in
  // its own group; `n` Orders entities over archive_partitions
  // PartitionKeys, then RequestArchive of archive_batch RowKeys at a time as
  // fast as one client goes; done when Orders is empty.
  ArchiveResult Archive(int n) {
    ArchiveResult r;
    r.ran = true;
    ryw_.reset();
    poller_.reset();
    StopWorkers();
    for (const char* t : {kOrders, kOrdersArchive}) {
      Status s = client_->CreateTable(t);
      if (!s.ok() && s.code() != Code::kTableAlreadyExists) Die("create table " + std::string(t) + ": " + s.ToString());
    }
    const std::string acfg = WriteWorkerConfig(
        "archive-worker.yaml", kArchiveGroup,
        std::string("  - name: archive\n    source: ") + kOrders + "\n    target: " + kOrdersArchive + "\n");
    const auto j0 = Clock::now();
    StartWorkers(1, acfg);
    // Active: a sentinel entity moved (the new group starts at the earliest
    // offsets; other tables' events are skipped unread).
    {
      Entity e;
      e.partition_key = "sentinel";
      e.row_key = "s";
      e.Set("Name", Value::String("sentinel"));
      if (auto w = client_->InsertOrReplace(kOrders, e); !w.ok()) Die("archive sentinel: " + w.status().ToString());
      if (auto a = client_->RequestArchive(kOrders, "sentinel", {"s"}, kOrdersArchive); !a.ok())
        Die("RequestArchive: " + a.status().ToString());
      const auto limit = j0 + std::chrono::seconds(60);
      while (!client_->Get(kOrdersArchive, "sentinel", "s").ok()) {
        if (Clock::now() > limit || g_stop) Die("the archive worker did not move the sentinel in 60 s");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      r.join_s = Sec(Clock::now() - j0);
    }
    const double events0 = SumMetric("sidetable_worker_events_total");
    std::vector<std::vector<std::string>> rks(static_cast<size_t>(cfg_.archive_partitions));
    const auto p0 = Clock::now();
    uint64_t inflight = 0, errors = 0;
    for (int i = 0; i < n && !g_stop; i++) {
      while (inflight >= static_cast<uint64_t>(cfg_.preload_window)) client_->Poll(std::chrono::milliseconds(5));
      char pk[16], rk[24];
      const int part = i % cfg_.archive_partitions;
      std::snprintf(pk, sizeof pk, "o%02d", part);
      std::snprintf(rk, sizeof rk, "o%08d", i);
      Entity e;
      e.partition_key = pk;
      e.row_key = rk;
      e.Set("Name", Value::String(std::string("order-") + rk));
      e.Set("Amount", Value::Int64(i));
      e.Set("Notes", Value::String(notes_));
      Batch b(kOrders);
      b.InsertOrReplace(std::move(e));
      inflight++;
      client_->SendWrite(b, [&, part, rk = std::string(rk)](Result<WriteResult> w) {
        inflight--;
        if (w.ok()) {
          rks[static_cast<size_t>(part)].push_back(rk);
          r.entities++;
        } else if (errors++ == 0) {
          std::fprintf(stderr, "archive preload write failed: %s\n", w.status().ToString().c_str());
        }
      });
    }
    client_->Drain();
    r.preload_s = Sec(Clock::now() - p0);
    // The worker past the preload's events (it reads and ignores them), so
    // the moves are timed alone.
    {
      const auto limit = Clock::now() + std::chrono::seconds(60);
      while (SumMetric("sidetable_worker_events_total") < events0 + static_cast<double>(r.entities) &&
             Clock::now() < limit && !g_stop)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const double cpu_s0 = ProcessCpuSeconds(server_->pid()), cpu_w0 = WorkersCpu(), cpu_b0 = ProcessCpuSeconds(::getpid());
    const auto t0 = Clock::now();
    for (size_t p = 0; p < rks.size() && !g_stop; p++) {
      char pk[16];
      std::snprintf(pk, sizeof pk, "o%02d", static_cast<int>(p));
      for (size_t i = 0; i < rks[p].size(); i += static_cast<size_t>(cfg_.archive_batch)) {
        const std::vector<std::string> chunk(
            rks[p].begin() + static_cast<std::ptrdiff_t>(i),
            rks[p].begin() + static_cast<std::ptrdiff_t>(std::min(rks[p].size(), i + static_cast<size_t>(cfg_.archive_batch))));
        auto a = client_->RequestArchive(kOrders, pk, chunk, kOrdersArchive);
        r.requests++;
        if (!a.ok() && r.request_errors++ == 0)
          std::fprintf(stderr, "  RequestArchive failed: %s\n", a.status().ToString().c_str());
      }
    }
    r.issue_s = Sec(Clock::now() - t0);
    // Orders empty (copies come before deletes, so everything is archived).
    const auto limit = t0 + std::chrono::seconds(120);
    client::QueryOptions q{kOrders, "", {"Name"}, 1};
    while (!g_stop && Clock::now() < limit) {
      auto page = client_->QueryPage(q);
      if (!page.ok()) Die("querying " + std::string(kOrders) + ": " + page.status().ToString());
      if (page->entities.empty() && !page->next) {
        r.done_s = Sec(Clock::now() - t0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (r.done_s > 0) {
      r.moved_per_s = static_cast<double>(r.entities) / r.done_s;
      r.cpu_sidecar = 100 * (ProcessCpuSeconds(server_->pid()) - cpu_s0) / r.done_s;
      r.cpu_workers = 100 * (WorkersCpu() - cpu_w0) / r.done_s;
      r.cpu_bench = 100 * (ProcessCpuSeconds(::getpid()) - cpu_b0) / r.done_s;
    } else {
      std::fprintf(stderr, "  archive: %s not empty 120 s after the first request\n", kOrders);
    }
    r.source_left = CountTable(kOrders);
    const uint64_t archived = CountTable(kOrdersArchive);
    r.archived = archived > 0 ? archived - 1 : 0;  // the sentinel
    r.complete = r.source_left == 0 && r.archived == r.entities && r.request_errors == 0;
    return r;
  }

 private:
  std::string WriteWorkerConfig(const std::string& name, const char* group, const std::string& patterns_yaml) {
    const std::string path = dir_.path() + "/" + name;
    std::ofstream w(path);
    w << "kafka:\n  bootstrap: " << kafka_->bootstraps() << "\n  topic: " << kTopic << "\n  group: " << group
      << "\n  session_timeout_ms: 6000\n";
    std::vector<std::string> props = cfg_.worker_props;
    if (cfg_.worker_fetch_wait_ms >= 0)
      props.insert(props.begin(), "fetch.wait.max.ms=" + std::to_string(cfg_.worker_fetch_wait_ms));
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
      << "patterns:\n" << patterns_yaml;
    if (!w) Die("cannot write " + path);
    return path;
  }
  // Source entity n; `kind` "ryw" gives the read-your-writes prober's own
  // keys (its PartitionKeys are not the paced writes').
  Entity MakeEntity(uint64_t n, const char* kind = "") const {
    Entity e;
    char pk[24], rk[56], email[72], name[32];
    if (*kind) std::snprintf(pk, sizeof pk, "%s%u", kind, static_cast<unsigned>(n % 4));
    else std::snprintf(pk, sizeof pk, "p%03u", static_cast<unsigned>(n % static_cast<uint64_t>(cfg_.partitions)));
    std::snprintf(rk, sizeof rk, "r%s%d-%d-%010llu", kind, run_, workers_, static_cast<unsigned long long>(n));
    std::snprintf(email, sizeof email, "user%s%010llu.%d.%d@example.com", kind, static_cast<unsigned long long>(n),
                  run_, workers_);
    std::snprintf(name, sizeof name, "name-%llu", static_cast<unsigned long long>(n));
    e.partition_key = pk;
    e.row_key = rk;
    e.Set("Name", Value::String(name));
    e.Set(kProperty, Value::String(email));
    e.Set(kProperty2, Value::Int32(static_cast<int32_t>(n % 90)));
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
  uint64_t CountTable(const char* table) {
    uint64_t n = 0;
    client::QueryOptions q{table, "", {"Name"}, 1000};
    std::optional<std::pair<std::string, std::string>> next;
    for (int page = 0; page < 100000; page++) {
      auto p = client_->QueryPage(q, next);
      if (!p.ok()) {
        if (p.status().code() == Code::kTableNotFound) return 0;
        Die(std::string("counting ") + table + ": " + p.status().ToString());
      }
      n += p->entities.size();
      if (!p->next) break;
      next = *p->next;
    }
    return n;
  }

  const Config& cfg_;
  const int workers_, patterns_, run_;
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
  std::unique_ptr<RywProber> ryw_;
  uint64_t seq_ = 0;
  std::atomic<uint64_t> acked_total_{0};
};

void PrintPhase(const char* label, const LatencyResult& r) {
  std::printf("  %s: acked %s w/s (target %s), applied %s events/s (%s of writes); %llu samples (%llu not taken, "
              "%llu never found); commit->index p50 %s p99 %s max %s; ack->readable p50 %s p99 %s max %s; index "
              "complete %s after the last write; ",
              label, WithCommas(r.writes_per_s).c_str(), r.target > 0 ? WithCommas(r.target).c_str() : "max",
              r.apply_per_s < 0 ? "?" : WithCommas(r.apply_per_s).c_str(), Ratio(r.ApplyRatio()).c_str(),
              static_cast<unsigned long long>(r.samples), static_cast<unsigned long long>(r.sampled_skipped),
              static_cast<unsigned long long>(r.unresolved), FormatMillis(r.commit_p50).c_str(),
              FormatMillis(r.commit_p99).c_str(), FormatMillis(r.commit_max).c_str(),
              FormatMillis(r.readable_p50).c_str(), FormatMillis(r.readable_p99).c_str(),
              FormatMillis(r.readable_max).c_str(), FormatMillis(r.complete_ms).c_str());
  if (r.ryw)
    std::printf("read-your-writes Get p50 %s p99 %s max %s, %llu/%llu found (%llu not available, %llu missing, "
                "%llu errors); ",
                FormatMillis(r.ryw_p50).c_str(), FormatMillis(r.ryw_p99).c_str(), FormatMillis(r.ryw_max).c_str(),
                static_cast<unsigned long long>(r.ryw_found), static_cast<unsigned long long>(r.ryw_probes),
                static_cast<unsigned long long>(r.ryw_not_available), static_cast<unsigned long long>(r.ryw_missing),
                static_cast<unsigned long long>(r.ryw_errors));
  std::printf("poll Gets %s/s; cpu sidecar %s workers %s bench %s; errors %llu, ServerBusy %llu, writes "
              "skipped %llu\n",
              WithCommas(r.gets_per_s).c_str(), Pct(r.cpu_sidecar).c_str(), Pct(r.cpu_workers).c_str(),
              Pct(r.cpu_bench).c_str(), static_cast<unsigned long long>(r.errors),
              static_cast<unsigned long long>(r.busy), static_cast<unsigned long long>(r.skipped_writes));
  std::fflush(stdout);
}

// One environment. *w: W of this repeat (0: measure it here).
RunResult RunOnce(const Config& cfg, const std::vector<double>& loads, const std::vector<double>& rates, int workers,
                  int run, bool archive, double* w) {
  RunResult out;
  Env env(cfg, workers, run);
  std::printf("repeat %d, %d worker(s), %d index pattern(s)\n", run, workers, env.patterns());
  std::fflush(stdout);
  env.StartWorkers();
  env.WaitForGroup();
  if (*w <= 0 && !g_stop) {
    out.capacity_measured = true;
    out.capacity = env.RunPhase(kCapacityPhase, 0, cfg.capacity_seconds);
    *w = out.capacity.writes_per_s;
    PrintPhase("capacity W", out.capacity);
  }
  out.w = *w;
  if (!cfg.no_latency) {
    if (cfg.warmup > 0) env.RunPhase(-1, std::min(500.0, 0.5 * *w), cfg.warmup);
    const size_t phases = rates.empty() ? loads.size() : rates.size();
    for (size_t i = 0; i < phases && !g_stop; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const double rate = rates.empty() ? loads[i] * *w : rates[i];
      LatencyResult r = env.RunPhase(static_cast<int>(i), rate, cfg.seconds);
      if (rates.empty()) r.load = loads[i];
      char label[64];
      if (rates.empty()) std::snprintf(label, sizeof label, "%.2f W", loads[i]);
      else std::snprintf(label, sizeof label, "%s w/s", WithCommas(rates[i]).c_str());
      PrintPhase(label, r);
      out.latency.push_back(r);
    }
  }
  if (!cfg.no_throughput && !g_stop) {
    ThroughputResult& t = out.throughput;
    t = env.Throughput(cfg.preload);
    std::printf("  throughput: %s events preloaded in %s; workers started, first event after %s, all after "
                "%s more: %s events/s = %s W (%s from start); events counted %s (%s ignored: echoes of index writes; "
                "%s applied twice), rebalances %s; index %s/%s%s %s; cpu sidecar %s workers %s bench %s\n",
                WithCommas(static_cast<double>(t.preloaded)).c_str(), FormatSecondsOrDash(t.preload_s).c_str(),
                FormatSecondsOrDash(t.join_s).c_str(), FormatSecondsOrDash(t.drain_s).c_str(),
                WithCommas(t.events_per_s).c_str(), Ratio(*w > 0 ? t.events_per_s / *w : -1).c_str(),
                FormatSecondsOrDash(t.total_s).c_str(), WithCommas(t.events_seen).c_str(),
                WithCommas(t.events_ignored).c_str(), WithCommas(t.Redelivered()).c_str(),
                WithCommas(t.rebalances).c_str(), WithCommas(static_cast<double>(t.index_count)).c_str(),
                WithCommas(static_cast<double>(t.index_expected)).c_str(),
                env.patterns() == 2
                    ? (std::string(", second index ") + WithCommas(static_cast<double>(t.index2_count))).c_str()
                    : "",
                t.complete ? "complete" : "INCOMPLETE", Pct(t.cpu_sidecar).c_str(), Pct(t.cpu_workers).c_str(),
                Pct(t.cpu_bench).c_str());
    std::fflush(stdout);
  }
  if (archive && !g_stop) {
    ArchiveResult& a = out.archive;
    a = env.Archive(cfg.archive_entities);
    std::printf("  archive: worker active after %s; %s entities written in %s; %llu requests issued in %s; %s empty "
                "after %s: %s moved/s; archive %s/%s, source left %s: %s; cpu sidecar %s worker %s bench %s\n",
                FormatSecondsOrDash(a.join_s).c_str(), WithCommas(static_cast<double>(a.entities)).c_str(),
                FormatSecondsOrDash(a.preload_s).c_str(), static_cast<unsigned long long>(a.requests),
                FormatSecondsOrDash(a.issue_s).c_str(), kOrders, FormatSecondsOrDash(a.done_s).c_str(),
                WithCommas(a.moved_per_s).c_str(), WithCommas(static_cast<double>(a.archived)).c_str(),
                WithCommas(static_cast<double>(a.entities)).c_str(), WithCommas(static_cast<double>(a.source_left)).c_str(),
                a.complete ? "complete" : "INCOMPLETE", Pct(a.cpu_sidecar).c_str(), Pct(a.cpu_workers).c_str(),
                Pct(a.cpu_bench).c_str());
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

// Median over the repeats of field(x) for each x that get(run) yields.
template <typename Get, typename Field>
double MedianOf(const std::vector<RunResult>& runs, Get get, Field field) {
  std::vector<double> v;
  for (const auto& run : runs)
    if (const auto* x = get(run)) v.push_back(field(*x));
  return v.empty() ? -1.0 : Median(v);
}

int Main(int argc, char** argv) {
  Config cfg;
  CLI::App app{"sidetable-workers-bench: the pattern workers against the sidecar's write capacity W "
               "(change-to-index latency, read-your-writes, throughput, archive moves)"};
  app.add_option("--sidetable", cfg.sidetable, "the sidetable binary")->capture_default_str();
  app.add_option("--worker", cfg.worker, "the sidetable-worker binary")->capture_default_str();
  app.add_option("--capacity-seconds", cfg.capacity_seconds, "seconds of the capacity run (W)")
      ->check(CLI::Range(0.5, 600.0))->capture_default_str();
  app.add_option("--capacity", cfg.capacity, "W in writes/s: skip measuring it")->check(CLI::Range(0.0, 1e7));
  app.add_option("--load", cfg.loads, "latency phases, fractions of W (1 worker, 1 index pattern)")->capture_default_str();
  app.add_option("--load-two", cfg.loads_two, "latency phases, fractions of W, with 2+ workers and 2 index patterns")
      ->capture_default_str();
  app.add_option("--rates", cfg.rates, "absolute writes/s per latency phase instead of --load/--load-two");
  app.add_option("--workers", cfg.workers, "worker counts to run, each in a fresh environment (2+: two index patterns)")
      ->capture_default_str();
  app.add_option("--seconds", cfg.seconds, "seconds per latency phase")->check(CLI::Range(0.5, 600.0))->capture_default_str();
  app.add_option("--warmup", cfg.warmup, "seconds of min(500, W/2) w/s before the phases (not reported)")
      ->check(CLI::Range(0.0, 60.0))->capture_default_str();
  app.add_option("--repeat", cfg.repeat, "repeats; medians reported")->check(CLI::Range(1, 20))->capture_default_str();
  app.add_flag("--quick", cfg.quick,
               "smoke run (< 60 s): 1 and 2 workers, 1 s capacity, 1 s at 0.5 W (W/3 with 2), 2,000 preloaded, "
               "2,000 archived, 1 repeat");
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
  app.add_option("--window", cfg.window, "writes in flight in the capacity run and latency phases")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--preload-window", cfg.preload_window, "writes in flight while preloading")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--notes-bytes", cfg.notes_bytes, "padding per source entity")->check(CLI::Range(0, 100000))->capture_default_str();
  app.add_option("--worker-fetch-wait-ms", cfg.worker_fetch_wait_ms,
                 "the workers' fetch.wait.max.ms (kafka.properties); -1 = librdkafka's default, 500 (the mock "
                 "does not cut a fetch's wait short when data arrives)")
      ->check(CLI::Range(-1, 10000))->capture_default_str();
  app.add_option("--worker-prop", cfg.worker_props, "extra librdkafka consumer setting for the workers, key=value; repeatable");
  app.add_option("--ryw-interval-ms", cfg.ryw_interval_ms, "pause between read-your-writes probes")
      ->check(CLI::Range(0, 10000))->capture_default_str();
  app.add_option("--archive-entities", cfg.archive_entities, "entities written to Orders, then archived")
      ->check(CLI::Range(1, 10000000))->capture_default_str();
  app.add_option("--archive-partitions", cfg.archive_partitions, "PartitionKeys of the archived entities")
      ->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--archive-batch", cfg.archive_batch, "RowKeys per RequestArchive")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--scratch", cfg.scratch, "parent of the scratch directory")->capture_default_str();
  app.add_flag("--keep", cfg.keep, "keep the scratch directory (data, configs, logs)");
  app.add_flag("--no-throughput", cfg.no_throughput, "no burst drain");
  app.add_flag("--no-latency", cfg.no_latency, "no latency phases");
  app.add_flag("--no-ryw", cfg.no_ryw, "no read-your-writes probes");
  app.add_flag("--no-archive", cfg.no_archive, "no archive phase");
  CLI11_PARSE(app, argc, argv);
  if (cfg.quick) {
    cfg.capacity_seconds = 1;
    cfg.loads = "0.5";
    cfg.loads_two = "0.333";
    cfg.seconds = 1;
    cfg.warmup = 0;
    cfg.repeat = 1;
    cfg.preload = 2000;
    cfg.archive_entities = 2000;
  }
  const std::vector<double> loads = ParseList(cfg.loads, "--load");
  const std::vector<double> loads_two = ParseList(cfg.loads_two, "--load-two");
  const std::vector<double> rates = cfg.rates.empty() ? std::vector<double>{} : ParseList(cfg.rates, "--rates");
  std::vector<int> worker_counts;
  for (double w : ParseList(cfg.workers, "--workers")) worker_counts.push_back(static_cast<int>(w));
  if (::access(cfg.sidetable.c_str(), X_OK) != 0) Die("no sidetable binary at " + cfg.sidetable);
  if (::access(cfg.worker.c_str(), X_OK) != 0) Die("no sidetable-worker binary at " + cfg.worker);
  std::atexit(TermChildrenAtExit);
  ::signal(SIGINT, OnSignal);
  ::signal(SIGTERM, OnSignal);
  ::signal(SIGPIPE, SIG_IGN);

  const auto t0 = Clock::now();
  double load_start[3] = {};
  ::getloadavg(load_start, 3);
  {
    std::time_t now = std::time(nullptr);
    char when[64];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
    std::printf("sidetable-workers-bench: %s on %s, %ld cores, load %.2f; %d repeat(s); W %s; %.1f s per phase, "
                "every %d-th write polled, %d preloaded, %d archived; %d PartitionKeys, %d Kafka partitions; "
                "workers' fetch.wait.max.ms %s; librdkafka %s\n",
                when, Hostname().c_str(), ::sysconf(_SC_NPROCESSORS_ONLN), load_start[0], cfg.repeat,
                cfg.capacity > 0 ? ("given, " + WithCommas(cfg.capacity) + " w/s").c_str()
                                 : ("measured, " + bench::FormatSeconds(cfg.capacity_seconds)).c_str(),
                cfg.seconds, cfg.sample_every, cfg.preload, cfg.no_archive ? 0 : cfg.archive_entities, cfg.partitions,
                cfg.topic_partitions,
                cfg.worker_fetch_wait_ms < 0 ? "default" : std::to_string(cfg.worker_fetch_wait_ms).c_str(),
                rd_kafka_version_str());
    std::fflush(stdout);
  }
  // runs[w][repeat]
  std::vector<std::vector<RunResult>> runs(worker_counts.size());
  std::vector<double> ws;  // W per repeat
  for (int i = 0; i < cfg.repeat && !g_stop; i++) {
    double w = cfg.capacity;
    for (size_t k = 0; k < worker_counts.size() && !g_stop; k++) {
      const auto& phase_loads = worker_counts[k] >= 2 ? loads_two : loads;
      runs[k].push_back(RunOnce(cfg, phase_loads, rates, worker_counts[k], i + 1, k == 0 && !cfg.no_archive, &w));
    }
    ws.push_back(w);
  }
  double load_end[3] = {};
  ::getloadavg(load_end, 3);

  uint64_t errors = 0, unresolved = 0, incomplete = 0, ryw_failures = 0, archive_incomplete = 0;
  std::printf("\nMedians of %d repeat(s). Machine noise: everything (sidecar, workers, the mock broker, client and "
              "poller) shares this machine's %ld cores with whatever else runs on it (load average %.2f at the "
              "start, %.2f at the end); read ratios to W rather than absolute rates, and the per-run lines above "
              "for the spread.\n",
              cfg.repeat, ::sysconf(_SC_NPROCESSORS_ONLN), load_start[0], load_end[0]);

  // W
  {
    std::printf("\nSidecar write capacity W (single-entity InsertOrReplace of ~%zu B, %d in flight, %s, workers "
                "running):\n\n",
                cfg.notes_bytes + 100, cfg.window, bench::FormatSeconds(cfg.capacity_seconds).c_str());
    bench::MarkdownTable ct({"measured in", "W (acked writes/s)", "applied events/s meanwhile", "apply / write",
                             "index complete after last write", "CPU sidecar / workers / bench", "every run (W)"});
    if (!runs.empty() && !runs[0].empty() && runs[0][0].capacity_measured) {
      auto cap = [](const RunResult& r) { return r.capacity_measured ? &r.capacity : nullptr; };
      std::string every;
      for (double w : ws) every += (every.empty() ? "" : ", ") + WithCommas(w);
      ct.AddRow({std::to_string(worker_counts[0]) + " worker(s), " + (worker_counts[0] >= 2 ? "2" : "1") +
                     " index pattern(s)",
                 WithCommas(Median(ws)), WithCommas(MedianOf(runs[0], cap, [](auto& r) { return r.apply_per_s; })),
                 Ratio(MedianOf(runs[0], cap, [](auto& r) { return r.ApplyRatio(); })),
                 FormatMillis(MedianOf(runs[0], cap, [](auto& r) { return r.complete_ms; })),
                 Pct(MedianOf(runs[0], cap, [](auto& r) { return r.cpu_sidecar; })) + " / " +
                     Pct(MedianOf(runs[0], cap, [](auto& r) { return r.cpu_workers; })) + " / " +
                     Pct(MedianOf(runs[0], cap, [](auto& r) { return r.cpu_bench; })),
                 every});
      for (const auto& run : runs[0]) errors += run.capacity.errors;
      ct.Print(std::cout);
    } else {
      std::printf("W given: %s writes/s (not measured)\n", WithCommas(cfg.capacity).c_str());
    }
  }

  if (!cfg.no_latency) {
    std::printf("\nLatency phases at fractions of W (every %d-th write polled in %s; read-your-writes: one client "
                "with a Session writes, then Gets its own index entry, %d ms apart):\n\n",
                cfg.sample_every, kTarget, cfg.ryw_interval_ms);
    bench::MarkdownTable lt({"workers / index patterns", "load", "target writes/s", "acked writes/s",
                             "applied events/s", "apply / write", "commit→index p50", "p99", "max", "ack→readable p50",
                             "p99", "index complete after last write", "RYW Get p50", "p99", "RYW found",
                             "samples (never found)", "CPU sidecar / workers / bench"});
    for (size_t k = 0; k < worker_counts.size(); k++) {
      if (runs[k].empty()) continue;
      const size_t phases = runs[k][0].latency.size();
      for (size_t p = 0; p < phases; p++) {
        auto ph = [p](const RunResult& r) { return p < r.latency.size() ? &r.latency[p] : nullptr; };
        auto med = [&](auto field) { return MedianOf(runs[k], ph, field); };
        uint64_t found = 0, probes = 0, never = 0;
        for (const auto& run : runs[k])
          if (p < run.latency.size()) {
            const LatencyResult& r = run.latency[p];
            errors += r.errors;
            unresolved += r.unresolved;
            ryw_failures += r.RywFailures();
            found += r.ryw_found;
            probes += r.ryw_probes;
            never += r.unresolved;
          }
        const LatencyResult& first = runs[k][0].latency[p];
        char load[16];
        std::snprintf(load, sizeof load, "%.2f", first.load);
        lt.AddRow({std::to_string(worker_counts[k]) + " / " + (worker_counts[k] >= 2 ? "2" : "1"),
                   first.load > 0 ? std::string(load) : "–", WithCommas(med([](auto& r) { return r.target; })),
                   WithCommas(med([](auto& r) { return r.writes_per_s; })),
                   WithCommas(med([](auto& r) { return r.apply_per_s; })),
                   Ratio(med([](auto& r) { return r.ApplyRatio(); })),
                   FormatMillis(med([](auto& r) { return r.commit_p50; })),
                   FormatMillis(med([](auto& r) { return r.commit_p99; })),
                   FormatMillis(med([](auto& r) { return r.commit_max; })),
                   FormatMillis(med([](auto& r) { return r.readable_p50; })),
                   FormatMillis(med([](auto& r) { return r.readable_p99; })),
                   FormatMillis(med([](auto& r) { return r.complete_ms; })),
                   cfg.no_ryw ? "–" : FormatMillis(med([](auto& r) { return r.ryw_p50; })),
                   cfg.no_ryw ? "–" : FormatMillis(med([](auto& r) { return r.ryw_p99; })),
                   cfg.no_ryw ? "–" : std::to_string(found) + "/" + std::to_string(probes),
                   WithCommas(med([](auto& r) { return static_cast<double>(r.samples); })) + " (" +
                       std::to_string(never) + ")",
                   Pct(med([](auto& r) { return r.cpu_sidecar; })) + " / " +
                       Pct(med([](auto& r) { return r.cpu_workers; })) + " / " +
                       Pct(med([](auto& r) { return r.cpu_bench; }))});
      }
    }
    lt.Print(std::cout);
    std::printf("\n(RYW found: over all repeats; applied events/s: the workers' events_total minus "
                "events_ignored_total, i.e. source events, during the write window.)\n");
  }
  if (!cfg.no_throughput) {
    std::printf("\nBurst drain (%s events preloaded with the workers stopped):\n\n", WithCommas(cfg.preload).c_str());
    bench::MarkdownTable tt({"workers / index patterns", "events/s", "× W", "drain", "group join (start → first event)",
                             "start → done", "preload writes/s", "rebalances", "applied twice / echoes ignored",
                             "index complete", "CPU sidecar / workers / bench", "every run (events/s)"});
    for (size_t k = 0; k < worker_counts.size(); k++) {
      if (runs[k].empty()) continue;
      auto tp = [](const RunResult& r) { return r.throughput.ran ? &r.throughput : nullptr; };
      auto med = [&](auto field) { return MedianOf(runs[k], tp, field); };
      std::vector<double> ratios;
      std::string every;
      int ok = 0;
      for (const auto& run : runs[k]) {
        every += (every.empty() ? "" : ", ") + WithCommas(run.throughput.events_per_s);
        ok += run.throughput.complete;
        incomplete += !run.throughput.complete;
        if (run.w > 0) ratios.push_back(run.throughput.events_per_s / run.w);
      }
      tt.AddRow({std::to_string(worker_counts[k]) + " / " + (worker_counts[k] >= 2 ? "2" : "1"),
                 WithCommas(med([](auto& t) { return t.events_per_s; })), Ratio(ratios.empty() ? -1 : Median(ratios)),
                 FormatSecondsOrDash(med([](auto& t) { return t.drain_s; })),
                 FormatSecondsOrDash(med([](auto& t) { return t.join_s; })),
                 FormatSecondsOrDash(med([](auto& t) { return t.total_s; })),
                 WithCommas(med([](auto& t) { return t.preload_s > 0 ? static_cast<double>(t.preloaded) / t.preload_s : 0; })),
                 WithCommas(med([](auto& t) { return t.rebalances; })),
                 WithCommas(med([](auto& t) { return t.Redelivered(); })) + " / " +
                     WithCommas(med([](auto& t) { return t.events_ignored; })),
                 std::to_string(ok) + "/" + std::to_string(runs[k].size()),
                 Pct(med([](auto& t) { return t.cpu_sidecar; })) + " / " +
                     Pct(med([](auto& t) { return t.cpu_workers; })) + " / " +
                     Pct(med([](auto& t) { return t.cpu_bench; })),
                 every});
    }
    tt.Print(std::cout);
  }
  if (!cfg.no_archive && !runs.empty() && !runs[0].empty()) {
    std::printf("\nArchive moves (%s entities in %d PartitionKeys of %s, RequestArchive of %d RowKeys each, one "
                "archive worker alone; timed from the first request until %s is empty):\n\n",
                WithCommas(cfg.archive_entities).c_str(), cfg.archive_partitions, kOrders, cfg.archive_batch, kOrders);
    bench::MarkdownTable at({"entities", "requests", "moved/s", "requests issued in", "first request → source empty",
                             "worker active after", "complete", "CPU sidecar / worker / bench", "every run (moved/s)"});
    auto ar = [](const RunResult& r) { return r.archive.ran ? &r.archive : nullptr; };
    auto med = [&](auto field) { return MedianOf(runs[0], ar, field); };
    std::string every;
    int ok = 0, ran = 0;
    for (const auto& run : runs[0]) {
      if (!run.archive.ran) continue;
      ran++;
      every += (every.empty() ? "" : ", ") + WithCommas(run.archive.moved_per_s);
      ok += run.archive.complete;
      archive_incomplete += !run.archive.complete;
    }
    at.AddRow({WithCommas(med([](auto& a) { return static_cast<double>(a.entities); })),
               WithCommas(med([](auto& a) { return static_cast<double>(a.requests); })),
               WithCommas(med([](auto& a) { return a.moved_per_s; })),
               FormatSecondsOrDash(med([](auto& a) { return a.issue_s; })),
               FormatSecondsOrDash(med([](auto& a) { return a.done_s; })),
               FormatSecondsOrDash(med([](auto& a) { return a.join_s; })),
               std::to_string(ok) + "/" + std::to_string(ran),
               Pct(med([](auto& a) { return a.cpu_sidecar; })) + " / " + Pct(med([](auto& a) { return a.cpu_workers; })) +
                   " / " + Pct(med([](auto& a) { return a.cpu_bench; })),
               every});
    at.Print(std::cout);
  }
  std::printf("\nwrite errors %llu, samples never found %llu, incomplete indexes %llu, read-your-writes failures "
              "%llu, incomplete archives %llu; %.1f s in all\n",
              static_cast<unsigned long long>(errors), static_cast<unsigned long long>(unresolved),
              static_cast<unsigned long long>(incomplete), static_cast<unsigned long long>(ryw_failures),
              static_cast<unsigned long long>(archive_incomplete), bench::SecondsSince(t0));
  return errors == 0 && unresolved == 0 && incomplete == 0 && ryw_failures == 0 && archive_incomplete == 0 ? 0 : 2;
}

}  // namespace
}  // namespace sidetable::wbench

int main(int argc, char** argv) { return sidetable::wbench::Main(argc, argv); }
