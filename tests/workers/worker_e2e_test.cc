// The worker end to end: a Kafka mock cluster owned by the test, the real
// sidecar publishing to it, and real sidetable-worker processes in one
// consumer group keeping an index table (patterns/index_table) while the
// test SIGKILLs one of them; plus the dead-letter path.
#include <gtest/gtest.h>
#include <httplib.h>
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "client/client.h"
#include "client/curve.h"
#include "client/entity_builder.h"
#include "client/session.h"
#include "common/kafka/embedded_kafka.h"
#include "common/kafka/partitioner.h"
#include "engine/etag.h"
#include "events/event.h"
#include "patterns/index_table/index_table.h"
#include "testing/sidecar_process.h"
#include "testing/temp_dir.h"
#include "testing/text.h"
#include "testing/worker_process.h"
#include "workers/dead_letter.h"

namespace sidetable {
namespace {

using kafka::EmbeddedKafka;
using Clock = std::chrono::steady_clock;

constexpr const char* kTopic = "sidetable.wk-test.changes";  // the sidecar's default template
constexpr const char* kDlq = "sidetable.wk-test.dead-letter";

class WorkerE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto k = EmbeddedKafka::Start(1);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    kafka_ = std::move(k).value();
    ASSERT_TRUE(kafka_->CreateTopic(kTopic, 4).ok());
    ASSERT_TRUE(kafka_->CreateTopic(kDlq, 1).ok());
    const std::string cfg = dir_.Sub("sidecar.yaml");
    std::ofstream(cfg) << "sidecar:\n  id: wk-test\nkafka:\n  bootstrap: " << kafka_->bootstraps()
                       << "\n  partitions: 4\n  watermark_flush_ms: 20\n" << CurveSetUp();
    server_ = std::make_unique<testing::SidecarProcess>(
        SIDETABLE_BIN, dir_.Sub("db"), std::vector<std::string>{"--config", cfg, "--durability", "os"});
    ASSERT_TRUE(server_->Start()) << server_->Log();
    client::ClientOptions o;
    o.endpoint = server_->endpoint();
    o.timeout = std::chrono::milliseconds(10000);
    o.curve = test_keys_;
    client_ = std::move(client::Client::Connect(o)).value();
    ASSERT_TRUE(client_->CreateTable("People").ok());

    index_settings_ = {"index_table",
                       {{"source", {"People"}}, {"target", {"PeopleByColor"}}, {"properties", {"Color"}},
                        {"project", {"Name"}}}};
    worker_cfg_ = dir_.Sub("worker.yaml");
    std::ofstream(worker_cfg_) << "kafka:\n  bootstrap: " << kafka_->bootstraps() << "\n  topic: " << kTopic
                               << "\n  group: wk-test-group\n  session_timeout_ms: 3000\n"
                               << "  commit_batch: 50\n  commit_interval_ms: 100\n"
                               << "  properties:\n    fetch.wait.max.ms: \"5\"\n"
                               << "sidecar:\n  endpoint: " << server_->endpoint() << "\n  timeout_ms: 5000\n"
                               << worker_curve_keys_
                               << "retry:\n  max_attempts: 5\n  backoff_ms: 20\n  backoff_max_ms: 500\n"
                               << "dead_letter:\n  topic: " << kDlq << "\n"
                               << "log:\n  level: info\n"
                               << "patterns:\n  - name: index_table\n    source: People\n"
                               << "    target: PeopleByColor\n    properties: Color\n    project: [Name]\n";
  }

  // `n` people in partition `pk` (r0.., three colours): work for the index.
  void WritePeople(const std::string& pk, int n) {
    for (int i = 0; i < n; i++) {
      ASSERT_TRUE(client_
                      ->InsertOrReplace("People", client::EntityBuilder(pk, "r" + std::to_string(i))
                                                      .String("Color", "c" + std::to_string(i % 3))
                                                      .String("Name", "n")
                                                      .Build())
                      .ok());
    }
  }

  std::unique_ptr<testing::WorkerProcess> StartWorker(const std::string& name) {
    auto w = std::make_unique<testing::WorkerProcess>(SIDETABLE_WORKER_BIN, worker_cfg_, dir_.Sub(name));
    EXPECT_TRUE(w->Start()) << w->Log();
    return w;
  }

  std::vector<Entity> ReadAll(const std::string& table) {
    std::vector<Entity> out;
    client::QueryIterator it = client_->Query({table, "", {}, std::nullopt});
    Entity e;
    while (it.Next(&e)) out.push_back(std::move(e));
    return out;
  }

