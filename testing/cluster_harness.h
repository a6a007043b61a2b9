// ClusterHarness: a scale-out cluster (docs/scale-out.md) of real `sidetable`
// processes on loopback, against librdkafka's mock cluster hosted in the
// test process (several brokers), for tests/scale_out/ and bench/scale_out/.
//
// What it does:
// - starts the embedded Kafka (3 brokers by default) and creates the
//   service's change topic (`sidetable.{service}.changes`, one partition per
//   shard) and cluster topic (`sidetable.{service}.cluster`, one partition),
//   replication factor = brokers, so `acks=all` means something;
// - writes one YAML config per member (`cluster:` section with service,
//   member_id m<i>, acks, rebalance_wait_ms, session_timeout_ms) and runs
//   each member as a SidecarProcess with its own data directory;
// - SIGKILLs, restarts (same data directory, same member id), adds,
//   SIGSTOPs and SIGCONTs members;
// - reads each member's `GET /cluster` status page and waits until the
//   cluster is stable (every shard has one owner that serves it, and every
//   running member reports the same owner map and generation).
//
// With `cluster = false` the members are plain sidecars (no `cluster:`
// section, the change topic named literally): today's behaviour, used to
// develop the workload and the checker before the feature exists.
//
// The sidetable binary: ClusterHarnessOptions::binary, by default
// SIDETABLE_BIN when the target defines it. Links librdkafka, cpp-httplib and simdjson.
//
// Thread safety: the test thread drives members (Start, Kill, Restart,
// Pause, Resume, Add); Endpoint() may be called from any thread (workload
// threads reconnect through it) and is guarded by a mutex. Every wait is
// bounded; the destructor SIGKILLs what is left (a stopped process too).
#pragma once

#include <httplib.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/kafka/embedded_kafka.h"
#include "testing/sidecar_process.h"
#include "testing/temp_dir.h"

namespace sidetable::testing {

struct ClusterHarnessOptions {
#ifdef SIDETABLE_BIN
  std::string binary = SIDETABLE_BIN;  // the sidetable executable
#else
  std::string binary;
#endif
  std::string service = "so-test";  // unique per test: topics and groups are named after it
  int shards = 6;                   // kafka.partitions = the change topic's partition count
  int brokers = 3;
  bool cluster = true;              // false: plain sidecars, no `cluster:` section
  std::string acks = "replicated";  // cluster.acks
  int session_timeout_ms = 6000;    // cluster.session_timeout_ms
  int rebalance_wait_ms = 3000;     // cluster.rebalance_wait_ms
  int standby_replicas = 0;         // cluster.standby_replicas
  bool state_topic = true;          // cluster.state_topic: the default (bounded restores), or "" (off)
  std::string durability = "os";
  std::string extra_yaml;           // appended to every member's config (top-level sections)
  // Appended to member i's config after extra_yaml (top-level sections):
  // what differs between members, e.g. each one's CURVE key files.
  std::function<std::string(int i)> member_yaml;
  // cluster.member_id of member i; null: MemberId(i) ("m<i>"). A test of a
  // duplicate id gives two members one id (the harness still calls them by
  // index).
  std::function<std::string(int i)> member_id;
};

// One shard's entry in a member's /cluster page.
struct ShardOwner {
  std::string member;
  std::string endpoint;
  int64_t epoch = -1;
  bool operator==(const ShardOwner&) const = default;
};

// A member's GET /cluster, parsed. The contract (docs/scale-out.md and the
// issue's status page): {"member": "m0", "generation": 7, "owned": [0, 3],
// "serving": [0, 3], "owners": {"0": {"member": "m0", "endpoint":
// "tcp://127.0.0.1:40001", "epoch": 7}, ...}}.
struct ClusterStatus {
  std::string member;
  int64_t generation = -1;
  std::set<int> owned, serving;
  std::map<int, ShardOwner> owners;
  std::map<std::string, std::string> members;  // member -> its latest advertised endpoint ("members", optional)
  std::string raw;

