// sidetable-changestream-bench: how long a committed write takes to reach a
// Kafka consumer, whether publishing keeps up with writing, and how the
// change stream recovers from a broker outage.
//
// In one process: a librdkafka mock cluster (EmbeddedKafka) with the topic
// created beforehand; the real `sidetable` binary started with
// `--durability os` and kafka.bootstrap pointed at the mock (a small YAML
// config); the C++ client writing single-entity InsertOrReplace of ~1 KiB
// (new row keys over --partitions PartitionKeys) at a paced target rate with
// a bounded in-flight window; a librdkafka consumer using assign() (no group)
// in a thread; and a thread sampling the sidecar's /metrics.
//
// Latency of an event = consumer receive time (wall clock) - the event's
// "time" (the commit timestamp, wall clock, 100 ns ticks, same machine).
// Each event is attributed to the phase whose acknowledged writes carry its
// LSN (the write reply returns it), so latencies are per phase exactly.
//
// Every loop is bounded; the sidecar is stopped with SIGTERM at exit (also
// on a fatal error, via atexit). See bench/changestream/README.md.
#include <CLI/CLI.hpp>
#include <httplib.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <dirent.h>
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
#include "testing/proc_stats.h"
#include "testing/sidecar_process.h"

namespace sidetable::csbench {
namespace {

using bench::Clock;
using bench::Die;
using bench::FormatMillis;
using bench::FormatSecondsOrDash;
using bench::Hostname;
using bench::Median;
using bench::WithCommas;
using kafka::EmbeddedKafka;

constexpr const char* kSidecarId = "csbench";
constexpr const char* kTopic = "sidetable.csbench.changes";  // the default topic template
constexpr const char* kTable = "csbench";

std::atomic<bool> g_stop{false};
std::atomic<pid_t> g_sidecar_pid{-1};

void OnSignal(int) { g_stop.store(true); }
void TermSidecarAtExit() {
  pid_t p = g_sidecar_pid.exchange(-1);
  if (p > 0) ::kill(p, SIGTERM);
}

int64_t WallNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
int64_t TicksToUnixNanos(int64_t ticks) { return (ticks - kUnixEpochTicks) * 100; }
double Sec(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Config {
  std::string sidetable = SIDETABLE_DEFAULT_BIN;
  std::string rates = "1000,5000,10000,max";
  double seconds = 4;
  double warmup = 1;
  int repeat = 3;
  bool quick = false;
  int partitions = 16;        // PartitionKeys written
  int topic_partitions = 12;  // Kafka partitions of the topic
  int window = 256;           // in-flight bound for paced phases
  int max_window = 32;        // in-flight for "max" (loadgen's best: 1 x 32)
  size_t entity_bytes = 1024;
  double outage_rate = 2000;
  double outage_before = 2, outage_down = 2, outage_after = 6;
  int fetch_wait_ms = 1;
  std::vector<std::string> producer_props;
  std::string scratch = "/tmp";
  bool keep = false;
  bool no_outage = false;
};

// ---- the ~1 KiB entity (as bench/loadgen's: 6 typed properties + padding) ---
class EntityMaker {
 public:
  explicit EntityMaker(size_t entity_bytes) {
    std::mt19937_64 rng(42);
    static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,";
    pool_.resize(1 << 16);
    for (char& c : pool_) c = kAlphabet[rng() % (sizeof kAlphabet - 1)];
    for (auto& b : guid_) b = static_cast<uint8_t>(rng());
    constexpr size_t kFixed = 264;
    notes_ = entity_bytes > kFixed ? entity_bytes - kFixed : 0;
  }
  Entity Make(std::string pk, std::string rk, uint64_t n) const {
    Entity e;
    e.partition_key = std::move(pk);
    e.row_key = std::move(rk);
    char name[32];
    std::snprintf(name, sizeof name, "customer-%06llu", static_cast<unsigned long long>(n % 1000000));
    e.Set("Name", Value::String(name));
    e.Set("Age", Value::Int32(static_cast<int32_t>(n % 100)));
    e.Set("Balance", Value::Double(static_cast<double>(n) * 0.25));
    e.Set("Active", Value::Boolean(n % 2 == 0));
    e.Set("Joined", Value::DateTime(kUnixEpochTicks + 1'700'000'000 * kTicksPerSecond +
                                    static_cast<int64_t>(n % 1000000) * kTicksPerSecond));
    e.Set("CustomerId", Value::MakeGuid(guid_));
    e.Set("Notes", Value::String(pool_.substr((n * 7919) % (pool_.size() - notes_), notes_)));
    return e;
  }

 private:
  std::string pool_;
  Guid guid_{};
  size_t notes_ = 0;
};

// ---- the consumer: assign() to every partition, no group ----------------------
struct Arrival {
  uint64_t lsn;
  int64_t commit_ns;      // the event's "time", Unix ns
  int64_t recv_ns;        // wall clock at receipt, Unix ns
  int64_t create_ms;      // Kafka CreateTime (set by the producer at produce()), -1 if none
  Clock::time_point recv; // steady clock at receipt
};

class Consumer {
 public:
  Consumer(const std::string& bootstrap, int fetch_wait_ms) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    auto set = [&](const char* k, const std::string& v) {
      if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK)
        Die(std::string("consumer ") + k + ": " + err);
    };
    set("bootstrap.servers", bootstrap);
    set("group.id", "csbench-reader");  // required by the API; unused with assign()
    set("enable.auto.commit", "false");
    set("enable.auto.offset.store", "false");
    // The mock broker does not cut a fetch's wait short when data arrives (a
    // real broker does): keep the wait short so it does not add to latency.
    set("fetch.wait.max.ms", std::to_string(fetch_wait_ms));
    set("fetch.error.backoff.ms", "10");
    // Reconnect quickly after the outage, so recovery measures the sidecar's
    // producer, not this consumer.
    set("reconnect.backoff.ms", "10");
    set("reconnect.backoff.max.ms", "100");
    set("log_level", "2");
    rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (rk_ == nullptr) Die(std::string("consumer: ") + err);
  }
  ~Consumer() {
    Stop();
    rd_kafka_consumer_close(rk_);
    rd_kafka_destroy(rk_);
  }

