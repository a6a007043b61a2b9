// GET /ready (sidecar/status_pages.h, ReadyJson): what a probe sees while a
// sidecar stops, while a scale-out member joins, and after.
#include <gtest/gtest.h>

#include "sidecar/status_pages.h"

namespace sidetable::sidecar {
namespace {

std::vector<cluster::Route> Routes(std::initializer_list<cluster::Route::Kind> kinds) {
  std::vector<cluster::Route> out;
  for (auto k : kinds) {
    cluster::Route r;
    r.shard = static_cast<int32_t>(out.size());
    r.kind = k;
    out.push_back(r);
  }
  return out;
}

using K = cluster::Route::Kind;

TEST(ReadyTest, AStoppingSidecarIsNotReady) {
  std::atomic<bool> once{true};
  auto [status, body] = ReadyJson(true, nullptr, &once);
  EXPECT_EQ(status, 503);
  EXPECT_NE(body.find("\"stopping\""), std::string::npos) << body;
}

TEST(ReadyTest, ASidecarWithoutScaleOutIsReadyAtOnce) {
  std::atomic<bool> once{false};
  EXPECT_EQ(ReadyJson(false, nullptr, &once).first, 200);
}

TEST(ReadyTest, AMemberIsReadyOnceEveryShardHasARouteAndStaysReady) {
  std::atomic<bool> once{false};
  auto joining = Routes({K::kLocal, K::kUnavailable, K::kRemote, K::kUnavailable});
  auto [status, body] = ReadyJson(false, &joining, &once);
  EXPECT_EQ(status, 503);
  EXPECT_NE(body.find("\"unrouted_shards\":2"), std::string::npos) << body;
  EXPECT_FALSE(once.load());
  // Not even one shard known (the owners' group has not answered yet).
  std::vector<cluster::Route> none;
  EXPECT_EQ(ReadyJson(false, &none, &once).first, 503);

  auto routed = Routes({K::kLocal, K::kRemote, K::kRemote, K::kLocal});
  EXPECT_EQ(ReadyJson(false, &routed, &once).first, 200);
  EXPECT_TRUE(once.load());
  // A later rebalance is answered per request, not by leaving the load balancer.
  EXPECT_EQ(ReadyJson(false, &joining, &once).first, 200);
  // Stopping still wins.
  EXPECT_EQ(ReadyJson(true, &routed, &once).first, 503);
}

// A member that cannot reach Kafka gets no assignment: /ready names Kafka
// (it said "joining", as if waiting would help).
TEST(ReadyTest, AMemberWithoutKafkaSaysSoInsteadOfJoining) {
  std::atomic<bool> once{false};
  auto none = Routes({K::kUnavailable, K::kUnavailable});
  auto [status, body] =
      ReadyJson(false, &none, &once, "Kafka is unreachable from this sidecar (4 s)");
  EXPECT_EQ(status, 503);
  EXPECT_NE(body.find("\"reason\":\"kafka_unreachable\""), std::string::npos) << body;
  EXPECT_NE(body.find("\"problem\":\"Kafka is unreachable from this sidecar (4 s)\""),
            std::string::npos)
      << body;
  EXPECT_EQ(body.find("joining"), std::string::npos) << body;
  EXPECT_EQ(ReadyJson(false, &none, &once).second.find("kafka"), std::string::npos);
}

}  // namespace
}  // namespace sidetable::sidecar
