// Scale-out (issue 19, docs/scale-out.md): real `sidetable` members of one
// service on loopback, against the embedded Kafka (3 brokers) hosted in
// this process, under a seeded random workload through every member; then
// every key read through every member and judged against the ledger of
// acknowledged writes (checker.h says the rule). CTest label `scale-out`.
//
// Scenarios: three members; SIGKILL of one mid-load and its restart; a
// fourth member added mid-load; a member paused past the session timeout
// (a fenced owner); the index-table worker converging and `verify`
// passing; one member. Plus the same workload and checker against a plain
// sidecar (today's behaviour) and the checker's own test.
//
// Seeds: random per run, printed; SIDETABLE_SCALE_OUT_SEED=<n> replays one.
//
// Data size: the mock keeps only ~5 MiB per partition and never compacts;
// the workload is paced (workload.h) to stay well below that. What a real
// cluster needs instead (retention, not compaction, while events are keyed
// by partition): README.md.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <random>

#include "client/client.h"
#include "client/entity_builder.h"
#include "events/event.h"
#include "testing/cluster_harness.h"
#include "testing/kafka_reader.h"
#include "testing/shell.h"
#include "testing/text.h"
#include "testing/worker_process.h"
#include "tests/scale_out/checker.h"
#include "tests/scale_out/ledger.h"
#include "tests/scale_out/workload.h"

