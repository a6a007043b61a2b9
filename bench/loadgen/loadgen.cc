// sidetable-loadgen: drives a running sidetable sidecar over ZeroMQ with the
// C++ client (client/client.h) and reports throughput and latency per kind
// of operation.
//
// One client (one DEALER socket) per thread ("connection"); each keeps up to
// --depth requests in flight with Client::Send()/Poll(). Latency is measured
// with steady_clock from Send() to the reply's callback (for a query: from
// the first page's Send() to the last page's callback). Loops are bounded by
// --duration or --requests, and the final drain by --timeout-ms.
//
// See bench/loadgen/README.md for the flags and examples.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "client/allocator.h"
#include "client/client.h"
#include "client/curve.h"
#include "engine/batch.h"
#include "engine/edm.h"
#include "engine/status.h"
#include "protocol/wire.h"
#include "testing/proc_stats.h"

namespace sidetable::loadgen {
namespace {

using Clock = std::chrono::steady_clock;

enum Kind { kInsert = 0, kGet, kUpsert, kQuery, kBatch, kMany, kNumKinds };
// many: one WriteMany request of --batch-size single-entity inserts, each on
// a random partition (the shape of a pattern worker's grouped writes).
constexpr const char* kKindNames[kNumKinds] = {"insert", "get", "upsert", "query", "batch", "many"};

struct Config {
  std::string endpoint = "tcp://127.0.0.1:5555";
  std::string token;  // --token: a signed access token (auth.mode: tokens)
  int connections = 1;
  int depth = 32;
  double duration_s = 10;
  uint64_t requests = 0;  // total across connections; 0 = use duration
  double warmup_s = 1;
  std::string mix = "insert=100";
  size_t entity_bytes = 1024;
  std::string keys = "uniform";
  double hot_share = 0.9;
  uint32_t partitions = 1000;
  uint32_t batch_size = 100;
  uint32_t page_size = 1000;
  bool malloc_defaults = false;  // --malloc-defaults: no client::KeepLargeRepliesInTheHeap()
  std::string query_api = "views";  // views | pages | plain (see Issue's kQuery)
  uint64_t preload = 0;
  bool no_load = false;
  std::string table = "loadgen";
  bool strict = false;
  bool no_request_ids = false;  // --no-request-ids
  int max_attempts = 1;
  int timeout_ms = 10000;
  std::string json_path;
  int server_pid = 0;  // also report the server's CPU per op and RSS (from /proc)
  std::string label;
  uint64_t seed = 0;
  // CURVE (docs/security.md, "Transport"): the sidecar's public key file and
  // this client's secret key file; read once into `curve`.
  std::string curve_server_key_file, curve_key_file;
  client::CurveClientKeys curve;