  void AssignAll(const std::string& topic, int partitions) {
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
    for (int p = 0; p < partitions; p++)
      rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_resp_err_t e = rd_kafka_assign(rk_, list);
    rd_kafka_topic_partition_list_destroy(list);
    if (e) Die(std::string("assign: ") + rd_kafka_err2str(e));
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  // Copies of what arrived so far, from index `from`.
  std::vector<Arrival> Since(size_t from) {
    std::lock_guard l(mu_);
    if (from >= arrivals_.size()) return {};
    return std::vector<Arrival>(arrivals_.begin() + static_cast<std::ptrdiff_t>(from), arrivals_.end());
  }
  size_t count() {
    std::lock_guard l(mu_);
    return arrivals_.size();
  }
  // Highest LSN L such that every LSN in [from, L] has arrived (from - 1 if none).
  uint64_t ContiguousFrom(uint64_t from) {
    std::lock_guard l(mu_);
    uint64_t l2 = from;
    while (l2 < seen_.size() && seen_[l2]) l2++;
    return l2 - 1;
  }
  uint64_t bad() const { return bad_.load(); }

 private:
  void Run() {
    pthread_setname_np(pthread_self(), "cs-consumer");
    while (!stop_) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 50);
      if (m == nullptr) continue;
      const int64_t now_ns = WallNanos();
      const auto now = Clock::now();
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->payload) {
        std::string_view v(static_cast<const char*>(m->payload), m->len);
        Arrival a{};
        a.recv_ns = now_ns;
        a.recv = now;
        rd_kafka_timestamp_type_t tt;
        a.create_ms = rd_kafka_message_timestamp(m, &tt);
        if (tt != RD_KAFKA_TIMESTAMP_CREATE_TIME) a.create_ms = -1;
        if (Parse(v, &a)) {
          std::lock_guard l(mu_);
          arrivals_.push_back(a);
          if (a.lsn < (1ull << 28)) {
            if (seen_.size() <= a.lsn) seen_.resize(std::max<size_t>(a.lsn + 1, seen_.size() * 2), false);
            seen_[a.lsn] = true;
          }
        } else {
          bad_++;
        }
      }
      rd_kafka_message_destroy(m);
    }
  }
  // The envelope's "lsn" and "time" are near the start of the JSON; no need
  // to decode the entity images.
  static bool Parse(std::string_view v, Arrival* a) {
    size_t p = v.find("\"lsn\":");
    if (p == std::string_view::npos) return false;
    a->lsn = std::strtoull(v.data() + p + 6, nullptr, 10);
    p = v.find("\"time\":\"");
    if (p == std::string_view::npos) return false;
    size_t q = v.find('"', p + 8);
    if (q == std::string_view::npos) return false;
    auto ticks = ParseDateTime(v.substr(p + 8, q - p - 8));
    if (!ticks) return false;
    a->commit_ns = TicksToUnixNanos(*ticks);
    return true;
  }

  rd_kafka_t* rk_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Arrival> arrivals_;
  std::vector<bool> seen_;
  std::atomic<uint64_t> bad_{0};
};

// ---- /metrics ------------------------------------------------------------------
struct MetricsSample {
  Clock::time_point at;
  double backlog = -1, last_lsn = -1, published_lsn = -1;
};

class MetricsReader {
 public:
  explicit MetricsReader(const std::string& hostport) {
    const size_t colon = hostport.rfind(':');
    host_ = hostport.substr(0, colon);
    port_ = std::stoi(hostport.substr(colon + 1));
  }
  bool Read(MetricsSample* s) {
    httplib::Client cli(host_, port_);
    cli.set_connection_timeout(1, 0);
    cli.set_read_timeout(2, 0);
    auto res = cli.Get("/metrics");
    s->at = Clock::now();
    if (!res || res->status != 200) return false;
    std::istringstream in(res->body);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const size_t sp = line.rfind(' ');
      if (sp == std::string::npos) continue;
      const std::string name = line.substr(0, sp);
      const double v = std::atof(line.c_str() + sp + 1);
      if (name == "sidetable_publisher_backlog_events") s->backlog = v;
      else if (name == "sidetable_changelog_lsn") s->last_lsn = v;
      else if (name == "sidetable_publisher_published_lsn") s->published_lsn = v;
    }
    return s->backlog >= 0;
  }

 private:
  std::string host_;
  int port_ = 0;
};

