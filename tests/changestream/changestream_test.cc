// The change stream end to end: the real sidecar publishing to a Kafka mock
// cluster that this test owns (so it can take the brokers down), read back
// with a plain librdkafka consumer.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "client/client.h"
#include "client/entity_builder.h"
#include "common/kafka/embedded_kafka.h"
#include "events/event.h"
#include "testing/kafka_reader.h"
#include "testing/sidecar_process.h"
#include "testing/temp_dir.h"

namespace sidetable {
namespace {

using kafka::EmbeddedKafka;
using events::Event;

constexpr const char* kTopic = "sidetable.cs-test.changes";

class ChangeStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto k = EmbeddedKafka::Start(1);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    kafka_ = std::move(k).value();
    // As an operator would for a real cluster: the topic exists beforehand.
    ASSERT_TRUE(kafka_->CreateTopic(kTopic, 4).ok());
  }

  // Starts (or restarts) the sidecar on the same data directory.
  void StartSidecar(uint64_t max_backlog = 1'000'000) {
    std::string cfg = dir_.Sub("sidecar.yaml");
    std::ofstream(cfg) << "sidecar:\n  id: cs-test\nkafka:\n  bootstrap: " << kafka_->bootstraps()
                       << "\n  partitions: 4\n  max_backlog_events: " << max_backlog
                       << "\n  watermark_flush_ms: 20\n";
    server_ = std::make_unique<testing::SidecarProcess>(
        SIDETABLE_BIN, dir_.Sub("db"), std::vector<std::string>{"--config", cfg, "--durability", "os"});
    ASSERT_TRUE(server_->Start()) << server_->Log();
    client::ClientOptions o;
    o.endpoint = server_->endpoint();
    o.max_attempts = 1;
    o.timeout = std::chrono::milliseconds(10000);
    client_ = std::move(client::Client::Connect(o)).value();
  }

  static Entity Row(const std::string& pk, const std::string& rk, int n) {
    return client::EntityBuilder(pk, rk).Int32("n", n).String("pad", std::string(100, 'x')).Build();
  }

  // Reads the topic until every LSN in 1..last was seen; returns events by
  // arrival, per Kafka partition in offset order.
  std::vector<Event> ReadAll(uint64_t last, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    testing::KafkaReader reader(kafka_->bootstraps(), kTopic);
    EXPECT_TRUE(reader.AssignAll());
    std::set<uint64_t> seen;
    std::vector<Event> events;
    reader.ReadUntil(
        [&](const std::vector<testing::KafkaMessage>& all) {
          for (size_t i = events.size(); i < all.size(); i++) {
            Event ev;
            Status s = events::DecodeEvent(all[i].value, &ev);
            EXPECT_TRUE(s.ok()) << s.ToString();
            EXPECT_EQ(all[i].key, ev.record.table + "/" + ev.record.partition_key);
            seen.insert(ev.record.lsn);
            events.push_back(std::move(ev));
          }
          return seen.size() >= last;
        },
        timeout);
    return events;
  }

  // Every LSN 1..last present, nothing beyond it, and for each
  // (table, PartitionKey) the LSNs in Kafka order never go backwards except
  // for re-sent duplicates of what came before.
  static void CheckComplete(const std::vector<Event>& events, uint64_t last) {
    std::set<uint64_t> lsns;
    std::map<std::string, uint64_t> newest_per_key;
    for (const Event& ev : events) {
      EXPECT_EQ(ev.source, "cs-test");
      EXPECT_LE(ev.record.lsn, last) << "an event for a change that was never committed";
      const std::string key = ev.record.table + "/" + ev.record.partition_key;
      uint64_t& newest = newest_per_key[key];
      if (ev.record.lsn > newest) {
        newest = ev.record.lsn;
      } else {
        EXPECT_TRUE(lsns.count(ev.record.lsn)) << "LSN " << ev.record.lsn << " out of order for " << key;
      }
      lsns.insert(ev.record.lsn);
    }
    for (uint64_t l = 1; l <= last; l++) ASSERT_TRUE(lsns.count(l)) << "LSN " << l << " missing";
  }

