// Reliability of the change stream (issue 12, items 1 and 6), with the real
// `sidetable` (and `sidetable-worker`, `sidetable-cli`) against a librdkafka
// mock cluster this test owns, on loopback:
// - changes near Azure's limits (a ~900 KB entity, a 4 MiB EGT) reach Kafka
//   and are joined back byte for byte equal to the change log; the worker and
//   the replay read past them;
// - with the brokers unreachable the backlog shows in /health at once and the
//   bound max_backlog_events holds exactly under concurrent writes;
// - a corrupt publish watermark stops start-up with a message naming it;
// - a data directory older than its topic never publishes over it.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "client/client.h"
#include "client/entity_builder.h"
#include "common/kafka/embedded_kafka.h"
#include "common/kafka/partitioner.h"
#include "engine/engine.h"
#include "events/event.h"
#include "testing/kafka_reader.h"
#include "testing/shell.h"
#include "testing/sidecar_process.h"
#include "testing/temp_dir.h"
#include "testing/text.h"
#include "testing/worker_process.h"

namespace sidetable {
namespace {

using Clock = std::chrono::steady_clock;
using kafka::EmbeddedKafka;

constexpr const char* kTopic = "sidetable.rs-test.changes";

// Binary that base64 inflates (as Azure clients send it) but lz4 shrinks:
// a random 4 KiB block repeated, so the mock cluster (which keeps ~5 MiB per
// partition, compressed) holds a whole 4 MiB EGT.
std::string Blob(size_t bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string block(4096, '\0');
  for (char& c : block) c = static_cast<char>(rng());
  std::string out;
  while (out.size() < bytes) out += block;
  out.resize(bytes);
  return out;
}

// An entity of `blobs` 64 KiB binary properties (Azure's per-value limit).
Entity Large(const std::string& pk, const std::string& rk, int blobs, uint32_t seed) {
  client::EntityBuilder b(pk, rk);
  b.String("Color", "blue").String("Name", "large-" + rk);
  for (int i = 0; i < blobs; i++) b.Binary("B" + std::to_string(i), Blob(64 * 1024, seed + i));
  return b.Build();
}

Entity Small(const std::string& pk, const std::string& rk, int n) {
  return client::EntityBuilder(pk, rk).String("Color", n % 2 ? "red" : "green").String("Name", "n" + std::to_string(n)).Build();
}

// A number field of a flat JSON object ("key":123), or -1.
int64_t JsonNumber(const std::string& body, const std::string& key) {
  const size_t at = body.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  return std::strtoll(body.c_str() + at + key.size() + 3, nullptr, 10);
}

class ChangeStreamReliabilityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto k = EmbeddedKafka::Start(1);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    kafka_ = std::move(k).value();
    ASSERT_TRUE(kafka_->CreateTopic(kTopic, 6).ok());
  }

  // `topic` "": the default, sidetable.rs-test.changes (kTopic).
  void StartSidecar(uint64_t max_backlog = 1'000'000, const std::string& durability = "os",
                    const std::string& topic = "") {
    const std::string cfg = dir_.Sub("sidecar.yaml");
    std::ofstream(cfg) << "sidecar:\n  id: rs-test\nkafka:\n  bootstrap: " << kafka_->bootstraps()
                       << "\n  partitions: 6\n  max_backlog_events: " << max_backlog
                       << "\n  watermark_flush_ms: 20\n"
                       << (topic.empty() ? "" : "  topic: " + topic + "\n");
    server_ = std::make_unique<testing::SidecarProcess>(
        SIDETABLE_BIN, dir_.Sub("db"), std::vector<std::string>{"--config", cfg, "--durability", durability});
    ASSERT_TRUE(server_->Start()) << server_->Log();
    client::ClientOptions o;
    o.endpoint = server_->endpoint();
    o.max_attempts = 1;  // a ServerBusy is an answer here, not something to retry
    o.timeout = std::chrono::milliseconds(20000);
    client_ = std::move(client::Client::Connect(o)).value();
  }

