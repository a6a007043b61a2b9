// A table deleted and created again in a scale-out service, through a real
// sidecar process (docs/scale-out.md, "Table incarnations"): the publisher
// stamps each entity event with its table's incarnation (st-ti), the map
// survives a restart in the data directory, and the restore after the
// restart never brings the predecessor's row back into the new table.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include "client/client.h"
#include "common/kafka/headers.h"
#include "events/chunk.h"
#include "events/event.h"
#include "testing/cluster_harness.h"

namespace sidetable {
namespace {

using namespace std::chrono_literals;
using client::Client;
using client::ClientOptions;
using sidetable::testing::ClusterHarness;
using sidetable::testing::ClusterHarnessOptions;

constexpr int kShards = 4;
const std::string kTable = "Phoenix";

Entity Row(const std::string& pk, const std::string& rk) {
  Entity e;
  e.partition_key = pk;
  e.row_key = rk;
  e.Set("V", Value::Int32(1));
  return e;
}

// Row key -> the st-ti stamp (0: none) of the entity events of `table` on
// the change topic, waiting until `want` row keys were seen (at most 30 s).
std::map<std::string, uint64_t> Stamps(const std::string& bootstrap, const std::string& topic,
                                       const std::string& table, size_t want) {
  char err[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof err);
  const std::string group = "stamps-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  rd_kafka_conf_set(conf, "group.id", group.c_str(), err, sizeof err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  std::map<std::string, uint64_t> out;
  if (rk == nullptr) return out;
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(kShards);
  for (int p = 0; p < kShards; p++) {
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (out.size() < want && std::chrono::steady_clock::now() < until) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 200);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->payload != nullptr) {
      events::Event e;
      const std::string_view value(static_cast<const char*>(m->payload), m->len);
      if (events::DecodeEvent(value, &e).ok() && e.record.kind == ChangeKind::kEntities && e.record.table == table) {
        auto h = kafka::HeaderValue(m, events::kTableIncarnationHeader);
        for (const auto& op : e.record.ops) out[op.row_key] = h ? std::stoull(std::string(*h)) : 0;
      }
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

TEST(ClusterIncarnationTest, ARecreatedTableIsStampedAndARestartNeverBringsItsPredecessorsRowBack) {
  ClusterHarnessOptions o;
  o.service = "ti-test";
  o.shards = kShards;
  o.acks = "replicated";
  o.state_topic = false;
  ClusterHarness harness(o);
  Status init = harness.Init();
  ASSERT_TRUE(init.ok()) << init.ToString();
  ASSERT_EQ(harness.AddMember(), 0) << harness.Logs();
  std::string why;
  ASSERT_TRUE(harness.WaitStable(60s, &why)) << why << "\n" << harness.Logs();
  auto connect = [&] {
    ClientOptions c;
    c.endpoint = harness.Endpoint(0)->first;
    c.timeout = 10s;
    return Client::Connect(c).value();
  };
  {
    auto client = connect();
    ASSERT_TRUE(client->CreateTable(kTable).ok());
    ASSERT_TRUE(client->Insert(kTable, Row("a", "before")).ok());
    ASSERT_TRUE(client->DeleteTable(kTable).ok());
    ASSERT_TRUE(client->CreateTable(kTable).ok());
    ASSERT_TRUE(client->Insert(kTable, Row("a", "after")).ok());
    EXPECT_EQ(client->Get(kTable, "a", "before").status().code(), Code::kResourceNotFound);
  }
  auto stamps = Stamps(harness.bootstraps(), harness.ChangeTopic(), kTable, 2);
  ASSERT_EQ(stamps.size(), 2u) << harness.Logs();
  EXPECT_NE(stamps["before"], 0u);
  EXPECT_GT(stamps["after"], stamps["before"]) << "the re-created table has its own incarnation";
  EXPECT_TRUE(std::filesystem::exists(harness.dir().Sub("m0") + "/cluster-table-incarnations"));

  // The restart restores every shard from the change topic, where the
  // predecessor's row is too; and the map from the data directory keeps
  // the stamps of the table as it was.
  harness.KillMember(0);
  ASSERT_TRUE(harness.RestartMember(0)) << harness.Logs();
  ASSERT_TRUE(harness.WaitStable(60s, &why)) << why << "\n" << harness.Logs();
  auto client = connect();
  ASSERT_TRUE(client->Insert(kTable, Row("a", "restarted")).ok());
  auto got = client->Get(kTable, "a", "after");
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(client->Get(kTable, "a", "before").status().code(), Code::kResourceNotFound)
      << "the restore brought the predecessor's row back";
  stamps = Stamps(harness.bootstraps(), harness.ChangeTopic(), kTable, 3);
  EXPECT_EQ(stamps["restarted"], stamps["after"]);
  EXPECT_GE(harness.MetricOverMembers("sidetable_cluster_stale_table_records_total"), 1.0);
}

}  // namespace
}  // namespace sidetable
