// What a member says when it cannot serve as it should (sidecar/cluster,
// docs/scale-out.md "Failure cases"), against librdkafka's mock cluster with
// three brokers and members in one process:
// - a second process with a live member id is refused at start-up, a
//   restarted one is not, and a member whose record another process
//   overwrote announces itself again and says so;
// - Kafka going away is named (KafkaProblem, the metric) and the member
//   serves again once it is back;
// - a topic with the wrong partition count is refused naming what it is.
#include "tests/sidecar/cluster_fixture.h"

#include <librdkafka/rdkafka_mock.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

namespace sidetable::cluster {
namespace {

// These members record nothing: the tests read what they say, not what
// they apply.
ClusterHooks NoHooks() {
  ClusterHooks h;
  h.apply = [](const ChangeRecord&) { return Status::OK(); };
  h.drop_shards = [](const std::vector<int32_t>&) -> Result<uint64_t> { return uint64_t{0}; };
  h.apply_table = [](const std::string&, bool, const TableEventStamp&) { return Status::OK(); };
  return h;
}

// `"member":"endpoint"` as /cluster lists it.
std::string MemberEntry(const std::string& member, const std::string& endpoint) {
  return JsonString(member) + ":" + JsonString(endpoint);
}

// The shared fixture's mock Kafka, topics and options (cluster_fixture.h),
// with members started one by one and no recorder.
class ClusterHealthTest : public ClusterTest {
 protected:
  void TearDown() override {
    kafka_->SetBrokersDown(false).IgnoreError();
    for (auto& c : clusters_) c->Stop();
    clusters_.clear();
    ClusterTest::TearDown();
  }

  Result<Cluster*> Start(const std::string& member, const std::string& endpoint) {
    auto c =
        Cluster::Start(options_, kopts_, kChangeTopic, member, endpoint, NoHooks(), kafka_.get());
    if (!c.ok()) return c.status();
    clusters_.push_back(std::move(*c));
    return clusters_.back().get();
  }

  // Every shard served by one of the running members, none twice. Stopping
  // members before their first round settled can trip an assertion in
  // librdkafka 2.0.2's sticky assignor (rd_kafka_sticky_assignor_state_destroy),
  // so every test that starts the group waits for this first.
  bool Settled() {
    size_t served = 0;
    for (auto& c : clusters_) {
      const ClusterStats s = c->Stats();
      if (s.owned != s.serving) return false;
      served += s.serving.size();
    }
    return served == kShards;
  }

  // A member record as another process with this member id writes it.
  void Announce(const std::string& member, const std::string& endpoint) {
    ProduceTo(kClusterTopic, 0, "member/" + member,
              EncodeMember(MemberRecord{endpoint, "", 1, "another-process"}));
  }