  // The history the restore tests start from: Orders created (LSN 1), then
  // nine rows (LSNs 2-10), PartitionKey `pk(i)` for row i, all published.
  void WriteNineOrders(const std::function<std::string(int)>& pk) {
    StartSidecar();
    ASSERT_TRUE(client_->CreateTable("Orders").ok());
    for (int i = 0; i < 9; i++)
      ASSERT_TRUE(client_->InsertOrReplace("Orders", Small(pk(i), std::to_string(i), i)).ok());
    ASSERT_TRUE(WaitPublished(10)) << Health();
  }
  void StopSidecar() {
    client_.reset();
    ASSERT_EQ(server_->Stop(), 0) << server_->Log();
  }

  // With Kafka down: 300 writes pipelined over 8 partitions (the frontend's
  // write groups and several workers at once) against max_backlog_events
  // `bound`: the table's creation plus the acknowledged writes fill it
  // exactly; the rest are ServerBusy.
  void FillTheBacklogExactly(uint64_t bound, std::set<int>* acked, std::set<int>* busy) {
    int other = 0;
    for (int i = 0; i < 300; i++) {
      Batch b("Orders");
      b.InsertOrReplace(Small("p" + std::to_string(i % 8), std::to_string(i), i));
      client_->SendWrite(b, [&, i](Result<WriteResult> r) {
        if (r.ok()) acked->insert(i);
        else if (r.status().code() == Code::kServerBusy) busy->insert(i);
        else other++;
      });
    }
    client_->Drain();
    EXPECT_EQ(other, 0);
    EXPECT_EQ(acked->size() + 1, bound) << "the table event plus the writes fill the bound exactly";
    EXPECT_EQ(busy->size(), 300 - acked->size());
    EXPECT_EQ(client_->Ping()->last_lsn, bound);
  }