// Samples /metrics every 50 ms in a thread.
class Monitor {
 public:
  explicit Monitor(const std::string& hostport) : reader_(hostport) {
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "cs-monitor");
      while (!stop_) {
        MetricsSample s;
        if (reader_.Read(&s)) {
          std::lock_guard l(mu_);
          samples_.push_back(s);
        }
        for (int i = 0; i < 5 && !stop_; i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }
  ~Monitor() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<MetricsSample> Between(Clock::time_point a, Clock::time_point b) {
    std::lock_guard l(mu_);
    std::vector<MetricsSample> out;
    for (const auto& s : samples_)
      if (s.at >= a && s.at <= b) out.push_back(s);
    return out;
  }

 private:
  MetricsReader reader_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<MetricsSample> samples_;
};

// ---- CPU per thread (by name) from /proc ------------------------------------------
using CpuByThread = std::map<std::string, double>;  // seconds

CpuByThread ReadCpu(pid_t pid) {
  CpuByThread out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(dir + "/" + e->d_name + "/stat");
    std::string name;
    const double cpu = testing::StatCpuSeconds(
        std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>()), &name);
    if (cpu < 0) continue;
    // Merge numbered threads: "rdk:broker1" / "st-worker-3" -> one line each family.
    while (!name.empty() && std::isdigit(static_cast<unsigned char>(name.back()))) name.pop_back();
    out[name] += cpu;
  }
  ::closedir(d);
  return out;
}

std::string CpuSummary(const CpuByThread& a, const CpuByThread& b, double seconds, int top) {
  std::vector<std::pair<double, std::string>> v;
  double total = 0;
  for (const auto& [k, x] : b) {
    auto it = a.find(k);
    const double d = x - (it == a.end() ? 0 : it->second);
    total += d;
    if (d > 0) v.push_back({d, k});
  }
  std::sort(v.rbegin(), v.rend());
  char buf[128];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * total / seconds);
  std::string s = buf;
  s += " (";
  for (int i = 0; i < top && i < static_cast<int>(v.size()); i++) {
    std::snprintf(buf, sizeof buf, "%s%s %.0f%%", i ? ", " : "", v[i].second.c_str(), 100 * v[i].first / seconds);
    s += buf;
  }
  return s + ")";
}

// ---- one phase of paced writes ----------------------------------------------------
struct PhaseResult {
  std::string name;
  double target = 0;  // writes/s; 0 = max
  double seconds = 0;
  uint64_t acked = 0, busy = 0, errors = 0, skipped = 0;
  double writes_per_s = 0, events_per_s = 0;
  double backlog_end = -1;        // /metrics at the end of the phase
  double consumer_lag_end = 0;    // acked LSNs not yet received at the end
  double drain_s = -1;            // after the phase: until the consumer had every LSN of it
  double p50_ms = 0, p99_ms = 0, p999_ms = 0, max_ms = 0;
  // Split at the Kafka CreateTime (ms resolution): sidecar (commit -> producev)
  // and Kafka (linger, produce request, broker, fetch, consumer).
  double mean_ms = 0, to_produce_mean_ms = -1, to_produce_p99_ms = -1;
  double produce_to_recv_mean_ms = -1, produce_to_recv_p99_ms = -1;
  uint64_t events = 0, duplicates = 0, missing = 0;
  std::string cpu_sidecar, cpu_bench;
  // Outage only:
  bool outage = false;
  double peak_backlog = 0, catchup_s = -1, backlog_drained_s = -1;
  double outage_p50_ms = 0, outage_max_ms = 0;
};

class Bench {
 public:
  Bench(const Config& cfg, const EntityMaker& maker, client::Client* client, Consumer* consumer,
        Monitor* monitor, MetricsReader* metrics, EmbeddedKafka* kafka, pid_t sidecar_pid, int run)
      : cfg_(cfg), maker_(maker), client_(client), consumer_(consumer), monitor_(monitor),
        metrics_(metrics), kafka_(kafka), sidecar_pid_(sidecar_pid), run_(run) {}