  // Entities as comparable text: keys and properties (sorted by name), no
  // Timestamp or ETag.
  static std::vector<std::string> Canonical(std::vector<Entity> es) {
    std::vector<std::string> out;
    for (auto& e : es) {
      std::sort(e.properties.begin(), e.properties.end(),
                [](const Property& a, const Property& b) { return a.name < b.name; });
      std::string s = e.partition_key + " | " + e.row_key;
      for (const auto& p : e.properties) s += " | " + p.name + "=" + p.value.ToString();
      out.push_back(std::move(s));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::vector<std::string> ExpectedIndex() {
    auto cfg = patterns::IndexTableConfig::FromSettings(index_settings_);
    EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
    return Canonical(patterns::ExpectedIndex(*cfg, ReadAll("People")));
  }

  // Polls until the index equals the expected one or `timeout` passes.
  bool WaitForIndex(std::chrono::seconds timeout, std::vector<std::string>* expected,
                    std::vector<std::string>* actual) {
    const auto until = Clock::now() + timeout;
    *expected = ExpectedIndex();
    do {
      *actual = Canonical(ReadAll("PeopleByColor"));
      if (*actual == *expected) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } while (Clock::now() < until);
    return false;
  }

  void Produce(const std::string& key, const std::string& value) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", kafka_->bootstraps().c_str(), err, sizeof err);
    rd_kafka_t* p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    ASSERT_NE(p, nullptr) << err;
    ASSERT_EQ(rd_kafka_producev(p, RD_KAFKA_V_TOPIC(kTopic), RD_KAFKA_V_KEY(key.data(), key.size()),
                                RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    EXPECT_EQ(rd_kafka_flush(p, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_destroy(p);
  }

  void ProduceTo(int32_t partition, const std::string& key, const std::string& value) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", kafka_->bootstraps().c_str(), err, sizeof err);
    rd_kafka_t* p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    ASSERT_NE(p, nullptr) << err;
    ASSERT_EQ(rd_kafka_producev(p, RD_KAFKA_V_TOPIC(kTopic), RD_KAFKA_V_PARTITION(partition),
                                RD_KAFKA_V_KEY(key.data(), key.size()),
                                RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    EXPECT_EQ(rd_kafka_flush(p, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_destroy(p);
  }

  struct Dead {
    std::string key, value;
    std::map<std::string, std::string> headers;
  };
  // Reads the dead-letter topic (assign, no group) until `n` messages or `timeout`.
  std::vector<Dead> ReadDeadLetters(size_t n, std::chrono::seconds timeout) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", kafka_->bootstraps().c_str(), err, sizeof err);
    rd_kafka_conf_set(conf, "group.id", "wk-test-dlq-reader", err, sizeof err);
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(list, kDlq, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, list);
    rd_kafka_topic_partition_list_destroy(list);
    std::vector<Dead> out;
    const auto until = Clock::now() + timeout;
    while (out.size() < n && Clock::now() < until) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
      if (!m) continue;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        Dead d;
        if (m->key) d.key.assign(static_cast<const char*>(m->key), m->key_len);
        if (m->payload) d.value.assign(static_cast<const char*>(m->payload), m->len);
        rd_kafka_headers_t* hs = nullptr;
        if (rd_kafka_message_headers(m, &hs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
          const char* name;
          const void* val;
          size_t size;
          for (size_t i = 0; rd_kafka_header_get_all(hs, i, &name, &val, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; i++) {
            d.headers[name] = std::string(static_cast<const char*>(val), size);
          }
        }
        out.push_back(std::move(d));
      }
      rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return out;
  }

  // CURVE (WorkerCurveE2eTest): the sidecar's security section; fills the
  // test client's keys and the worker's sidecar.curve_* keys.
  virtual std::string CurveSetUp() { return ""; }

  testing::TempDir dir_;
  client::CurveClientKeys test_keys_;
  std::string worker_curve_keys_;
  std::unique_ptr<EmbeddedKafka> kafka_;
  std::unique_ptr<testing::SidecarProcess> server_;
  std::unique_ptr<client::Client> client_;
  patterns::PatternConfig index_settings_;
  std::string worker_cfg_;
};

// A number from a worker's /health, -1 when it does not answer.
// A number field of the /health JSON at `host_port` (the first with that
// name); -1 if there is none.
int64_t HealthFieldAt(const std::string& host_port, const std::string& field) {
  httplib::Client http("http://" + host_port);
  http.set_connection_timeout(1);
  auto res = http.Get("/health");
  if (!res) return -1;
  auto at = res->body.find("\"" + field + "\":");
  if (at == std::string::npos) return -1;
  return std::atoll(res->body.c_str() + at + field.size() + 3);
}

int64_t HealthField(const testing::WorkerProcess& w, const std::string& field) {
  return HealthFieldAt(w.http(), field);
}

// Polls until `pred` or `timeout`.
bool WaitUntil(const std::function<bool()>& pred, std::chrono::seconds timeout) {
  const auto until = Clock::now() + timeout;
  while (!pred()) {
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::string HealthBody(const testing::WorkerProcess& w) {
  httplib::Client http("http://" + w.http());
  http.set_connection_timeout(1);
  auto res = http.Get("/health");
  return res ? res->body : std::string();
}

std::string MetricsBody(const testing::WorkerProcess& w) {
  httplib::Client http("http://" + w.http());
  http.set_connection_timeout(1);
  auto res = http.Get("/metrics");
  return res ? res->body : std::string();
}

// A worker whose Kafka or sidecar went away said "ok" (with 0 partitions):
// now /health says degraded and why, and recovers by itself.
TEST_F(WorkerE2eTest, HealthSaysDegradedWhenKafkaOrTheSidecarGoesAway) {
  auto w = StartWorker("w1");
  ASSERT_TRUE(WaitUntil([&] { return HealthField(*w, "assigned_partitions") > 0; }, std::chrono::seconds(30)))
      << HealthBody(*w);
  ASSERT_TRUE(client_->InsertOrReplace("People", client::EntityBuilder("p", "r").String("Color", "red").String("Name", "n").Build()).ok());
  ASSERT_TRUE(WaitUntil([&] { return HealthBody(*w).find("\"status\":\"ok\"") != std::string::npos; },
                        std::chrono::seconds(15)))
      << HealthBody(*w);
  // Lag figures per derived table are on /metrics.
  EXPECT_NE(MetricsBody(*w).find("sidetable_worker_lag_seconds{table=\"PeopleByColor\"}"), std::string::npos)
      << MetricsBody(*w);

  ASSERT_TRUE(kafka_->SetBrokersDown(true).ok());
  EXPECT_TRUE(WaitUntil(
      [&] { return HealthBody(*w).find("kafka: no broker is answering") != std::string::npos; },
      std::chrono::seconds(20)))
      << HealthBody(*w);
  EXPECT_NE(HealthBody(*w).find("\"status\":\"degraded\""), std::string::npos);
  ASSERT_TRUE(kafka_->SetBrokersDown(false).ok());
  EXPECT_TRUE(WaitUntil([&] { return HealthBody(*w).find("\"kafka_reachable\":true") != std::string::npos; },
                        std::chrono::seconds(20)))
      << HealthBody(*w);

  const std::string endpoint = server_->endpoint();
  server_->Kill();
  EXPECT_TRUE(WaitUntil([&] { return HealthBody(*w).find("\"sidecar_reachable\":false") != std::string::npos; },
                        std::chrono::seconds(20)))
      << HealthBody(*w);
  EXPECT_NE(HealthBody(*w).find("\"status\":\"degraded\""), std::string::npos);
  EXPECT_NE(HealthBody(*w).find("sidecar: "), std::string::npos);
  // Back on the same endpoint: the worker reconnects by itself.
  server_ = std::make_unique<testing::SidecarProcess>(
      SIDETABLE_BIN, dir_.Sub("db"),
      std::vector<std::string>{"--config", dir_.Sub("sidecar.yaml"), "--durability", "os", "--listen", endpoint});
  ASSERT_TRUE(server_->Start()) << server_->Log();
  EXPECT_TRUE(WaitUntil([&] { return HealthBody(*w).find("\"status\":\"ok\"") != std::string::npos; },
                        std::chrono::seconds(30)))
      << HealthBody(*w);
}

// The worker asked the sidecar between polls only, so while a batch sat in
// its retry loop against a frozen sidecar (here 5 attempts of 5 s) /health
// could say "sidecar_reachable": true for the whole loop. The probe asks
// from a thread of its own (workers/sidecar_probe.h). (On the old worker
// this passes too when its between-batch Ping happens to run first after
// the resume, as here; the tester's 30 s of "true" came when it did not.)
TEST_F(WorkerE2eTest, AFrozenSidecarIsReportedWhileABatchRetries) {
  auto w = StartWorker("w-probe");
  ASSERT_TRUE(WaitUntil([&] { return HealthField(*w, "assigned_partitions") > 0; },
                        std::chrono::seconds(30)))
      << HealthBody(*w);
  ASSERT_TRUE(WaitUntil(
      [&] { return HealthBody(*w).find("\"sidecar_reachable\":true") != std::string::npos; },
      std::chrono::seconds(10)))
      << HealthBody(*w);
  // Read while the worker answers (a paused worker's /health cannot: the
  // read would give -1 and the check below would pass whatever happened).
  const int64_t retries = HealthField(*w, "retries_total");
  ASSERT_GE(retries, 0) << HealthBody(*w);
  // Changes wait on Kafka while the worker is paused; then the sidecar
  // freezes and the worker wakes into a batch it cannot apply.
  ASSERT_EQ(::kill(w->pid(), SIGSTOP), 0);
  ASSERT_NO_FATAL_FAILURE(WritePeople("frozen", 20));
  ASSERT_EQ(::kill(server_->pid(), SIGSTOP), 0);
  ASSERT_EQ(::kill(w->pid(), SIGCONT), 0);
  // Unreachable, and said so while the batch is retrying (not only between
  // batches).
  const bool said = WaitUntil(
      [&] {
        const std::string h = HealthBody(*w);
        return h.find("\"sidecar_reachable\":false") != std::string::npos &&
               HealthField(*w, "retries_total") > retries;
      },
      // The first retry counts after an attempt's 5 s; before it the worker
      // may rejoin its group (it was stopped) and fetch: seconds more on a
      // loaded machine. The batch's 5 attempts last 25 s.
      std::chrono::seconds(40));
  const std::string during = HealthBody(*w);
  ASSERT_EQ(::kill(server_->pid(), SIGCONT), 0);
  EXPECT_TRUE(said) << during;
  EXPECT_NE(during.find("\"status\":\"degraded\""), std::string::npos) << during;
  EXPECT_NE(during.find("sidecar: NoReply"), std::string::npos) << during;
  EXPECT_TRUE(WaitUntil(
      [&] { return HealthBody(*w).find("\"sidecar_reachable\":true") != std::string::npos; },
      std::chrono::seconds(30)))
      << HealthBody(*w);
}

// Read your own writes through an index table: a session writes a person
// and at once looks the person up by Color in the index; with the token the
// read waits for the workers instead of missing. Workers are paused
// (SIGSTOP) and killed (SIGKILL) along the way; every lookup must find its
// own write, never a miss and never a time-out.
TEST_F(WorkerE2eTest, SessionAlwaysFindsItsOwnWriteThroughTheIndex) {
  auto a = StartWorker("ryw-a");
  // The worker registers (derived, source) once it owns partitions; before
  // that no token has anything to wait for (docs/consistency.md).
  ASSERT_TRUE(WaitUntil([&] {
    auto w = client_->ReadWatermarks("PeopleByColor");
    return w.ok() && !w->empty();
  }, std::chrono::seconds(30)));
  auto cfg = patterns::IndexTableConfig::FromSettings(index_settings_);
  ASSERT_TRUE(cfg.ok());

  client::Session session(client_.get());
  session.set_wait(std::chrono::milliseconds(30000));
  std::unique_ptr<testing::WorkerProcess> b;
  int found = 0;
  std::vector<double> waits_ms;
  std::thread resume;
  for (int i = 0; i < 120; i++) {
    if (i == 30) {
      // Slowed: paused for 1.5 s while this session goes on writing and reading.
      ASSERT_EQ(::kill(a->pid(), SIGSTOP), 0);
      resume = std::thread([pid = a->pid()] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        ::kill(pid, SIGCONT);
      });
    }
    if (i == 70) {
      resume.join();
      EXPECT_EQ(a->Kill(), 128 + SIGKILL);                   // killed; another takes over
      b = StartWorker("ryw-b");
    }
    Entity person = client::EntityBuilder("p" + std::to_string(i % 7), "r" + std::to_string(i))
                        .String("Name", "n" + std::to_string(i))
                        .String("Color", "c" + std::to_string(i))
                        .Build();
    ASSERT_TRUE(session.InsertOrReplace("People", person).ok());
    auto entries = patterns::ExpectedIndex(*cfg, {person});
    ASSERT_EQ(entries.size(), 1u);
    const auto t0 = Clock::now();
    auto got = session.Get("PeopleByColor", entries[0].partition_key, entries[0].row_key);
    waits_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    ASSERT_TRUE(got.ok()) << "write " << i << ": " << got.status().ToString();
    EXPECT_EQ(got->Find("Name")->bytes(), "n" + std::to_string(i));
    found++;
  }
  if (resume.joinable()) resume.join();
  EXPECT_EQ(found, 120);
  std::sort(waits_ms.begin(), waits_ms.end());
  std::cout << "read-your-writes waits: p50 " << waits_ms[waits_ms.size() / 2] << " ms, max " << waits_ms.back()
            << " ms\n";
  // Without the session's token the same lookup can miss: a plain read right
  // after a write while the worker is paused does not find it.
  ASSERT_EQ(::kill(b->pid(), SIGSTOP), 0);
  Entity late = client::EntityBuilder("p0", "late").String("Name", "late").String("Color", "late").Build();
  ASSERT_TRUE(client_->InsertOrReplace("People", late).ok());
  auto entries = patterns::ExpectedIndex(*cfg, {late});
  EXPECT_EQ(client_->Get("PeopleByColor", entries[0].partition_key, entries[0].row_key).status().code(),
            Code::kResourceNotFound);
  // And a session read of it times out with the distinct code, never stale.
  client::Session waiting(client_.get());
  waiting.set_wait(std::chrono::milliseconds(300));
  ASSERT_TRUE(waiting.InsertOrReplace("People", late).ok());
  EXPECT_EQ(waiting.Get("PeopleByColor", entries[0].partition_key, entries[0].row_key).status().code(),
            Code::kReadSessionNotAvailable);
  ASSERT_EQ(::kill(b->pid(), SIGCONT), 0);
}

TEST_F(WorkerE2eTest, TwoWorkersKeepTheIndexThroughRepeatedKillNine) {
  auto a = StartWorker("worker-a");
  auto b = StartWorker("worker-b");
  std::mt19937 rng(20261130);
  const char* colors[] = {"red", "green", "blue", "black", "white"};
  // A burst of pipelined random writes on a small key space: inserts,
  // replaces (sometimes without the indexed property), merges of the
  // indexed or another property, deletes. Some fail (a merge or delete of
  // an absent entity): they commit and publish nothing. The expected index
  // is computed from the source table at the end, so no model is needed.
  auto burst = [&](int n) {
    for (int i = 0; i < n; i++) {
      Batch r("People");
      const std::string pk = "p" + std::to_string(rng() % 6);
      const std::string rk = "r" + std::to_string(rng() % 40);
      client::EntityBuilder e(pk, rk);
      const int kind = static_cast<int>(rng() % 10);
      if (kind < 4) {
        e.String("Name", "n" + std::to_string(i));
        if (kind != 0) e.String("Color", colors[rng() % 5]);
        r.InsertOrReplace(e.Build());
      } else if (kind < 6) {
        if (rng() % 2) e.String("Color", colors[rng() % 5]);
        else e.Int32("Age", static_cast<int32_t>(rng() % 90));
        r.InsertOrMerge(e.Build());
      } else if (kind < 8) {
        e.String("Color", colors[rng() % 5]);
        r.Merge(e.Build(), "*");
      } else {
        r.Add(OpKind::kDelete, e.Build(), "*");
      }
      client_->SendWrite(r, [](Result<WriteResult>) {});
    }
    client_->Drain();
  };

  // The group forms (a new group takes ~3 s on the mock) and both own partitions.
  burst(200);
  ASSERT_TRUE(WaitUntil([&] { return HealthField(*a, "assigned_partitions") > 0 &&
                                     HealthField(*b, "assigned_partitions") > 0; },
                        std::chrono::seconds(30)))
      << a->Log() << b->Log();

  // Three times: a burst, and SIGKILL B once it is busy with its share
  // (it has applied some of it and not all). Its partitions move to A, and
  // back when B is restarted; what B applied but had not committed is
  // delivered again and must be harmless.
  int kills = 0;
  for (int round = 0; round < 3; round++) {
    const int64_t before = HealthField(*b, "events_total");
    burst(400);
    EXPECT_TRUE(WaitUntil([&] { return HealthField(*b, "events_total") >= before + 10; }, std::chrono::seconds(20)))
        << b->Log();
    EXPECT_EQ(b->Kill(), 128 + SIGKILL);
    kills++;
    burst(100);  // A goes on alone meanwhile (after B's session times out)
    b = StartWorker("worker-b");
    ASSERT_TRUE(WaitUntil([&] { return HealthField(*b, "assigned_partitions") > 0; }, std::chrono::seconds(30)))
        << b->Log();
  }
  burst(200);
  ASSERT_EQ(kills, 3);
  std::vector<std::string> expected, actual;
  const bool converged = WaitForIndex(std::chrono::seconds(90), &expected, &actual);
  ASSERT_GT(expected.size(), 50u);
  EXPECT_GT(client_->Ping()->last_lsn, 1000u);
  if (!converged) {
    std::vector<std::string> missing, extra;
    std::set_difference(expected.begin(), expected.end(), actual.begin(), actual.end(), std::back_inserter(missing));
    std::set_difference(actual.begin(), actual.end(), expected.begin(), expected.end(), std::back_inserter(extra));
    ADD_FAILURE() << "index differs after 90 s: " << missing.size() << " missing (first: "
                  << (missing.empty() ? "" : missing[0]) << "), " << extra.size() << " extra (first: "
                  << (extra.empty() ? "" : extra[0]) << ")\nworker A:\n"
                  << a->Log().substr(0, 4000) << "\nworker B:\n" << b->Log().substr(0, 4000);
  }

  // Metrics of a survivor: events counted, ops by kind, lag per partition.
  httplib::Client http("http://" + a->http());
  auto res = http.Get("/metrics");
  ASSERT_TRUE(res) << "no /metrics";
  EXPECT_NE(res->body.find("sidetable_worker_events_total"), std::string::npos);
  EXPECT_NE(res->body.find("sidetable_worker_operations_total{kind=\"FencedUpsert\",result=\"written\"}"),
            std::string::npos);
  // Lag comes from librdkafka's statistics (every second), after a rebalance too.
  std::string body;
  EXPECT_TRUE(WaitUntil([&] {
    auto r = http.Get("/metrics");
    body = r ? r->body : "";
    return body.find("sidetable_worker_consumer_lag{topic=\"sidetable.wk-test.changes\"") != std::string::npos;
  }, std::chrono::seconds(10))) << body;
  auto health = http.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_NE(health->body.find("\"status\":\"ok\""), std::string::npos) << health->body;

  // A clean stop leaves the group and exits 0.
  EXPECT_EQ(a->Stop(), 0) << a->Log();
  EXPECT_EQ(b->Stop(), 0) << b->Log();
  EXPECT_NE(a->Log().find("leaving group"), std::string::npos);
}

// A worker stopped (or behind) longer than the change topic keeps its
// messages comes back to a committed offset Kafka no longer holds.
// librdkafka then starts at the oldest message left and only logs a
// warning: the changes in between never reached the index, and the worker
// said "ok", lag 0, and reported applied watermarks past them (so session
// reads of the lost write passed at once). The mock cluster keeps about the
// newest 5 MiB of a partition (or 100,000 message sets); the filler is on a
// table no pattern reads, which the worker skips unread.
TEST_F(WorkerE2eTest, MessagesKafkaRemovedBeforeTheGroupReadThemAreReported) {
  auto w = StartWorker("w-before");
  WritePeople("a", 6);
  std::vector<std::string> expected, actual;
  ASSERT_TRUE(WaitForIndex(std::chrono::seconds(60), &expected, &actual)) << w->Log();
  ASSERT_EQ(w->Stop(), 0) << w->Log();

  // The change the index will never see, then enough messages after it on
  // its partition for the mock to drop it.
  ASSERT_TRUE(
      client_
          ->InsertOrReplace(
              "People",
              client::EntityBuilder("a", "r0").String("Color", "lost").String("Name", "n").Build())
          .ok());
  // Published before the filler: the publisher sends after the commit, and
  // behind the filler the change would be the newest, kept, and applied.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const int64_t lsn = HealthFieldAt(server_->http(), "lsn");
        return lsn > 0 && HealthFieldAt(server_->http(), "published_lsn") >= lsn;
      },
      std::chrono::seconds(30)));
  const int32_t partition = kafka::KafkaPartitionFor("People/a", 4);
  {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", kafka_->bootstraps().c_str(), err, sizeof err);
    rd_kafka_t* p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    ASSERT_NE(p, nullptr) << err;
    const std::string key = "Filler/x", value(64 * 1024, 'f');
    for (int i = 0; i < 120; i++) {  // 7.5 MiB
      ASSERT_EQ(rd_kafka_producev(p, RD_KAFKA_V_TOPIC(kTopic), RD_KAFKA_V_PARTITION(partition),
                                  RD_KAFKA_V_KEY(key.data(), key.size()),
                                  RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    ASSERT_EQ(rd_kafka_flush(p, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_destroy(p);
  }

  auto w2 = StartWorker("w-after");
  const std::string where = std::string(kTopic) + "/" + std::to_string(partition) + " offsets ";
  EXPECT_TRUE(
      WaitUntil([&] { return HealthBody(*w2).find("history lost: " + where) != std::string::npos; },
                std::chrono::seconds(60)))
      << HealthBody(*w2) << w2->Log();
  const std::string health = HealthBody(*w2);
  EXPECT_NE(health.find("\"status\":\"degraded\""), std::string::npos) << health;
  EXPECT_NE(health.find("sidetable-cli derive"), std::string::npos) << health;
  const std::string metrics = MetricsBody(*w2);
  EXPECT_NE(metrics.find("sidetable_worker_history_gaps_total 1\n"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("sidetable_worker_lost_messages_total 0\n"), std::string::npos) << metrics;
  EXPECT_NE(w2->Log().find("history lost: " + where), std::string::npos) << w2->Log();
  // The loss is real (the test does not pass by the index catching up): the
  // index still has r0 under its old colour and not under "lost".
  bool has_lost = false;
  for (const auto& e : Canonical(ReadAll("PeopleByColor"))) has_lost |= e.rfind("lost |", 0) == 0;
  EXPECT_FALSE(has_lost);
  // Messages read in order after the gap are no further gap.
  WritePeople("a", 3);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_NE(MetricsBody(*w2).find("sidetable_worker_history_gaps_total 1\n"), std::string::npos);
}

TEST_F(WorkerE2eTest, PoisonEventGoesToTheDeadLetterTopicAndTheWorkerMovesOn) {
  auto w = StartWorker("worker");
  // Garbage straight onto the change topic, then a real write behind it.
  Produce("People/p0", "{this is not a change event");
  ASSERT_TRUE(client_->Insert("People", client::EntityBuilder("p0", "r1").String("Color", "red").Build()).ok());
  ASSERT_TRUE(client_->Insert("People", client::EntityBuilder("p1", "r2").String("Color", "blue").Build()).ok());
  std::vector<std::string> expected, actual;
  EXPECT_TRUE(WaitForIndex(std::chrono::seconds(30), &expected, &actual)) << w->Log();
  EXPECT_EQ(actual.size(), 2u);

  auto dead = ReadDeadLetters(1, std::chrono::seconds(20));
  ASSERT_EQ(dead.size(), 1u) << w->Log();
  EXPECT_EQ(dead[0].key, "People/p0");
  EXPECT_EQ(dead[0].value, "{this is not a change event");
  EXPECT_EQ(dead[0].headers[workers::kHeaderReason].rfind("decode: ", 0), 0u) << dead[0].headers[workers::kHeaderReason];
  EXPECT_EQ(dead[0].headers[workers::kHeaderSourceTopic], kTopic);
  EXPECT_FALSE(dead[0].headers[workers::kHeaderSourceOffset].empty());
  EXPECT_EQ(dead[0].headers[workers::kHeaderGroup], "wk-test-group");

  httplib::Client http("http://" + w->http());
  auto res = http.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("sidetable_worker_dead_letters_total{reason=\"decode\"} 1"), std::string::npos)
      << res->body;
  EXPECT_EQ(w->Stop(), 0) << w->Log();
}

// One applied watermark the sidecar cannot take (an event whose LSN is above
// its change log's last, as after the log went back) made it refuse every
// report, so no derived table's watermark moved on any partition: now the
// others still go, and /health says what is held back.
TEST_F(WorkerE2eTest, AWatermarkTheSidecarRefusesDoesNotHoldBackTheOthers) {
  auto w = StartWorker("w-wm");
  ASSERT_TRUE(WaitUntil([&] { return HealthField(*w, "assigned_partitions") > 0; },
                        std::chrono::seconds(30)))
      << HealthBody(*w);
  // A forged change far beyond the sidecar's LSNs, on another partition than
  // the real write below.
  const std::string real_pk = "real";
  const int32_t real_partition = kafka::KafkaPartitionFor("People/" + real_pk, 4);
  const int32_t forged_partition = (real_partition + 1) % 4;
  ChangeRecord r;
  r.lsn = 1'000'000;
  r.kind = ChangeKind::kEntities;
  r.commit_time = 638'000'000'000'000'000;
  r.table = "People";
  r.table_id = 1;
  r.partition_key = "forged";
  ChangeOp op;
  op.row_key = "f";
  op.kind = OpKind::kInsert;
  op.version = r.lsn;
  op.etag = MakeETag(op.version);
  Entity e =
      client::EntityBuilder("forged", "f").String("Color", "grey").String("Name", "f").Build();
  e.etag = op.etag;
  e.timestamp = r.commit_time;
  op.after = e;
  r.ops.push_back(op);
  ProduceTo(forged_partition, "People/forged", events::EncodeEvent(r, "forger"));
  ASSERT_TRUE(WaitUntil(
      [&] { return HealthBody(*w).find("watermarks: 1 not accepted") != std::string::npos; },
      std::chrono::seconds(20)))
      << HealthBody(*w) << w->Log();
  EXPECT_NE(HealthBody(*w).find("is above the change log's last LSN"), std::string::npos)
      << HealthBody(*w);

  auto real = client_->InsertOrReplace(
      "People",
      client::EntityBuilder(real_pk, "r").String("Color", "red").String("Name", "n").Build());
  ASSERT_TRUE(real.ok()) << real.status().ToString();
  auto reported = [&] {
    auto wm = client_->ReadWatermarks("PeopleByColor");
    if (!wm.ok()) return false;
    for (const auto& x : *wm) {
      if (x.partition == real_partition && x.lsn >= real->lsn) return true;
    }
    return false;
  };
  EXPECT_TRUE(WaitUntil(reported, std::chrono::seconds(20))) << HealthBody(*w) << w->Log();
  // The refusal is logged once, not after every batch.
  EXPECT_EQ(testing::CountOf(w->Log(), "applied watermarks not reported"), 1u) << w->Log();
  EXPECT_EQ(w->Stop(), 0) << w->Log();
}

// Scale-out fencing (docs/scale-out.md, docs/workers.md): on one partition,
// records of epoch 1, a claim of epoch 2, a stale epoch-1 record and an
// epoch-2 record: the worker indexes only the admitted ones, and a worker
// restarted from its committed offset (after the claim) still fences,
// because the floor travelled in the commit's metadata.
TEST_F(WorkerE2eTest, ClaimsFenceStaleRecordsAcrossARestart) {
  uint64_t lsn = 1000;
  std::vector<Entity> admitted;
  auto person = [&](const std::string& rk, const std::string& color, uint64_t epoch, bool admit) {
    ChangeRecord r;
    r.lsn = ++lsn;
    r.epoch = epoch;
    r.kind = ChangeKind::kEntities;
    r.commit_time = 638'000'000'000'000'000 + static_cast<int64_t>(lsn);
    r.table = "People";
    r.table_id = 1;
    r.partition_key = "fence";
    ChangeOp op;
    op.row_key = rk;
    op.kind = OpKind::kInsert;
    op.version = epoch << 40 | r.lsn;
    op.etag = MakeETag(op.version);
    Entity e = client::EntityBuilder("fence", rk).String("Color", color).String("Name", rk).Build();
    e.etag = op.etag;
    e.timestamp = r.commit_time;
    op.after = e;
    r.ops.push_back(op);
    if (admit) admitted.push_back(e);
    return events::EncodeEvent(r, "member-" + std::to_string(epoch));
  };
  auto claim = [&](uint64_t epoch) {
    ChangeRecord r;
    r.kind = ChangeKind::kShardClaimed;
    r.epoch = epoch;
    r.shard = 0;
    r.commit_time = 638'000'000'000'000'000;
    return events::EncodeEvent(r, "member-" + std::to_string(epoch));
  };
  auto expected = [&] {
    auto cfg = patterns::IndexTableConfig::FromSettings(index_settings_);
    EXPECT_TRUE(cfg.ok());
    return Canonical(patterns::ExpectedIndex(*cfg, admitted));
  };
  auto wait_index = [&](const std::vector<std::string>& want, std::vector<std::string>* got) {
    return WaitUntil([&] { return (*got = Canonical(ReadAll("PeopleByColor"))) == want; }, std::chrono::seconds(30));
  };

  ProduceTo(0, "People/fence", person("a", "red", 1, true));
  ProduceTo(0, "shard/0", claim(2));
  ProduceTo(0, "People/fence", person("b", "green", 1, false));  // stale: after the claim
  ProduceTo(0, "People/fence", person("c", "blue", 2, true));
  auto w = StartWorker("fencing-1");
  std::vector<std::string> got;
  EXPECT_TRUE(wait_index(expected(), &got)) << ::testing::PrintToString(got) << w->Log();
  EXPECT_NE(MetricsBody(*w).find("sidetable_worker_fenced_events_total 1\n"), std::string::npos) << MetricsBody(*w);
  EXPECT_EQ(w->Stop(), 0) << w->Log();  // commits its offsets (with the floor) on the way out

  // Behind the committed offset: another stale record, and a new one.
  ProduceTo(0, "People/fence", person("d", "violet", 1, false));
  ProduceTo(0, "People/fence", person("e", "white", 2, true));
  auto w2 = StartWorker("fencing-2");
  EXPECT_TRUE(wait_index(expected(), &got)) << ::testing::PrintToString(got) << w2->Log();
  EXPECT_TRUE(WaitUntil([&] { return MetricsBody(*w2).find("sidetable_worker_fenced_events_total 1\n") != std::string::npos; },
                        std::chrono::seconds(10)))
      << MetricsBody(*w2);
  EXPECT_NE(w2->Log().find("fencing floor epoch 2 from the committed offset"), std::string::npos) << w2->Log();
  // Nothing fenced was dead-lettered.
  EXPECT_TRUE(ReadDeadLetters(1, std::chrono::seconds(2)).empty());
  EXPECT_EQ(w2->Stop(), 0) << w2->Log();
}

// Session 35: with the sidecar frozen (SIGSTOP) while the worker had work in
// flight (a batch in its retry loop and an archive rule's moves), SIGTERM
// took ~11 s, because requests in flight waited out their time-outs and
// retries. A stop now abandons them (ClientOptions::abandon): the worker
// exits 0 within the bound with the unfinished work uncommitted, and a new
// worker finishes it once the sidecar thaws; nothing is lost.
TEST_F(WorkerE2eTest, AStopIsBoundedWhileTheSidecarIsFrozen) {
  ASSERT_TRUE(client_->CreateTable("Old").ok());
  std::ofstream(worker_cfg_, std::ios::app)
      << "  - name: archive\n    source: Old\n    target: OldArchive\n"
      << "    filter: \"Done eq true\"\n    interval_seconds: 1\n";
  auto w = StartWorker("w-frozen");
  ASSERT_TRUE(WaitUntil([&] { return HealthField(*w, "assigned_partitions") > 0; },
                        std::chrono::seconds(30)))
      << HealthBody(*w);
  // Work waits while the worker is paused (briefly: under its session
  // timeout); then the sidecar freezes and the worker wakes into a batch and
  // a rule evaluation it cannot finish.
  const int64_t retries = HealthField(*w, "retries_total");
  ASSERT_GE(retries, 0) << HealthBody(*w);
  ASSERT_EQ(::kill(w->pid(), SIGSTOP), 0);
  ASSERT_NO_FATAL_FAILURE(WritePeople("frozen", 20));
  for (int i = 0; i < 20; i++) {
    ASSERT_TRUE(
        client_
            ->InsertOrReplace(
                "Old",
                client::EntityBuilder("o", "r" + std::to_string(i)).Boolean("Done", true).Build())
            .ok());
  }
  ASSERT_EQ(::kill(server_->pid(), SIGSTOP), 0);
  ASSERT_EQ(::kill(w->pid(), SIGCONT), 0);
  // The batch's first attempt timed out (sidecar.timeout_ms, 5 s) and it is
  // retrying: the stop comes in the middle of its work.
  const bool in_flight = WaitUntil(
      [&] {
        return HealthField(*w, "retries_total") > retries &&
               HealthBody(*w).find("\"sidecar_reachable\":false") != std::string::npos;
      },
      std::chrono::seconds(20));
  const auto t0 = Clock::now();
  const int code = w->Stop(30);
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_EQ(::kill(server_->pid(), SIGCONT), 0);
  ASSERT_TRUE(in_flight) << HealthBody(*w);
  std::cout << "stop with a frozen sidecar took " << took << " s\n";
  EXPECT_EQ(code, 0) << w->Log();
  EXPECT_LT(took, 4.0) << w->Log();
  EXPECT_TRUE(testing::Contains(w->Log(), "left uncommitted")) << w->Log();

  // Nothing was lost: a new worker of the group redoes it.
  auto again = StartWorker("w-thawed");
  std::vector<std::string> expected, actual;
  EXPECT_TRUE(WaitForIndex(std::chrono::seconds(60), &expected, &actual)) << again->Log();
  EXPECT_EQ(expected.size(), 20u);
  EXPECT_TRUE(
      WaitUntil([&] { return ReadAll("Old").empty() && ReadAll("OldArchive").size() == 20; },
                std::chrono::seconds(30)))
      << ReadAll("Old").size() << " left in Old\n"
      << again->Log();
  EXPECT_EQ(again->Stop(), 0) << again->Log();
}

// Session 46: retries counted in attempts ended before the outage they were
// for (in a cluster, a shard handed over for 19-30 s after a member dies)
// and the events went to the dead-letter topic, their index entries missing
// for good. Here the sidecar is frozen for longer than the worker's two
// attempts of 300 ms last: the worker waits it out (retry.max_wait_seconds),
// says so in /health instead of looking stalled, and applies everything
// once the sidecar answers again, with no dead letter.
TEST_F(WorkerE2eTest, ASidecarGoneLongerThanTheAttemptsIsWaitedOutNotDeadLettered) {
  std::string cfg;
  {
    std::ifstream in(worker_cfg_);
    cfg.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto replace = [&](const std::string& from, const std::string& to) {
    const size_t at = cfg.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    cfg.replace(at, from.size(), to);
  };
  ASSERT_NO_FATAL_FAILURE(replace("  timeout_ms: 5000\n", "  timeout_ms: 300\n"));
  ASSERT_NO_FATAL_FAILURE(
      replace("retry:\n  max_attempts: 5\n",
              "lag:\n  max_seconds: 1\nretry:\n  max_attempts: 2\n  max_wait_seconds: 60\n"));
  std::ofstream(worker_cfg_) << cfg;
  auto w = StartWorker("w-wait");
  ASSERT_TRUE(WaitUntil([&] { return HealthField(*w, "assigned_partitions") > 0; },
                        std::chrono::seconds(30)))
      << HealthBody(*w);
  EXPECT_EQ(HealthField(*w, "waiting_seconds"), 0) << HealthBody(*w);
  // Work waits on Kafka while the worker is paused; then the sidecar
  // freezes and the worker wakes into a batch it cannot apply.
  ASSERT_EQ(::kill(w->pid(), SIGSTOP), 0);
  ASSERT_NO_FATAL_FAILURE(WritePeople("gone", 20));
  ASSERT_EQ(::kill(server_->pid(), SIGSTOP), 0);
  ASSERT_EQ(::kill(w->pid(), SIGCONT), 0);
  // Past lag.max_seconds of waiting /health names the wait (not "stalled"),
  // and the sidecar stays away for several times the attempts' 2 x 300 ms.
  const bool said = WaitUntil(
      [&] {
        return HealthField(*w, "waiting_seconds") >= 4 &&
               testing::Contains(HealthBody(*w),
                                 "waiting: the sidecar has been busy or out of reach");
      },
      std::chrono::seconds(30));
  const std::string during = HealthBody(*w);
  ASSERT_EQ(::kill(server_->pid(), SIGCONT), 0);
  EXPECT_TRUE(said) << during << "\n" << w->Log();
  EXPECT_FALSE(testing::Contains(during, "stalled:")) << during;
  std::vector<std::string> expected, actual;
  EXPECT_TRUE(WaitForIndex(std::chrono::seconds(30), &expected, &actual)) << w->Log();
  EXPECT_EQ(expected.size(), 20u);
  EXPECT_TRUE(
      WaitUntil([&] { return HealthField(*w, "waiting_seconds") == 0; }, std::chrono::seconds(10)))
      << HealthBody(*w);
  EXPECT_EQ(HealthField(*w, "dead_letters_total"), 0) << HealthBody(*w);
  EXPECT_TRUE(testing::Contains(w->Log(), "the sidecar is busy or out of reach")) << w->Log();
  EXPECT_EQ(w->Stop(), 0) << w->Log();
  EXPECT_TRUE(ReadDeadLetters(1, std::chrono::seconds(2)).empty());
}

// The HTTP status and body of a worker's GET `path` (0 when it does not answer).
std::pair<int, std::string> HttpGet(const testing::WorkerProcess& w, const std::string& path) {
  httplib::Client http("http://" + w.http());
  http.set_connection_timeout(1);
  auto res = http.Get(path);
  return res ? std::make_pair(res->status, res->body) : std::make_pair(0, std::string());
}

// /health said "ok" with 0 partitions while the group was (re)joining. Now a
// member says "rebalancing" (and /ready 503) from its revoke to its next
// assignment, and one that got no partition (more members than partitions)
// is "ok" and says it is idle. On a topic of one partition, in a group of its
// own.
TEST_F(WorkerE2eTest, HealthSaysRebalancingBetweenRevokeAndAssignAndIdleWithoutAPartition) {
  constexpr const char* kOne = "sidetable.wk-test.one";
  ASSERT_TRUE(kafka_->CreateTopic(kOne, 1).ok());
  std::string cfg = testing::ReadWholeFile(worker_cfg_);
  auto replace = [&](const std::string& from, const std::string& to) {
    const size_t at = cfg.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    cfg.replace(at, from.size(), to);
  };
  replace(std::string("topic: ") + kTopic, std::string("topic: ") + kOne);
  replace("group: wk-test-group", "group: wk-one-group");
  std::ofstream(worker_cfg_) << cfg;

  // A new group takes ~3 s on the mock: the first member is joining meanwhile.
  auto a = StartWorker("one-a");
  const auto joining = HttpGet(*a, "/ready");
  const std::string first = HealthBody(*a);
  EXPECT_NE(first.find("\"status\":\"rebalancing\""), std::string::npos) << first;
  EXPECT_NE(first.find("\"assignment\":\"joining\""), std::string::npos) << first;
  EXPECT_EQ(joining.first, 503) << joining.second;
  ASSERT_TRUE(WaitUntil([&] { return HealthField(*a, "assigned_partitions") == 1; },
                        std::chrono::seconds(30)))
      << HealthBody(*a);
  EXPECT_NE(HealthBody(*a).find("\"status\":\"ok\""), std::string::npos) << HealthBody(*a);
  EXPECT_NE(HealthBody(*a).find("\"assignment\":\"assigned\""), std::string::npos)
      << HealthBody(*a);
  EXPECT_EQ(HttpGet(*a, "/ready").first, 200);

  // A second member: one of the two owns the partition, the other is idle.
  auto b = StartWorker("one-b");
  testing::WorkerProcess* owner = nullptr;
  testing::WorkerProcess* idle = nullptr;
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::string ha = HealthBody(*a), hb = HealthBody(*b);
        const bool settled = ha.find("\"status\":\"ok\"") != std::string::npos &&
                             hb.find("\"status\":\"ok\"") != std::string::npos;
        if (!settled) return false;
        if (ha.find("\"assignment\":\"idle\"") != std::string::npos)
          owner = b.get(), idle = a.get();
        if (hb.find("\"assignment\":\"idle\"") != std::string::npos)
          owner = a.get(), idle = b.get();
        return owner != nullptr && HealthField(*owner, "assigned_partitions") == 1;
      },
      std::chrono::seconds(40)))
      << HealthBody(*a) << "\n"
      << HealthBody(*b);
  EXPECT_EQ(HealthField(*idle, "assigned_partitions"), 0);
  EXPECT_EQ(HttpGet(*idle, "/ready").first, 200);

  // The idle member freezes and a third joins: the owner gives its partition
  // up and waits for the group, which waits for the frozen member until its
  // session times out (3 s). That whole while the owner owns nothing and
  // must say so.
  ASSERT_EQ(::kill(idle->pid(), SIGSTOP), 0);
  auto c = StartWorker("one-c");
  std::string during;
  int ready_during = 0;
  const bool seen = WaitUntil(
      [&] {
        during = HealthBody(*owner);
        if (during.find("\"assigned_partitions\":0,") == std::string::npos) return false;
        ready_during = HttpGet(*owner, "/ready").first;
        return true;
      },
      std::chrono::seconds(20));
  ASSERT_EQ(::kill(idle->pid(), SIGCONT), 0);
  ASSERT_TRUE(seen) << HealthBody(*owner) << owner->Log();
  std::cout << "the owner during the rebalance: " << during << "\n";
  // Under the eager protocol 0 partitions before the next assignment is the
  // rebalance itself; an assignment of none would say "idle".
  if (during.find("\"assignment\":\"idle\"") == std::string::npos) {
    EXPECT_NE(during.find("\"status\":\"rebalancing\""), std::string::npos) << during;
    EXPECT_NE(during.find("\"assignment\":\"rebalancing\""), std::string::npos) << during;
    EXPECT_NE(during.find("\"ready\":false"), std::string::npos) << during;
    EXPECT_EQ(ready_during, 503) << during;
  } else {
    EXPECT_NE(during.find("\"status\":\"ok\""), std::string::npos) << during;
  }
  // Settled again: one member owns the partition, the two others are idle and ok.
  EXPECT_TRUE(WaitUntil(
      [&] {
        int owners = 0, idles = 0;
        for (auto* w : {a.get(), b.get(), c.get()}) {
          const std::string h = HealthBody(*w);
          if (h.find("\"status\":\"ok\"") == std::string::npos) return false;
          owners += h.find("\"assignment\":\"assigned\"") != std::string::npos;
          idles += h.find("\"assignment\":\"idle\"") != std::string::npos;
        }
        return owners == 1 && idles == 2;
      },
      std::chrono::seconds(40)))
      << HealthBody(*a) << "\n"
      << HealthBody(*b) << "\n"
      << HealthBody(*c);
}

// The same sidecar with CURVE on its listener (docs/security.md,
// "Transport"): the worker connects with sidecar.curve_server_key_file and
// sidecar.curve_key_file, its key on the allow-list with the test's.
class WorkerCurveE2eTest : public WorkerE2eTest {
 protected:
  std::string CurveSetUp() override {
    namespace ck = client::curve_keys;
    ck::KeyPair server = ck::GenerateKeyPair().value(), test = ck::GenerateKeyPair().value();
    ck::KeyPair worker = ck::GenerateKeyPair().value();
    EXPECT_TRUE(ck::WriteKeyPair(dir_.Sub("server"), server).ok());
    EXPECT_TRUE(ck::WriteKeyPair(dir_.Sub("worker"), worker).ok());
    std::ofstream(dir_.Sub("clients")) << test.public_key << " test\n" << worker.public_key << " worker\n";
    test_keys_ = {server.public_key, test.public_key, test.secret_key};
    worker_curve_keys_ = "  curve_server_key_file: " + dir_.Sub("server.pub") +
                         "\n  curve_key_file: " + dir_.Sub("worker.key") + "\n";
    return "security:\n  curve_secret_key_file: " + dir_.Sub("server.key") +
           "\n  curve_clients_file: " + dir_.Sub("clients") + "\n";
  }
};

TEST_F(WorkerCurveE2eTest, TheWorkerKeepsTheIndexThroughACurveListener) {
  auto w = StartWorker("curve-worker");
  for (int i = 0; i < 20; i++) {
    ASSERT_TRUE(client_->InsertOrReplace("People", client::EntityBuilder("p" + std::to_string(i % 3),
                                                                         "r" + std::to_string(i))
                                                       .String("Color", i % 2 ? "red" : "blue")
                                                       .String("Name", "n" + std::to_string(i))
                                                       .Build())
                    .ok());
  }
  std::vector<std::string> expected, actual;
  EXPECT_TRUE(WaitForIndex(std::chrono::seconds(30), &expected, &actual)) << w->Log();
  EXPECT_EQ(expected.size(), 20u);
  EXPECT_TRUE(testing::Contains(server_->Log(), "2 client keys allowed")) << server_->Log();
  EXPECT_FALSE(testing::Contains(server_->Log(), "refused a")) << server_->Log();
}

}  // namespace
}  // namespace sidetable
