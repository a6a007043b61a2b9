// CURVE between the sidecars of a cluster (docs/security.md, "CURVE in a
// cluster"; docs/scale-out.md, "Routing"): two real `sidetable` members on
// loopback around the mock Kafka (testing/cluster_harness.h), every listener
// requiring CURVE, each member with a key pair of its own
// (security.curve_secret_key_file) and an allow-list of its own
// (security.curve_clients_file). The test talks to each member as a CURVE
// client with its own key, which both allow-lists list.
//
// Distinct member keys on purpose: with one shared key pair a forwarder that
// expected its own key instead of the owner's published one would pass.
//
// What is checked:
// - every allow-list lists both members: a write through one member to a
//   shard the other owns is forwarded over CURVE and executed there, and
//   reads back through both (both directions);
// - one member's key pair is rotated (new key allowed, restart with it, old
//   key removed): forwarding works both ways with the new key;
// - the owner's allow-list lacks the forwarding member's key: the forwarded
//   write is ServerBusy (not executed), the owner refused the handshake, and
//   a read through the owner finds nothing; the other direction still works;
// - a member whose own CURVE is off publishes no key: a member with CURVE on
//   refuses to forward to it (ServerBusy, counted), and nothing is written.
//
// Every wait is bounded.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "client/client.h"
#include "client/curve.h"
#include "common/kafka/partitioner.h"
#include "protocol/curve_keys.h"
#include "testing/cluster_harness.h"
#include "testing/text.h"

namespace sidetable {
namespace {

using namespace std::chrono_literals;
using client::Client;
using client::ClientOptions;
using sidetable::testing::ClusterHarness;
using sidetable::testing::ClusterHarnessOptions;

constexpr int kShards = 4;
const std::string kTable = "CurveRouted";

curve::KeyPair NewPair() { return curve::GenerateKeyPair().value(); }

// Each member's security section: which keys it holds and allows.
struct MemberSecurity {
  bool curve = true;
  std::vector<std::string> allowed;  // public keys on its allow-list (the test client's is added)
};

class ClusterCurveTest : public ::testing::Test {
 protected:
  // Starts two members whose security sections `security` gives, and waits
  // until they agree on a complete assignment with shards on both.
  void StartCluster(const std::string& service, const std::vector<MemberSecurity>& security) {
    for (size_t i = 0; i < security.size(); i++) {
      const std::string prefix = ClusterHarness::MemberId(static_cast<int>(i));
      ASSERT_TRUE(curve::WriteKeyPair(dir_.Sub(prefix), keys_[i]).ok());
      WriteAllowList(static_cast<int>(i), security[i].allowed);
    }
    ClusterHarnessOptions o;
    o.service = service;
    o.shards = kShards;
    o.acks = "replicated";
    o.member_yaml = [this, security](int i) -> std::string {
      if (!security.at(i).curve) return "";
      const std::string prefix = dir_.Sub(ClusterHarness::MemberId(i));
      return "security:\n  curve_secret_key_file: " + prefix + ".key\n  curve_clients_file: " + prefix +
             ".clients\n";
    };
    harness_ = std::make_unique<ClusterHarness>(o);
    Status init = harness_->Init();
    ASSERT_TRUE(init.ok()) << init.ToString();
    ASSERT_TRUE(harness_->AddMembers(static_cast<int>(security.size()))) << harness_->Logs();
    ASSERT_NO_FATAL_FAILURE(WaitShardsOnEveryMember());
    for (int m = 0; m < static_cast<int>(security.size()); m++) clients_.push_back(Connect(m, security[m].curve));
    Status created = clients_[0]->CreateTable(kTable);
    ASSERT_TRUE(created.ok()) << created.ToString();
  }