  // Writes at `rate` (0 = as fast as `window` allows) for `seconds`. For the
  // outage phase, brokers go down at `down_at` and up at `up_at` seconds.
  PhaseResult Run(const std::string& name, double rate, double seconds,
                  double down_at = -1, double up_at = -1) {
    PhaseResult r;
    r.name = name;
    r.target = rate;
    r.seconds = seconds;
    r.outage = down_at >= 0;
    const int window = rate > 0 ? cfg_.window : cfg_.max_window;
    const size_t arrivals_before = consumer_->count();
    uint64_t first_lsn = UINT64_MAX, last_lsn = 0;
    uint64_t inflight = 0, scheduled = 0;
    const uint64_t max_lag = rate > 0 ? std::max<uint64_t>(window, static_cast<uint64_t>(rate * 0.1)) : 0;
    uint64_t up_lsn = 0;
    Clock::time_point t_up{};
    int64_t down_wall_ns = 0, up_wall_ns = 0;
    const CpuByThread cpu_sc0 = ReadCpu(sidecar_pid_), cpu_me0 = ReadCpu(::getpid());
    const auto start = Clock::now();
    const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    bool down = false, upped = false;
    auto on_reply = [&, this](Result<WriteResult> w) {
      inflight--;
      const Status& s = w.status();
      const bool in_window = Clock::now() <= end;
      if (!s.ok()) {
        (s.code() == Code::kServerBusy ? r.busy : r.errors)++;
        if (r.errors == 1 && !s.ok() && s.code() != Code::kServerBusy)
          std::fprintf(stderr, "write failed: %s\n", s.ToString().c_str());
        return;
      }
      first_lsn = std::min(first_lsn, w->lsn);
      last_lsn = std::max(last_lsn, w->lsn);
      if (in_window) r.acked++;
    };
    while (!g_stop) {
      const auto now = Clock::now();
      if (now >= end) break;
      const double t = Sec(now - start);
      if (r.outage && !down && t >= down_at) {
        if (Status s = kafka_->SetBrokersDown(true); !s.ok()) Die("brokers down: " + s.ToString());
        down = true;
        down_wall_ns = WallNanos();
      }
      if (r.outage && down && !upped && t >= up_at) {
        up_lsn = last_lsn;  // every LSN up to here was committed before the brokers came back
        if (Status s = kafka_->SetBrokersDown(false); !s.ok()) Die("brokers up: " + s.ToString());
        upped = true;
        t_up = Clock::now();
        up_wall_ns = WallNanos();
      }
      uint64_t due = rate > 0 ? static_cast<uint64_t>(t * rate) + 1 : UINT64_MAX;
      if (rate > 0 && due > scheduled + max_lag) {  // too far behind: do not burst to catch up
        r.skipped += due - scheduled - max_lag;
        scheduled = due - max_lag;
      }
      while (inflight < static_cast<uint64_t>(window) && scheduled < due) {
        Batch req(kTable);
        char pk[16], rk[48];
        std::snprintf(pk, sizeof pk, "p%03u", static_cast<unsigned>(seq_ % static_cast<uint64_t>(cfg_.partitions)));
        std::snprintf(rk, sizeof rk, "r%d-%s-%010llu", run_, name.c_str(), static_cast<unsigned long long>(seq_));
        req.InsertOrReplace(maker_.Make(pk, rk, seq_));
        seq_++;
        scheduled++;
        inflight++;
        client_->SendWrite(req, on_reply);
      }
      if (rate > 0) {
        // Take the replies that are there without blocking, then sleep until
        // the next write is due (at most 1 ms). Client::Poll(1 ms) would spin:
        // it returns at once with nothing pending and rounds waits down to ms.
        client_->Poll(std::chrono::milliseconds(0));
        if (inflight >= static_cast<uint64_t>(window)) {
          client_->Poll(std::chrono::milliseconds(5));
        } else if (scheduled >= due) {
          const auto next_due = start + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(static_cast<double>(scheduled) / rate));
          std::this_thread::sleep_until(std::min(next_due, Clock::now() + std::chrono::milliseconds(1)));
        }
      } else {
        client_->Poll(std::chrono::milliseconds(5));  // returns when a reply came
      }
    }
    const auto stop_at = Clock::now();
    if (r.outage && down && !upped) {  // interrupted: never leave the brokers down
      (void)kafka_->SetBrokersDown(false);
    }
    MetricsSample ms;
    if (metrics_->Read(&ms)) r.backlog_end = ms.backlog;
    const CpuByThread cpu_sc1 = ReadCpu(sidecar_pid_), cpu_me1 = ReadCpu(::getpid());
    const double cpu_secs = Sec(stop_at - start);
    r.cpu_sidecar = CpuSummary(cpu_sc0, cpu_sc1, cpu_secs, 4);
    r.cpu_bench = CpuSummary(cpu_me0, cpu_me1, cpu_secs, 4);
    // Drain the in-flight writes (bounded by the client's time-out).
    const auto drain_limit = Clock::now() + std::chrono::seconds(20);
    while (inflight > 0 && Clock::now() < drain_limit) client_->Poll(std::chrono::milliseconds(20));
    if (inflight > 0) Die("writes still unanswered 20 s after the phase");
    r.writes_per_s = static_cast<double>(r.acked) / seconds;
    if (last_lsn == 0) return r;
    // The consumer's lag at the end of the window: acked LSNs of the phase it had not received yet.
    {
      auto arr = consumer_->Since(arrivals_before);
      uint64_t received_in_window = 0;
      std::vector<bool> got(last_lsn - first_lsn + 1, false);
      for (const auto& a : arr) {
        if (a.recv >= start && a.recv <= end) received_in_window++;
        if (a.recv <= end && a.lsn >= first_lsn && a.lsn <= last_lsn) got[a.lsn - first_lsn] = true;
      }
      r.events_per_s = static_cast<double>(received_in_window) / seconds;
      r.consumer_lag_end = static_cast<double>(std::count(got.begin(), got.end(), false));
    }
    // Wait (bounded) until every LSN of the phase has arrived.
    const auto wait_limit = Clock::now() + std::chrono::seconds(60);
    while (consumer_->ContiguousFrom(first_lsn) < last_lsn && Clock::now() < wait_limit && !g_stop)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto arr = consumer_->Since(arrivals_before);
    // First arrival per LSN of this phase.
    std::vector<const Arrival*> first(last_lsn - first_lsn + 1, nullptr);
    for (const auto& a : arr) {
      if (a.lsn < first_lsn || a.lsn > last_lsn) continue;
      auto& f = first[a.lsn - first_lsn];
      if (f == nullptr) {
        f = &a;
      } else {
        r.duplicates++;
      }
    }
    bench::Latencies lat, to_produce, produce_to_recv, outage_lat;
    Clock::time_point last_recv = start;
    double to_produce_sum = 0, lat_sum = 0;
    uint64_t to_produce_n = 0;
    Clock::time_point catchup_at{};
    for (uint64_t i = 0; i < first.size(); i++) {
      const Arrival* a = first[i];
      if (a == nullptr) {
        r.missing++;
        continue;
      }
      r.events++;
      last_recv = std::max(last_recv, a->recv);
      const int64_t l = std::max<int64_t>(0, a->recv_ns - a->commit_ns);
      lat.Add(static_cast<uint64_t>(l));
      lat_sum += static_cast<double>(l);
      if (a->create_ms >= 0) {
        // CreateTime has ms resolution: +0.5 ms makes the mean unbiased.
        const int64_t create_ns = a->create_ms * 1'000'000 + 500'000;
        to_produce_sum += static_cast<double>(create_ns - a->commit_ns);
        to_produce_n++;
        produce_to_recv.Add(static_cast<uint64_t>(std::max<int64_t>(0, a->recv_ns - create_ns)));
        to_produce.Add(static_cast<uint64_t>(std::max<int64_t>(0, create_ns - a->commit_ns)));
      }
      if (r.outage && upped && first_lsn + i <= up_lsn) {
        if (catchup_at < a->recv) catchup_at = a->recv;
      }
      if (r.outage && down) {
        // Events committed while the brokers were down.
        if (a->commit_ns >= down_wall_ns && (!upped || a->commit_ns < up_wall_ns))
          outage_lat.Add(static_cast<uint64_t>(l));
      }
    }
    if (r.missing > 0) std::fprintf(stderr, "  %s: %llu events never arrived (60 s)\n", name.c_str(),
                                    static_cast<unsigned long long>(r.missing));
    r.drain_s = std::max(0.0, Sec(last_recv - stop_at));
    r.p50_ms = lat.PercentileMicros(50) / 1000;
    r.p99_ms = lat.PercentileMicros(99) / 1000;
    r.p999_ms = lat.PercentileMicros(99.9) / 1000;
    r.max_ms = lat.PercentileMicros(100) / 1000;
    if (r.events > 0) r.mean_ms = lat_sum / static_cast<double>(r.events) / 1e6;
    if (to_produce_n > 0) {
      r.to_produce_mean_ms = to_produce_sum / static_cast<double>(to_produce_n) / 1e6;
      r.to_produce_p99_ms = to_produce.PercentileMicros(99) / 1000;
      r.produce_to_recv_mean_ms = r.mean_ms - r.to_produce_mean_ms;
      r.produce_to_recv_p99_ms = produce_to_recv.PercentileMicros(99) / 1000;
    }
    if (r.outage && upped) {
      r.catchup_s = Sec(catchup_at - t_up);
      r.outage_p50_ms = outage_lat.PercentileMicros(50) / 1000;
      r.outage_max_ms = outage_lat.PercentileMicros(100) / 1000;
      // Backlog: peak, and when it was back to normal (at most ~20 ms of writes).
      const double normal = std::max(20.0, rate * 0.02);
      for (const auto& s : monitor_->Between(start, Clock::now())) {
        r.peak_backlog = std::max(r.peak_backlog, s.backlog);
        if (s.at > t_up && r.backlog_drained_s < 0 && s.backlog <= normal) r.backlog_drained_s = Sec(s.at - t_up);
      }
    }
    return r;
  }

 private:
  const Config& cfg_;
  const EntityMaker& maker_;
  client::Client* client_;
  Consumer* consumer_;
  Monitor* monitor_;
  MetricsReader* metrics_;
  EmbeddedKafka* kafka_;
  pid_t sidecar_pid_;
  int run_;
  uint64_t seq_ = 0;
};


