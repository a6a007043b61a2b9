// Faults of a scale-out service found from outside (session 35;
// docs/scale-out.md, "Failure cases"), with real `sidetable` members around
// the embedded Kafka this test hosts. CTest label `scale-out`.
//
// - Kafka unreachable: ~6 s after Kafka died every member had lost its
//   shards, answered every request "shard N has no serving owner (a
//   rebalance or restore is under way)", and /health stayed "ok". Now the
//   members say it is Kafka (/health, /cluster, /metrics, the ServerBusy of
//   a request) and serve every row again once Kafka is back.
// - A second process started with a live member's id joined silently and
//   broke routing and every fan-out query. Now it is refused at start-up.
//
// SIDETABLE_TEST_SIDETABLE_BIN=<path> runs the members from another build
// (to see a test fail on the code before a fix).
#include <gtest/gtest.h>

#include <cstdlib>

#include "client/client.h"
#include "client/entity_builder.h"
#include "testing/cluster_harness.h"

namespace sidetable::scale_out {
namespace {

using namespace std::chrono_literals;
using testing::ClusterHarness;
using testing::ClusterHarnessOptions;
using testing::HttpGet;

template <typename F>
bool Eventually(F f, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(200ms);
  }
  return f();
}

bool Contains(const std::optional<std::string>& body, const std::string& what) {
  return body && body->find(what) != std::string::npos;
}

ClusterHarnessOptions Options(const std::string& service) {
  ClusterHarnessOptions o;
  o.service = service;
  if (const char* bin = std::getenv("SIDETABLE_TEST_SIDETABLE_BIN")) o.binary = bin;
  return o;
}

TEST(ScaleOutFaultsTest, MembersNameKafkaWhileItIsUnreachableAndServeAgainAfter) {
  ClusterHarness h(Options("so-kafka-outage"));
  ASSERT_TRUE(h.Init().ok());
  ASSERT_TRUE(h.AddMembers(2)) << h.Logs();
  std::string why;
  ASSERT_TRUE(h.WaitStable(45s, &why)) << why << "\n" << h.ClusterLogs();

  std::vector<std::unique_ptr<client::Client>> c;
  for (int i = 0; i < 2; i++) {
    client::ClientOptions co;
    co.endpoint = h.Endpoint(i)->first;
    co.max_attempts = 1;  // every answer seen as it is
    co.timeout = 8000ms;
    auto cl = client::Client::Connect(co);
    ASSERT_TRUE(cl.ok()) << cl.status().ToString();
    c.push_back(std::move(cl).value());
  }
  ASSERT_TRUE(c[0]->CreateTable("Outage").ok());
  // One row per partition key, spread over the shards; settle the fence
  // commits of the first rebalance first (bounded).
  const int keys = 12;
  for (int p = 0; p < keys; p++) {
    const std::string pk = "p" + std::to_string(p);
    ASSERT_TRUE(Eventually(
        [&] {
          return c[0]->Insert("Outage", client::EntityBuilder(pk, "r").Int64("N", p).Build(), false)
                     .ok() ||
                 c[0]->Get("Outage", pk, "r").ok();
        },
        30s))
        << pk << "\n"
        << h.ClusterLogs();
  }
  for (int i = 0; i < 2; i++)
    EXPECT_TRUE(Contains(HttpGet(h.http(i), "/health"), "\"status\":\"ok\""));

  ASSERT_TRUE(h.kafka().SetBrokersDown(true).ok());
  for (int i = 0; i < 2; i++) {
    EXPECT_TRUE(Eventually(
        [&] { return Contains(HttpGet(h.http(i), "/health"), "\"status\":\"degraded\""); }, 20s))
        << HttpGet(h.http(i), "/health").value_or("no answer");
    const auto health = HttpGet(h.http(i), "/health");
    EXPECT_TRUE(Contains(health, "\"kafka_reachable\":false")) << health.value_or("no answer");
    EXPECT_TRUE(Contains(health, "Kafka is unreachable from this sidecar"))
        << health.value_or("no answer");
    EXPECT_TRUE(Contains(HttpGet(h.http(i), "/metrics"), "sidetable_cluster_kafka_reachable 0"));
  }
  // Past the session timeout the group has dropped both: nothing is served,
  // and a read says why.
  for (int i = 0; i < 2; i++) {
    EXPECT_TRUE(
        Eventually([&] { return Contains(HttpGet(h.http(i), "/cluster"), "\"serving\":[]"); }, 30s))
        << HttpGet(h.http(i), "/cluster").value_or("no answer");
  }
  for (int i = 0; i < 2; i++) {
    auto got = c[i]->Get("Outage", "p0", "r");
    ASSERT_FALSE(got.ok()) << "a member without an assignment answered a read";
    EXPECT_EQ(got.status().code(), Code::kServerBusy) << got.status().ToString();
    EXPECT_NE(got.status().message().find("Kafka is unreachable"), std::string::npos)
        << got.status().ToString();
    EXPECT_EQ(got.status().message().find("rebalance"), std::string::npos)
        << got.status().ToString();
    // A query over every shard too.
    client::QueryOptions q;
    q.table = "Outage";
    auto page = c[i]->QueryPage(q);
    ASSERT_FALSE(page.ok()) << "a member without an assignment answered a query";
    EXPECT_EQ(page.status().code(), Code::kServerBusy) << page.status().ToString();
    EXPECT_NE(page.status().message().find("Kafka is unreachable"), std::string::npos)
        << page.status().ToString();
  }

  ASSERT_TRUE(h.kafka().SetBrokersDown(false).ok());
  ASSERT_TRUE(h.WaitStable(90s, &why)) << why << "\n" << h.ClusterLogs();
  for (int i = 0; i < 2; i++) {
    EXPECT_TRUE(Eventually(
        [&] { return Contains(HttpGet(h.http(i), "/health"), "\"status\":\"ok\""); }, 20s))
        << HttpGet(h.http(i), "/health").value_or("no answer");
    for (int p = 0; p < keys; p++) {
      const std::string pk = "p" + std::to_string(p);
      Result<Entity> got = Status(Code::kServerBusy, "not asked");
      EXPECT_TRUE(Eventually([&] { return (got = c[i]->Get("Outage", pk, "r")).ok(); }, 20s))
          << "m" << i << " " << pk << ": " << got.status().ToString();
    }
  }
}

// The tester's case: m0 and m1 run, a third process is started as m1.
TEST(ScaleOutFaultsTest, ASecondProcessWithALiveMembersIdIsRefusedAtStartUp) {
  ClusterHarnessOptions o = Options("so-duplicate-member");
  o.member_id = [](int i) { return i == 2 ? std::string("m1") : ClusterHarness::MemberId(i); };
  ClusterHarness h(o);
  ASSERT_TRUE(h.Init().ok());
  ASSERT_TRUE(h.AddMembers(2)) << h.Logs();
  std::string why;
  ASSERT_TRUE(h.WaitStable(45s, &why)) << why << "\n" << h.ClusterLogs();
  const std::string m1 = h.Endpoint(1)->first;

  EXPECT_EQ(h.AddMember(), -1) << "a second m1 started";
  const std::string log = h.process(2).Log();
  EXPECT_NE(log.find("cluster.member_id 'm1' is in use: a live sidecar at " + m1),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("left sidetable."), std::string::npos) << "it never joined: " << log;

  // The live m1 is still the one every member routes to, and says what happened.
  for (int i = 0; i < 2; i++) {
    EXPECT_TRUE(Eventually(
        [&] { return Contains(HttpGet(h.http(i), "/cluster"), "\"m1\":\"" + m1 + "\""); }, 20s))
        << HttpGet(h.http(i), "/cluster").value_or("no answer");
  }
  EXPECT_TRUE(h.WaitStable(30s, &why)) << why;
  EXPECT_TRUE(
      Contains(HttpGet(h.http(1), "/health"), "another process announced itself as member m1"))
      << HttpGet(h.http(1), "/health").value_or("no answer");
  EXPECT_TRUE(
      Contains(HttpGet(h.http(1), "/metrics"), "sidetable_cluster_member_id_conflicts_total 1"));
}

}  // namespace
}  // namespace sidetable::scale_out