  // Member i's allow-list: the test client's key and `allowed`. Written
  // aside and renamed: a running member never reads half a file.
  void WriteAllowList(int i, const std::vector<std::string>& allowed) {
    const std::string file = dir_.Sub(ClusterHarness::MemberId(i) + ".clients");
    {
      std::ofstream clients(file + ".tmp");
      clients << app_.public_key << " the-test\n";
      for (const auto& k : allowed) clients << k << "\n";
    }
    ASSERT_EQ(std::rename((file + ".tmp").c_str(), file.c_str()), 0);
  }

  // Waits until the members agree on a complete assignment with shards on
  // every one of them (a member that joined late may own nothing for a
  // round), and takes the owner map from it.
  void WaitShardsOnEveryMember() {
    std::string why;
    const auto until = std::chrono::steady_clock::now() + 90s;
    for (;;) {
      if (harness_->Stable(&why)) {
        auto status = harness_->StatusOf(0, &why);
        ASSERT_TRUE(status) << why;
        owners_.clear();
        for (const auto& [shard, owner] : status->owners) owners_[shard] = owner.member;
        bool everyone = true;
        for (int m = 0; m < harness_->size(); m++) everyone = everyone && !KeyOwnedBy(m).empty();
        if (everyone) return;
        why = "a member owns no shard: " + status->raw;
      }
      ASSERT_LT(std::chrono::steady_clock::now(), until) << why << "\n" << harness_->Logs();
      std::this_thread::sleep_for(200ms);
    }
  }

  std::unique_ptr<Client> Connect(int member, bool curve) {
    ClientOptions o;
    o.endpoint = harness_->Endpoint(member)->first;
    o.timeout = 5s;
    // ServerBusy is the answer under test here, not something to retry.
    o.max_attempts = 1;
    if (curve) o.curve = client::CurveClientKeys{keys_[member].public_key, app_.public_key, app_.secret_key};
    return Client::Connect(o).value();
  }

  // A partition key of kTable whose shard member `m` owns.
  std::string KeyOwnedBy(int m) const {
    for (int i = 0; i < 10000; i++) {
      const std::string pk = "pk-" + std::to_string(i);
      auto it = owners_.find(kafka::KafkaPartitionFor(kTable + "/" + pk, kShards));
      if (it != owners_.end() && it->second == ClusterHarness::MemberId(m)) return pk;
    }
    return "";
  }

  static Entity Row(const std::string& pk, const std::string& rk, int32_t v) {
    Entity e;
    e.partition_key = pk;
    e.row_key = rk;
    e.Set("V", Value::Int32(v));
    return e;
  }

  // The row through `member`: its V, or the read's error.
  Result<int32_t> ReadV(int member, const std::string& pk, const std::string& rk) {
    Result<Entity> got = clients_.at(member)->Get(kTable, pk, rk);
    if (!got.ok()) return got.status();
    const Value* v = got->Find("V");
    if (v == nullptr) return Status(Code::kInternal, "no V");
    return v->as_int32();
  }

  // A metric of `member`'s /metrics (summed over its labels); -1 when absent.
  double Metric(int member, const std::string& name) const {
    auto body = sidetable::testing::HttpGet(harness_->http(member), "/metrics");
    return body ? sidetable::testing::MetricValue(*body, name) : -1;
  }
  // One labelled line's value, e.g. `x{result="refused"}`; -1 when absent.
  double MetricLine(int member, const std::string& series) const {
    auto body = sidetable::testing::HttpGet(harness_->http(member), "/metrics");
    const size_t at = body ? body->find(series + " ") : std::string::npos;
    return at == std::string::npos ? -1 : std::strtod(body->c_str() + at + series.size() + 1, nullptr);
  }