  static std::optional<ClusterStatus> Parse(const std::string& body, std::string* error) {
    ClusterStatus s;
    s.raw = body;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto e = parser.parse(body).get(doc); e) {
      *error = std::string("not JSON: ") + simdjson::error_message(e);
      return std::nullopt;
    }
    std::string_view member;
    if (doc["member"].get_string().get(member)) return Fail(error, "no string \"member\"");
    s.member = std::string(member);
    if (doc["generation"].get_int64().get(s.generation)) return Fail(error, "no integer \"generation\"");
    for (const char* list : {"owned", "serving"}) {
      simdjson::dom::array arr;
      if (doc[list].get_array().get(arr)) return Fail(error, std::string("no array \"") + list + "\"");
      for (auto v : arr) {
        int64_t shard;
        if (v.get_int64().get(shard)) return Fail(error, std::string("a non-integer shard in \"") + list + "\"");
        (list[0] == 'o' ? s.owned : s.serving).insert(static_cast<int>(shard));
      }
    }
    simdjson::dom::object owners;
    if (doc["owners"].get_object().get(owners)) return Fail(error, "no object \"owners\"");
    for (auto [key, value] : owners) {
      ShardOwner o;
      std::string_view m, ep;
      if (value["member"].get_string().get(m) || value["endpoint"].get_string().get(ep) ||
          value["epoch"].get_int64().get(o.epoch)) {
        return Fail(error, "owners[\"" + std::string(key) + "\"] lacks member, endpoint or epoch");
      }
      o.member = std::string(m);
      o.endpoint = std::string(ep);
      s.owners[std::stoi(std::string(key))] = o;
    }
    simdjson::dom::object members;
    if (!doc["members"].get_object().get(members)) {
      for (auto [key, value] : members) {
        std::string_view ep;
        if (!value.get_string().get(ep)) s.members[std::string(key)] = std::string(ep);
      }
    }
    return s;
  }

 private:
  static std::optional<ClusterStatus> Fail(std::string* error, std::string why) {
    *error = std::move(why);
    return std::nullopt;
  }
};

// GET http://<host:port><path>; nullopt when nothing answers 200 within ~2 s.
inline std::optional<std::string> HttpGet(const std::string& host_port, const std::string& path) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  httplib::Client http(host_port.substr(0, colon), std::stoi(host_port.substr(colon + 1)));
  http.set_connection_timeout(1);
  http.set_read_timeout(2);
  auto r = http.Get(path);
  if (!r || r->status != 200) return std::nullopt;
  return r->body;
}

// A counter (no labels, or the sum over its label sets) from Prometheus
// text; -1 when absent.
inline double MetricValue(const std::string& metrics, const std::string& name) {
  double sum = -1;
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != ' ' && next != '{') continue;
    const size_t sp = line.rfind(' ');
    sum = (sum < 0 ? 0 : sum) + std::strtod(line.c_str() + sp + 1, nullptr);
  }
  return sum;
}

class ClusterHarness {
 public:
  explicit ClusterHarness(ClusterHarnessOptions options) : options_(std::move(options)) {}
  ~ClusterHarness() {
    for (auto& m : members_) {
      if (m.paused && m.process) ::kill(m.process->pid(), SIGCONT);
      m.process.reset();
    }
  }