void PrintPhase(const PhaseResult& r) {
  std::printf("  %-8s %9s w/s acked, %9s ev/s delivered, backlog at end %s (consumer lag %s), "
              "latency p50 %s p99 %s p999 %s max %s mean %s; commit->produce mean %s p99 %s, produce->recv mean %s p99 %s; "
              "drain %s; busy %llu err %llu skipped %llu dup %llu\n",
              r.name.c_str(), WithCommas(r.writes_per_s).c_str(), WithCommas(r.events_per_s).c_str(),
              WithCommas(r.backlog_end).c_str(), WithCommas(r.consumer_lag_end).c_str(), FormatMillis(r.p50_ms).c_str(),
              FormatMillis(r.p99_ms).c_str(), FormatMillis(r.p999_ms).c_str(), FormatMillis(r.max_ms).c_str(), FormatMillis(r.mean_ms).c_str(), FormatMillis(r.to_produce_mean_ms).c_str(),
              FormatMillis(r.to_produce_p99_ms).c_str(), FormatMillis(r.produce_to_recv_mean_ms).c_str(), FormatMillis(r.produce_to_recv_p99_ms).c_str(), FormatSecondsOrDash(r.drain_s).c_str(),
              static_cast<unsigned long long>(r.busy), static_cast<unsigned long long>(r.errors),
              static_cast<unsigned long long>(r.skipped), static_cast<unsigned long long>(r.duplicates));
  if (r.outage)
    std::printf("           outage: peak backlog %s, all pre-recovery events delivered %s after brokers up, "
                "backlog metric normal after %s; events committed while down: p50 %s max %s\n",
                WithCommas(r.peak_backlog).c_str(), FormatSecondsOrDash(r.catchup_s).c_str(), FormatSecondsOrDash(r.backlog_drained_s).c_str(),
                FormatMillis(r.outage_p50_ms).c_str(), FormatMillis(r.outage_max_ms).c_str());
  std::printf("           cpu: sidecar %s; bench %s\n", r.cpu_sidecar.c_str(), r.cpu_bench.c_str());
  std::fflush(stdout);
}