  double weights[kNumKinds] = {};
};

// The options every connection of this run shares.
client::ClientOptions BaseOptions(const Config& cfg) {
  client::ClientOptions o;
  o.endpoint = cfg.endpoint;
  o.timeout = std::chrono::milliseconds(cfg.timeout_ms);
  o.curve = cfg.curve;
  o.token = cfg.token;
  o.client_request_ids = !cfg.no_request_ids;
  return o;
}

// ---- the ~1 KiB entity ---------------------------------------------------------
// `n` in at least `width` digits, zero-padded, as "%0*llu" would write it:
// by hand, because snprintf was 12% of the client's instructions per Get
// and 12% per insert (callgrind), work the bare echo it is compared with
// does not do.
void AppendPadded(std::string* out, uint64_t n, int width) {
  char digits[24];
  int len = 0;
  do {
    digits[len++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0);
  out->append(static_cast<size_t>(std::max(width, len) - len), '0');
  while (len > 0) out->push_back(digits[--len]);
}

// Six typed properties (String, Int32, Double, Boolean, DateTime, Guid) plus a
// padding string drawn from random text, like bench/entity_factory's entity
// (peers.md: "6 typed properties plus a 760-character string" for 1 KiB).
class EntityMaker {
 public:
  EntityMaker(size_t entity_bytes) {
    std::mt19937_64 rng(42);
    static constexpr char kAlphabet[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,";
    pool_.resize(1 << 16);
    for (char& c : pool_) c = kAlphabet[rng() % (sizeof kAlphabet - 1)];
    for (auto& b : guid_) b = static_cast<uint8_t>(rng());
    // ~264 bytes go to keys, names, the six values and framing; the rest is padding.
    constexpr size_t kFixed = 264;
    notes_chars_ = entity_bytes > kFixed ? entity_bytes - kFixed : 0;
    notes_chars_ = std::min(notes_chars_, pool_.size() / 2);
  }

  Entity Make(std::string pk, std::string rk, uint64_t n) const {
    Entity e;
    e.partition_key = std::move(pk);
    e.row_key = std::move(rk);
    e.properties.reserve(7);  // grown once, not 1, 2, 4, 8
    std::string name = "customer-";
    AppendPadded(&name, n % 1000000, 6);
    e.Set("Name", Value::String(std::move(name)));
    e.Set("Age", Value::Int32(static_cast<int32_t>(n % 100)));
    e.Set("Balance", Value::Double(static_cast<double>(n) * 0.25));
    e.Set("Active", Value::Boolean(n % 2 == 0));
    e.Set("Joined", Value::DateTime(kUnixEpochTicks + 1'700'000'000 * kTicksPerSecond +
                                    static_cast<int64_t>(n % 1000000) * kTicksPerSecond));
    e.Set("CustomerId", Value::MakeGuid(guid_));
    size_t span = pool_.size() - notes_chars_;
    e.Set("Notes", Value::String(pool_.substr((n * 7919) % span, notes_chars_)));
    return e;
  }

 private:
  std::string pool_;
  Guid guid_{};
  size_t notes_chars_ = 0;
};

// `prefix` then `n` in at least `width` digits, zero-padded ("p%06u").
std::string PaddedKey(char prefix, uint64_t n, int width) {
  std::string out(1, prefix);
  AppendPadded(&out, n, width);
  return out;
}
std::string PartitionKey(uint32_t p) { return PaddedKey('p', p, 6); }
std::string PreloadRowKey(uint64_t r) { return PaddedKey('r', r, 10); }

// ---- statistics ------------------------------------------------------------------
struct Stats {
  std::vector<uint64_t> lat_ns[kNumKinds];
  uint64_t ops[kNumKinds] = {};
  uint64_t entities[kNumKinds] = {};
  uint64_t busy = 0;
  std::map<std::string, uint64_t> errors;  // by code name, ServerBusy excluded

  void Merge(const Stats& o) {
    for (int k = 0; k < kNumKinds; k++) {
      lat_ns[k].insert(lat_ns[k].end(), o.lat_ns[k].begin(), o.lat_ns[k].end());
      ops[k] += o.ops[k];
      entities[k] += o.entities[k];
    }
    busy += o.busy;
    for (const auto& [c, n] : o.errors) errors[c] += n;
  }
};

double PercentileUs(std::vector<uint64_t>& v, double p) {
  if (v.empty()) return 0;
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  i = std::min(i, v.size() - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return static_cast<double>(v[i]) / 1000.0;
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "sidetable-loadgen: %s\n", what.c_str());
  std::exit(1);
}

// ---- one connection ------------------------------------------------------------------
struct Shared {
  const Config* cfg = nullptr;
  const EntityMaker* maker = nullptr;
  std::string run_id;
  uint64_t rows_per_partition = 0;  // preloaded rows per partition (gets, upserts)
  Clock::time_point measure_start, measure_end;  // measure_end unused in --requests mode
  bool by_requests = false;
};

class Connection {
 public:
  Connection(const Shared& sh, int index, uint64_t quota)
      : sh_(sh), cfg_(*sh.cfg), index_(index), quota_(quota),
        rng_(sh.cfg->seed ? sh.cfg->seed + static_cast<uint64_t>(index) : std::random_device{}()) {
    client::ClientOptions o = BaseOptions(cfg_);
    o.max_attempts = cfg_.max_attempts;
    o.caller = "loadgen";
    auto c = client::Client::Connect(o);
    if (!c.ok()) Die(c.status().ToString());
    client_ = std::move(c).value();
  }

  // Runs until the quota (requests mode) or the measurement window ends, then
  // drains what is in flight (bounded by the client's time-out per request).
  void Run() {
    for (;;) {
      const auto now = Clock::now();
      bool measuring = now >= sh_.measure_start;
      bool more = sh_.by_requests ? (!measuring || issued_measured_ < quota_) : now < sh_.measure_end;
      if (!more) break;
      while (inflight_ < static_cast<size_t>(cfg_.depth)) {
        if (sh_.by_requests && measuring && issued_measured_ >= quota_) break;
        Issue(measuring);
      }
      client_->Poll(std::chrono::milliseconds(20));
    }
    // Drain: each request ends within timeout_ms × max_attempts (plus back-off).
    const auto limit = Clock::now() + std::chrono::milliseconds(
                                          static_cast<int64_t>(cfg_.timeout_ms) * (cfg_.max_attempts + 1) + 2000);
    while (inflight_ > 0 && Clock::now() < limit) client_->Poll(std::chrono::milliseconds(50));
    end_ = Clock::now();
  }

  Stats& stats() { return stats_; }
  Clock::time_point end() const { return end_; }

 private:
  Kind PickKind() {
    std::uniform_real_distribution<double> d(0, 100);
    double x = d(rng_);
    for (int k = 0; k < kNumKinds; k++) {
      if (x < cfg_.weights[k]) return static_cast<Kind>(k);
      x -= cfg_.weights[k];
    }
    for (int k = kNumKinds - 1; k >= 0; k--)
      if (cfg_.weights[k] > 0) return static_cast<Kind>(k);
    return kInsert;
  }

  uint32_t PickPartition() {
    const uint32_t n = cfg_.partitions;
    if (cfg_.keys == "hot" && n > 1) {
      std::uniform_real_distribution<double> d(0, 1);
      if (d(rng_) < cfg_.hot_share) return 0;
      return 1 + static_cast<uint32_t>(rng_() % (n - 1));
    }
    return static_cast<uint32_t>(rng_() % n);
  }

  // "n<run>-<connection, 2 digits>-<sequence, 10 digits>".
  std::string NewRowKey() {
    std::string rk;
    rk.reserve(16 + sh_.run_id.size());
    rk.push_back('n');
    rk.append(sh_.run_id);
    rk.push_back('-');
    AppendPadded(&rk, static_cast<uint64_t>(index_), 2);
    rk.push_back('-');
    AppendPadded(&rk, seq_++, 10);
    return rk;
  }

  uint64_t PickPreloadedRow() {
    if (sh_.rows_per_partition == 0) return rng_() % 1000000;  // no preload: mostly misses
    return rng_() % sh_.rows_per_partition;
  }

  void Record(Kind k, bool record, Clock::time_point t0, const Status& s, uint64_t entities) {
    inflight_--;
    if (!record) return;
    const auto now = Clock::now();
    if (!sh_.by_requests && now > sh_.measure_end) return;  // finished after the window
    if (!s.ok()) {
      if (s.code() == Code::kServerBusy) {
        stats_.busy++;
      } else {
        stats_.errors[std::string(ErrorCodeName(s.code()))]++;
      }
      return;
    }
    stats_.ops[k]++;
    stats_.entities[k] += entities;
    stats_.lat_ns[k].push_back(
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - t0).count()));
  }

  void Issue(bool measuring) {
    const Kind k = PickKind();
    if (measuring) issued_measured_++;
    inflight_++;
    const auto t0 = Clock::now();
    switch (k) {
      case kInsert:
      case kUpsert: {
        const uint32_t p = PickPartition();
        std::string rk = k == kInsert ? NewRowKey() : PreloadRowKey(PickPreloadedRow());
        Batch b(cfg_.table);
        b.Add(k == kInsert ? OpKind::kInsert : OpKind::kInsertOrReplace,
              sh_.maker->Make(PartitionKey(p), std::move(rk), seq_), "");
        // No content back, like the SDKs' createEntity/upsertEntity that
        // bench/compare runs against Azurite.
        client_->SendWrite(
            b, [this, k, t0, measuring](Result<WriteResult> r) { Record(k, measuring, t0, r.status(), 1); },
            /*return_entity=*/false);
        break;
      }
      case kBatch: {
        const std::string pk = PartitionKey(PickPartition());
        Batch b(cfg_.table);
        for (uint32_t i = 0; i < cfg_.batch_size; i++) b.Insert(sh_.maker->Make(pk, NewRowKey(), seq_));
        const uint64_t n = cfg_.batch_size;
        client_->SendWrite(b, [this, k, t0, measuring, n](Result<WriteResult> r) {
          Record(k, measuring, t0, r.status(), n);
        });
        break;
      }
      case kMany: {
        std::vector<Batch> batches;
        batches.reserve(cfg_.batch_size);
        for (uint32_t i = 0; i < cfg_.batch_size; i++) {
          Batch b(cfg_.table);
          b.Insert(sh_.maker->Make(PartitionKey(PickPartition()), NewRowKey(), seq_));
          batches.push_back(std::move(b));
        }
        const uint64_t n = cfg_.batch_size;
        client_->SendWriteMany(batches, [this, k, t0, measuring, n](Result<std::vector<Result<WriteResult>>> r) {
          Status s = r.status();
          if (s.ok()) {
            for (const auto& one : *r) {
              if (!one.ok()) {
                s = one.status();
                break;
              }
            }
          }
          Record(k, measuring, t0, s, n);
        });
        break;
      }
      case kGet: {
        // The entity is decoded, as a caller would.
        client_->SendGet(cfg_.table, PartitionKey(PickPartition()), PreloadRowKey(PickPreloadedRow()),
                         [this, k, t0, measuring](Result<Entity> r) { Record(k, measuring, t0, r.status(), 1); });
        break;
      }
      case kQuery: {
        client::QueryOptions q;
        q.table = cfg_.table;
        q.filter = "PartitionKey eq '" + PartitionKey(PickPartition()) + "'";
        q.top = static_cast<int>(cfg_.page_size);
        // --query-api: "views" (the default) reads each page in place
        // (Client::SendQueryPageViews) and, per entity, its RowKey and the
        // Notes property, as a caller mapping entities into its own types
        // would; "pages" decodes every entity into an Entity
        // (SendQueryPages); both read one page ahead. "plain" asks for each
        // page once the previous one is decoded (SendQuery).
        if (cfg_.query_api == "plain") {
          SendQueryPage(std::move(q), std::nullopt, t0, measuring, 0);
          break;
        }
        struct Count {
          uint64_t entities = 0;
          bool misshapen = false;  // an entity without its RowKey or Notes
        };
        auto count = std::make_shared<Count>();
        auto done = [this, count, t0, measuring](Status s) {
          if (s.ok() && count->misshapen) s = Status(Code::kInternal, "a query entity without RowKey or Notes");
          Record(kQuery, measuring, t0, s, s.ok() ? count->entities : 0);
        };
        if (cfg_.query_api == "pages") {
          client_->SendQueryPages(
              q,
              [count](client::Page& page) {
                count->entities += page.entities.size();
                return true;
              },
              std::move(done));
          break;
        }
        client_->SendQueryPageViews(
            q,
            [count](client::PageView& page) {
              PropertyView notes;
              for (const client::EntityView& e : page.entities()) {
                if (e.row_key().empty() || !e.Find("Notes", &notes) || notes.bytes().empty()) {
                  count->misshapen = true;
                  return false;
                }
              }
              count->entities += page.entities().size();
              return true;
            },
            std::move(done));
        break;
      }
      default:
        break;
    }
  }

  // A query page by page, each asked for when the previous one is decoded.
  void SendQueryPage(client::QueryOptions q, std::optional<client::Continuation> next, Clock::time_point t0,
                     bool measuring, uint64_t so_far) {
    client::QueryOptions copy = q;
    client_->SendQuery(q, next, [this, copy = std::move(copy), t0, measuring, so_far](Result<client::Page> r) mutable {
      if (!r.ok()) return Record(kQuery, measuring, t0, r.status(), 0);
      const uint64_t total = so_far + r->entities.size();
      if (r->next) {
        SendQueryPage(std::move(copy), std::move(r->next), t0, measuring, total);
        return;
      }
      Record(kQuery, measuring, t0, Status(), total);
    });
  }

  const Shared& sh_;
  const Config& cfg_;
  int index_;
  uint64_t quota_;
  std::mt19937_64 rng_;
  std::unique_ptr<client::Client> client_;
  size_t inflight_ = 0;
  uint64_t issued_measured_ = 0;
  uint64_t seq_ = 0;
  Stats stats_;
  Clock::time_point end_;
};

// ---- set-up ----------------------------------------------------------------------
void ParseMix(Config* cfg) {
  std::stringstream ss(cfg->mix);
  std::string item;
  double total = 0;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) Die("--mix: expected kind=percent, got '" + item + "'");
    std::string name = item.substr(0, eq);
    double v = 0;
    try {
      v = std::stod(item.substr(eq + 1));
    } catch (...) {
      Die("--mix: bad number in '" + item + "'");
    }
    if (v < 0) Die("--mix: negative share in '" + item + "'");
    int k = -1;
    for (int i = 0; i < kNumKinds; i++)
      if (name == kKindNames[i]) k = i;
    if (k < 0) Die("--mix: unknown kind '" + name + "' (insert, get, upsert, query, batch, many)");
    cfg->weights[k] = v;
    total += v;
  }
  if (total <= 0) Die("--mix: nothing to do");
  if (total < 99.999 || total > 100.001) Die("--mix: the percentages must add up to 100");
}

