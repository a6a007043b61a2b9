// sidetable-scale-out-bench: a service's members (docs/scale-out.md) against
// the embedded Kafka this program hosts (testing/cluster_harness.h).
// For 1..--max-members members and each --acks mode:
// - insert throughput with --inflight requests in flight in all, spread
//   over one pipelining client per member;
// - CPU per request of each sidecar process (/proc/<pid>/stat);
// - the forwarded share (sidetable_cluster_forwarded_total from /metrics
//   over the requests sent);
// - with more than one member, the hand-over time after SIGKILL of the last
//   one: until every shard is serving again per /cluster; and what the
//   survivors' restores took (the slowest one's seconds, the records they
//   read, how many resumed from a standby copy), with --standby 0 and/or 1,
//   and with the state topic on and/or off (--state 1 0: how many entity
//   records the restores loaded from it instead).
// A run that fails reports what failed and the bench goes on.
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/entity_builder.h"
#include "testing/cluster_harness.h"
#include "testing/proc_stats.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using sidetable::testing::ClusterHarness;

struct Run {
  int members = 0;
  std::string acks;
  double seconds = 0;
  uint64_t ok = 0, failed = 0;
  std::vector<double> cpu_us_per_request;  // per member
  double forwarded_share = -1;
  int standby = 0;
  double handover_s = -1;
  double restore_s = -1;        // the slowest survivor's latest restore
  double restore_records = -1;  // records read by the survivors' latest restores
  double warm_restores = -1;    // restores that resumed from a standby copy
  bool state = true;            // cluster.state_topic on
  double state_records = -1;    // entity records the survivors' latest restores loaded from the state topic
  std::string error;
};