  testing::TempDir dir_;
  std::unique_ptr<EmbeddedKafka> kafka_;
  std::unique_ptr<testing::SidecarProcess> server_;
  std::unique_ptr<client::Client> client_;
};

TEST_F(ChangeStreamTest, EveryCommittedEgtArrivesInOrderPerPartition) {
  StartSidecar();
  ASSERT_TRUE(client_->CreateTable("Orders").ok());
  int failed = 0;
  for (int i = 0; i < 300; i++) {
    Batch b("Orders");
    b.SetCaller("writer-" + std::to_string(i % 3));
    const std::string pk = "p" + std::to_string(i % 7);
    b.InsertOrReplace(Row(pk, "r" + std::to_string(i), i)).InsertOrMerge(Row(pk, "counter", i));
    ASSERT_TRUE(client_->Execute(b).ok());
    if (i % 50 == 0) {
      // A failing EGT commits nothing and must publish nothing.
      Batch bad("Orders");
      bad.Insert(Row(pk, "fresh" + std::to_string(i), 0)).Insert(Row(pk, "r" + std::to_string(i), 0));
      EXPECT_EQ(client_->Execute(bad).status().code(), Code::kEntityAlreadyExists);
      failed++;
    }
  }
  const uint64_t last = client_->Ping()->last_lsn;
  ASSERT_EQ(last, 301u);  // CreateTable + 300 EGTs; the failed ones took no LSN
  auto events = ReadAll(last);
  if (events.empty()) ADD_FAILURE() << server_->Log();
  CheckComplete(events, last);
  // The content: callers, operations and images are all there.
  for (const Event& ev : events) {
    if (ev.record.kind != ChangeKind::kEntities) continue;
    ASSERT_EQ(ev.record.ops.size(), 2u);
    EXPECT_EQ(ev.record.caller.rfind("writer-", 0), 0u);
    ASSERT_TRUE(ev.record.ops[0].after.has_value());
    EXPECT_EQ(ev.record.ops[0].after->Find("n")->type(), EdmType::kInt32);
    EXPECT_EQ(ev.record.ops[0].version, ev.record.lsn);
  }
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
}

TEST_F(ChangeStreamTest, KillNineWhilePublishingLeavesNoGap) {
  StartSidecar();
  ASSERT_TRUE(client_->CreateTable("Orders").ok());
  int next = 0;
  for (int round = 0; round < 5; round++) {
    if (round > 0) StartSidecar();
    // Pipelined writes, then SIGKILL while they and their publishing are in flight.
    for (int k = 0; k < 200; k++, next++) {
      Batch b("Orders");
      b.InsertOrReplace(Row("p" + std::to_string(next % 5), std::to_string(next), next));
      client_->SendWrite(b, [](Result<WriteResult>) {});
    }
    client_->Poll(std::chrono::milliseconds(20));
    server_->Kill();
    client_.reset();
  }
  StartSidecar();
  const uint64_t last = client_->Ping()->last_lsn;
  ASSERT_GT(last, 1u);
  auto events = ReadAll(last);
  CheckComplete(events, last);
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
}

TEST_F(ChangeStreamTest, BrokerOutageDelaysButLosesNothing) {
  StartSidecar();
  ASSERT_TRUE(client_->CreateTable("Orders").ok());
  ASSERT_TRUE(kafka_->SetBrokersDown(true).ok());
  for (int i = 0; i < 200; i++) {
    ASSERT_TRUE(client_->InsertOrReplace("Orders", Row("p" + std::to_string(i % 3), std::to_string(i), i)).ok())
        << "writes go on while Kafka is down";
  }
  ASSERT_TRUE(kafka_->SetBrokersDown(false).ok());
  const uint64_t last = client_->Ping()->last_lsn;
  auto events = ReadAll(last);
  CheckComplete(events, last);
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
}