namespace sidetable::scale_out {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::ClusterHarness;
using testing::ClusterHarnessOptions;

uint64_t Seed() {
  if (const char* s = std::getenv("SIDETABLE_SCALE_OUT_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}() % 1'000'000;
}

// The load runs this long (a duration of load, not a wait for an event).
void LoadFor(std::chrono::milliseconds d) { std::this_thread::sleep_for(d); }

class ScaleOutTest : public ::testing::Test {
 protected:
  // Starts the embedded Kafka and `members` sidecars; in cluster mode waits
  // until they agree on a complete assignment.
  void StartCluster(int members, ClusterHarnessOptions o) {
    o.service = ServiceName();
    harness_ = std::make_unique<ClusterHarness>(o);
    Status s = harness_->Init();
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(harness_->AddMembers(members)) << harness_->Logs();
    if (o.cluster) AssertStable(45s);
    seed_ = Seed();
    std::printf("%s: seed %llu (SIDETABLE_SCALE_OUT_SEED=%llu replays it)\n", ServiceName().c_str(),
                static_cast<unsigned long long>(seed_), static_cast<unsigned long long>(seed_));
    RecordProperty("seed", std::to_string(seed_));
  }

  // "so-<test name>" in lower case, unique per test.
  static std::string ServiceName() {
    std::string n = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string out = "so-";
    for (char c : n) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out.substr(0, 40);
  }

  void AssertStable(std::chrono::milliseconds timeout) {
    std::string why;
    const auto t0 = Clock::now();
    ASSERT_TRUE(harness_->WaitStable(timeout, &why)) << "not stable after " << timeout.count() << " ms: " << why
                                                     << "\n" << harness_->ClusterLogs();
    std::printf("stable after %.1f s\n", std::chrono::duration<double>(Clock::now() - t0).count());
  }

  std::unique_ptr<client::Client> Connect(int member, int attempts = 5) {
    client::ClientOptions co;
    co.endpoint = harness_->Endpoint(member)->first;
    co.max_attempts = attempts;
    co.timeout = 5000ms;
    co.backoff_max = 500ms;
    auto c = client::Client::Connect(co);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // Creates the tables through member 0 and waits (bounded) until every
  // running member lists them: a table is one catalog across the service.
  void CreateTables(const std::vector<std::string>& tables) {
    auto c = Connect(0);
    ASSERT_NE(c, nullptr);
    for (const auto& t : tables) {
      Status s = c->CreateTable(t);
      ASSERT_TRUE(s.ok() || s.code() == Code::kTableAlreadyExists) << t << ": " << s.ToString();
    }
    for (int i = 0; i < harness_->size(); i++) {
      if (!harness_->running(i)) continue;
      auto m = Connect(i);
      ASSERT_NE(m, nullptr);
      bool all = false;
      std::string seen;
      for (auto until = Clock::now() + 15s; !all && Clock::now() < until;) {
        auto listed = m->ListTables();
        all = listed.ok();
        seen = listed.ok() ? std::to_string(listed->size()) + " tables" : listed.status().ToString();
        for (const auto& t : tables)
          all = all && std::find(listed->begin(), listed->end(), t) != listed->end();
        if (!all) std::this_thread::sleep_for(100ms);
      }
      ASSERT_TRUE(all) << ClusterHarness::MemberId(i) << " does not list the tables after 15 s (" << seen << ")";
    }
  }

  void StartLoad(std::vector<int> thread_members, int writes_per_second = 40) {
    options_.seed = seed_;
    options_.thread_members = std::move(thread_members);
    options_.writes_per_second = writes_per_second;
    CreateTables(options_.tables);
    if (HasFatalFailure()) return;
    workload_ = std::make_unique<Workload>(
        options_, [h = harness_.get()](int m) { return h->Endpoint(m); }, &ledger_);
    workload_->Start();
  }

  // Acknowledged writes through `member` finished after `since` (workload
  // seconds).
  size_t AckedThrough(int member, double since) const {
    size_t n = 0;
    for (const auto& w : ledger_.Snapshot().writes)
      n += w.outcome == Outcome::kAcked && w.member == member && w.done_at > since;
    return n;
  }

  // Keeps the load going until `members` have acknowledged a write finished
  // after `since`, at most `limit`; returns how many. With the mock, a
  // cooperative rebalance has a second round after the assignment that
  // made the cluster look stable, and offset commits (the fence checks of
  // replicated acknowledgement) are refused until it completes: up to
  // session timeout - 1 s more (docs/scale-out.md, "Status").
  size_t LoadUntilAcked(const std::vector<int>& members, double since, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      size_t n = 0;
      for (int m : members) n += AckedThrough(m, since);
      if (n > 0 || std::chrono::steady_clock::now() >= deadline) return n;
      LoadFor(std::chrono::milliseconds(200));
    }
  }

  // Stops the load, waits until stable (cluster mode), reads every key
  // through every running member and checks; returns the violations.
  std::vector<std::string> StopAndCheck(bool cluster = true) {
    workload_->Stop();
    PrintStats();
    if (cluster) {
      std::string why;
      EXPECT_TRUE(harness_->WaitStable(45s, &why)) << why << "\n" << harness_->Logs();
    }
    // A write whose outcome was left unknown may still be on its way (held
    // for an owner, or queued); reading while it lands could look like a
    // partial EGT or a disagreement. Once stable nothing is held for an
    // owner any more: wait until no member's last LSN moves for 500 ms
    // (bounded).
    std::vector<uint64_t> last;
    for (auto until = Clock::now() + 15s; Clock::now() < until;) {
      std::vector<uint64_t> now;
      for (int i = 0; i < harness_->size(); i++) {
        if (!harness_->running(i)) continue;
        auto c = Connect(i, 1);
        auto ping = c ? c->Ping() : Result<client::ServerInfo>(Status(Code::kNoReply, "no client"));
        now.push_back(ping.ok() ? ping->last_lsn : UINT64_MAX);
      }
      if (now == last) break;
      last = std::move(now);
      std::this_thread::sleep_for(500ms);
    }
    views_.clear();
    const auto universe = Universe(options_);
    for (int i = 0; i < harness_->size(); i++) {
      if (!harness_->running(i)) continue;
      auto c = Connect(i);
      if (c == nullptr) continue;
      views_.push_back(ReadView(*c, ClusterHarness::MemberId(i), universe, options_.tables));
    }
    return Check(ledger_.Snapshot(), views_, universe);
  }

  void PrintStats() {
    const auto snap = ledger_.Snapshot();
    size_t acked = 0, unknown = 0, refused = 0, busy = 0, no_reply = 0, replayed = 0, egts = 0;
    for (const auto& w : snap.writes) {
      acked += w.outcome == Outcome::kAcked;
      unknown += w.outcome == Outcome::kUnknown;
      refused += w.outcome == Outcome::kRefused;
      busy += w.busy;
      no_reply += w.no_reply;
      replayed += w.replayed;
      egts += w.ops.size() > 1;
    }
    std::printf("writes %zu (EGTs %zu): acked %zu (replayed %zu), unknown %zu, refused %zu; attempts answered "
                "ServerBusy %zu, unanswered %zu; %.1f s\n",
                snap.writes.size(), egts, acked, replayed, unknown, refused, busy, no_reply,
                workload_ ? workload_->Elapsed() : 0.0);
  }

  void ExpectClean(const std::vector<std::string>& bad) {
    EXPECT_TRUE(bad.empty()) << bad.size() << " violations (seed " << seed_ << "):\n" << First(bad)
                             << (bad.empty() ? "" : harness_->Logs());
  }

  // A cluster metric summed over the running members.
  double MetricTotal(const std::string& name) { return harness_->MetricOverMembers(name); }
  double ForwardedTotal() { return MetricTotal("sidetable_cluster_forwarded_total"); }

  // The members' log lines that mention any of `words` (for failure messages).
  std::string LogLines(const std::vector<std::string>& words) const {
    std::istringstream all(harness_->Logs(1 << 20));
    std::string line, out;
    while (std::getline(all, line)) {
      for (const auto& w : words) {
        if (line.find(w) != std::string::npos || line.rfind("----", 0) == 0) {
          out += line + "\n";
          break;
        }
      }
    }
    return out;
  }

  // The last few non-acknowledged writes through `member`: what its
  // threads were told (or that nothing came back), for failure messages.
  std::string LastErrorsOf(int member, size_t most = 12) const {
    std::vector<std::string> lines;
    for (const auto& w : ledger_.Snapshot().writes) {
      if (w.member != member || w.outcome == Outcome::kAcked) continue;
      lines.push_back("  t=" + std::to_string(w.done_at) + " attempts " +
                      std::to_string(w.attempts) + " busy " + std::to_string(w.busy) +
                      " no reply " + std::to_string(w.no_reply) + ": " + w.error);
    }
    std::string out = "last writes through m" + std::to_string(member) + " not acknowledged:\n";
    for (size_t i = lines.size() > most ? lines.size() - most : 0; i < lines.size(); i++)
      out += lines[i] + "\n";
    return out;
  }

  void IndexScenario(int members, const ClusterHarnessOptions& o);
  // The index-table worker (Orders by C) over the service's change topic,
  // writing through `member`; `retry` is its config's retry section ("" =
  // the defaults). Its config file is IndexWorkerConfig().
  std::unique_ptr<testing::WorkerProcess> StartIndexWorker(int member, const std::string& retry);
  std::string IndexWorkerConfig() const { return harness_->dir().Sub("worker.yaml"); }
  // `sidetable-cli verify` through member 0 passes within 40 s.
  void ExpectIndexVerified(const testing::WorkerProcess& worker);

  std::unique_ptr<ClusterHarness> harness_;
  WorkloadOptions options_;
  Ledger ledger_;
  std::unique_ptr<Workload> workload_;
  std::vector<MemberView> views_;
  uint64_t seed_ = 0;
};

ClusterHarnessOptions Plain() {
  ClusterHarnessOptions o;
  o.cluster = false;
  o.brokers = 1;
  return o;
}

// ---- today's behaviour: the workload and the checker on one plain sidecar --

TEST_F(ScaleOutTest, PlainSidecarWorkloadPassesTheChecker) {
  StartCluster(1, Plain());
  if (HasFatalFailure()) return;
  StartLoad({0, 0, 0, 0}, 60);
  if (HasFatalFailure()) return;
  LoadFor(6s);
  const auto bad = StopAndCheck(/*cluster=*/false);
  ExpectClean(bad);
  EXPECT_GT(ledger_.Count(Outcome::kAcked), 200u);
  EXPECT_EQ(ledger_.Count(Outcome::kUnknown), 0u) << "nothing should be uncertain with one healthy sidecar";

  // The sizing claim (README): what this paced load puts on each partition,
  // against the mock's ~5 MiB. Every committed write is one event.
  auto c = Connect(0);
  ASSERT_NE(c, nullptr);
  const uint64_t events = c->Ping()->last_lsn;
  testing::KafkaReader reader(harness_->bootstraps(), harness_->ChangeTopic());
  ASSERT_TRUE(reader.AssignAll());
  const auto all = reader.ReadUntil([&](const std::vector<testing::KafkaMessage>& m) { return m.size() >= events; },
                                    std::chrono::seconds(20));
  EXPECT_EQ(all.size(), events);
  std::map<int32_t, size_t> bytes;
  size_t total = 0;
  for (const auto& m : all) {
    bytes[m.partition] += m.key.size() + m.value.size();
    total += m.key.size() + m.value.size();
  }
  size_t most = 0;
  for (const auto& [p, b] : bytes) most = std::max(most, b);
  const double seconds = workload_->Elapsed();
  std::printf("change topic: %zu events, %zu bytes (%.0f bytes/event), at most %zu bytes on one partition; "
              "%.0f bytes per partition per second of this load\n",
              all.size(), total, all.empty() ? 0.0 : double(total) / all.size(), most,
              double(total) / harness_->options().shards / seconds);
  // 4 threads at 60 writes/s for 6 s here; the cluster scenarios run 6 at
  // 40/s for at most ~25 s: the same order. Well under 5 MiB.
  EXPECT_LT(most, 1u << 20);
}

// The workload's fault paths against today's sidecar: SIGKILL and restart
// (threads park, reconnect to the new port and retry with the same client
// request id: a write committed before the kill is answered replayed), and
// SIGSTOP longer than an attempt's time-out (attempts go unanswered, then
// the retries are answered once). Acknowledged writes survive (durability
// os survives kill -9 of the process).
TEST_F(ScaleOutTest, PlainSidecarSigkillAndPauseUnderLoad) {
  StartCluster(1, Plain());
  if (HasFatalFailure()) return;
  StartLoad({0, 0, 0, 0}, 60);
  if (HasFatalFailure()) return;
  LoadFor(3s);
  harness_->KillMember(0);
  LoadFor(1s);
  ASSERT_TRUE(harness_->RestartMember(0)) << harness_->Logs();
  LoadFor(3s);
  harness_->PauseMember(0);
  LoadFor(7s);
  harness_->ResumeMember(0);
  LoadFor(4s);
  ExpectClean(StopAndCheck(/*cluster=*/false));
  size_t no_reply = 0;
  for (const auto& w : ledger_.Snapshot().writes) no_reply += w.no_reply;
  EXPECT_GT(no_reply, 0u) << "the pause should have left attempts unanswered";
}

// The checker's own test: a corrupted expectation or a corrupted view must
// each be reported, or a clean run would prove nothing.
TEST_F(ScaleOutTest, CheckerCatchesCorruptedLedgerAndViews) {
  StartCluster(1, Plain());
  if (HasFatalFailure()) return;
  StartLoad({0, 0, 0}, 80);
  if (HasFatalFailure()) return;
  LoadFor(4s);
  const auto clean = StopAndCheck(/*cluster=*/false);
  ASSERT_TRUE(clean.empty()) << First(clean);
  ASSERT_EQ(views_.size(), 1u);
  const auto universe = Universe(options_);
  const LedgerSnapshot ledger = ledger_.Snapshot();
  auto contains = [](const std::vector<std::string>& bad, const std::string& what) {
    for (const auto& b : bad) if (b.find(what) != std::string::npos) return true;
    return false;
  };

  // Find a key whose read shows its last acknowledged write, a put.
  std::optional<std::pair<size_t, size_t>> acked_put;  // (write, op)
  for (const auto& [key, hist] : ledger.history) {
    const HistoryEntry& last = hist.back();
    const WriteRecord& w = ledger.writes[last.write];
    if (w.outcome == Outcome::kAcked && !w.ops[last.op].is_delete && w.ops.size() == 1 && hist.size() >= 2) {
      acked_put = {last.write, last.op};
      break;
    }
  }
  ASSERT_TRUE(acked_put) << "the run made no key with two writes, the last an acknowledged put";

  {  // 1. an acknowledged ETag altered: "the sidecar lost or rewrote it"
    LedgerSnapshot bad = ledger;
    bad.writes[acked_put->first].etags[acked_put->second] = "W/\"datetime'2000-01-01T00%3A00%3A00.0000000Z'\"";
    EXPECT_TRUE(contains(Check(bad, views_, universe), "acknowledged as")) << "an altered ETag went unnoticed";
  }
  {  // 2. the read shows an earlier write than the last acknowledged one
    const EntityKey key = ledger.writes[acked_put->first].ops[acked_put->second].key;
    const auto& hist = ledger.history.at(key);
    std::vector<MemberView> bad = views_;
    const HistoryEntry earlier = hist[hist.size() - 2];
    const OpRecord& op = ledger.writes[earlier.write].ops[earlier.op];
    if (op.is_delete) {
      bad[0].gets[key] = std::nullopt;
    } else {
      bad[0].gets[key]->Set("W", Value::String(op.tag)).Set("N", Value::Int64(op.n)).Set("C", Value::String(op.color));
    }
    EXPECT_TRUE(contains(Check(ledger, bad, universe), "expected")) << "a lost acknowledged write went unnoticed";
  }
  {  // 3. a write that was refused is a wrong answer
    LedgerSnapshot bad = ledger;
    bad.writes[0].outcome = Outcome::kRefused;
    bad.writes[0].error = "EntityAlreadyExists (injected)";
    EXPECT_TRUE(contains(Check(bad, views_, universe), "wrong answer")) << "a refusal went unnoticed";
  }
  {  // 4. an EGT applied on some rows only
    bool tried = false;
    for (size_t wi = 0; wi < ledger.writes.size() && !tried; wi++) {
      const WriteRecord& w = ledger.writes[wi];
      if (w.ops.size() < 2 || w.outcome != Outcome::kAcked) continue;
      // All its rows still show it, and one of them is a put.
      bool all_latest = true, has_put = false;
      for (const OpRecord& op : w.ops) {
        all_latest = all_latest && ledger.history.at(op.key).back().write == wi;
        has_put = has_put || !op.is_delete;
      }
      if (!all_latest || !has_put) continue;
      std::vector<MemberView> bad = views_;
      // Remove a put row other than the evidence row: revert a row to absent.
      size_t evidence = 0;
      while (w.ops[evidence].is_delete) evidence++;
      const size_t revert = evidence == 0 ? 1 : 0;
      if (w.ops[revert].is_delete) continue;  // absent already; pick another EGT
      bad[0].gets[w.ops[revert].key] = std::nullopt;
      const auto found = Check(ledger, bad, universe);
      EXPECT_TRUE(contains(found, "partial EGT " + w.request_id)) << First(found);
      tried = true;
    }
    EXPECT_TRUE(tried) << "no acknowledged EGT still fully visible to corrupt (seed " << seed_ << ")";
  }
  {  // 4b. the unknown-outcome rule, both ways: when the last write of a key
     // is unknown, the state before it and the state after it are both
     // right; an earlier one is not.
    const EntityKey key = ledger.writes[acked_put->first].ops[acked_put->second].key;
    const auto& hist = ledger.history.at(key);
    const HistoryEntry before = hist[hist.size() - 2];
    LedgerSnapshot bad = ledger;
    bad.writes[acked_put->first].outcome = Outcome::kUnknown;
    auto mentions_key = [&](const std::vector<std::string>& found) {
      return contains(found, " reads " + key.ToString() + " ");
    };
    EXPECT_FALSE(mentions_key(Check(bad, views_, universe))) << "the unknown write itself is a right answer";
    const WriteRecord& bw = ledger.writes[before.write];
    if (bw.outcome == Outcome::kAcked && !bw.ops[before.op].is_delete) {
      std::vector<MemberView> older = views_;
      const OpRecord& op = bw.ops[before.op];
      older[0].gets[key]->Set("W", Value::String(op.tag)).Set("N", Value::Int64(op.n)).Set("C", Value::String(op.color));
      older[0].gets[key]->etag = bw.etags[before.op];
      const auto found = Check(bad, older, universe);
      EXPECT_FALSE(mentions_key(found)) << "the state before an unknown write is a right answer:\n" << First(found);
      EXPECT_TRUE(mentions_key(Check(ledger, older, universe))) << "but not before an acknowledged one";
    }
  }
  {  // 5. a second member that disagrees on one ETag
    std::vector<MemberView> two = {views_[0], views_[0]};
    two[1].member = "other";
    const EntityKey key = ledger.writes[acked_put->first].ops[acked_put->second].key;
    two[1].gets[key]->etag = "W/\"other\"";
    EXPECT_TRUE(contains(Check(ledger, two, universe), "members disagree")) << "a disagreement went unnoticed";
  }
  {  // 6. a query page that drops one entity / repeats one
    std::vector<MemberView> bad = views_;
    auto& rows = bad[0].queries[options_.tables[0]];
    ASSERT_GE(rows.size(), 2u);
    rows.erase(rows.begin());
    EXPECT_TRUE(contains(Check(ledger, bad, universe), "point reads find")) << "a missing query row went unnoticed";
    rows.push_back(rows.front());
    EXPECT_TRUE(contains(Check(ledger, bad, universe), "out of key order")) << "a repeated query row went unnoticed";
  }
}

// ---- scale-out: these need the cluster (issue 19) and run until it exists --

// Every cluster scenario's base: members with replicated acks, 6 shards,
// session timeout 6 s, rebalance wait 3 s.
ClusterHarnessOptions Cluster() { return ClusterHarnessOptions{}; }

// (f) One member: the whole service on one sidecar, as today.
TEST_F(ScaleOutTest, SingleMemberClusterBehavesLikeOneSidecar) {
  StartCluster(1, Cluster());
  if (HasFatalFailure()) return;
  std::string error;
  auto status = harness_->StatusOf(0, &error);
  ASSERT_TRUE(status) << error;
  EXPECT_EQ(status->owned.size(), static_cast<size_t>(harness_->options().shards)) << status->raw;
  StartLoad({0, 0, 0});
  if (HasFatalFailure()) return;
  LoadFor(6s);
  ExpectClean(StopAndCheck());
  EXPECT_EQ(ledger_.Count(Outcome::kUnknown), 0u);
}

// (a) Three members, the load through all three: forwarding, one store.
TEST_F(ScaleOutTest, ThreeMembersRandomLoadThroughAll) {
  StartCluster(3, Cluster());
  if (HasFatalFailure()) return;
  // Every shard routed: every member answers its readiness probe.
  for (int m = 0; m < 3; m++) {
    auto ready = testing::HttpGet(harness_->http(m), "/ready");
    EXPECT_TRUE(ready && ready->find("\"ready\":true") != std::string::npos) << "member " << m << " not ready";
  }
  StartLoad({0, 0, 1, 1, 2, 2});
  if (HasFatalFailure()) return;
  LoadFor(12s);
  ExpectClean(StopAndCheck());
  EXPECT_EQ(ledger_.Count(Outcome::kUnknown), 0u) << "no member changed: nothing should be uncertain";
  for (int m = 0; m < 3; m++) EXPECT_GT(AckedThrough(m, 0), 50u) << "member " << m;
  EXPECT_GT(ForwardedTotal(), 0) << "sidetable_cluster_forwarded_total: with 3 members some writes must be forwarded";
}

// (b) SIGKILL one member mid-load; the others keep serving (ServerBusy for
// its shards until they are restored elsewhere); restart it. An index
// worker with the default retry settings, writing through a survivor,
// misses no index row and dead-letters nothing: before session 46 its 8
// attempts (~13 s) ended before the hand-over (19-30 s), and the events
// whose index rows went to the killed member's shards were dead-lettered.
TEST_F(ScaleOutTest, SigkillOneMemberMidLoadThenRestart) {
  StartCluster(3, Cluster());
  if (HasFatalFailure()) return;
  StartLoad({0, 0, 1, 1, 2, 2});
  if (HasFatalFailure()) return;
  auto worker = StartIndexWorker(0, "");
  if (HasFailure()) return;
  LoadFor(3s);
  const double killed_at = workload_->Elapsed();
  harness_->KillMember(1);
  // The load goes on while the group notices (session timeout) and m0 and
  // m2 claim and restore m1's shards: ServerBusy for those meanwhile.
  AssertStable(45s);
  if (HasFatalFailure()) return;
  const double stable_at = workload_->Elapsed();
  std::printf("survivors serve every shard %.1f s after the SIGKILL\n", stable_at - killed_at);
  // The state topic is on (the default): the survivors loaded m1's shards
  // from the projections m1 wrote and marked during the load, and replayed
  // only the change topic's tail (docs/scale-out.md, "Bounded restore").
  EXPECT_GT(MetricTotal("sidetable_cluster_state_loaded_records_total"), 0)
      << LogLines({"state", "restor"});
  LoadFor(2s);
  EXPECT_GT(LoadUntilAcked({0, 2}, stable_at, 20s), 0u)
      << "the survivors acknowledged nothing within 20 s of serving every shard";
  std::printf("survivors acknowledge again %.1f s after serving every shard\n", workload_->Elapsed() - stable_at);
  ASSERT_TRUE(harness_->RestartMember(1)) << harness_->Logs();
  AssertStable(45s);
  if (HasFatalFailure()) return;
  LoadFor(3s);
  EXPECT_EQ(MetricTotal("sidetable_cluster_restore_gaps_total"), 0) << LogLines({"lost", "state"});
  EXPECT_EQ(MetricTotal("sidetable_cluster_state_failures_total"), 0) << LogLines({"state"});
  ExpectClean(StopAndCheck());
  EXPECT_GT(AckedThrough(1, killed_at), 0u) << "the restarted member's threads wrote nothing";
  ExpectIndexVerified(*worker);
  EXPECT_FALSE(testing::Contains(worker->Log(), "to dead-letter topic"))
      << worker->Log().substr(0, 6000);
  EXPECT_EQ(worker->Stop(), 0) << worker->Log().substr(0, 4000);
}

// (b') The same with standby copies. With cluster.standby_replicas: 2
// (members - 1) every member keeps a copy of every shard it does not own,
// so whichever survivor Kafka's assignor gives a killed member's shards to
// resumes from its copy (a warm restore that reads only the tail). With 1,
// the assignor, which knows nothing of copies, may give both shards to the
// member without them (CI saw it once). Every acknowledged write must still
// be there, and nothing the killed owner wrote without acknowledging may
// surface wrongly.
TEST_F(ScaleOutTest, SigkillWithStandbyCopiesHandsOverWarm) {
  ClusterHarnessOptions options = Cluster();
  options.standby_replicas = 2;
  StartCluster(3, options);
  if (HasFatalFailure()) return;
  StartLoad({0, 0, 1, 1, 2, 2});
  if (HasFatalFailure()) return;
  LoadFor(4s);
  EXPECT_GT(MetricTotal("sidetable_cluster_standby_records_total"), 0)
      << "no standby copy applied anything in 4 s of load";
  const double killed_at = workload_->Elapsed();
  harness_->KillMember(1);
  AssertStable(45s);
  if (HasFatalFailure()) return;
  std::printf("survivors serve every shard %.1f s after the SIGKILL\n", workload_->Elapsed() - killed_at);
  EXPECT_GT(MetricTotal("sidetable_cluster_warm_restores_total"), 0)
      << "the killed member's shards were restored without the standby copies:\n"
      << LogLines({"standby", "serving shard", "restoring shard", "gained", "lost"});
  LoadFor(2s);
  ASSERT_TRUE(harness_->RestartMember(1)) << harness_->Logs();
  AssertStable(45s);
  if (HasFatalFailure()) return;
  LoadFor(3s);
  ExpectClean(StopAndCheck());
}

// A table created through one member is usable at once through every
// member (as in Azure, CreateTable's success means the table exists), also
// by an owner that has not read the table's record from the cluster topic
// yet (it reads up to the topic's end before answering TableNotFound).
TEST_F(ScaleOutTest, ATableCreatedThroughOneMemberIsUsableAtOnceThroughAll) {
  StartCluster(3, Cluster());
  if (HasFatalFailure()) return;
  std::vector<std::unique_ptr<client::Client>> c;
  for (int i = 0; i < 3; i++) {
    c.push_back(Connect(i));
    ASSERT_NE(c.back(), nullptr);
  }
  int writes = 0, failures = 0;
  std::string first;
  for (int t = 0; t < 12; t++) {
    const std::string table = "Fresh" + std::to_string(t);
    Status created = c[t % 3]->CreateTable(table);
    ASSERT_TRUE(created.ok()) << table << ": " << created.ToString();
    // Right away, through the other members, on partitions spread over the
    // shards (some forwarded to owners that may not have read the table yet).
    for (int i = 1; i <= 2; i++) {
      for (int p = 0; p < 6; p++) {
        auto w = c[(t + i) % 3]->Insert(
            table, client::EntityBuilder("p" + std::to_string(p), "via" + std::to_string(i)).Int64("N", p).Build(),
            false);
        writes++;
        if (!w.ok() && failures++ == 0) first = table + ": " + w.status().ToString();
      }
    }
  }
  EXPECT_EQ(failures, 0) << failures << " of " << writes << " writes failed; the first: " << first;
}

// (c) A fourth member joins mid-load; two threads move to it.
TEST_F(ScaleOutTest, AddFourthMemberMidLoad) {
  StartCluster(3, Cluster());
  if (HasFatalFailure()) return;
  StartLoad({0, 1, 2, 0, 1, 2});
  if (HasFatalFailure()) return;
  LoadFor(5s);
  ASSERT_EQ(harness_->AddMember(), 3) << harness_->Logs();
  const double added_at = workload_->Elapsed();
  workload_->Rebind(4, 3);
  workload_->Rebind(5, 3);
  // Stable, with the new member owning shards. The stability rule alone can
  // hold for a moment between the join and the cooperative rebalance's
  // second round, when every member agrees on the new generation but the
  // old owner map (seen 2 runs in 7, 2026-12-05): wait past it, bounded.
  std::string error;
  std::optional<testing::ClusterStatus> status;
  for (const auto until = Clock::now() + 45s;;) {
    AssertStable(std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()) + 1s);
    if (HasFatalFailure()) return;
    status = harness_->StatusOf(3, &error);
    ASSERT_TRUE(status) << error;
    if (!status->owned.empty() || Clock::now() >= until) break;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_FALSE(status->owned.empty()) << "the new member owns no shard: " << status->raw;
  LoadFor(4s);
  ExpectClean(StopAndCheck());
  // Once (1 run in 3, 2026-12-02) the new member's two threads had nothing
  // acknowledged in the 4 s after the cluster was stable: the logs say why.
  EXPECT_GT(AckedThrough(3, added_at), 0u) << harness_->Logs();
  EXPECT_EQ(views_.size(), 4u);
}

// (d) A fenced owner: m2 is paused (SIGSTOP) past the session timeout while
// the others keep writing, then resumed. Whatever it acknowledges after
// resuming (its stale in-flight writes included) must be what the others
// read: an acknowledgement by a fenced owner would be a lost write.
TEST_F(ScaleOutTest, PausedOwnerPastSessionTimeoutIsFenced) {
  StartCluster(3, Cluster());
  if (HasFatalFailure()) return;
  StartLoad({0, 0, 1, 1, 2, 2});
  if (HasFatalFailure()) return;
  LoadFor(3s);
  harness_->PauseMember(2);
  const double paused_at = workload_->Elapsed();
  // Stopped until m0 and m1 own and serve every shard: past the session
  // timeout, its ownership fenced. The load goes on meanwhile. Usually
  // ~20 s, on a quiet machine or beside a build; 75 s because once, under
  // the whole suite at -j2, the group went through generations 3 to 9 (a
  // rebalance every 5 s while m0 rejoined late) and m0 was claiming its
  // last shard at 45 s: slow, not wrong, and the time is printed below.
  AssertStable(75s);
  if (HasFatalFailure()) return;
  std::printf("m0 and m1 serve every shard %.1f s after the SIGSTOP\n", workload_->Elapsed() - paused_at);
  LoadFor(1s);
  const double resumed_at = workload_->Elapsed();
  harness_->ResumeMember(2);
  LoadFor(5s);
  // It rejoins as a new member: a rebalance of two rounds on the mock, in
  // which offset commits (the fence checks) are refused for every member,
  // so writes through m2 (its own shards or forwarded) get ServerBusy until
  // it ends. Usually 5-20 s after SIGCONT; once in CI at -j2 more than 30
  // (m2 acknowledged nothing within the 30 s this allowed then): slow, not
  // wrong, hence 55 s, and the time is printed below.
  const size_t resumed_acks = LoadUntilAcked({2}, resumed_at, 50s);
  std::printf("m2 acknowledges again %.1f s after SIGCONT\n", workload_->Elapsed() - resumed_at);
  const auto bad = StopAndCheck();
  ExpectClean(bad);
  std::printf("writes acknowledged by m2 after it resumed: %zu\n", AckedThrough(2, resumed_at));
  EXPECT_GT(resumed_acks, 0u) << "m2 rejoined but acknowledged nothing within 55 s\n"
                              << harness_->ClusterLogs(20000) << LastErrorsOf(2);
}

std::unique_ptr<testing::WorkerProcess> ScaleOutTest::StartIndexWorker(int member,
                                                                       const std::string& retry) {
  const std::string dlq = ServiceName() + ".dlq";
  EXPECT_TRUE(harness_->kafka().CreateTopic(dlq, 1).ok());
  std::ofstream(IndexWorkerConfig())
      << "kafka:\n  bootstrap: " << harness_->bootstraps()
      << "\n  topic: " << harness_->ChangeTopic() << "\n  group: " << ServiceName()
      << ".index\n  session_timeout_ms: 3000\n"
      << "  commit_batch: 50\n  commit_interval_ms: 100\n"
      << "sidecar:\n  endpoint: " << harness_->Endpoint(member)->first << "\n  timeout_ms: 5000\n"
      << retry << "dead_letter:\n  topic: " << dlq << "\nlog:\n  level: info\n"
      << "patterns:\n  - name: index_table\n    source: Orders\n"
      << "    target: OrdersByColor\n    properties: C\n    project: [W]\n";
  auto worker = std::make_unique<testing::WorkerProcess>(SIDETABLE_WORKER_BIN, IndexWorkerConfig(),
                                                         harness_->dir().Sub("worker"));
  EXPECT_TRUE(worker->Start()) << worker->Log();
  return worker;
}

void ScaleOutTest::ExpectIndexVerified(const testing::WorkerProcess& worker) {
  int rc = -1;
  std::string out;
  const std::string cmd = std::string(SIDETABLE_CLI) + " --endpoint " +
                          harness_->Endpoint(0)->first + " verify --config " + IndexWorkerConfig() +
                          " 2>&1";
  for (auto until = Clock::now() + 40s; Clock::now() < until;) {
    out = testing::RunShell(cmd, &rc);
    if (rc == 0) break;
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_EQ(rc, 0) << "verify did not pass within 40 s:\n"
                   << out << "\nworker:\n"
                   << worker.Log().substr(0, 4000);
  EXPECT_NE(out.find("missing 0, extra 0, stale 0"), std::string::npos) << out;
}

// The index-table worker (writing through the last member) converges over
// the service's change topic, and `sidetable-cli verify` through member 0
// passes.
void ScaleOutTest::IndexScenario(int members, const ClusterHarnessOptions& o) {
  StartCluster(members, o);
  if (HasFatalFailure()) return;
  std::vector<int> threads;
  for (int t = 0; t < 6; t++) threads.push_back(t % members);
  StartLoad(threads);
  if (HasFatalFailure()) return;
  auto worker = StartIndexWorker(
      members - 1, "retry:\n  max_attempts: 8\n  backoff_ms: 20\n  backoff_max_ms: 500\n");
  if (HasFailure()) return;
  LoadFor(8s);
  ExpectClean(StopAndCheck(o.cluster));
  ExpectIndexVerified(*worker);
  EXPECT_EQ(worker->Stop(), 0) << worker->Log();
}

// Table events in a cluster (docs/scale-out.md, "Table events in a
// cluster"): a source table with an index pattern, deleted through another
// member than created it. The change topic holds each table event once,
// with an epoch, and the worker applies the TableDeleted: the index rows
// are gone, as outside a cluster. Before session 45 every member published
// each table event with epoch 0, the worker fenced them after the first
// claim and the index rows stayed. The table created again gets its index
// rows (the clear does not drop them).
TEST_F(ScaleOutTest, ADeletedSourceTablesIndexRowsAreClearedOnceItsEventIsPublishedOnce) {
  StartCluster(3, Cluster());
  if (HasFatalFailure()) return;
  const std::string dlq = ServiceName() + ".dlq";
  ASSERT_TRUE(harness_->kafka().CreateTopic(dlq, 1).ok());
  const std::string wcfg = harness_->dir().Sub("worker.yaml");
  std::ofstream(wcfg) << "kafka:\n  bootstrap: " << harness_->bootstraps()
                      << "\n  topic: " << harness_->ChangeTopic() << "\n  group: " << ServiceName()
                      << ".index\n  session_timeout_ms: 3000\n"
                      << "  commit_batch: 50\n  commit_interval_ms: 100\n"
                      << "sidecar:\n  endpoint: " << harness_->Endpoint(2)->first
                      << "\n  timeout_ms: 5000\n"
                      << "retry:\n  max_attempts: 8\n  backoff_ms: 20\n  backoff_max_ms: 500\n"
                      << "dead_letter:\n  topic: " << dlq << "\nlog:\n  level: info\n"
                      << "patterns:\n  - name: index_table\n    source: Orders\n"
                      << "    target: OrdersByColor\n    properties: C\n";
  CreateTables({"Orders"});
  if (HasFatalFailure()) return;
  testing::WorkerProcess worker(SIDETABLE_WORKER_BIN, wcfg, harness_->dir().Sub("worker"));
  ASSERT_TRUE(worker.Start()) << worker.Log();
  std::vector<std::unique_ptr<client::Client>> c;
  for (int i = 0; i < 3; i++) {
    c.push_back(Connect(i));
    ASSERT_NE(c.back(), nullptr);
  }
  // Writes through every member, on partitions spread over the shards.
  // Replicated acknowledgements can stall for a rebalance's second round
  // after the cluster looks stable: each write is retried (same row,
  // idempotent), bounded.
  auto write = [&](int i, const std::string& pk) {
    Status last;
    for (const auto until = Clock::now() + 30s; Clock::now() < until;) {
      auto w = c[i % 3]->InsertOrReplace("Orders",
                                         client::EntityBuilder(pk, "r").String("C", "red").Build());
      if (w.ok()) return Status::OK();
      last = w.status();
      std::this_thread::sleep_for(200ms);
    }
    return last;
  };
  constexpr int kRows = 12;
  for (int i = 0; i < kRows; i++) {
    Status w = write(i, "p" + std::to_string(i));
    ASSERT_TRUE(w.ok()) << "p" << i << ": " << w.ToString();
  }
  // The index rows, read through member 0 (absent table: none).
  auto index_rows = [&]() -> int {
    client::QueryOptions q;
    q.table = "OrdersByColor";
    int n = 0;
    std::optional<client::Continuation> next;
    for (int pages = 0; pages < 100; pages++) {
      auto page = c[0]->QueryPage(q, next);
      if (!page.ok()) return page.status().code() == Code::kTableNotFound ? 0 : -1;
      n += static_cast<int>(page->entities.size());
      next = page->next;
      if (!next) break;
    }
    return n;
  };
  auto wait_for_rows = [&](int want) {
    int n = -1;
    for (const auto until = Clock::now() + 40s; Clock::now() < until;
         std::this_thread::sleep_for(200ms)) {
      if ((n = index_rows()) == want) break;
    }
    return n;
  };
  ASSERT_EQ(wait_for_rows(kRows), kRows) << "the index did not fill within 40 s\nworker:\n"
                                         << worker.Log().substr(0, 4000);

  Status deleted = c[1]->DeleteTable("Orders");
  ASSERT_TRUE(deleted.ok()) << deleted.ToString();
  EXPECT_EQ(wait_for_rows(0), 0)
      << "the worker did not clear the index of the deleted table within 40 s\nworker:\n"
      << worker.Log().substr(0, 6000);

  // Each table event once on the change topic, with an epoch. Everything
  // there is is read within the bound: the members publish their table
  // events in the same pass as their writes, long done by now.
  testing::KafkaReader reader(harness_->bootstraps(), harness_->ChangeTopic());
  ASSERT_TRUE(reader.AssignAll());
  const auto all =
      reader.ReadUntil([](const std::vector<testing::KafkaMessage>&) { return false; }, 5s);
  std::map<std::string, int> table_events;
  std::string seen;
  for (const auto& m : all) {
    events::Event ev;
    if (!events::DecodeEvent(m.value, &ev).ok() || ev.record.table != "Orders") continue;
    const ChangeRecord& r = ev.record;
    if (r.kind != ChangeKind::kTableCreated && r.kind != ChangeKind::kTableDeleted) continue;
    table_events[std::string(ChangeKindName(r.kind))]++;
    seen += "  partition " + std::to_string(m.partition) + ": " + m.value + "\n";
    EXPECT_GT(r.epoch, 0u) << m.value;
  }
  EXPECT_EQ(table_events["TableCreated"], 1) << seen;
  EXPECT_EQ(table_events["TableDeleted"], 1) << seen;

  // Created again: its rows are indexed (the clear left no fence behind).
  Status created = c[2]->CreateTable("Orders");
  ASSERT_TRUE(created.ok()) << created.ToString();
  for (int i = 0; i < 3; i++) {
    Status w = write(i, "q" + std::to_string(i));
    ASSERT_TRUE(w.ok()) << "q" << i << ": " << w.ToString();
  }
  EXPECT_EQ(wait_for_rows(3), 3) << "the table created again was not indexed within 40 s\nworker:\n"
                                 << worker.Log().substr(0, 6000);
  EXPECT_EQ(worker.Stop(), 0) << worker.Log();

  // rebuild --kafka reads the creation now, but cannot order the members'
  // records: it refuses the table (exit 1) rather than answer without some
  // rows (docs/replay.md, "rebuild").
  int rc = -1;
  const std::string out = testing::RunShell(
      std::string(SIDETABLE_CLI) + " rebuild Orders --kafka " + harness_->bootstraps() +
          " --topic " + harness_->ChangeTopic() +
          " --at-time 2099-01-01T00:00:00Z --output /dev/null --progress never 2>&1",
      &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("scale-out service"), std::string::npos) << out;
}

// (e) The index-table worker over the service's change topic converges,
// and `sidetable-cli verify` through one member passes.
TEST_F(ScaleOutTest, IndexTableConvergesAndVerifyPasses) { IndexScenario(3, Cluster()); }

// The same wiring (worker config, verify) against a plain sidecar: today.
TEST_F(ScaleOutTest, PlainSidecarIndexTableConvergesAndVerifyPasses) { IndexScenario(1, Plain()); }

}  // namespace
}  // namespace sidetable::scale_out
