// A change topic that is not, or no longer, this service's (docs/scale-out.md,
// "Failure cases"; sidecar/cluster/misconfig.cc): members of another service
// configured with it are refused at start-up, another service's claim fences
// none of this service's records (and is reported), and a member whose
// change topic lost what it knew was on it (Kafka lost and re-created) keeps
// its rows and does not serve those shards.
#include "tests/sidecar/cluster_fixture.h"

namespace sidetable::cluster {
namespace {

class ClusterMisconfigTest : public ClusterTest {
 protected:
  // Kafka lost and re-created: a new mock with the same topics, empty.
  void RecreateKafka() {
    if (producer_ != nullptr) rd_kafka_destroy(producer_);
    producer_ = nullptr;
    kafka_.reset();
    auto k = kafka::EmbeddedKafka::Start(3);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    kafka_ = std::move(*k);
    kopts_.bootstrap = kafka_->bootstraps();
    ASSERT_TRUE(kafka_->CreateTopic(kChangeTopic, kShards).ok());
    ASSERT_TRUE(kafka_->CreateTopic(kClusterTopic, 1).ok());
  }

  static bool Mentions(const std::vector<std::string>& problems, const std::string& what) {
    for (const auto& p : problems) {
      if (p.find(what) != std::string::npos) return true;
    }
    return false;
  }
};

// The outside tester's finding: a sidecar of service o2 configured with
// orders' change topic formed its own group, took every shard and claimed
// them with its own epochs, which fenced every write orders' members
// acknowledged afterwards. Now it does not start: the topic carries orders'
// claims. Sharing the cluster topic too is refused by orders' member record.
TEST_F(ClusterMisconfigTest, AMemberOfAnotherServiceOnThisChangeTopicIsRefusedAtStart) {
  CreateOrdersTable();
  StartMembers({"a"});
  ASSERT_TRUE(Eventually([&] { return Stable(); }, 60s)) << Describe();

  ClusterOptions other = options_;
  other.service = "o2";
  other.topic = "sidetable.o2.cluster";
  ASSERT_TRUE(kafka_->CreateTopic(other.topic, 1).ok());
  Recorder rec;
  auto started =
      Cluster::Start(other, kopts_, kChangeTopic, "x", "tcp://x:7400", rec.Hooks(), kafka_.get());
  ASSERT_FALSE(started.ok()) << "a member of o2 started on orders' change topic";
  EXPECT_EQ(started.status().code(), Code::kInvalidInput);
  EXPECT_NE(started.status().message().find("service 'orders'"), std::string::npos)
      << started.status().message();
  EXPECT_NE(started.status().message().find(kChangeTopic), std::string::npos)
      << started.status().message();

  other.topic = kClusterTopic;
  auto shared =
      Cluster::Start(other, kopts_, kChangeTopic, "x", "tcp://x:7400", rec.Hooks(), kafka_.get());
  ASSERT_FALSE(shared.ok()) << "a member of o2 started on orders' cluster topic";
  EXPECT_NE(shared.status().message().find("member 'a' of service 'orders'"), std::string::npos)
      << shared.status().message();
  // Nothing of o2's reached orders' topics: a still serves every shard.
  EXPECT_TRUE(Stable()) << Describe();
  EXPECT_TRUE(Fence(members_[0]->cluster.get()).ok());
}

// A claim of another service that reached the change topic anyway (two
// services started at once, or an old sidecar) fences nothing: the owner's
// writes after it are restored by the next owner, and the claim is reported
// (the log, /cluster's problems, which make /health degraded, and the
// foreign-claims metric).
TEST_F(ClusterMisconfigTest, AClaimOfAnotherServiceFencesNothingAndIsReported) {
  CreateOrdersTable();
  StartMembers({"a", "b"});
  ASSERT_TRUE(Eventually([&] { return Stable(); }, 60s)) << Describe();
  const int32_t shard = kafka::KafkaPartitionFor("Orders/p0", kShards);
  const Route route = members_[0]->cluster->Routes()[shard];
  Member* owner = route.member == "a" ? members_[0].get() : members_[1].get();
  Member* next = owner == members_[0].get() ? members_[1].get() : members_[0].get();
  const uint64_t epoch = route.epoch;
  const uint64_t foreign_epoch = epoch + 10;

  ProduceEntity("p0", "r1", epoch << 40 | 1, epoch, false);
  Produce(shard, ClaimKey(shard), EncodeClaimEvent("x", foreign_epoch, shard, "o2"), kClaimHeader,
          std::to_string(foreign_epoch));
  ProduceEntity("p0", "r2", epoch << 40 | 2, epoch, false);

  ASSERT_TRUE(HandOver(owner, next));
  const auto rows = next->rec.Rows(shard);
  EXPECT_TRUE(rows.count("p0/r1")) << "the write before the foreign claim";
  EXPECT_TRUE(rows.count("p0/r2")) << "the write after the foreign claim was fenced by it";
  const ClusterStats stats = next->cluster->Stats();
  EXPECT_EQ(stats.fenced_records_total, 0u);
  EXPECT_EQ(stats.foreign_claims_total, 1u);
  EXPECT_TRUE(Mentions(stats.problems, "service 'o2'")) << next->cluster->StatusJson();
  EXPECT_NE(next->cluster->RenderMetrics().find("sidetable_cluster_foreign_claims_total 1"),
            std::string::npos);
  // The new owner's epoch follows orders' claims, not o2's.
  EXPECT_LT(next->cluster->Routes()[shard].epoch, foreign_epoch);
}

// The outside tester's second finding: Kafka lost and re-created empty, the
// members restarted, re-claimed every shard, dropped their rows and restored
// nothing; every acknowledged key was gone, /health "ok". Now the member
// knows (its file beside the data) that each partition held records: it
// keeps the rows, serves none of those shards, and says why.
TEST_F(ClusterMisconfigTest, AShardWhosePartitionLostItsRecordsKeepsItsRowsAndIsNotServed) {
  testing::TempDir dir;
  options_.known_offsets_file = dir.Sub("cluster-change-offsets");
  CreateOrdersTable();
  StartMembers({"a"});
  ASSERT_TRUE(Eventually([&] { return Stable(); }, 60s)) << Describe();
  // a's own writes of one shard: committed locally and published.
  const int32_t shard = kafka::KafkaPartitionFor("Orders/p0", kShards);
  const uint64_t epoch = members_[0]->cluster->Routes()[shard].epoch;
  ProduceEntity("p0", "r1", epoch << 40 | 1, epoch, false);
  ProduceEntity("p0", "r2", epoch << 40 | 2, epoch, false);
  std::vector<ChangeRecord> local;
  for (uint64_t lsn : {1, 2}) {
    ChangeRecord r;
    r.table = "Orders";
    r.partition_key = "p0";
    r.epoch = epoch;
    ChangeOp op;
    op.row_key = "r" + std::to_string(lsn);
    op.kind = OpKind::kInsertOrReplace;
    op.version = epoch << 40 | lsn;
    op.after = Entity();
    r.ops.push_back(op);
    local.push_back(r);
  }
  members_[0]->cluster->Stop();
  members_[0]->cluster.reset();

  RecreateKafka();
  CreateOrdersTable();
  StartMembers({"a"}, [&](Member* m) { m->rec.rows[shard] = local; });
  Member* a = members_.back().get();
  ASSERT_TRUE(Eventually([&] { return a->cluster->Stats().owned.size() == kShards; }, 60s))
      << Describe();
  // Every shard had a claim: a knows each partition held records, and the
  // new ones hold none. Its restores must neither drop nor serve; give them
  // the time a restore takes here (well under a second) a few times over.
  const auto until = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_TRUE(a->cluster->Stats().serving.empty()) << Describe();
    std::this_thread::sleep_for(100ms);
  }
  {
    std::lock_guard l(a->rec.mu);
    EXPECT_EQ(a->rec.drops, 0);
  }
  EXPECT_EQ(a->rec.Rows(shard).size(), 2u);
  const ClusterStats stats = a->cluster->Stats();
  EXPECT_EQ(stats.held.size(), static_cast<size_t>(kShards));
  EXPECT_EQ(stats.restore_gaps_total, static_cast<uint64_t>(kShards));
  EXPECT_TRUE(Mentions(stats.problems, "partition " + std::to_string(shard) + " ends at offset 0"))
      << a->cluster->StatusJson();
  EXPECT_EQ(a->cluster->RouteShard(shard).kind, Route::Kind::kUnavailable);
}

}  // namespace
}  // namespace sidetable::cluster
