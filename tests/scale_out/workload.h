// Workload: K client threads, each bound to one cluster member (its own
// client::Client), sending seeded random writes and recording every outcome
// in a Ledger.
//
// Keys: `tables` x `pks_per_table` partition keys x `row_keys` rows. Each
// (table, PartitionKey) belongs to one thread, so every key has a single
// writer and its history is a sequence (ledger.h). A thread knows each of
// its keys as absent, present (with the ETag of its last acknowledged
// write) or unknown (after an unknown outcome), and only sends writes that
// must succeed given that knowledge:
//   absent:  Insert, InsertOrReplace, InsertOrMerge
//   present: Update / Merge / Delete with If-Match = the acknowledged ETag
//            (or "*"), InsertOrReplace, InsertOrMerge
//   unknown: InsertOrReplace, InsertOrMerge only
// One write in four is an EGT of 2-5 rows of one partition. Any refusal is
// therefore a wrong answer, ETags included (an If-Match with the ETag an
// old owner acknowledged must hold on the new owner).
//
// Retries: ServerBusy and no reply are retried with the same client request
// id (the library's own retries are off, max_attempts 1, so every attempt
// is counted), with back-off, up to `max_attempts`; a thread whose member is
// killed waits (bounded) for it to come back and retries there. Out of
// attempts, or stopped: the outcome is unknown.
//
// Thread safety: Start/Stop/Rebind from the test thread; the threads share
// only the Ledger and atomics.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/entity_builder.h"
#include "tests/scale_out/ledger.h"

namespace sidetable::scale_out {

// The member's endpoint and incarnation (grows on restart); nullopt while
// it is down.
using EndpointFn = std::function<std::optional<std::pair<std::string, uint64_t>>(int member)>;

struct WorkloadOptions {
  uint64_t seed = 1;
  std::vector<std::string> tables = {"Orders", "Lines", "Items"};
  int pks_per_table = 14;  // 42 partition keys in all
  int row_keys = 6;        // an EGT takes 2-5 of them
  std::vector<int> thread_members = {0, 0, 1, 1, 2, 2};
  // Pacing: each thread at most this many writes per second. Measured:
  // ~860-byte events; 6 threads at 40/s put ~35 KB/s on each of 6
  // partitions, ~1.7 MiB in the longest scenario's ~50 s, under the mock's
  // ~5 MiB per partition.
  int writes_per_second = 40;
  double egt_share = 0.25;
  int max_attempts = 8;
  std::chrono::milliseconds attempt_timeout{5000};
  std::chrono::milliseconds down_wait{30000};  // a killed member's threads wait this long for it
};

inline std::string PartitionKeyName(int p) { return (p < 10 ? "p0" : "p") + std::to_string(p); }
inline std::string RowKeyName(int r) { return "r" + std::to_string(r); }

inline std::vector<EntityKey> Universe(const WorkloadOptions& o) {
  std::vector<EntityKey> keys;
  for (const auto& t : o.tables)
    for (int p = 0; p < o.pks_per_table; p++)
      for (int r = 0; r < o.row_keys; r++) keys.push_back({t, PartitionKeyName(p), RowKeyName(r)});
  return keys;
}

class Workload {
 public:
  Workload(WorkloadOptions options, EndpointFn endpoints, Ledger* ledger)
      : o_(std::move(options)), endpoints_(std::move(endpoints)), ledger_(ledger) {
    for (int m : o_.thread_members) members_.push_back(std::make_unique<std::atomic<int>>(m));
  }
  ~Workload() { Stop(); }

  void Start() {
    started_ = std::chrono::steady_clock::now();
    for (size_t t = 0; t < members_.size(); t++) threads_.emplace_back([this, t] { Run(static_cast<int>(t)); });
  }
  // Stops sending; a write in progress ends within one attempt timeout
  // (its outcome is then unknown unless that attempt answered).
  void Stop() {
    stop_ = true;
    for (auto& th : threads_) th.join();
    threads_.clear();
  }
  // Sends thread t's next writes through `member` (a member added mid-load).
  void Rebind(int thread, int member) { members_.at(thread)->store(member); }
  double Elapsed() const { return Seconds(std::chrono::steady_clock::now()); }
  size_t threads() const { return members_.size(); }

 private:
  enum class Know { kAbsent, kPresent, kUnknown };
  struct Knowledge {
    Know state = Know::kAbsent;
    std::string etag;
  };

  double Seconds(std::chrono::steady_clock::time_point t) const {
    return std::chrono::duration<double>(t - started_).count();
  }