// One repeat: fresh mock cluster, fresh sidecar, all phases.
std::vector<PhaseResult> RunOnce(const Config& cfg, const std::vector<double>& rates, int run) {
  bench::ScratchDir dir(cfg.scratch, "csbench-", cfg.keep);
  auto k = EmbeddedKafka::Start(1);
  if (!k.ok()) Die(k.status().ToString());
  std::unique_ptr<EmbeddedKafka> kafka = std::move(k).value();
  if (Status s = kafka->CreateTopic(kTopic, cfg.topic_partitions); !s.ok()) Die(s.ToString());

  const std::string cfg_path = dir.path() + "/sidecar.yaml";
  {
    std::ofstream y(cfg_path);
    y << "sidecar:\n  id: " << kSidecarId << "\nkafka:\n  bootstrap: " << kafka->bootstraps()
      << "\n  partitions: " << cfg.topic_partitions << "\n";
    if (!cfg.producer_props.empty()) {
      y << "  properties:\n";
      for (const auto& p : cfg.producer_props) {
        const size_t eq = p.find('=');
        if (eq == std::string::npos) Die("--producer-prop wants key=value: " + p);
        y << "    \"" << p.substr(0, eq) << "\": \"" << p.substr(eq + 1) << "\"\n";
      }
    }
    if (!y) Die("cannot write " + cfg_path);
  }
  testing::SidecarProcess server(cfg.sidetable, dir.path() + "/db",
                                 {"--config", cfg_path, "--durability", "os", "--log-level", "warn"});
  if (!server.Start()) Die("the sidecar did not start; its log:\n" + server.Log());
  g_sidecar_pid.store(server.pid());
  if (server.http().empty()) Die("the sidecar's ready file has no http line");

  client::ClientOptions o;
  o.endpoint = server.endpoint();
  o.max_attempts = 1;  // ServerBusy is counted, not retried
  o.timeout = std::chrono::milliseconds(10000);
  o.caller = "csbench";
  auto c = client::Client::Connect(o);
  if (!c.ok()) Die(c.status().ToString());
  std::unique_ptr<client::Client> client = std::move(c).value();
  if (Status s = client->CreateTable(kTable); !s.ok()) Die("create table: " + s.ToString());

  Consumer consumer(kafka->bootstraps(), cfg.fetch_wait_ms);
  consumer.AssignAll(kTopic, cfg.topic_partitions);
  Monitor monitor(server.http());
  MetricsReader metrics(server.http());
  EntityMaker maker(cfg.entity_bytes);
  Bench bench(cfg, maker, client.get(), &consumer, &monitor, &metrics, kafka.get(), server.pid(), run);

  std::vector<PhaseResult> out;
  std::printf("repeat %d (sidecar pid %d, kafka %s, data %s)\n", run, static_cast<int>(server.pid()),
              kafka->bootstraps().c_str(), dir.path().c_str());
  if (cfg.warmup > 0) bench.Run("warmup", 1000, cfg.warmup);
  for (double rate : rates) {
    if (g_stop) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const std::string name = rate > 0 ? std::to_string(static_cast<int>(rate)) : "max";
    out.push_back(bench.Run(name, rate, cfg.seconds));
    PrintPhase(out.back());
  }
  if (!cfg.no_outage && !g_stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double total = cfg.outage_before + cfg.outage_down + cfg.outage_after;
    out.push_back(bench.Run("outage", cfg.outage_rate, total, cfg.outage_before,
                            cfg.outage_before + cfg.outage_down));
    PrintPhase(out.back());
  }
  if (consumer.bad()) std::fprintf(stderr, "  %llu messages could not be parsed\n",
                                   static_cast<unsigned long long>(consumer.bad()));
  client.reset();
  const int rc = server.Stop();
  g_sidecar_pid.store(-1);
  if (rc != 0) std::fprintf(stderr, "  the sidecar exited with %d; log: %s\n", rc, server.Log().c_str());
  return out;
}