  // Starts the embedded Kafka and creates the service's topics.
  Status Init() {
    auto k = kafka::EmbeddedKafka::Start(options_.brokers);
    if (!k.ok()) return k.status();
    kafka_ = std::move(k).value();
    const int rf = options_.brokers;
    // The mock auto-creates a topic it does not know with 4 partitions (and
    // has no CreateTopics): the sidecars would refuse that count.
    for (auto [topic, parts] : {std::pair{ChangeTopic(), options_.shards}, std::pair{ClusterTopic(), 1},
                                std::pair{StateTopic(), options_.shards}}) {
      rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(kafka_->mock(), topic.c_str(), parts, rf);
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        return Status(Code::kUnavailable, "creating topic " + topic + ": " + rd_kafka_err2str(e));
      }
    }
    return Status::OK();
  }

  std::string ChangeTopic() const { return "sidetable." + options_.service + ".changes"; }
  std::string ClusterTopic() const { return "sidetable." + options_.service + ".cluster"; }
  std::string StateTopic() const { return "sidetable." + options_.service + ".state"; }
  const std::string& bootstraps() const { return kafka_->bootstraps(); }
  kafka::EmbeddedKafka& kafka() { return *kafka_; }
  const ClusterHarnessOptions& options() const { return options_; }
  const TempDir& dir() const { return dir_; }
  static std::string MemberId(int i) { return "m" + std::to_string(i); }

  // Adds member `size()` and starts it; its index, or -1 when it did not
  // become ready.
  int AddMember() {
    const int i = NewMember();
    return StartMember(i) ? i : -1;
  }

  // Adds `n` members and starts them at once (they join the group together:
  // fewer rebalances than one by one); false if any did not become ready.
  bool AddMembers(int n) {
    std::vector<int> added;
    for (int k = 0; k < n; k++) added.push_back(NewMember());
    std::vector<std::thread> starts;
    std::vector<char> ok(n, 0);
    for (int k = 0; k < n; k++) starts.emplace_back([&, k] { ok[k] = StartMember(added[k]); });
    for (auto& t : starts) t.join();
    return std::all_of(ok.begin(), ok.end(), [](char c) { return c != 0; });
  }

  // Starts (or restarts after Kill) member i with its data directory.
  bool StartMember(int i) {
    SidecarProcess* process;
    {
      std::lock_guard lock(mu_);
      process = members_.at(i).process.get();
    }
    const bool ok = process->Start();
    std::lock_guard lock(mu_);
    Member& m = members_.at(i);
    m.running = ok;
    m.paused = false;
    m.incarnation++;
    m.endpoint = ok ? m.process->endpoint() : "";
    m.http = ok ? m.process->http() : "";
    return ok;
  }

  void KillMember(int i) {
    Member& m = members_.at(i);
    {
      std::lock_guard lock(mu_);
      m.running = false;
      m.endpoint.clear();
    }
    if (m.paused) ::kill(m.process->pid(), SIGCONT);  // a stopped process dies of SIGKILL too; be plain
    m.paused = false;
    m.process->Kill();
  }
  bool RestartMember(int i) { return StartMember(i); }

  // SIGSTOP / SIGCONT: the process keeps its sockets; its peers see nothing.
  void PauseMember(int i) {
    Member& m = members_.at(i);
    ::kill(m.process->pid(), SIGSTOP);
    m.paused = true;
  }
  void ResumeMember(int i) {
    Member& m = members_.at(i);
    ::kill(m.process->pid(), SIGCONT);
    m.paused = false;
  }

  int size() const {
    std::lock_guard lock(mu_);
    return static_cast<int>(members_.size());
  }
  bool running(int i) const { return members_.at(i).running; }
  bool paused(int i) const { return members_.at(i).paused; }
  pid_t pid(int i) const { return members_.at(i).process->pid(); }
  std::string http(int i) const {
    std::lock_guard lock(mu_);
    return members_.at(i).http;
  }
  SidecarProcess& process(int i) { return *members_.at(i).process; }

  // The member's ZeroMQ endpoint and how many times it was started; nullopt
  // while it is killed. Any thread.
  std::optional<std::pair<std::string, uint64_t>> Endpoint(int i) const {
    std::lock_guard lock(mu_);
    if (i >= static_cast<int>(members_.size()) || !members_[i].running) return std::nullopt;
    return std::pair{members_[i].endpoint, members_[i].incarnation};
  }

  // A metric of the running members' /metrics: their sum, or with `max`
  // the largest; members that do not report it (or report 0) add nothing.
  double MetricOverMembers(const std::string& name, bool max = false) const {
    double out = 0;
    for (int i = 0; i < size(); i++) {
      if (!running(i)) continue;
      auto body = HttpGet(http(i), "/metrics");
      const double v = body ? MetricValue(*body, name) : -1;
      if (v > 0) out = max ? std::max(out, v) : out + v;
    }
    return out;
  }

  std::optional<ClusterStatus> StatusOf(int i, std::string* error) const {
    auto body = HttpGet(http(i), "/cluster");
    if (!body) {
      *error = MemberId(i) + ": GET /cluster did not answer 200";
      return std::nullopt;
    }
    auto s = ClusterStatus::Parse(*body, error);
    if (!s) *error = MemberId(i) + ": /cluster " + *error + ": " + body->substr(0, 300);
    return s;
  }

  // Whether the running, unpaused members agree on a complete assignment
  // now (StableFrom); `why` says what is missing.
  bool Stable(std::string* why) const {
    std::map<std::string, ClusterStatus> pages;
    for (int i = 0; i < size(); i++) {
      if (!running(i) || paused(i)) continue;
      std::string error;
      auto s = StatusOf(i, &error);
      if (!s) return Why(why, error);
      pages[MemberId(i)] = *s;
    }
    return StableFrom(pages, options_.shards, why);
  }

  // The stability rule, on the pages of the live members (keyed by the
  // member id the harness gave them): each names itself, serves exactly
  // what it owns, no shard is served twice, all report the same generation
  // and owner map, and every shard's owner there is a live member that
  // serves it.
  static bool StableFrom(const std::map<std::string, ClusterStatus>& pages, int shards, std::string* why) {
    if (pages.empty()) return Why(why, "no member is running");
    const ClusterStatus* first = nullptr;
    std::map<int, std::string> serving_member;  // shard -> who says it serves it
    for (const auto& [id, s] : pages) {
      if (s.member != id) return Why(why, id + " calls itself \"" + s.member + "\"");
      if (s.owned != s.serving) return Why(why, id + " owns shards it does not serve yet: " + s.raw);
      for (int shard : s.serving) {
        if (serving_member.count(shard)) {
          return Why(why, "shard " + std::to_string(shard) + " served by both " + serving_member[shard] + " and " + id);
        }
        serving_member[shard] = id;
      }
      if (first == nullptr) {
        first = &s;
      } else if (s.generation != first->generation || s.owners != first->owners) {
        return Why(why, id + " disagrees with " + first->member + ":\n  " + s.raw + "\n  " + first->raw);
      }
    }
    for (int shard = 0; shard < shards; shard++) {
      auto it = first->owners.find(shard);
      if (it == first->owners.end()) return Why(why, "shard " + std::to_string(shard) + " has no owner: " + first->raw);
      if (!pages.count(it->second.member)) {
        return Why(why, "shard " + std::to_string(shard) + " owned by " + it->second.member + ", not a live member");
      }
      if (serving_member[shard] != it->second.member) {
        return Why(why, "shard " + std::to_string(shard) + " owner " + it->second.member + " does not serve it yet");
      }
      // A restarted member announces its new endpoint at once, and its
      // owner records only when its restores are done: until then the
      // owner map still forwards to the old endpoint.
      if (auto m = first->members.find(it->second.member);
          m != first->members.end() && m->second != it->second.endpoint) {
        return Why(why, "shard " + std::to_string(shard) + " owner record names " + it->second.endpoint + ", but " +
                            it->second.member + " advertises " + m->second + " now");
      }
    }
    return true;
  }

  // Polls Stable() every 200 ms until `timeout`.
  bool WaitStable(std::chrono::milliseconds timeout, std::string* why) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (Stable(why)) return true;
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  // The last `bytes` of each member's log, for failure messages.
  std::string Logs(size_t bytes = 3000) const {
    std::string out;
    for (int i = 0; i < size(); i++) {
      const std::string log = members_[i].process->Log();
      out += "---- " + MemberId(i) + " log (tail) ----\n" + log.substr(log.size() > bytes ? log.size() - bytes : 0);
    }
    return out;
  }

  // The last `bytes` of each member's cluster lines (its "[cluster]"
  // logger, and every warning and error): a hand-over's steps (gained,
  // lost, loading, claiming, serving) outlast a busy member's other lines.
  std::string ClusterLogs(size_t bytes = 12000) const {
    std::string out;
    for (int i = 0; i < size(); i++) {
      const std::string log = members_[i].process->Log();
      std::string kept;
      for (size_t at = 0; at < log.size();) {
        size_t end = log.find('\n', at);
        end = end == std::string::npos ? log.size() : end + 1;
        const std::string_view line(log.data() + at, end - at);
        if (line.find("[cluster]") != std::string_view::npos || line.find(" warn") != std::string_view::npos ||
            line.find(" error") != std::string_view::npos) {
          kept.append(line);
        }
        at = end;
      }
      out += "---- " + MemberId(i) + " cluster log (tail) ----\n" +
             kept.substr(kept.size() > bytes ? kept.size() - bytes : 0);
    }
    return out;
  }

 private:
  struct Member {
    std::string config;
    std::unique_ptr<SidecarProcess> process;
    bool running = false;
    bool paused = false;
    uint64_t incarnation = 0;
    std::string endpoint, http;
  };

  int NewMember() {
    std::lock_guard lock(mu_);  // Endpoint() may be reading members_ now
    const int i = static_cast<int>(members_.size());
    Member m;
    m.config = dir_.Sub(MemberId(i) + ".yaml");
    std::ofstream(m.config) << MemberYaml(i);
    m.process = std::make_unique<SidecarProcess>(
        options_.binary, dir_.Sub(MemberId(i)),
        std::vector<std::string>{"--config", m.config, "--durability", options_.durability});
    members_.push_back(std::move(m));
    return i;
  }

  static bool Why(std::string* why, std::string text) {
    *why = std::move(text);
    return false;
  }

  std::string MemberYaml(int i) const {
    std::ostringstream y;
    y << "sidecar:\n  id: " << options_.service << "-" << MemberId(i) << "\n  workers: 2\n"
      << "kafka:\n  bootstrap: " << kafka_->bootstraps() << "\n  partitions: " << options_.shards
      << "\n  replication_factor: " << options_.brokers << "\n  watermark_flush_ms: 20\n";
    if (options_.cluster) {
      y << "  topic: sidetable.{service}.changes\n"
        << "cluster:\n  service: " << options_.service
        << "\n  member_id: " << (options_.member_id ? options_.member_id(i) : MemberId(i))
        << "\n  acks: " << options_.acks << "\n  rebalance_wait_ms: " << options_.rebalance_wait_ms
        << "\n  session_timeout_ms: " << options_.session_timeout_ms
        << "\n  standby_replicas: " << options_.standby_replicas << "\n";
      if (!options_.state_topic) y << "  state_topic: \"\"\n";
      // cluster.advertise is left out: its default is the first bound
      // --listen endpoint (cluster_options.h), right on loopback, and the
      // port is the child's own choice (tcp://127.0.0.1:*).
    } else {
      y << "  topic: " << ChangeTopic() << "\n";
    }
    y << options_.extra_yaml;
    if (options_.member_yaml) y << options_.member_yaml(i);
    return y.str();
  }

  ClusterHarnessOptions options_;
  TempDir dir_;
  std::unique_ptr<kafka::EmbeddedKafka> kafka_;
  std::vector<Member> members_;
  mutable std::mutex mu_;
};

}  // namespace sidetable::testing
