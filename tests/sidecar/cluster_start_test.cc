// Cluster::Start's refusals that need no Kafka (sidecar/cluster/cluster.h).
#include <gtest/gtest.h>

#include "sidecar/cluster/cluster.h"

namespace sidetable::cluster {
namespace {

ClusterHooks AllHooks() {
  ClusterHooks h;
  h.apply = [](const ChangeRecord&) { return Status::OK(); };
  h.drop_shards = [](const std::vector<int32_t>&) -> Result<uint64_t> { return uint64_t{0}; };
  h.apply_table = [](const std::string&, bool, const TableEventStamp&) { return Status::OK(); };
  return h;
}

TEST(ClusterStart, RefusesWhatCannotWork) {
  ClusterOptions on;
  on.service = "orders";
  changestream::KafkaOptions kafka;
  kafka.bootstrap = "127.0.0.1:1";
  // Off.
  auto r = Cluster::Start(ClusterOptions(), kafka, "t", "m1", "tcp://x:1", AllHooks());
  EXPECT_EQ(r.status().code(), Code::kInvalidInput);
  // A hook missing.
  ClusterHooks partial = AllHooks();
  partial.apply_table = nullptr;
  r = Cluster::Start(on, kafka, "t", "m1", "tcp://x:1", partial);
  EXPECT_EQ(r.status().code(), Code::kInvalidInput);
  EXPECT_NE(r.status().message().find("hook"), std::string::npos);
  // No member id.
  r = Cluster::Start(on, kafka, "t", "", "tcp://x:1", AllHooks());
  EXPECT_EQ(r.status().code(), Code::kInvalidInput);
  // No Kafka to talk to.
  kafka.bootstrap = "";
  r = Cluster::Start(on, kafka, "t", "m1", "tcp://x:1", AllHooks());
  EXPECT_EQ(r.status().code(), Code::kInvalidInput);
  EXPECT_NE(r.status().message().find("kafka.bootstrap"), std::string::npos);
}

TEST(ClusterStart, ExpandService) {
  EXPECT_EQ(ExpandService("sidetable.{service}.cluster", "orders"), "sidetable.orders.cluster");
  EXPECT_EQ(ExpandService("{service}-{service}", "a"), "a-a");
  EXPECT_EQ(ExpandService("plain", "a"), "plain");
}

}  // namespace
}  // namespace sidetable::cluster