Run RunOnce(const std::string& binary, int members, const std::string& acks, int standby, bool state,
            int inflight, double seconds, double settle, int retry_window, int run_index) {
  Run r;
  r.members = members;
  r.acks = acks;
  r.standby = standby;
  r.state = state;
  sidetable::testing::ClusterHarnessOptions o;
  o.binary = binary;
  o.service = "bench-" + std::to_string(run_index);
  o.acks = acks;
  o.standby_replicas = standby;
  o.state_topic = state;
  if (retry_window > 0) o.extra_yaml = "retries:\n  window_seconds: " + std::to_string(retry_window) + "\n";
  ClusterHarness h(o);
  if (auto s = h.Init(); !s.ok()) {
    r.error = s.ToString();
    return r;
  }
  if (!h.AddMembers(members)) {
    r.error = "a member did not start";
    return r;
  }
  std::string why;
  if (!h.WaitStable(60s, &why)) {
    r.error = "not stable: " + why;
    return r;
  }
  {
    sidetable::client::ClientOptions co;
    co.endpoint = h.Endpoint(0)->first;
    auto c = sidetable::client::Client::Connect(co);
    if (!c.ok() || !(*c)->CreateTable("Bench").ok()) {
      r.error = "CreateTable failed";
      return r;
    }
  }
  std::this_thread::sleep_for(1s);  // the table record reaches every member

  auto metric = [&](const char* name, bool max) { return h.MetricOverMembers(name, max); };
  auto forwarded = [&] { return metric("sidetable_cluster_forwarded_total", false); };
  std::vector<double> cpu0(members);
  for (int i = 0; i < members; i++) cpu0[i] = sidetable::testing::ProcessCpuSeconds(h.pid(i));
  const double fwd0 = forwarded();

  std::atomic<uint64_t> ok{0}, failed{0};
  const auto start = Clock::now();
  const auto until = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> threads;
  for (int m = 0; m < members; m++) {
    threads.emplace_back([&, m] {
      sidetable::client::ClientOptions co;
      co.endpoint = h.Endpoint(m)->first;
      co.timeout = 10s;
      auto c = sidetable::client::Client::Connect(co);
      if (!c.ok()) return;
      auto& client = **c;
      const int mine = inflight / members + (m < inflight % members ? 1 : 0);
      uint64_t n = 0;
      int due = mine;  // replies that asked for a next request (sent outside the callback)
      while (true) {
        for (; due > 0 && Clock::now() < until; due--) {
          sidetable::Batch b("Bench");
          const std::string pk = "m" + std::to_string(m) + "-" + std::to_string(n % 997);
          b.Insert(sidetable::client::EntityBuilder(pk, std::to_string(n++)).String("V", "x").Build());
          client.SendWrite(
              b, [&](sidetable::Result<sidetable::WriteResult> res) {
                (res.ok() ? ok : failed)++;
                due++;
              },
              false);
        }
        if (client.pending() == 0) break;
        client.Poll(100ms);
      }
    });
  }
  for (auto& t : threads) t.join();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.ok = ok;
  r.failed = failed;
  const double requests = static_cast<double>(r.ok + r.failed);
  for (int i = 0; i < members; i++) {
    r.cpu_us_per_request.push_back(
        requests > 0 ? (sidetable::testing::ProcessCpuSeconds(h.pid(i)) - cpu0[i]) * 1e6 / requests : 0);
  }
  const double fwd1 = forwarded();
  if (requests > 0 && fwd1 >= 0) r.forwarded_share = (fwd1 - fwd0) / requests;

  if (members > 1) {
    // Time for the state writers (and standby copies) to catch up, if asked.
    std::this_thread::sleep_for(std::chrono::duration<double>(settle));
    const auto killed = Clock::now();
    h.KillMember(members - 1);
    if (h.WaitStable(60s, &why)) {
      r.handover_s = std::chrono::duration<double>(Clock::now() - killed).count();
      r.restore_s = metric("sidetable_cluster_last_restore_seconds", true);
      r.restore_records = metric("sidetable_cluster_last_restore_records", false);
      r.warm_restores = metric("sidetable_cluster_warm_restores_total", false);
      r.state_records = metric("sidetable_cluster_last_restore_state_records", false);
    }
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sidetable-scale-out-bench: throughput, CPU and hand-over of a service's members"};
  std::string binary = SIDETABLE_DEFAULT_BIN;
  int max_members = 3, inflight = 32;
  double seconds = 5;
  std::vector<std::string> acks = {"replicated", "local"};
  std::vector<int> standby = {0};
  std::vector<int> state = {1};
  double settle = 0;
  int retry_window = 0;
  app.add_option("--sidetable", binary, "the sidetable binary (a Release build for real figures)");
  app.add_option("--max-members", max_members, "runs with 1..N members");
  app.add_option("--inflight", inflight, "requests in flight in all");
  app.add_option("--seconds", seconds, "load per run");
  app.add_option("--acks", acks, "cluster.acks modes to run");
  app.add_option("--standby", standby, "cluster.standby_replicas values to run (runs of 2+ members only for > 0)");
  app.add_option("--state", state, "cluster.state_topic on (1) and/or off (0)");
  app.add_option("--settle-seconds", settle, "pause between the load and the kill");
  app.add_option("--retry-window-seconds", retry_window,
                 "retries.window_seconds (0: the default, 900): a restore replays this much before a state mark");
  CLI11_PARSE(app, argc, argv);

  std::printf("%-10s %7s %5s %7s %10s %9s %8s %10s %9s %8s %8s %5s %11s  %s\n", "acks", "standby", "state",
              "members", "inserts/s", "failed", "fwd", "handover", "restore", "records", "state", "warm",
              "cpu us/req", "error");
  int index = 0;
  for (const auto& mode : acks) {
    for (int sb : standby) {
     for (int st : state) {
      for (int n = sb > 0 ? 2 : 1; n <= max_members; n++) {
        Run r = RunOnce(binary, n, mode, sb, st != 0, inflight, seconds, settle, retry_window, index++);
        std::string cpu;
        for (double c : r.cpu_us_per_request) cpu += (cpu.empty() ? "" : "/") + std::to_string(static_cast<int>(c));
        std::printf("%-10s %7d %5s %7d %10.0f %9llu %7.0f%% %9.2fs %8.2fs %8.0f %8.0f %5.0f %11s  %s\n",
                    mode.c_str(), sb, r.state ? "on" : "off", n, r.seconds > 0 ? r.ok / r.seconds : 0.0,
                    static_cast<unsigned long long>(r.failed), r.forwarded_share * 100, r.handover_s, r.restore_s,
                    r.restore_records, r.state_records, r.warm_restores, cpu.c_str(), r.error.c_str());
        std::fflush(stdout);
      }
     }
    }
  }
  return 0;
}