int Main(int argc, char** argv) {
  Config cfg;
  CLI::App app{"sidetable-changestream-bench: commit-to-Kafka latency, publish rate and outage recovery"};
  app.add_option("--sidetable", cfg.sidetable, "the sidetable binary")->capture_default_str();
  app.add_option("--rates", cfg.rates, "target writes/s per phase; 'max' = as fast as the window allows; 'none' = outage phase only")
      ->capture_default_str();
  app.add_option("--seconds", cfg.seconds, "seconds per rate phase")->check(CLI::Range(0.5, 600.0))->capture_default_str();
  app.add_option("--warmup", cfg.warmup, "seconds of 1k/s before the phases (not reported)")
      ->check(CLI::Range(0.0, 60.0))->capture_default_str();
  app.add_option("--repeat", cfg.repeat, "repeats (fresh mock cluster and sidecar each); medians reported")
      ->check(CLI::Range(1, 20))->capture_default_str();
  app.add_flag("--quick", cfg.quick, "smoke run: 1k, 5k, max for 1.5 s, a 1 s outage, 1 repeat (< 20 s)");
  app.add_option("--partitions", cfg.partitions, "PartitionKeys written (round robin)")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--topic-partitions", cfg.topic_partitions, "Kafka partitions of the topic")
      ->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--window", cfg.window, "max writes in flight in paced phases")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--max-window", cfg.max_window, "writes in flight in the 'max' phase")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--entity-bytes", cfg.entity_bytes, "approximate entity size")->check(CLI::Range(300, 100000))->capture_default_str();
  app.add_option("--outage-rate", cfg.outage_rate, "writes/s during the outage phase")->capture_default_str();
  app.add_option("--outage-before", cfg.outage_before, "seconds before the brokers go down")->capture_default_str();
  app.add_option("--outage-down", cfg.outage_down, "seconds the brokers are down")->capture_default_str();
  app.add_option("--outage-after", cfg.outage_after, "seconds of writes after they are back")->capture_default_str();
  app.add_flag("--no-outage", cfg.no_outage, "skip the outage phase");
  app.add_option("--fetch-wait-ms", cfg.fetch_wait_ms, "consumer fetch.wait.max.ms (the mock does not cut it short)")
      ->check(CLI::Range(0, 1000))->capture_default_str();
  app.add_option("--producer-prop", cfg.producer_props,
                 "extra librdkafka producer setting for the sidecar (kafka.properties), key=value; repeatable");
  app.add_option("--scratch", cfg.scratch, "parent of the scratch directory")->capture_default_str();
  app.add_flag("--keep", cfg.keep, "keep the scratch directory (data, config, sidecar log)");
  CLI11_PARSE(app, argc, argv);
  if (cfg.quick) {
    cfg.rates = "1000,5000,max";
    cfg.seconds = 1.5;
    cfg.warmup = 0.5;
    cfg.repeat = 1;
    cfg.outage_before = 1;
    cfg.outage_down = 1;
    cfg.outage_after = 2;
  }
  std::vector<double> rates;
  {
    std::stringstream ss(cfg.rates);
    std::string item;
    while (cfg.rates != "none" && std::getline(ss, item, ',')) {
      if (item == "max") rates.push_back(0);
      else {
        try {
          rates.push_back(std::stod(item));
        } catch (...) {
          Die("--rates: bad rate " + item);
        }
        if (rates.back() <= 0) Die("--rates: rates must be positive (or max)");
      }
    }
  }
  if (::access(cfg.sidetable.c_str(), X_OK) != 0) Die("no sidetable binary at " + cfg.sidetable);
  std::atexit(TermSidecarAtExit);
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
    std::printf("sidetable-changestream-bench: %s on %s, %ld cores, load %.2f; %d repeat(s), %.1f s per rate, "
                "entity ~%zu B, %d PartitionKeys, %d Kafka partitions, window %d (max: %d), fetch.wait.max.ms %d; "
                "librdkafka %s\n",
                when, Hostname().c_str(), ::sysconf(_SC_NPROCESSORS_ONLN), load[0], cfg.repeat, cfg.seconds,
                cfg.entity_bytes, cfg.partitions, cfg.topic_partitions, cfg.window, cfg.max_window,
                cfg.fetch_wait_ms, rd_kafka_version_str());
  }
  std::vector<std::vector<PhaseResult>> runs;
  for (int i = 0; i < cfg.repeat && !g_stop; i++) runs.push_back(RunOnce(cfg, rates, i + 1));
  if (runs.empty() || runs[0].empty()) Die("nothing ran");

  // ---- medians per phase ----------------------------------------------------------
  const size_t phases = runs[0].size();
  auto med = [&](size_t p, auto field) {
    std::vector<double> v;
    for (const auto& run : runs)
      if (p < run.size()) v.push_back(field(run[p]));
    return Median(v);
  };
  auto every = [&](size_t p, auto field, auto fmt) {
    std::string s;
    for (const auto& run : runs)
      if (p < run.size()) s += (s.empty() ? "" : ", ") + fmt(field(run[p]));
    return s;
  };
  std::printf("\nMedians of %zu repeat(s):\n\n", runs.size());
  bench::MarkdownTable t({"target writes/s", "writes/s acked", "events/s delivered", "latency p50", "p99",
                          "p999", "max", "backlog at end (/metrics)", "mean: commit→produce", "produce→consumer",
                          "drain after phase"});
  for (size_t p = 0; p < phases; p++) {
    const PhaseResult& r0 = runs[0][p];
    std::string target = r0.target > 0 ? WithCommas(r0.target) : "max";
    if (r0.outage) target += " (outage)";
    t.AddRow({target, WithCommas(med(p, [](auto& r) { return r.writes_per_s; })),
              WithCommas(med(p, [](auto& r) { return r.events_per_s; })),
              FormatMillis(med(p, [](auto& r) { return r.p50_ms; })), FormatMillis(med(p, [](auto& r) { return r.p99_ms; })),
              FormatMillis(med(p, [](auto& r) { return r.p999_ms; })), FormatMillis(med(p, [](auto& r) { return r.max_ms; })),
              WithCommas(med(p, [](auto& r) { return r.backlog_end; })),
              FormatMillis(med(p, [](auto& r) { return r.to_produce_mean_ms; })),
              FormatMillis(med(p, [](auto& r) { return r.produce_to_recv_mean_ms; })),
              FormatSecondsOrDash(med(p, [](auto& r) { return r.drain_s; }))});
  }
  t.Print(std::cout);
  for (size_t p = 0; p < phases; p++) {
    if (!runs[0][p].outage) continue;
    std::printf("\nOutage (%.0f writes/s, brokers down %.1f s): peak backlog %s events; all events committed "
                "before recovery delivered %s after the brokers came back (every run: %s); backlog metric "
                "back to normal after %s (%s); events committed while down: p50 %s, max %s; phase max latency %s "
                "(%s)\n",
                cfg.outage_rate, cfg.outage_down, WithCommas(med(p, [](auto& r) { return r.peak_backlog; })).c_str(),
                FormatSecondsOrDash(med(p, [](auto& r) { return r.catchup_s; })).c_str(),
                every(p, [](auto& r) { return r.catchup_s; }, FormatSecondsOrDash).c_str(),
                FormatSecondsOrDash(med(p, [](auto& r) { return r.backlog_drained_s; })).c_str(),
                every(p, [](auto& r) { return r.backlog_drained_s; }, FormatSecondsOrDash).c_str(),
                FormatMillis(med(p, [](auto& r) { return r.outage_p50_ms; })).c_str(),
                FormatMillis(med(p, [](auto& r) { return r.outage_max_ms; })).c_str(),
                FormatMillis(med(p, [](auto& r) { return r.max_ms; })).c_str(),
                every(p, [](auto& r) { return r.max_ms; }, FormatMillis).c_str());
  }
  std::printf("\nEvery run (repeat order):\n");
  for (size_t p = 0; p < phases; p++) {
    std::printf("  %-8s writes/s %s; events/s %s; p50 %s; p99 %s; p999 %s; backlog at end %s\n",
                runs[0][p].name.c_str(),
                every(p, [](auto& r) { return r.writes_per_s; }, [](double v) { return WithCommas(v); }).c_str(),
                every(p, [](auto& r) { return r.events_per_s; }, [](double v) { return WithCommas(v); }).c_str(),
                every(p, [](auto& r) { return r.p50_ms; }, FormatMillis).c_str(),
                every(p, [](auto& r) { return r.p99_ms; }, FormatMillis).c_str(),
                every(p, [](auto& r) { return r.p999_ms; }, FormatMillis).c_str(),
                every(p, [](auto& r) { return r.backlog_end; }, [](double v) { return WithCommas(v); }).c_str());
  }
  uint64_t busy = 0, errors = 0, missing = 0;
  for (const auto& run : runs)
    for (const auto& r : run) {
      busy += r.busy;
      errors += r.errors;
      missing += r.missing;
    }
  std::printf("\nServerBusy %llu, other write errors %llu, events never delivered %llu; %.1f s in all\n",
              static_cast<unsigned long long>(busy), static_cast<unsigned long long>(errors),
              static_cast<unsigned long long>(missing), bench::SecondsSince(t0));
  return errors == 0 && missing == 0 ? 0 : 2;
}

}  // namespace
}  // namespace sidetable::csbench

int main(int argc, char** argv) { return sidetable::csbench::Main(argc, argv); }