  void Run(int thread) {
    std::mt19937_64 rng(o_.seed * 0x9E3779B97F4A7C15ull + thread);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
    // This thread's partitions: (table index, pk index).
    std::vector<std::pair<int, int>> mine;
    const int partitions = static_cast<int>(o_.tables.size()) * o_.pks_per_table;
    for (int i = thread; i < partitions; i += static_cast<int>(members_.size()))
      mine.push_back({i / o_.pks_per_table, i % o_.pks_per_table});
    if (mine.empty()) return;
    std::map<EntityKey, Knowledge> know;
    std::unique_ptr<client::Client> client;
    int bound_member = -1;
    uint64_t bound_incarnation = 0;
    int64_t counter = 0;
    const auto period = std::chrono::microseconds(1'000'000 / std::max(1, o_.writes_per_second));
    auto next_at = std::chrono::steady_clock::now();
    static const char* kColors[] = {"red", "green", "blue", "amber"};

    while (!stop_) {
      next_at = std::max(next_at + period, std::chrono::steady_clock::now() - std::chrono::seconds(1));
      std::this_thread::sleep_until(next_at);
      if (stop_) break;

      // What to write.
      const auto [ti, pi] = mine[pick(static_cast<int>(mine.size()))];
      const std::string& table = o_.tables[ti];
      const std::string pk = PartitionKeyName(pi);
      std::vector<int> rows(o_.row_keys);
      for (int r = 0; r < o_.row_keys; r++) rows[r] = r;
      std::shuffle(rows.begin(), rows.end(), rng);
      const bool egt = (rng() % 1000) < static_cast<uint64_t>(o_.egt_share * 1000);
      rows.resize(egt ? 2 + pick(std::min(4, o_.row_keys - 1)) : 1);

      WriteRecord w;
      w.thread = thread;
      w.request_id = "so-" + std::to_string(o_.seed) + "-t" + std::to_string(thread) + "-" + std::to_string(counter);
      Batch batch(table);
      batch.SetClientRequestId(w.request_id);
      for (size_t i = 0; i < rows.size(); i++) {
        EntityKey key{table, pk, RowKeyName(rows[i])};
        const Knowledge& k = know[key];
        OpRecord op;
        op.key = key;
        op.tag = w.request_id + "/" + std::to_string(i);
        op.n = counter;
        op.color = kColors[pick(4)];
        Entity e = client::EntityBuilder(pk, key.rk).String("W", op.tag).Int64("N", op.n).String("C", op.color).Build();
        const std::string match = pick(2) ? k.etag : "*";
        int choice = pick(100);
        if (k.state == Know::kAbsent) {
          choice = choice < 50 ? 0 : choice < 75 ? 1 : 2;
          const OpKind kinds[] = {OpKind::kInsert, OpKind::kInsertOrReplace, OpKind::kInsertOrMerge};
          batch.Add(kinds[choice], std::move(e), "");
          op.kind = OpKindName(kinds[choice]);
        } else if (k.state == Know::kUnknown) {
          const OpKind kind = choice < 50 ? OpKind::kInsertOrReplace : OpKind::kInsertOrMerge;
          batch.Add(kind, std::move(e), "");
          op.kind = OpKindName(kind);
        } else if (choice < 15) {
          batch.Delete(pk, key.rk, match);
          op.is_delete = true;
          op.tag.clear();
          op.kind = "Delete";
        } else {
          const OpKind kinds[] = {OpKind::kUpdate, OpKind::kMerge, OpKind::kInsertOrReplace, OpKind::kInsertOrMerge};
          const OpKind kind = kinds[choice % 4];
          const bool conditional = kind == OpKind::kUpdate || kind == OpKind::kMerge;
          batch.Add(kind, std::move(e), conditional ? match : "");
          op.kind = OpKindName(kind);
        }
        w.ops.push_back(std::move(op));
      }
      counter++;

      // Send it, retrying with the same request id.
      const auto sent = std::chrono::steady_clock::now();
      w.sent_at = Seconds(sent);
      std::chrono::milliseconds backoff{50};
      bool final = false;
      while (!final) {
        if (w.attempts >= o_.max_attempts || (stop_ && w.attempts > 0)) break;  // unknown
        // (Re)connect to the thread's member; wait while it is down.
        const int member = members_.at(thread)->load();
        auto ep = endpoints_(member);
        for (auto until = std::chrono::steady_clock::now() + o_.down_wait;
             !ep && !stop_ && std::chrono::steady_clock::now() < until;) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          ep = endpoints_(member);
        }
        if (!ep) {
          w.error = "member " + std::to_string(member) + " down";
          break;
        }
        if (!client || member != bound_member || ep->second != bound_incarnation) {
          client::ClientOptions co;
          co.endpoint = ep->first;
          co.max_attempts = 1;
          co.timeout = o_.attempt_timeout;
          co.caller = "scale-out-t" + std::to_string(thread);
          auto c = client::Client::Connect(co);
          if (!c.ok()) {
            w.error = c.status().ToString();
            w.attempts++;
            continue;
          }
          client = std::move(c).value();
          bound_member = member;
          bound_incarnation = ep->second;
        }
        w.member = member;
        w.attempts++;
        auto r = client->Execute(batch);
        if (r.ok()) {
          w.outcome = Outcome::kAcked;
          w.etags = r->etags;
          w.replayed = r->replayed;
          final = true;
          break;
        }
        w.error = r.status().ToString();
        if (r.status().code() == Code::kServerBusy) {
          w.busy++;
        } else if (r.status().code() == Code::kNoReply) {
          w.no_reply++;
          client.reset();  // a fresh socket: nothing late arrives on it
        } else {
          w.outcome = Outcome::kRefused;
          final = true;
          break;
        }
        std::uniform_int_distribution<int> jitter(0, static_cast<int>(backoff.count()));
        std::this_thread::sleep_for(backoff / 2 + std::chrono::milliseconds(jitter(rng) / 2));
        backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
      }
      if (!final) w.outcome = Outcome::kUnknown;
      w.done_at = Elapsed();

      // What the thread now knows of each row.
      for (size_t i = 0; i < w.ops.size(); i++) {
        Knowledge& k = know[w.ops[i].key];
        if (w.outcome == Outcome::kAcked && i < w.etags.size()) {
          k.state = w.ops[i].is_delete ? Know::kAbsent : Know::kPresent;
          k.etag = w.etags[i];
        } else if (w.outcome != Outcome::kAcked || i >= w.etags.size()) {
          k.state = Know::kUnknown;  // a refusal is a wrong answer already; stay safe after it
          k.etag.clear();
        }
      }
      ledger_->Add(std::move(w));
    }
  }

  WorkloadOptions o_;
  EndpointFn endpoints_;
  Ledger* ledger_;
  std::vector<std::unique_ptr<std::atomic<int>>> members_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::chrono::steady_clock::time_point started_;
};

}  // namespace sidetable::scale_out