  sidetable::testing::TempDir dir_;
  curve::KeyPair app_ = NewPair();
  std::vector<curve::KeyPair> keys_ = {NewPair(), NewPair()};
  std::unique_ptr<ClusterHarness> harness_;
  std::map<int, std::string> owners_;  // shard -> member id
  std::vector<std::unique_ptr<Client>> clients_;
};

TEST_F(ClusterCurveTest, WritesAreForwardedOverCurveWithEachOwnersPublishedKey) {
  StartCluster("curve-ok", {MemberSecurity{true, {keys_[0].public_key, keys_[1].public_key}},
                            MemberSecurity{true, {keys_[0].public_key, keys_[1].public_key}}});
  for (int from = 0; from < 2; from++) {
    const int owner = 1 - from;
    const std::string pk = KeyOwnedBy(owner), rk = "from-m" + std::to_string(from);
    auto written = clients_[from]->Insert(kTable, Row(pk, rk, 100 + from));
    ASSERT_TRUE(written.ok()) << "m" << from << " -> m" << owner << ": " << written.status().ToString() << "\n"
                              << harness_->Logs();
    for (int through = 0; through < 2; through++) {
      Result<int32_t> v = ReadV(through, pk, rk);
      ASSERT_TRUE(v.ok()) << "through m" << through << ": " << v.status().ToString();
      EXPECT_EQ(*v, 100 + from);
    }
    EXPECT_GE(Metric(from, "sidetable_cluster_forwarded_total"), 2) << "the write and a read were forwarded";
  }
  for (int m = 0; m < 2; m++) {
    EXPECT_EQ(Metric(m, "sidetable_cluster_forward_no_peer_key_total"), 0);
    EXPECT_EQ(Metric(m, "sidetable_cluster_forward_unreachable_total"), 0);
  }
  // Each member logs that it forwards over CURVE.
  for (int m = 0; m < 2; m++) {
    EXPECT_TRUE(sidetable::testing::Contains(harness_->process(m).Log(), "forwarding over CURVE"))
        << harness_->Logs();
  }
}

// Rotation of one member's key pair (docs/security.md, "CURVE in a
// cluster"): the new public key goes on the other member's allow-list, the
// member restarts with the new secret key, and its new member record tells
// the other member which key to expect from then on.
TEST_F(ClusterCurveTest, AMemberRestartedWithANewKeyPairIsForwardedToWithItsNewKey) {
  StartCluster("curve-rotate", {MemberSecurity{true, {keys_[0].public_key, keys_[1].public_key}},
                                MemberSecurity{true, {keys_[0].public_key, keys_[1].public_key}}});
  const curve::KeyPair rotated = NewPair();
  // 1. Both keys allowed everywhere.
  WriteAllowList(0, {keys_[0].public_key, keys_[1].public_key, rotated.public_key});
  WriteAllowList(1, {keys_[0].public_key, keys_[1].public_key, rotated.public_key});
  // 2. m1 restarts with the new key pair.
  harness_->KillMember(1);
  ASSERT_EQ(std::remove(dir_.Sub("m1.key").c_str()), 0);
  ASSERT_EQ(std::remove(dir_.Sub("m1.pub").c_str()), 0);
  ASSERT_TRUE(curve::WriteKeyPair(dir_.Sub("m1"), rotated).ok());
  keys_[1] = rotated;
  ASSERT_TRUE(harness_->RestartMember(1)) << harness_->Logs();
  ASSERT_NO_FATAL_FAILURE(WaitShardsOnEveryMember());
  clients_[1] = Connect(1, true);
  // 3. The old key is no longer allowed anywhere.
  WriteAllowList(0, {keys_[0].public_key, rotated.public_key});
  WriteAllowList(1, {keys_[0].public_key, rotated.public_key});

  for (int from = 0; from < 2; from++) {
    const int owner = 1 - from;
    const std::string pk = KeyOwnedBy(owner), rk = "rotated-from-m" + std::to_string(from);
    auto written = clients_[from]->Insert(kTable, Row(pk, rk, 300 + from));
    ASSERT_TRUE(written.ok()) << "m" << from << " -> m" << owner << ": " << written.status().ToString() << "\n"
                              << harness_->Logs();
    for (int through = 0; through < 2; through++) {
      Result<int32_t> v = ReadV(through, pk, rk);
      ASSERT_TRUE(v.ok()) << "through m" << through << ": " << v.status().ToString();
      EXPECT_EQ(*v, 300 + from);
    }
  }
  EXPECT_TRUE(sidetable::testing::Contains(harness_->process(1).Log(), rotated.public_key))
      << "m1 runs with the new key\n" << harness_->Logs();
}

TEST_F(ClusterCurveTest, AMemberWhoseKeyTheOwnerDoesNotAllowGetsServerBusyAndNothingIsWritten) {
  // m1 does not list m0's key; m0 lists m1's.
  StartCluster("curve-refused", {MemberSecurity{true, {keys_[0].public_key, keys_[1].public_key}},
                                 MemberSecurity{true, {keys_[1].public_key}}});
  const std::string pk = KeyOwnedBy(1);
  auto refused = clients_[0]->Insert(kTable, Row(pk, "refused", 1));
  ASSERT_FALSE(refused.ok()) << "m1 executed a write forwarded by a key it does not allow";
  EXPECT_EQ(refused.status().code(), Code::kServerBusy) << refused.status().ToString();
  EXPECT_TRUE(sidetable::testing::Contains(refused.status().message(), "not executed")) << refused.status().ToString();
  // Nothing was written: the owner has no such row.
  Result<int32_t> on_owner = ReadV(1, pk, "refused");
  EXPECT_EQ(on_owner.status().code(), Code::kResourceNotFound) << on_owner.status().ToString();
  EXPECT_GE(Metric(0, "sidetable_cluster_forward_unreachable_total"), 1);
  EXPECT_GE(MetricLine(1, "sidetable_curve_handshakes_total{result=\"refused\"}"), 1) << "m1 refused m0's key";
  EXPECT_TRUE(sidetable::testing::Contains(harness_->process(1).Log(), keys_[0].public_key))
      << "m1 logs the refused key\n" << harness_->Logs();

  // The allow-list decides, nothing else: m1 -> m0 is allowed and works.
  const std::string pk0 = KeyOwnedBy(0);
  auto allowed = clients_[1]->Insert(kTable, Row(pk0, "allowed", 2));
  ASSERT_TRUE(allowed.ok()) << allowed.status().ToString() << "\n" << harness_->Logs();
  Result<int32_t> v = ReadV(0, pk0, "allowed");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 2);
}

TEST_F(ClusterCurveTest, AnOwnerThatPublishesNoKeyIsNeverSentToInPlainText) {
  // m1 has CURVE off (a mixed cluster, e.g. half-way through enabling it):
  // its member record carries no key.
  StartCluster("curve-mixed", {MemberSecurity{true, {keys_[0].public_key}}, MemberSecurity{false, {}}});
  const std::string pk = KeyOwnedBy(1);
  auto refused = clients_[0]->Insert(kTable, Row(pk, "plain", 1));
  ASSERT_FALSE(refused.ok()) << "m0 forwarded to an owner without a key";
  EXPECT_EQ(refused.status().code(), Code::kServerBusy) << refused.status().ToString();
  EXPECT_TRUE(sidetable::testing::Contains(refused.status().message(), "publishes no CURVE key"))
      << refused.status().ToString();
  EXPECT_EQ(Metric(0, "sidetable_cluster_forward_no_peer_key_total"), 1);
  EXPECT_EQ(Metric(0, "sidetable_cluster_forwarded_total"), 0);
  Result<int32_t> on_owner = ReadV(1, pk, "plain");
  EXPECT_EQ(on_owner.status().code(), Code::kResourceNotFound) << on_owner.status().ToString();
  EXPECT_TRUE(sidetable::testing::Contains(harness_->process(0).Log(), "publishes no CURVE key"))
      << harness_->Logs();
}

}  // namespace
}  // namespace sidetable