TEST_F(ChangeStreamTest, FullBacklogAnswersServerBusyAndDropsNothing) {
  StartSidecar(/*max_backlog=*/50);
  ASSERT_TRUE(client_->CreateTable("Orders").ok());
  // Let the table event go out, then cut Kafka off.
  ReadAll(1);
  ASSERT_TRUE(kafka_->SetBrokersDown(true).ok());
  std::set<int> acked;
  int busy_at = -1;
  for (int i = 0; i < 2000 && busy_at < 0; i++) {
    auto w = client_->InsertOrReplace("Orders", Row("p", std::to_string(i), i));
    if (w.ok()) {
      acked.insert(i);
    } else {
      ASSERT_EQ(w.status().code(), Code::kServerBusy) << w.status().ToString();
      busy_at = i;
    }
  }
  ASSERT_GE(busy_at, 0) << "no ServerBusy with Kafka down and a backlog bound of 50";
  EXPECT_GE(acked.size(), 49u);
  // A refused write was not executed.
  EXPECT_EQ(client_->Get("Orders", "p", std::to_string(busy_at)).status().code(), Code::kResourceNotFound);
  ASSERT_TRUE(kafka_->SetBrokersDown(false).ok());
  const uint64_t last = client_->Ping()->last_lsn;
  CheckComplete(ReadAll(last), last);
  // Publishing caught up: writes are accepted again (bounded wait).
  bool accepted = false;
  for (int i = 0; i < 200 && !accepted; i++) {
    accepted = client_->InsertOrReplace("Orders", Row("p", "after", i)).ok();
    if (!accepted) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(accepted);
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
}

TEST_F(ChangeStreamTest, EmbeddedModeWritesItsBootstrapForOthers) {
  testing::SidecarProcess server(SIDETABLE_BIN, dir_.Sub("emb"),
                                 {"--kafka", "embedded", "--durability", "os", "--id", "cs-test"});
  ASSERT_TRUE(server.Start()) << server.Log();
  std::ifstream in(dir_.Sub("emb") + "/kafka.bootstrap");
  std::string bootstrap;
  in >> bootstrap;
  ASSERT_FALSE(bootstrap.empty());
  EXPECT_NE(bootstrap.find("127.0.0.1"), std::string::npos);
  client::ClientOptions o;
  o.endpoint = server.endpoint();
  auto c = client::Client::Connect(o);
  ASSERT_TRUE((*c)->CreateTable("Emb").ok());
  ASSERT_TRUE((*c)->Insert("Emb", Row("p", "r", 1)).ok());
  // Another process (this test) reads the sidecar's embedded Kafka.
  testing::KafkaReader reader(bootstrap, kTopic);
  ASSERT_TRUE(reader.AssignAll());
  auto msgs = reader.ReadUntil([](const auto& all) { return all.size() >= 2; }, std::chrono::seconds(30));
  EXPECT_GE(msgs.size(), 2u);
  EXPECT_EQ(reader.partitions(), 12);
  EXPECT_EQ(server.Stop(), 0) << server.Log();
}

// The embedded Kafka lives in the sidecar's process: after a kill -9 (or
// any restart) the new mock cluster is empty. Changes published to the old
// one that a derived table had not applied yet must be published again, or
// its worker never sees them and the derived table stays short for good
// (session 37: 1000 index entries missing after one kill -9).
class EmbeddedRestartTest : public ChangeStreamTest {
 protected:
  std::unique_ptr<testing::SidecarProcess> StartEmbedded(uint64_t max_backlog = 1'000'000,
                                                         const std::string& more_yaml = "") {
    const std::string cfg = dir_.Sub("embedded.yaml");
    std::ofstream(cfg) << "kafka:\n  max_backlog_events: " << max_backlog << "\n" << more_yaml;
    auto s = std::make_unique<testing::SidecarProcess>(
        SIDETABLE_BIN, dir_.Sub("emb"),
        std::vector<std::string>{"--config", cfg, "--kafka", "embedded", "--durability", "os",
                                 "--id", "cs-test"});
    EXPECT_TRUE(s->Start()) << s->Log();
    client::ClientOptions o;
    o.endpoint = s->endpoint();
    o.max_attempts = 1;
    client_ = std::move(client::Client::Connect(o)).value();
    return s;
  }
  std::string Bootstrap() {
    std::ifstream in(dir_.Sub("emb") + "/kafka.bootstrap");
    std::string b;
    in >> b;
    return b;
  }
  // The LSNs on the embedded topic once `done` says so of them (or after
  // `timeout`).
  std::set<uint64_t> LsnsOnTopicWhen(const std::function<bool(const std::set<uint64_t>&)>& done,
                                     std::chrono::seconds timeout) {
    testing::KafkaReader reader(Bootstrap(), kTopic);
    EXPECT_TRUE(reader.AssignAll());
    std::set<uint64_t> lsns;
    reader.ReadUntil(
        [&](const std::vector<testing::KafkaMessage>& all) {
          lsns.clear();
          for (const auto& m : all) {
            Event ev;
            if (events::DecodeEvent(m.value, &ev).ok()) lsns.insert(ev.record.lsn);
          }
          return done(lsns);
        },
        timeout);
    return lsns;
  }
  // ... once `until` is among them.
  std::set<uint64_t> LsnsOnTopic(uint64_t until, std::chrono::seconds timeout) {
    return LsnsOnTopicWhen([&](const std::set<uint64_t>& lsns) { return lsns.count(until) > 0; },
                           timeout);
  }
  // Source "Src" with 20 rows of one PartitionKey (LSNs 2..21); the last
  // LSN written.
  uint64_t WriteSource() {
    EXPECT_TRUE(client_->CreateTable("Src").ok());
    uint64_t last = 0;
    for (int i = 0; i < 20; i++) {
      auto r = client_->Insert("Src", Row("p", std::to_string(i), i));
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (r.ok()) last = r->lsn;
    }
    return last;
  }
  // WriteSource; derived table "Idx" reported applied up to `applied` on
  // every one of the topic's 12 partitions.
  uint64_t WriteAndReport(uint64_t applied) {
    const uint64_t last = WriteSource();
    // Everything is on the first mock, then the report, and the publish
    // watermark persisted (kafka.watermark_flush_ms is 200 ms).
    EXPECT_TRUE(LsnsOnTopic(last, std::chrono::seconds(30)).count(last));
    std::vector<client::Watermark> w;
    for (int p = 0; p < 12; p++) w.push_back({"Idx", "Src", p, 12, applied, 0});
    Status s = client_->AdvanceWatermarks(w);
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    return last;
  }
};

TEST_F(EmbeddedRestartTest, AKillNineRepublishesWhatNoDerivedTableApplied) {
  auto server = StartEmbedded();
  const uint64_t last = WriteAndReport(11);
  ASSERT_EQ(last, 21u);
  ASSERT_EQ(server->Kill(), 128 + SIGKILL);
  client_.reset();
  server = StartEmbedded();
  std::set<uint64_t> lsns = LsnsOnTopic(last, std::chrono::seconds(20));
  for (uint64_t l = 12; l <= last; l++)
    EXPECT_TRUE(lsns.count(l)) << "LSN " << l << " never reached the new mock";
  // Only what was not applied: the records up to the watermark stay applied.
  for (uint64_t l = 1; l <= 11; l++)
    EXPECT_FALSE(lsns.count(l)) << "LSN " << l << " was applied already";
  EXPECT_NE(server->Log().find("publishing again from LSN 12"), std::string::npos) << server->Log();
  EXPECT_EQ(server->Stop(), 0) << server->Log();
}

// Before any pattern worker ever registered, nothing says what was read:
// the restart published from its publish watermark, so everything the first
// mock held was lost to the workers started afterwards. Seen from outside
// (session 44): a clean restart before the first worker ran, then a worker;
// 10 acknowledged RequestArchive moves were never done (verify cannot see
// that) and 10 index entries stayed missing.
TEST_F(EmbeddedRestartTest, ARestartBeforeAnyWorkerRegisteredPublishesTheLogAgain) {
  auto server = StartEmbedded();
  const uint64_t last = WriteSource();
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(LsnsOnTopic(last, std::chrono::seconds(30)).count(last));
  // The publish watermark is persisted every 200 ms (kafka.watermark_flush_ms).
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ASSERT_EQ(server->Stop(), 0) << server->Log();
  client_.reset();
  server = StartEmbedded();
  // Every LSN, not just the last: they travel on different partitions.
  const std::set<uint64_t> lsns =
      LsnsOnTopicWhen([&](const std::set<uint64_t>& seen) { return seen.size() >= last; },
                      std::chrono::seconds(20));
  for (uint64_t l = 1; l <= last; l++)
    EXPECT_TRUE(lsns.count(l)) << "LSN " << l << " never reached the new mock";
  EXPECT_NE(server->Log().find("publishing again from LSN 1 "), std::string::npos) << server->Log();
  EXPECT_EQ(server->Stop(), 0) << server->Log();
}

// Half of kafka.max_backlog_events at most goes out again (the rest would
// count in the backlog and refuse writes), and the part left out is named.
TEST_F(EmbeddedRestartTest, TheRepublishIsBoundedByHalfTheBacklogAndSaysSo) {
  auto server = StartEmbedded();
  const uint64_t last = WriteAndReport(11);
  ASSERT_EQ(server->Kill(), 128 + SIGKILL);
  client_.reset();
  server = StartEmbedded(10);
  std::set<uint64_t> lsns = LsnsOnTopic(last, std::chrono::seconds(20));
  EXPECT_EQ(lsns, (std::set<uint64_t>{17, 18, 19, 20, 21}));
  EXPECT_NE(server->Log().find(
                "changes 12..16, which a derived table has not applied, are not published again"),
            std::string::npos)
      << server->Log();
  EXPECT_EQ(server->Stop(), 0) << server->Log();
}

// The change log's retention does not wait for derived tables: a worker
// stopped longer than changelog.max_age_seconds finds, after a restart onto
// a new mock, the changes it had not applied trimmed. The restart said only
// "publishing again from LSN <the log's first> (the oldest change a derived
// table has not applied ...)", which was not so, and the index was short of
// them without a word (seen from outside: 14,000 changes, verify exit 4).
// Since session 45 the line says only what is known: the first change the
// log holds that is not known to be applied.
TEST_F(EmbeddedRestartTest, ChangesTrimmedBeforeADerivedTableAppliedThemAreNamed) {
  const std::string retention = "changelog:\n  max_age_seconds: 1\n  check_interval_seconds: 1\n";
  auto server = StartEmbedded(1'000'000, retention);
  const uint64_t last = WriteAndReport(11);
  // Retention trims everything published and older than a second.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  uint64_t first = 0;
  while (first <= last && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto page = client_->ReadChanges(1, 1);
    if (page.ok()) first = page->first_available_lsn;
  }
  ASSERT_EQ(first, last + 1) << server->Log();
  ASSERT_EQ(server->Kill(), 128 + SIGKILL);
  client_.reset();
  server = StartEmbedded(1'000'000, retention);
  const std::string log = server->Log();
  EXPECT_NE(log.find("changes 12.." + std::to_string(last) +
                     ", which a derived table has not applied, were trimmed from the change log"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("sidetable-cli derive"), std::string::npos) << log;
  EXPECT_EQ(log.find("the oldest change a derived table has not applied"), std::string::npos)
      << log;
  EXPECT_EQ(server->Stop(), 0) << server->Log();
}

TEST_F(EmbeddedRestartTest, WithEverythingAppliedNothingIsRepublished) {
  auto server = StartEmbedded();
  const uint64_t last = WriteAndReport(21);
  ASSERT_EQ(server->Stop(), 0) << server->Log();
  client_.reset();
  server = StartEmbedded();
  ASSERT_TRUE(client_->Insert("Src", Row("p", "new", 0)).ok());
  std::set<uint64_t> lsns = LsnsOnTopic(last + 1, std::chrono::seconds(20));
  EXPECT_EQ(lsns, std::set<uint64_t>{last + 1});
  EXPECT_EQ(server->Log().find("publishing again"), std::string::npos) << server->Log();
  EXPECT_EQ(server->Stop(), 0) << server->Log();
}

// A worker reports, per partition, the last LSN it saw there; a partition
// that never carries a record keeps the 0 it registered. Every restart went
// back to the log's start for it (up to half of kafka.max_backlog_events
// again), though the derived table had applied everything. Found from
// outside in session 44: one PartitionKey, 2,000 writes, lag 0 on every
// partition, and the restart logged "publishing again from LSN 1".
TEST_F(EmbeddedRestartTest, PartitionsWithoutRecordsDoNotHoldTheRestartBack) {
  auto server = StartEmbedded();
  const uint64_t last = WriteSource();
  ASSERT_FALSE(HasFailure());
  // What a worker that applied all of it reports.
  std::map<int32_t, uint64_t> seen;
  {
    testing::KafkaReader reader(Bootstrap(), kTopic);
    ASSERT_TRUE(reader.AssignAll());
    auto msgs = reader.ReadUntil([&](const auto& all) { return all.size() >= last; },
                                 std::chrono::seconds(30));
    ASSERT_EQ(msgs.size(), last);
    for (const auto& m : msgs) {
      Event ev;
      ASSERT_TRUE(events::DecodeEvent(m.value, &ev).ok());
      seen[m.partition] = std::max(seen[m.partition], ev.record.lsn);
    }
  }
  ASSERT_LT(seen.size(), 12u) << "the test needs a partition without records";
  std::vector<client::Watermark> w;
  for (int p = 0; p < 12; p++) w.push_back({"Idx", "Src", p, 12, seen[p], 0});
  Status s = client_->AdvanceWatermarks(w);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // the publish watermark's flush
  ASSERT_EQ(server->Stop(), 0) << server->Log();
  client_.reset();
  server = StartEmbedded();
  ASSERT_TRUE(client_->Insert("Src", Row("p", "new", 0)).ok());
  std::set<uint64_t> lsns = LsnsOnTopic(last + 1, std::chrono::seconds(20));
  EXPECT_EQ(lsns, std::set<uint64_t>{last + 1});
  EXPECT_EQ(server->Log().find("publishing again"), std::string::npos) << server->Log();
  EXPECT_EQ(server->Stop(), 0) << server->Log();
}

// A derived table that is deleted (an index dropped with its worker) is
// forgotten with it. Until session 42 its watermarks stayed registered for
// good: `sidetable-cli lag` showed the deleted table further behind at
// every write, and every restart on the embedded Kafka published the log
// again from its last watermark (up to half of kafka.max_backlog_events
// each time, for workers that had applied it all).
TEST_F(EmbeddedRestartTest, ADeletedDerivedTableIsForgottenAndHoldsNothingBack) {
  auto server = StartEmbedded();
  const uint64_t last = WriteAndReport(11);
  ASSERT_TRUE(client_->CreateTable("Idx").ok());
  ASSERT_TRUE(client_->DeleteTable("Idx").ok());
  auto registered = client_->ReadWatermarks();
  ASSERT_TRUE(registered.ok()) << registered.status().ToString();
  EXPECT_TRUE(registered->empty()) << registered->size() << " watermarks of the deleted table";
  ASSERT_EQ(server->Stop(), 0) << server->Log();
  client_.reset();
  server = StartEmbedded();
  registered = client_->ReadWatermarks();
  ASSERT_TRUE(registered.ok()) << registered.status().ToString();
  EXPECT_TRUE(registered->empty()) << registered->size() << " watermarks after the restart";
  // The create and delete of Idx are last + 1 and last + 2.
  ASSERT_TRUE(client_->Insert("Src", Row("p", "new", 0)).ok());
  std::set<uint64_t> lsns = LsnsOnTopic(last + 3, std::chrono::seconds(20));
  EXPECT_EQ(lsns, std::set<uint64_t>{last + 3});
  EXPECT_EQ(server->Log().find("publishing again"), std::string::npos) << server->Log();
  EXPECT_EQ(server->Stop(), 0) << server->Log();
}

}  // namespace
}  // namespace sidetable