  // Waits (at most 20 s) until /health says every record up to `lsn` is on Kafka.
  bool WaitPublished(uint64_t lsn) {
    for (auto until = Clock::now() + std::chrono::seconds(20); Clock::now() < until;) {
      if (JsonNumber(Health(), "published_lsn") >= static_cast<int64_t>(lsn)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  std::string Health() {
    const std::string& h = server_->http();
    const size_t colon = h.rfind(':');
    httplib::Client http(h.substr(0, colon), std::stoi(h.substr(colon + 1)));
    http.set_connection_timeout(2);
    auto r = http.Get("/health");
    return r ? r->body : "";
  }

  // Every event 1..last from Kafka, joined, checked byte for byte against
  // the change log: the message value is exactly the encoding of the
  // record ReadChanges returns. Returns how many messages each LSN took.
  std::map<uint64_t, uint32_t> CheckKafkaEqualsChangeLog(uint64_t last) {
    testing::KafkaReader reader(kafka_->bootstraps(), kTopic);
    EXPECT_TRUE(reader.AssignAll());
    std::map<uint64_t, std::string> by_lsn;
    std::map<uint64_t, uint32_t> chunks;
    size_t seen = 0;
    const auto started = Clock::now();
    reader.ReadUntil(
        [&](const std::vector<testing::KafkaMessage>& all) {
          for (; seen < all.size(); seen++) {
            events::Event ev;
            Status s = events::DecodeEvent(all[seen].value, &ev);
            EXPECT_TRUE(s.ok()) << s.ToString();
            EXPECT_EQ(all[seen].key, ev.record.table + "/" + ev.record.partition_key);
            by_lsn[ev.record.lsn] = all[seen].value;
            if (all[seen].chunks > 1) {  // the figures docs/change-events.md quotes
              std::printf("LSN %llu: %zu-byte event in %u chunk messages, %.2f s after the reader started\n",
                          static_cast<unsigned long long>(ev.record.lsn), all[seen].value.size(), all[seen].chunks,
                          std::chrono::duration<double>(Clock::now() - started).count());
            }
            chunks[ev.record.lsn] = all[seen].chunks;
          }
          return by_lsn.size() >= last;
        },
        std::chrono::seconds(30));
    EXPECT_EQ(by_lsn.size(), last) << server_->Log().substr(0, 4000);
    for (uint64_t lsn = 1; lsn <= last; lsn++) {
      auto log = client_->ReadChanges(lsn, 1, 64 << 20);
      EXPECT_TRUE(log.ok()) << log.status().ToString();
      if (!log.ok() || log->records.empty() || !by_lsn.count(lsn)) continue;
      EXPECT_TRUE(by_lsn[lsn] == events::EncodeEvent(log->records[0], "rs-test"))
          << "LSN " << lsn << " differs from the change log (" << by_lsn[lsn].size() << " bytes)";
    }
    return chunks;
  }

  testing::TempDir dir_;
  std::unique_ptr<EmbeddedKafka> kafka_;
  std::unique_ptr<testing::SidecarProcess> server_;
  std::unique_ptr<client::Client> client_;
};

// Issue 12.1: a ~900 KB entity (1.2 MB as an event) used to stop the stream
// for good ("Message size too large" forever). The writes after it too.
TEST_F(ChangeStreamReliabilityTest, LargeEntityReachesKafkaAndStreamGoesOn) {
  StartSidecar();
  ASSERT_TRUE(client_->CreateTable("People").ok());
  ASSERT_TRUE(client_->InsertOrReplace("People", Large("p1", "big", 14, 1)).ok());  // 896 KiB of binary
  for (int i = 0; i < 20; i++) ASSERT_TRUE(client_->InsertOrReplace("People", Small("p" + std::to_string(i % 4), std::to_string(i), i)).ok());
  const uint64_t last = client_->Ping()->last_lsn;
  ASSERT_EQ(last, 22u);
  auto chunks = CheckKafkaEqualsChangeLog(last);
  EXPECT_GT(chunks[2], 1u) << "the large event should have come in chunks";
  EXPECT_EQ(chunks[3], 1u) << "a small event stays one message";

  // The real worker keeps an index past the chunked event (a new consumer
  // group: ~3 s before its first message on the mock).
  const std::string wcfg = dir_.Sub("worker.yaml");
  ASSERT_TRUE(kafka_->CreateTopic("rs-test.dlq", 1).ok());
  std::ofstream(wcfg) << "kafka:\n  bootstrap: " << kafka_->bootstraps() << "\n  topic: " << kTopic
                      << "\n  group: rs-test-group\n  session_timeout_ms: 3000\n"
                      << "  commit_batch: 50\n  commit_interval_ms: 100\n"
                      << "sidecar:\n  endpoint: " << server_->endpoint() << "\n  timeout_ms: 5000\n"
                      << "retry:\n  max_attempts: 5\n  backoff_ms: 20\n  backoff_max_ms: 500\n"
                      << "dead_letter:\n  topic: rs-test.dlq\nlog:\n  level: info\n"
                      << "patterns:\n  - name: index_table\n    source: People\n"
                      << "    target: PeopleByColor\n    properties: Color\n    project: [Name]\n";
  testing::WorkerProcess worker(SIDETABLE_WORKER_BIN, wcfg, dir_.Sub("worker"));
  ASSERT_TRUE(worker.Start()) << worker.Log();
  size_t rows = 0;
  bool big_indexed = false;
  for (auto until = Clock::now() + std::chrono::seconds(30); Clock::now() < until && (rows < 21 || !big_indexed);) {
    rows = 0;
    big_indexed = false;
    client::QueryIterator it = client_->Query({"PeopleByColor", "", {}, std::nullopt});
    Entity e;
    while (it.Next(&e)) {
      rows++;
      if (const Value* n = e.Find("Name"); n && n->ToString().find("large-big") != std::string::npos) big_indexed = true;
    }
    if (rows < 21 || !big_indexed) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(rows, 21u) << worker.Log().substr(0, 4000);
  EXPECT_TRUE(big_indexed);
  EXPECT_EQ(worker.Stop(), 0) << worker.Log();

  // sidetable-cli replay from Kafka prints what it prints from the change log.
  auto run = [&](const std::string& args, int* rc) {
    const std::string cmd = std::string(SIDETABLE_CLI) + " --endpoint " + server_->endpoint() + " " + args +
                            " --progress never 2>" + dir_.Sub("cli.err");
    return testing::RunShell(cmd, rc);
  };
  int rc_log = -1, rc_kafka = -1;
  const std::string from_log = run("replay --table People --to-lsn " + std::to_string(last), &rc_log);
  const std::string from_kafka =
      run("replay --table People --to-lsn " + std::to_string(last) + " --kafka " + kafka_->bootstraps(), &rc_kafka);
  EXPECT_EQ(rc_log, 0) << testing::ReadWholeFile(dir_.Sub("cli.err"));
  EXPECT_EQ(rc_kafka, 0) << testing::ReadWholeFile(dir_.Sub("cli.err"));
  EXPECT_GT(from_log.size(), 1'000'000u);
  EXPECT_TRUE(from_kafka == from_log) << from_kafka.size() << " vs " << from_log.size();
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
}

// Issue 12.1: an EGT at Azure's 4 MiB limit of large entities (5.5 MB as an
// event, base64), then more writes.
TEST_F(ChangeStreamReliabilityTest, FourMebibyteEgtReachesKafkaWhole) {
  StartSidecar();
  ASSERT_TRUE(client_->CreateTable("Orders").ok());
  Batch egt("Orders");
  for (int i = 0; i < 4; i++) egt.InsertOrReplace(Large("egt", "r" + std::to_string(i), 15, 100 + 20 * i));
  auto w = client_->Execute(egt);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (int i = 0; i < 10; i++) ASSERT_TRUE(client_->InsertOrReplace("Orders", Small("egt", "after" + std::to_string(i), i)).ok());
  const uint64_t last = client_->Ping()->last_lsn;
  ASSERT_EQ(last, 12u);
  auto chunks = CheckKafkaEqualsChangeLog(last);
  EXPECT_GE(chunks[2], 5u);
  const std::string health = Health();
  EXPECT_EQ(JsonNumber(health, "published_lsn"), static_cast<int64_t>(last)) << health;
  EXPECT_NE(health.find("\"status\":\"ok\""), std::string::npos) << health;
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
}

// Issue 12.6: brokers unreachable from the start. The backlog used to be
// counted by the publisher thread, which sat in topic set-up: /health said 0
// and writes went far past max_backlog_events.
TEST_F(ChangeStreamReliabilityTest, OutageShowsAtOnceAndBacklogBoundIsExact) {
  constexpr uint64_t kBound = 60;
  ASSERT_TRUE(kafka_->SetBrokersDown(true).ok());
  StartSidecar(kBound);
  ASSERT_TRUE(client_->CreateTable("Orders").ok());
  std::set<int> acked, busy;
  FillTheBacklogExactly(kBound, &acked, &busy);
  const auto acked_at = Clock::now();
  // /health shows the whole backlog at once (polled, at most ~1 s).
  std::string health;
  do {
    health = Health();
  } while (JsonNumber(health, "backlog_events") != static_cast<int64_t>(kBound) &&
           Clock::now() - acked_at < std::chrono::seconds(1));
  EXPECT_EQ(JsonNumber(health, "backlog_events"), static_cast<int64_t>(kBound)) << health;
  EXPECT_NE(health.find("\"backlog_full\":true"), std::string::npos) << health;
  EXPECT_NE(health.find("\"status\":\"degraded\""), std::string::npos) << health;
  // Refused writes were not executed; reads keep working.
  for (int i : busy) {
    ASSERT_EQ(client_->Get("Orders", "p" + std::to_string(i % 8), std::to_string(i)).status().code(),
              Code::kResourceNotFound);
  }
  // Kafka back: everything arrives, and writes are accepted again.
  ASSERT_TRUE(kafka_->SetBrokersDown(false).ok());
  CheckKafkaEqualsChangeLog(kBound);
  bool accepted = false;
  for (auto until = Clock::now() + std::chrono::seconds(20); !accepted && Clock::now() < until;) {
    accepted = client_->InsertOrReplace("Orders", Small("p", "after", 1)).ok();
    if (!accepted) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(accepted);
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
}

// The same bound in fsync durability, where a write is visible (and its
// admission given back) up to one fsync before the change log's durable end
// includes it.
TEST_F(ChangeStreamReliabilityTest, BacklogBoundIsExactInFsyncDurability) {
  constexpr uint64_t kBound = 60;
  ASSERT_TRUE(kafka_->SetBrokersDown(true).ok());
  StartSidecar(kBound, "fsync");
  ASSERT_TRUE(client_->CreateTable("Orders").ok());
  std::set<int> acked, busy;
  FillTheBacklogExactly(kBound, &acked, &busy);
}

// Every event on `topic`: read until `count` have come (at most 20 s), then
// for 2 s more, so that one too many shows. LSN -> each value seen for it;
// `messages`, when given, counts them all (a value published twice is one
// value).
std::map<uint64_t, std::set<std::string>> EventsOn(const std::string& bootstrap,
                                                   const std::string& topic, size_t count,
                                                   size_t* messages = nullptr) {
  testing::KafkaReader reader(bootstrap, topic);
  EXPECT_TRUE(reader.AssignAll());
  reader.ReadUntil([&](const auto& all) { return all.size() >= count; }, std::chrono::seconds(20));
  std::map<uint64_t, std::set<std::string>> by_lsn;
  for (const testing::KafkaMessage& m : reader.ReadUntil(
           [&](const auto& all) { return all.size() > count; }, std::chrono::seconds(2))) {
    if (messages) ++*messages;
    events::Event ev;
    EXPECT_TRUE(events::DecodeEvent(m.value, &ev).ok());
    by_lsn[ev.record.lsn].insert(m.value);
  }
  return by_lsn;
}

// A data directory older than its change topic (a backup or a snapshot put
// back, or the WAL tail an OS crash took) used to publish its next commits
// with LSNs the topic already held, for other changes: consumers that drop
// what they have seen by LSN or version skipped them, and audits mixed two
// histories. Now the topic is refused until the operator gives the sidecar
// another; the writes meanwhile stay in the change log.
TEST_F(ChangeStreamReliabilityTest, ADataDirectoryOlderThanItsTopicNeverPublishesOverIt) {
  StartSidecar();
  ASSERT_TRUE(client_->CreateTable("Orders").ok());
  for (int i = 0; i < 5; i++)
    ASSERT_TRUE(client_->InsertOrReplace("Orders", Small("p", std::to_string(i), i)).ok());
  ASSERT_TRUE(WaitPublished(6)) << Health();
  client_.reset();
  ASSERT_EQ(server_->Stop(), 0) << server_->Log();
  // The backup: a copy of the stopped sidecar's directory.
  std::filesystem::copy(dir_.Sub("db"), dir_.Sub("db-backup"),
                        std::filesystem::copy_options::recursive);

  StartSidecar();
  for (int i = 5; i < 10; i++)
    ASSERT_TRUE(client_->InsertOrReplace("Orders", Small("p", std::to_string(i), i)).ok());
  ASSERT_TRUE(WaitPublished(11)) << Health();
  client_.reset();
  ASSERT_EQ(server_->Stop(), 0) << server_->Log();

  // The backup put back, with the same topic: the next write is
  // acknowledged and kept, and nothing goes to the topic.
  std::filesystem::remove_all(dir_.Sub("db"));
  std::filesystem::rename(dir_.Sub("db-backup"), dir_.Sub("db"));
  StartSidecar();
  auto w = client_->InsertOrReplace("Orders", Small("p", "restored", 99));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->lsn, 7u) << "the backup's log ended at LSN 6";
  std::string health;
  for (auto until = Clock::now() + std::chrono::seconds(20); Clock::now() < until;) {
    health = Health();
    if (health.find("holds LSN 11") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(health.find("holds LSN 11"), std::string::npos) << health;
  EXPECT_NE(health.find("\"status\":\"degraded\""), std::string::npos) << health;
  EXPECT_LE(JsonNumber(health, "published_lsn"), 6) << health;
  EXPECT_TRUE(testing::Contains(server_->Log(), "is older than the topic"))
      << server_->Log().substr(0, 4000);
  // The topic still holds exactly the first directory's history: one event
  // per LSN 1..11, LSN 7 the original write, not the restored one.
  auto on_topic = EventsOn(kafka_->bootstraps(), kTopic, 11);
  EXPECT_EQ(on_topic.size(), 11u);
  size_t events = 0;
  for (const auto& [lsn, values] : on_topic) events += values.size();
  EXPECT_EQ(events, 11u) << "nothing published after the restore";
  for (const auto& [lsn, values] : on_topic)
    EXPECT_EQ(values.size(), 1u) << "LSN " << lsn << " published twice";
  ASSERT_TRUE(on_topic.count(7));
  EXPECT_EQ(on_topic[7].begin()->find("restored"), std::string::npos) << *on_topic[7].begin();
  client_.reset();
  ASSERT_EQ(server_->Stop(), 0) << server_->Log();

  // The way out: a new topic. No pattern worker ever registered, so none
  // read the old topic and any deployed later reads only this one: it gets
  // the backup's change log again from its start (until session 45 it
  // started after LSN 6, where the backup's publishing had got to), then
  // the restored write and what follows.
  ASSERT_TRUE(kafka_->CreateTopic("rs-test.restored", 6).ok());
  StartSidecar(1'000'000, "os", "rs-test.restored");
  ASSERT_TRUE(client_->InsertOrReplace("Orders", Small("p", "after-restore", 100)).ok());
  EXPECT_TRUE(WaitPublished(8)) << Health();
  auto restored = EventsOn(kafka_->bootstraps(), "rs-test.restored", 8);
  EXPECT_EQ(restored.size(), 8u);
  EXPECT_EQ(restored.begin()->first, 1u);
  ASSERT_TRUE(restored.count(7));
  EXPECT_NE(restored[7].begin()->find("restored"), std::string::npos);
  EXPECT_NE(Health().find("\"status\":\"ok\""), std::string::npos) << Health();
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
}

// The restore docs/operations.md gives: the backup (here a copy of the
// stopped sidecar's directory, as good) on a new change topic. A derived
// table whose workers had applied only up to LSN 4 of the old topic gets
// the changes after it on the new one. Before session 41 the new topic
// started after the backup's publish watermark (LSN 10): changes 5..10
// reached no worker, and `verify` found the derived table missing them for
// good (found from outside with sidetable-worker and a restored sidecar).
TEST_F(ChangeStreamReliabilityTest, ANewTopicAfterARestoreGetsWhatDerivedTablesHadNotApplied) {
  WriteNineOrders([](int i) { return "p" + std::to_string(i); });
  if (HasFatalFailure()) return;
  std::vector<client::Watermark> applied;
  for (int32_t p = 0; p < 6; p++) applied.push_back({"OrdersByColor", "Orders", p, 6, 4, 0});
  ASSERT_TRUE(client_->AdvanceWatermarks(applied).ok());
  StopSidecar();
  if (HasFatalFailure()) return;

  StartSidecar(1'000'000, "os", "rs-test.after-restore");  // created by the sidecar
  // At once, before any new write (a restored sidecar may get none for a while).
  auto before_writes = EventsOn(kafka_->bootstraps(), "rs-test.after-restore", 6);
  ASSERT_FALSE(before_writes.empty());
  EXPECT_EQ(before_writes.begin()->first, 5u);
  EXPECT_EQ(before_writes.rbegin()->first, 10u);
  ASSERT_TRUE(client_->InsertOrReplace("Orders", Small("p", "after-restore", 100)).ok());
  ASSERT_TRUE(WaitPublished(11)) << Health();
  auto on_topic = EventsOn(kafka_->bootstraps(), "rs-test.after-restore", 7);
  ASSERT_FALSE(on_topic.empty());
  EXPECT_EQ(on_topic.begin()->first, 5u) << "the first change OrdersByColor had not applied";
  EXPECT_EQ(on_topic.rbegin()->first, 11u);
  EXPECT_EQ(on_topic.size(), 7u);
  EXPECT_TRUE(testing::Contains(server_->Log(), "starts empty: publishing again from LSN 5"))
      << server_->Log().substr(0, 4000);
  client_.reset();
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
}

// The same restore when every change is on one Kafka partition: the
// derived table registered all six (its worker owned them) and applied
// everything on the one that carries the rows and the one that carries the
// table's creation, while the others never carried a record and keep the 0
// registered. Until session 45 the new
// topic's start was the lowest watermark alone, 0 here, so everything went
// out again though nothing was missing; it is now the first record some
// derived table has not applied, judged on its partition, found only when
// the topic is found empty.
TEST_F(ChangeStreamReliabilityTest,
       ANewTopicAfterARestoreSkipsWhatPartitionsWithoutRecordsHeldBack) {
  WriteNineOrders([](int) { return std::string("p"); });
  if (HasFatalFailure()) return;
  // The rows' partition applied all; the table's creation (LSN 1, keyed
  // "Orders/") went to its own, which its worker passed too.
  const int32_t carrier = kafka::KafkaPartitionFor("Orders/p", 6);
  const int32_t created = kafka::KafkaPartitionFor("Orders/", 6);
  std::vector<client::Watermark> applied;
  for (int32_t p = 0; p < 6; p++) {
    const uint64_t lsn = p == carrier ? 10 : p == created ? 1 : 0;
    applied.push_back({"OrdersByColor", "Orders", p, 6, lsn, 0});
  }
  ASSERT_TRUE(client_->AdvanceWatermarks(applied).ok());
  StopSidecar();
  if (HasFatalFailure()) return;

  StartSidecar(1'000'000, "os", "rs-test.idle-partitions");
  ASSERT_TRUE(client_->InsertOrReplace("Orders", Small("p", "after-restore", 100)).ok());
  ASSERT_TRUE(WaitPublished(11)) << Health();
  size_t messages = 0;
  auto on_topic = EventsOn(kafka_->bootstraps(), "rs-test.idle-partitions", 1, &messages);
  ASSERT_FALSE(on_topic.empty());
  EXPECT_EQ(messages, 1u);
  EXPECT_EQ(on_topic.begin()->first, 11u) << "published again though every change was applied";
  EXPECT_EQ(on_topic.size(), 1u);
  EXPECT_FALSE(testing::Contains(server_->Log(), "publishing again"))
      << server_->Log().substr(0, 4000);
  client_.reset();
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
}

// A restore before any pattern worker ever ran: no derived table registered,
// so none read anything of the old topic, and the workers started after the
// restore read only the new one. Until session 45 nothing went to it again
// (no watermark meant "nobody waits"): the changes before the backup's
// publish watermark reached no worker. They go out again now, from the
// change log's start.
TEST_F(ChangeStreamReliabilityTest, ANewTopicAfterARestoreBeforeAnyWorkerGetsTheWholeLog) {
  WriteNineOrders([](int i) { return "p" + std::to_string(i); });
  if (HasFatalFailure()) return;
  StopSidecar();
  if (HasFatalFailure()) return;

  StartSidecar(1'000'000, "os", "rs-test.first-workers");
  // At once, before any new write.
  size_t first_messages = 0;
  auto before_writes = EventsOn(kafka_->bootstraps(), "rs-test.first-workers", 10, &first_messages);
  ASSERT_FALSE(before_writes.empty()) << server_->Log().substr(0, 4000);
  EXPECT_EQ(first_messages, 10u);
  EXPECT_EQ(before_writes.begin()->first, 1u);
  EXPECT_EQ(before_writes.rbegin()->first, 10u);
  EXPECT_EQ(before_writes.size(), 10u);
  EXPECT_TRUE(
      testing::Contains(server_->Log(), "no pattern worker has registered a derived table yet"))
      << server_->Log().substr(0, 4000);
  // A topic that holds this history already is not published to again.
  StopSidecar();
  if (HasFatalFailure()) return;
  StartSidecar(1'000'000, "os", "rs-test.first-workers");
  ASSERT_TRUE(client_->InsertOrReplace("Orders", Small("p", "after-restart", 100)).ok());
  ASSERT_TRUE(WaitPublished(11)) << Health();
  size_t messages = 0;
  auto after_restart = EventsOn(kafka_->bootstraps(), "rs-test.first-workers", 11, &messages);
  EXPECT_EQ(after_restart.size(), 11u);
  EXPECT_EQ(messages, 11u) << "published again to a topic that held the history";
  client_.reset();
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
}

// Runs the sidecar to its exit (bounded); the exit code, or -1.
int RunToExit(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = testing::SpawnLogged(args, log, /*append=*/false);
  return testing::SignalAndWait(&pid, 0, 20);  // signal 0: just wait
}

// The stored watermark used to go through std::stoull: a corrupt value threw
// out of start-up (std::terminate, SIGABRT) instead of saying what is wrong.
TEST_F(ChangeStreamReliabilityTest, CorruptWatermarkIsAClearStartUpError) {
  StartSidecar();
  ASSERT_TRUE(client_->CreateTable("Orders").ok());
  client_.reset();
  ASSERT_EQ(server_->Stop(), 0) << server_->Log();
  {
    EngineOptions eo;
    auto engine = Engine::Open(eo, dir_.Sub("db"));
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    ASSERT_TRUE((*engine)->PutSetting("publisher/watermark", std::string("12x\x01", 4)).ok());
  }
  const std::string log = dir_.Sub("corrupt.log");
  const int rc = RunToExit({SIDETABLE_BIN, "--data", dir_.Sub("db"), "--config", dir_.Sub("sidecar.yaml"),
                            "--listen", "tcp://127.0.0.1:*", "--durability", "os"},
                           log);
  const std::string out = testing::ReadWholeFile(log);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("publisher/watermark"), std::string::npos) << out;
  EXPECT_NE(out.find("corrupt"), std::string::npos) << out;
}

}  // namespace
}  // namespace sidetable