  std::vector<std::unique_ptr<Cluster>> clusters_;
};

// The tester's case: m0-m2 run, a fourth process starts as m1. It used to
// join: each m1 took the other's owner records for its own (routing to
// them stopped) and the real m1's member record named the duplicate for good.
TEST_F(ClusterHealthTest, ASecondProcessWithALiveMemberIdIsRefusedAtStartUp) {
  auto m0 = Start("m0", "tcp://m0:7400");
  ASSERT_TRUE(m0.ok()) << m0.status().ToString();
  auto m1 = Start("m1", "tcp://m1:7400");
  ASSERT_TRUE(m1.ok()) << m1.status().ToString();

  auto dup = Start("m1", "tcp://dup:7400");
  ASSERT_FALSE(dup.ok()) << "a second live m1 was let in";
  EXPECT_EQ(dup.status().code(), Code::kInvalidInput);
  EXPECT_NE(dup.status().message().find("cluster.member_id 'm1' is in use"), std::string::npos)
      << dup.status().message();
  EXPECT_NE(dup.status().message().find("tcp://m1:7400"), std::string::npos)
      << dup.status().message();

  // The live m1 answered with its own record: every member routes to it.
  for (Cluster* c : {*m0, *m1}) {
    EXPECT_TRUE(Eventually([&] {
      return c->StatusJson().find(MemberEntry("m1", "tcp://m1:7400")) != std::string::npos;
    })) << c->StatusJson();
  }
  EXPECT_EQ((*m1)->Stats().member_id_conflicts_total, 1u);
  EXPECT_NE((*m1)->MemberIdProblem().find("tcp://dup:7400"), std::string::npos)
      << (*m1)->MemberIdProblem();
  EXPECT_EQ((*m0)->Stats().member_id_conflicts_total, 0u);
  EXPECT_TRUE(Eventually([&] { return Settled(); }, 60s)) << (*m0)->StatusJson() << "\n"
                                                          << (*m1)->StatusJson();
}

// A member restarted under its id (the old process gone) is not a duplicate.
TEST_F(ClusterHealthTest, AMemberRestartedUnderItsIdStarts) {
  auto first = Start("m1", "tcp://m1:7400");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(Eventually([&] { return Settled(); }, 60s)) << (*first)->StatusJson();
  clusters_.back()->Stop();
  clusters_.clear();
  auto again = Start("m1", "tcp://m1:7401");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->MemberIdProblem(), "");
  EXPECT_EQ((*again)->Stats().member_id_conflicts_total, 0u);
  EXPECT_NE((*again)->StatusJson().find("\"problems\":[]"), std::string::npos)
      << (*again)->StatusJson();
  EXPECT_TRUE(Eventually([&] { return Settled(); }, 60s)) << (*again)->StatusJson();
}

// A duplicate start-up could not refuse (the holder paused, say) overwrote
// the member record: the member announces itself again and says so.
TEST_F(ClusterHealthTest, AMemberWhoseRecordAnotherProcessOverwroteAnnouncesItselfAgain) {
  auto m1 = Start("m1", "tcp://m1:7400");
  ASSERT_TRUE(m1.ok()) << m1.status().ToString();
  Announce("m1", "tcp://dup:7400");
  ASSERT_TRUE(Eventually([&] { return (*m1)->Stats().member_id_conflicts_total == 1; }))
      << (*m1)->StatusJson();
  EXPECT_TRUE(Eventually([&] {
    return (*m1)->StatusJson().find(MemberEntry("m1", "tcp://m1:7400")) != std::string::npos;
  })) << "the duplicate's record stayed: "
      << (*m1)->StatusJson();
  EXPECT_NE((*m1)->MemberIdProblem().find("tcp://dup:7400"), std::string::npos)
      << (*m1)->MemberIdProblem();
  EXPECT_NE((*m1)->StatusJson().find("another process announced itself as member m1"),
            std::string::npos)
      << (*m1)->StatusJson();
  EXPECT_NE((*m1)->RenderMetrics().find("sidetable_cluster_member_id_conflicts_total 1"),
            std::string::npos);
  EXPECT_TRUE(Eventually([&] { return Settled(); }, 60s)) << (*m1)->StatusJson();
}

// Kafka goes away: the member says so (not "a rebalance"), loses its shards
// after the session timeout, and serves them again once Kafka is back.
TEST_F(ClusterHealthTest, KafkaGoingAwayIsNamedAndTheMemberServesAgainAfterIt) {
  auto a = Start("a", "tcp://a:7400");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(Eventually([&] { return (*a)->Stats().serving.size() == kShards; }, 60s))
      << (*a)->StatusJson();
  EXPECT_EQ((*a)->KafkaProblem(), "");
  EXPECT_NE((*a)->RenderMetrics().find("sidetable_cluster_kafka_reachable 1"), std::string::npos);

  ASSERT_TRUE(kafka_->SetBrokersDown(true).ok());
  ASSERT_TRUE(Eventually([&] { return !(*a)->KafkaProblem().empty(); }, 15s)) << (*a)->StatusJson();
  EXPECT_NE((*a)->KafkaProblem().find("Kafka is unreachable from this sidecar"), std::string::npos)
      << (*a)->KafkaProblem();
  EXPECT_FALSE((*a)->Stats().kafka_reachable);
  EXPECT_NE((*a)->RenderMetrics().find("sidetable_cluster_kafka_reachable 0"), std::string::npos);
  EXPECT_NE((*a)->StatusJson().find("\"kafkaReachable\":false"), std::string::npos)
      << (*a)->StatusJson();
  // After the session timeout the group has dropped it: it serves nothing
  // (another member, cut off from it but not from Kafka, may own them now).
  EXPECT_TRUE(Eventually([&] { return (*a)->Stats().serving.empty(); }, 30s)) << (*a)->StatusJson();

  ASSERT_TRUE(kafka_->SetBrokersDown(false).ok());
  EXPECT_TRUE(Eventually([&] { return (*a)->KafkaProblem().empty(); }, 30s))
      << (*a)->KafkaProblem();
  EXPECT_TRUE(Eventually([&] { return (*a)->Stats().serving.size() == kShards; }, 60s))
      << (*a)->StatusJson();
}

// A cluster topic a broker auto-created with its default partition count:
// the refusal names the cluster topic and its one partition, not the shard
// count; and a start that failed does not log that the member left a group
// it never joined.
TEST_F(ClusterHealthTest, AClusterTopicWithTheWrongPartitionCountIsRefusedByName) {
  const std::string topic = "sidetable.wrong.cluster";
  ASSERT_EQ(rd_kafka_mock_topic_create(kafka_->mock(), topic.c_str(), 4, 3),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  ASSERT_EQ(rd_kafka_mock_topic_create(kafka_->mock(), "sidetable.wrong.changes", kShards, 3),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  spdlog::default_logger()->sinks().push_back(sink);
  ClusterOptions o = options_;
  o.service = "wrong";
  o.member_id = "m3";
  // Not the embedded shortcut: the path a real cluster takes (metadata).
  auto c = Cluster::Start(o, kopts_, "sidetable.wrong.changes", "m3", "tcp://m3:7400", NoHooks(),
                          nullptr);
  spdlog::default_logger()->sinks().pop_back();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidInput);
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("the cluster topic sidetable.wrong.cluster has 4 partitions"), std::string::npos)
      << m;
  EXPECT_NE(m.find("exactly 1"), std::string::npos) << m;
  EXPECT_EQ(m.find("shard count"), std::string::npos) << m;
  EXPECT_EQ(m.find("the configuration says"), std::string::npos) << m;
  EXPECT_EQ(log.str().find("left sidetable.wrong.owners"), std::string::npos) << log.str();
}

}  // namespace
}  // namespace sidetable::cluster
