// The harness's reading of GET /cluster and its stability rule
// (testing/cluster_harness.h), on pages written by hand: the scale-out
// scenarios wait on this, so it must neither accept a half-done hand-over
// nor refuse a settled cluster.
#include <gtest/gtest.h>

#include "testing/cluster_harness.h"

namespace sidetable::testing {
namespace {

// The page as the status contract gives it, with the extra fields a member
// may add (they are ignored).
std::string Page(const std::string& member, int generation, const std::string& owned, const std::string& serving,
                 const std::string& owners,
                 const std::string& members = "{\"m0\":\"tcp://127.0.0.1:1\",\"m1\":\"tcp://127.0.0.1:2\"}") {
  return "{\"member\":\"" + member + "\",\"service\":\"svc\",\"group\":\"sidetable.svc.owners\",\"generation\":" +
         std::to_string(generation) + ",\"shards\":4,\"owned\":" + owned + ",\"serving\":" + serving +
         ",\"owners\":" + owners + ",\"members\":" + members + ",\"restores\":3}";
}

const char* kOwners =
    "{\"0\":{\"member\":\"m0\",\"endpoint\":\"tcp://127.0.0.1:1\",\"epoch\":5},"
    "\"1\":{\"member\":\"m1\",\"endpoint\":\"tcp://127.0.0.1:2\",\"epoch\":5},"
    "\"2\":{\"member\":\"m0\",\"endpoint\":\"tcp://127.0.0.1:1\",\"epoch\":3},"
    "\"3\":{\"member\":\"m1\",\"endpoint\":\"tcp://127.0.0.1:2\",\"epoch\":5}}";

std::map<std::string, ClusterStatus> Pages(const std::vector<std::string>& bodies) {
  std::map<std::string, ClusterStatus> out;
  for (const auto& b : bodies) {
    std::string error;
    auto s = ClusterStatus::Parse(b, &error);
    EXPECT_TRUE(s) << error << ": " << b;
    if (s) out[s->member] = *s;
  }
  return out;
}

TEST(ClusterStatusTest, ParsesTheContract) {
  std::string error;
  auto s = ClusterStatus::Parse(Page("m0", 5, "[0,2]", "[0]", kOwners), &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->member, "m0");
  EXPECT_EQ(s->generation, 5);
  EXPECT_EQ(s->owned, (std::set<int>{0, 2}));
  EXPECT_EQ(s->serving, (std::set<int>{0}));
  ASSERT_EQ(s->owners.size(), 4u);
  EXPECT_EQ(s->owners[1], (ShardOwner{"m1", "tcp://127.0.0.1:2", 5}));
  EXPECT_EQ(s->owners[2].epoch, 3);
  EXPECT_EQ(s->members.at("m1"), "tcp://127.0.0.1:2");
}

TEST(ClusterStatusTest, RefusesWhatIsNotThePage) {
  std::string error;
  EXPECT_FALSE(ClusterStatus::Parse("not json", &error));
  EXPECT_FALSE(ClusterStatus::Parse("{\"member\":\"m0\"}", &error));
  EXPECT_NE(error.find("generation"), std::string::npos) << error;
  EXPECT_FALSE(ClusterStatus::Parse(Page("m0", 1, "[\"0\"]", "[]", "{}"), &error));
  EXPECT_FALSE(ClusterStatus::Parse(Page("m0", 1, "[]", "[]", "{\"0\":{\"member\":\"m0\"}}"), &error));
}

TEST(ClusterStatusTest, StableOnlyWhenEveryoneAgreesAndServes) {
  std::string why;
  const auto stable = Pages({Page("m0", 5, "[0,2]", "[0,2]", kOwners), Page("m1", 5, "[1,3]", "[1,3]", kOwners)});
  EXPECT_TRUE(ClusterHarness::StableFrom(stable, 4, &why)) << why;

  // m0 still restoring shard 2.
  EXPECT_FALSE(ClusterHarness::StableFrom(
      Pages({Page("m0", 5, "[0,2]", "[0]", kOwners), Page("m1", 5, "[1,3]", "[1,3]", kOwners)}), 4, &why));
  EXPECT_NE(why.find("does not serve"), std::string::npos) << why;
  // Generations differ (a rebalance under way).
  EXPECT_FALSE(ClusterHarness::StableFrom(
      Pages({Page("m0", 6, "[0,2]", "[0,2]", kOwners), Page("m1", 5, "[1,3]", "[1,3]", kOwners)}), 4, &why));
  EXPECT_NE(why.find("disagrees"), std::string::npos) << why;
  // A shard served twice (the old owner has not let go).
  EXPECT_FALSE(ClusterHarness::StableFrom(
      Pages({Page("m0", 5, "[0,1,2]", "[0,1,2]", kOwners), Page("m1", 5, "[1,3]", "[1,3]", kOwners)}), 4, &why));
  EXPECT_NE(why.find("both"), std::string::npos) << why;
  // A shard owned by a member that is gone (m1 killed, map not yet updated).
  EXPECT_FALSE(ClusterHarness::StableFrom(Pages({Page("m0", 5, "[0,2]", "[0,2]", kOwners)}), 4, &why));
  EXPECT_NE(why.find("not a live member"), std::string::npos) << why;
  // A shard nobody owns.
  EXPECT_FALSE(ClusterHarness::StableFrom(stable, 5, &why));
  EXPECT_NE(why.find("no owner"), std::string::npos) << why;
  EXPECT_FALSE(ClusterHarness::StableFrom({}, 4, &why));
  // m1 restarted on another port: it serves again, but its owner records
  // (written when its restores finish) still name the old endpoint.
  const std::string moved = "{\"m0\":\"tcp://127.0.0.1:1\",\"m1\":\"tcp://127.0.0.1:9\"}";
  EXPECT_FALSE(ClusterHarness::StableFrom(
      Pages({Page("m0", 5, "[0,2]", "[0,2]", kOwners, moved), Page("m1", 5, "[1,3]", "[1,3]", kOwners, moved)}), 4,
      &why));
  EXPECT_NE(why.find("advertises tcp://127.0.0.1:9 now"), std::string::npos) << why;
}

TEST(ClusterStatusTest, MetricValueSumsLabelSets) {
  const std::string text =
      "# TYPE sidetable_cluster_forwarded_total counter\n"
      "sidetable_cluster_forwarded_total{to=\"m1\"} 3\n"
      "sidetable_cluster_forwarded_total{to=\"m2\"} 4\n"
      "sidetable_cluster_forwarded_total_other 100\n";
  EXPECT_EQ(MetricValue(text, "sidetable_cluster_forwarded_total"), 7);
  EXPECT_EQ(MetricValue(text, "sidetable_missing"), -1);
}

}  // namespace
}  // namespace sidetable::testing