// Loads --preload entities (InsertOrReplace, so re-runs on the same table are
// fine) in EGTs of up to 100 per partition, 16 in flight on one connection.
void Preload(const Config& cfg, const EntityMaker& maker, uint64_t rows_per_partition) {
  client::ClientOptions o = BaseOptions(cfg);
  o.max_attempts = 10;  // ServerBusy while loading: back off and retry
  auto c = client::Client::Connect(o);
  if (!c.ok()) Die(c.status().ToString());
  auto& client = *c.value();
  const auto t0 = Clock::now();
  uint64_t failed = 0, sent = 0;
  std::string first_error;
  for (uint32_t p = 0; p < cfg.partitions; p++) {
    for (uint64_t first = 0; first < rows_per_partition; first += 100) {
      Batch b(cfg.table);
      const uint64_t last = std::min<uint64_t>(first + 100, rows_per_partition);
      for (uint64_t row = first; row < last; row++) {
        b.InsertOrReplace(maker.Make(PartitionKey(p), PreloadRowKey(row), row));
      }
      client.SendWrite(b, [&](Result<WriteResult> r) {
        if (!r.ok()) {
          if (failed++ == 0) first_error = r.status().ToString();
        }
      });
      sent++;
      for (int i = 0; i < 1000 && client.pending() >= 16; i++) client.Poll(std::chrono::milliseconds(50));
    }
  }
  client.Drain();
  if (failed) Die("preload: " + std::to_string(failed) + " of " + std::to_string(sent) +
                  " batches failed, first: " + first_error);
  std::fprintf(stderr, "preloaded %llu entities (%u partitions × %llu) in %.2f s\n",
               static_cast<unsigned long long>(rows_per_partition * cfg.partitions), cfg.partitions,
               static_cast<unsigned long long>(rows_per_partition),
               std::chrono::duration<double>(Clock::now() - t0).count());
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// A process's CPU time (user + system) and resident memory, from /proc.
struct ProcSample {
  bool ok = false;
  double cpu_us = 0;
  uint64_t rss_kb = 0, hwm_kb = 0;
};

ProcSample SampleProc(int pid) {
  ProcSample out;
  const double cpu = testing::ProcessCpuSeconds(pid);
  if (cpu < 0) return out;
  out.cpu_us = cpu * 1e6;
  out.rss_kb = testing::ProcStatusBytes(pid, "VmRSS") / 1024;
  out.hwm_kb = testing::ProcStatusBytes(pid, "VmHWM") / 1024;
  out.ok = true;
  return out;
}

int Main(int argc, char** argv) {
  Config cfg;
  CLI::App app{"sidetable-loadgen: load generator for a sidetable sidecar (C++ client, pipelined)"};
  app.add_option("--endpoint", cfg.endpoint, "server endpoint")->capture_default_str();
  app.add_option("--token", cfg.token, "signed access token for a sidecar with auth.mode: tokens (docs/security.md)");
  app.add_option("--connections", cfg.connections, "connections (one client and thread each)")
      ->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--depth", cfg.depth, "requests in flight per connection")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  auto* dur = app.add_option("--duration", cfg.duration_s, "seconds to measure (after --warmup)")
                  ->check(CLI::Range(0.1, 3600.0))->capture_default_str();
  app.add_option("--requests", cfg.requests, "operations to measure in all (instead of --duration)")
      ->excludes(dur);
  app.add_option("--warmup", cfg.warmup_s, "seconds of unmeasured load first")
      ->check(CLI::Range(0.0, 600.0))->capture_default_str();
  app.add_option("--mix", cfg.mix,
                 "percentages of insert, get, upsert, query, batch, many, e.g. insert=50,get=50")
      ->capture_default_str();
  app.add_option("--entity-bytes", cfg.entity_bytes, "approximate entity size (6 typed properties + padding)")
      ->check(CLI::Range(300, 900000))->capture_default_str();
  app.add_option("--keys", cfg.keys, "uniform, or hot (one partition takes --hot-share of the traffic)")
      ->check(CLI::IsMember({"uniform", "hot"}))->capture_default_str();
  app.add_option("--hot-share", cfg.hot_share, "share of operations on the hot partition (--keys hot)")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--partitions", cfg.partitions, "partitions the keys spread over")
      ->check(CLI::Range(1u, 10000000u))->capture_default_str();
  app.add_option("--batch-size", cfg.batch_size, "inserts per EGT (batch), or single-insert EGTs per WriteMany (many)")
      ->check(CLI::Range(1u, 100u))->capture_default_str();
  app.add_option("--page-size", cfg.page_size, "query page size (top)")
      ->check(CLI::Range(1u, 1000u))->capture_default_str();
  app.add_option("--query-api", cfg.query_api,
                 "queries: views (pages read in place, one ahead), pages (Entity values, one ahead) or plain "
                 "(each page asked for once the previous one is decoded)")
      ->check(CLI::IsMember({"views", "pages", "plain"}))
      ->capture_default_str();
  app.add_option("--preload", cfg.preload,
                 "entities to load first, spread evenly over --partitions (get, upsert, query use them)")
      ->capture_default_str();
  app.add_flag("--malloc-defaults", cfg.malloc_defaults,
               "keep glibc's malloc settings; by default the loadgen calls "
               "client::KeepLargeRepliesInTheHeap() like an application reading large pages should");
  app.add_flag("--no-load", cfg.no_load,
               "do not load: the --preload entities are already there (from an earlier run)");
  app.add_option("--table", cfg.table, "table (created if missing)")->capture_default_str();
  app.add_flag("--strict", cfg.strict, "strict round trip: 1 connection, depth 1");
  app.add_flag("--no-request-ids", cfg.no_request_ids,
               "send writes without client request ids (to measure what exactly-once retries cost)");
  app.add_option("--max-attempts", cfg.max_attempts,
                 "client attempts per request (1 = ServerBusy is reported, not retried)")
      ->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--timeout-ms", cfg.timeout_ms, "client time-out per attempt")
      ->check(CLI::Range(10, 600000))->capture_default_str();
  app.add_option("--json", cfg.json_path, "also write the results as JSON to this file");
  app.add_option("--server-pid", cfg.server_pid,
                 "the server's PID on this host: report its CPU time per operation over the measured "
                 "window and its RSS (from /proc)");
  app.add_option("--label", cfg.label, "a name for this run in the JSON");
  app.add_option("--seed", cfg.seed, "random seed (0 = random)");
  app.add_option("--curve-server-key", cfg.curve_server_key_file,
                 "CURVE: the sidecar's public key file (with --curve-key)");
  app.add_option("--curve-key", cfg.curve_key_file, "CURVE: this client's secret key file, allowed by the sidecar");
  CLI11_PARSE(app, argc, argv);
  // Before any thread: process-wide (client/allocator.h).
  if (!cfg.malloc_defaults) client::KeepLargeRepliesInTheHeap();
  if (cfg.strict) {
    cfg.connections = 1;
    cfg.depth = 1;
  }
  ParseMix(&cfg);
  {
    auto keys = client::LoadCurveKeys(cfg.curve_server_key_file, cfg.curve_key_file);
    if (!keys.ok()) Die("--curve-server-key/--curve-key: " + keys.status().message());
    cfg.curve = std::move(keys).value();
  }

  EntityMaker maker(cfg.entity_bytes);
  {
    // Table, and the size of one insert request on the wire.
    client::ClientOptions o = BaseOptions(cfg);
    auto c = client::Client::Connect(o);
    if (!c.ok()) Die(c.status().ToString());
    auto ping = c.value()->Ping();
    if (!ping.ok()) Die("ping " + cfg.endpoint + ": " + ping.status().ToString());
    Status s = c.value()->CreateTable(cfg.table);
    if (!s.ok() && s.code() != Code::kTableAlreadyExists) Die("create table: " + s.ToString());
    wire::Request r;
    r.op = wire::Op::kWrite;
    r.table = cfg.table;
    r.ops.push_back(Operation{OpKind::kInsert, maker.Make(PartitionKey(0), PreloadRowKey(0), 0), ""});
    std::string frame;
    wire::EncodeRequest(r, &frame);
    std::fprintf(stderr, "one insert request: %zu bytes on the wire\n", frame.size());
  }

  Shared sh;
  sh.cfg = &cfg;
  sh.maker = &maker;
  {
    char id[32];
    std::snprintf(id, sizeof id, "%x%llx", static_cast<unsigned>(getpid()),
                  static_cast<unsigned long long>(Clock::now().time_since_epoch().count() & 0xffffff));
    sh.run_id = id;
  }
  if (cfg.preload > 0) {
    sh.rows_per_partition = (cfg.preload + cfg.partitions - 1) / cfg.partitions;
    if (!cfg.no_load) Preload(cfg, maker, sh.rows_per_partition);
  }
  sh.by_requests = cfg.requests > 0;
  const auto start = Clock::now();
  sh.measure_start = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg.warmup_s));
  sh.measure_end = sh.measure_start +
                   std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg.duration_s));

  std::vector<std::unique_ptr<Connection>> conns;
  for (int i = 0; i < cfg.connections; i++) {
    uint64_t quota = cfg.requests / cfg.connections + (static_cast<uint64_t>(i) < cfg.requests % cfg.connections ? 1 : 0);
    conns.push_back(std::make_unique<Connection>(sh, i, quota));
  }
  // The server's CPU time over the measured window (from its start to the
  // end of the run: the last replies drain within milliseconds).
  ProcSample server_at_start;
  std::thread sampler;
  if (cfg.server_pid > 0) {
    sampler = std::thread([&] {
      std::this_thread::sleep_until(sh.measure_start);
      server_at_start = SampleProc(cfg.server_pid);
    });
  }
  std::vector<std::thread> threads;
  for (auto& c : conns) threads.emplace_back([&c] { c->Run(); });
  for (auto& t : threads) t.join();
  if (sampler.joinable()) sampler.join();
  const ProcSample server_at_end = cfg.server_pid > 0 ? SampleProc(cfg.server_pid) : ProcSample{};

  Stats all;
  Clock::time_point last_end = sh.measure_start;
  for (auto& c : conns) {
    all.Merge(c->stats());
    last_end = std::max(last_end, c->end());
  }
  const double seconds = sh.by_requests ? std::chrono::duration<double>(last_end - sh.measure_start).count()
                                        : cfg.duration_s;

  // ---- report -----------------------------------------------------------------
  std::printf("sidetable-loadgen %s: %s, %d connection(s) x depth %d, mix %s, keys %s, %u partition(s), "
              "entity ~%zu B, %.2f s measured\n",
              cfg.label.c_str(), cfg.endpoint.c_str(), cfg.connections, cfg.depth, cfg.mix.c_str(),
              cfg.keys.c_str(), cfg.partitions, cfg.entity_bytes, seconds);
  std::printf("%-8s %10s %12s %14s %10s %10s %10s\n", "op", "ok", "ops/s", "entities/s", "p50 us",
              "p99 us", "p999 us");
  uint64_t total_ops = 0, total_entities = 0;
  std::ostringstream json;
  json << "{\"label\":\"" << JsonEscape(cfg.label) << "\",\"endpoint\":\"" << JsonEscape(cfg.endpoint)
       << "\",\"connections\":" << cfg.connections << ",\"depth\":" << cfg.depth << ",\"mix\":\""
       << JsonEscape(cfg.mix) << "\",\"seconds\":" << seconds << ",\"ops\":{";
  bool first = true;
  for (int k = 0; k < kNumKinds; k++) {
    if (cfg.weights[k] <= 0) continue;
    const double p50 = PercentileUs(all.lat_ns[k], 50), p99 = PercentileUs(all.lat_ns[k], 99),
                 p999 = PercentileUs(all.lat_ns[k], 99.9);
    const double ops_s = all.ops[k] / seconds, ent_s = all.entities[k] / seconds;
    std::printf("%-8s %10llu %12.0f %14.0f %10.1f %10.1f %10.1f\n", kKindNames[k],
                static_cast<unsigned long long>(all.ops[k]), ops_s, ent_s, p50, p99, p999);
    total_ops += all.ops[k];
    total_entities += all.entities[k];
    json << (first ? "" : ",") << "\"" << kKindNames[k] << "\":{\"ok\":" << all.ops[k]
         << ",\"ops_per_s\":" << ops_s << ",\"entities_per_s\":" << ent_s << ",\"p50_us\":" << p50
         << ",\"p99_us\":" << p99 << ",\"p999_us\":" << p999 << "}";
    first = false;
  }
  std::printf("%-8s %10llu %12.0f %14.0f\n", "total", static_cast<unsigned long long>(total_ops),
              total_ops / seconds, total_entities / seconds);
  uint64_t errors = 0;
  for (const auto& [code, n] : all.errors) errors += n;
  std::printf("ServerBusy: %llu; other errors: %llu", static_cast<unsigned long long>(all.busy),
              static_cast<unsigned long long>(errors));
  for (const auto& [code, n] : all.errors)
    std::printf(" %s=%llu", code.c_str(), static_cast<unsigned long long>(n));
  std::printf("\n");
  json << "},\"ops_per_s\":" << total_ops / seconds << ",\"entities_per_s\":" << total_entities / seconds
       << ",\"server_busy\":" << all.busy << ",\"errors\":{";
  first = true;
  for (const auto& [code, n] : all.errors) {
    json << (first ? "" : ",") << "\"" << JsonEscape(code) << "\":" << n;
    first = false;
  }
  json << "}";
  if (cfg.server_pid > 0 && server_at_start.ok && server_at_end.ok && total_ops > 0) {
    const double cpu_us = (server_at_end.cpu_us - server_at_start.cpu_us) / static_cast<double>(total_ops);
    std::printf("server (pid %d): %.1f us of CPU per op; RSS %.1f MB, peak %.1f MB\n", cfg.server_pid, cpu_us,
                server_at_end.rss_kb / 1024.0, server_at_end.hwm_kb / 1024.0);
    json << ",\"server_cpu_us_per_op\":" << cpu_us << ",\"server_rss_kb\":" << server_at_end.rss_kb
         << ",\"server_rss_peak_kb\":" << server_at_end.hwm_kb;
  }
  json << "}\n";
  if (!cfg.json_path.empty()) {
    std::ofstream f(cfg.json_path, std::ios::app);
    if (!f) Die("cannot write " + cfg.json_path);
    f << json.str();
  }
  return errors == 0 ? 0 : 2;
}

}  // namespace
}  // namespace sidetable::loadgen

int main(int argc, char** argv) { return sidetable::loadgen::Main(argc, argv); }
