// Scale-out routing's error paths (sidecar/cluster_routing.cc,
// sidecar/frontend.cc; docs/scale-out.md "Routing") through a real
// `sidetable` member, m0, whose only other member is played by the test:
// an in-process cluster::Cluster ("peer") joins the owners' group on the
// embedded Kafka and advertises a FakePeer (a ROUTER on 127.0.0.1) as its
// endpoint. So m0 owns some shards and routes the peer's shards to the
// FakePeer, which answers as each test says: NotOwner, ServerBusy, a page.
//
// What is checked:
// - a forward answered NotOwner is re-routed (sent again) within
//   cluster.rebalance_wait_ms, and the client gets the answer of the retry;
// - a NotOwner that persists ends in ServerBusy after that wait (the retries
//   stop by themselves);
// - a plain ServerBusy from the owner is relayed, not retried;
// - a fan-out part answered NotOwner is asked again, and the merged page
//   holds the retry's rows;
// - a request whose routing id starts `st-fwd:` (kForwardedIdPrefix) for a
//   shard served elsewhere is refused NotOwner by m0, never forwarded.
//
// The group forms once for the suite (the mock takes a few seconds); every
// wait is a bounded loop.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <set>

#include "common/kafka/partitioner.h"
#include "engine/utf8.h"
#include "sidecar/cluster/cluster.h"
#include "sidecar/cluster_routing.h"
#include "sidecar/forwarder.h"
#include "testing/cluster_harness.h"
#include "tests/sidecar/fake_peer.h"

namespace sidetable::sidecar {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using fake::Answer;
using fake::FakePeer;
using fake::Received;

constexpr int kShards = 6;
constexpr int kRebalanceWaitMs = 3000;
const std::string kTable = "Routed";

// The suite's cluster: m0 (a real sidecar) and the peer (the test).
struct Suite {
  std::unique_ptr<sidetable::testing::ClusterHarness> harness;
  std::unique_ptr<FakePeer> fake;
  std::unique_ptr<cluster::Cluster> peer;
  std::set<int32_t> peer_shards, m0_shards;
  std::string m0_endpoint;

  // What the FakePeer does now (set by each test).
  std::mutex mu;
  FakePeer::Respond respond;
};
Suite* g_suite = nullptr;

class ClusterForwardingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_suite = new Suite();
    Suite& s = *g_suite;
    s.fake = std::make_unique<FakePeer>([](const Received& r, size_t index) {
      std::lock_guard lock(g_suite->mu);
      if (!g_suite->respond) return Answer{Answer::When::kNever, {}};
      return g_suite->respond(r, index);
    });
    sidetable::testing::ClusterHarnessOptions o;
    o.service = "fwd-test";
    o.shards = kShards;
    o.acks = "local";
    o.rebalance_wait_ms = kRebalanceWaitMs;
    s.harness = std::make_unique<sidetable::testing::ClusterHarness>(o);
    Status init = s.harness->Init();
    ASSERT_TRUE(init.ok()) << init.ToString();

    // The peer and m0 join together: one round of the group.
    cluster::ClusterOptions copts;
    copts.service = o.service;
    copts.member_id = "peer";
    copts.advertise = s.fake->endpoint();
    copts.acks = cluster::AckMode::kLocal;
    copts.rebalance_wait_ms = o.rebalance_wait_ms;
    copts.session_timeout_ms = o.session_timeout_ms;
    changestream::KafkaOptions kopts;
    kopts.bootstrap = s.harness->bootstraps();
    kopts.partitions = kShards;
    kopts.replication_factor = o.brokers;
    cluster::ClusterHooks hooks;
    hooks.apply = [](const ChangeRecord&) { return Status::OK(); };
    hooks.drop_shards = [](const std::vector<int32_t>&) -> Result<uint64_t> { return uint64_t{0}; };
    hooks.apply_table = [](const std::string&, bool, const TableEventStamp&) {
      return Status::OK();
    };
    Status peer_started = Status::OK();
    std::thread join([&] {
      auto c = cluster::Cluster::Start(copts, kopts, s.harness->ChangeTopic(), "peer", s.fake->endpoint(),
                                       std::move(hooks), &s.harness->kafka());
      if (c.ok()) s.peer = std::move(c).value();
      else peer_started = c.status();
    });
    const int m0 = s.harness->AddMember();
    join.join();
    ASSERT_TRUE(peer_started.ok()) << peer_started.ToString();
    ASSERT_EQ(m0, 0) << s.harness->Logs();
    s.m0_endpoint = s.harness->Endpoint(0)->first;

    // Settled: each side serves what it owns, every shard is owned by one of
    // them, and m0's owner map sends the peer's shards to the FakePeer.
    std::string why;
    const auto until = Clock::now() + 60s;
    for (;;) {
      if (Settled(&why)) break;
      ASSERT_LT(Clock::now(), until) << "the two members did not settle: " << why << "\n" << s.harness->Logs();
      std::this_thread::sleep_for(200ms);
    }
  }

  static bool Settled(std::string* why) {
    Suite& s = *g_suite;
    cluster::ClusterStats peer = s.peer->Stats();
    if (peer.owned.empty() ||
        std::set<int32_t>(peer.owned.begin(), peer.owned.end()) !=
            std::set<int32_t>(peer.serving.begin(), peer.serving.end())) {
      *why = "the peer owns nothing yet, or does not serve all it owns";
      return false;
    }
    auto m0 = s.harness->StatusOf(0, why);
    if (!m0) return false;
    if (m0->owned.empty() || m0->owned != m0->serving) {
      *why = "m0 owns nothing yet, or does not serve all it owns: " + m0->raw;
      return false;
    }
    if (m0->generation != peer.generation) {
      *why = "m0 and the peer are at different generations: " + m0->raw;
      return false;
    }
    std::set<int32_t> peer_shards(peer.serving.begin(), peer.serving.end());
    for (int32_t shard = 0; shard < kShards; shard++) {
      auto it = m0->owners.find(shard);
      if (it == m0->owners.end()) {
        *why = "m0 knows no owner of shard " + std::to_string(shard) + ": " + m0->raw;
        return false;
      }
      const bool peers = it->second.member == "peer" && it->second.endpoint == s.fake->endpoint() &&
                         peer_shards.count(shard) && !m0->serving.count(shard);
      const bool m0s = it->second.member == "m0" && m0->serving.count(shard) && !peer_shards.count(shard);
      if (!peers && !m0s) {
        *why = "shard " + std::to_string(shard) + " is not settled: " + m0->raw;
        return false;
      }
    }
    s.peer_shards = peer_shards;
    s.m0_shards.clear();
    for (int shard : m0->serving) s.m0_shards.insert(shard);
    return true;
  }

  static void TearDownTestSuite() {
    if (g_suite == nullptr) return;
    if (g_suite->peer) g_suite->peer->Stop();
    g_suite->peer.reset();
    g_suite->harness.reset();  // m0 is killed
    g_suite->fake.reset();
    delete g_suite;
    g_suite = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(g_suite, nullptr);
    ASSERT_TRUE(g_suite->peer != nullptr && !g_suite->peer_shards.empty()) << "the suite did not start";
    base_ = g_suite->fake->count();
  }
  void TearDown() override { Behave(nullptr); }

  // What the FakePeer answers from now on; `index` counts this test's
  // requests from 0.
  void Behave(FakePeer::Respond respond) {
    const size_t base = base_;
    std::lock_guard lock(g_suite->mu);
    if (!respond) {
      g_suite->respond = nullptr;
      return;
    }
    g_suite->respond = [respond = std::move(respond), base](const Received& r, size_t index) {
      return respond(r, index - base);
    };
  }
  // The requests the FakePeer received during this test.
  std::vector<Received> Forwarded() const {
    auto all = g_suite->fake->received();
    return std::vector<Received>(all.begin() + static_cast<std::ptrdiff_t>(base_), all.end());
  }

  // A partition key whose shard (for kTable) the peer owns, or m0 owns.
  static std::string KeyOn(bool peer) {
    const auto& shards = peer ? g_suite->peer_shards : g_suite->m0_shards;
    for (int i = 0; i < 10000; i++) {
      std::string pk = "pk" + std::to_string(i);
      if (shards.count(kafka::KafkaPartitionFor(kTable + "/" + pk, kShards))) return pk;
    }
    ADD_FAILURE() << "no key found";
    return "";
  }

  // Sends `r` to m0 from a DEALER with routing id `identity` and returns
  // the reply frame (nullopt: none within `wait`).
  static std::optional<std::string> Call(const wire::Request& r, const std::string& identity,
                                         std::chrono::milliseconds wait = 15s) {
    zmq::context_t ctx(1);
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::routing_id, identity);
    s.connect(g_suite->m0_endpoint);
    std::string frame;
    wire::EncodeRequest(r, &frame);
    s.send(zmq::message_t(), zmq::send_flags::sndmore);
    s.send(zmq::buffer(frame), zmq::send_flags::none);
    zmq::pollitem_t item{static_cast<void*>(s), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, wait) <= 0) return std::nullopt;
    std::string reply;
    for (;;) {
      zmq::message_t m;
      if (!s.recv(m, zmq::recv_flags::dontwait)) break;
      reply = m.to_string();
      if (!m.more()) break;
    }
    return reply;
  }
  // kTable through m0 (the suite shares it: it may exist already).
  static void CreateTheTable() {
    wire::Request create;
    create.id = 1;
    create.op = wire::Op::kCreateTable;
    create.table = kTable;
    auto reply = Call(create, ClientId());
    ASSERT_TRUE(reply.has_value());
    wire::Header h;
    std::string_view body;
    Status s = wire::DecodeReply(*reply, &h, &body);
    ASSERT_TRUE(s.ok() || s.code() == Code::kTableAlreadyExists) << s.ToString();
  }
  // A query sent to m0, answered OK and decoded into *out.
  static void QueryThroughM0(const wire::Request& q, wire::QueryReply* out) {
    auto reply = Call(q, ClientId());
    ASSERT_TRUE(reply.has_value()) << "m0 did not answer";
    wire::Header h;
    std::string_view body;
    Status s = wire::DecodeReply(*reply, &h, &body);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(wire::DecodeQuery(body, out).ok());
  }
  static std::string ClientId() {
    static std::atomic<int> n{0};
    return "client-" + std::to_string(n.fetch_add(1));
  }

  static wire::Request Get(const std::string& pk) {
    wire::Request r;
    r.id = 7;
    r.op = wire::Op::kGet;
    r.table = kTable;
    r.pk = pk;
    r.rk = "r1";
    return r;
  }

  static std::string EntityReply(const Received& r, const std::string& pk, const std::string& rk) {
    Entity e;
    e.partition_key = pk;
    e.row_key = rk;
    e.Set("From", Value::String("the retry"));
    std::string body;
    wire::EncodeEntityReply(e, &body);
    return fake::ReplyFrame(r, body);
  }
  static std::string NotOwner(const Received& r) {
    return fake::ErrorFrame(r, Status(Code::kServerBusy, std::string(kNotOwnerMessage) +
                                                             ": shard not served by this sidecar now; retry"));
  }

  size_t base_ = 0;
};

TEST_F(ClusterForwardingTest, AForwardAnsweredNotOwnerIsSentAgainAndTheRetryAnswers) {
  const std::string pk = KeyOn(/*peer=*/true);
  Behave([&](const Received& r, size_t index) {
    if (index == 0) return Answer{Answer::When::kNow, NotOwner(r)};
    return Answer{Answer::When::kNow, EntityReply(r, pk, "r1")};
  });
  auto not_owner = [&] {
    auto body = sidetable::testing::HttpGet(g_suite->harness->http(0), "/metrics");
    return body ? sidetable::testing::MetricValue(*body, "sidetable_cluster_not_owner_total") : -1.0;
  };
  const double not_owner_before = not_owner();
  auto reply = Call(Get(pk), ClientId());
  ASSERT_TRUE(reply.has_value()) << "m0 did not answer";
  wire::Header h;
  std::string_view body;
  Status s = wire::DecodeReply(*reply, &h, &body);
  ASSERT_TRUE(s.ok()) << "the client saw the first answer: " << s.ToString();
  EXPECT_EQ(h.request_id, 7u);
  Entity e;
  ASSERT_TRUE(wire::DecodeEntityReply(body, &e).ok());
  EXPECT_EQ(e.partition_key, pk);
  ASSERT_NE(e.Find("From"), nullptr);

  auto got = Forwarded();
  ASSERT_EQ(got.size(), 2u);
  for (const Received& r : got) {
    EXPECT_TRUE(r.identity.starts_with(kForwardedIdPrefix)) << r.identity;
    wire::Request fwd;
    ASSERT_TRUE(wire::DecodeRequest(r.frame, &fwd).ok());
    EXPECT_EQ(fwd.op, wire::Op::kGet);
    EXPECT_EQ(fwd.pk, pk);
  }
  // The re-route is counted where it happened (docs/operations.md).
  EXPECT_EQ(not_owner() - not_owner_before, 1.0);
}

TEST_F(ClusterForwardingTest, ANotOwnerThatPersistsEndsInServerBusyAfterTheWait) {
  const std::string pk = KeyOn(/*peer=*/true);
  Behave([&](const Received& r, size_t) { return Answer{Answer::When::kNow, NotOwner(r)}; });
  const auto start = Clock::now();
  auto reply = Call(Get(pk), ClientId());
  const auto took = Clock::now() - start;
  ASSERT_TRUE(reply.has_value()) << "m0 did not answer";
  wire::Header h;
  std::string_view body;
  Status s = wire::DecodeReply(*reply, &h, &body);
  EXPECT_EQ(s.code(), Code::kServerBusy) << s.ToString();
  EXPECT_NE(s.message().find(kNotOwnerMessage), std::string::npos) << s.ToString();
  // Retried for the rebalance wait, then given up (with a forward's own
  // time-out as the slack).
  EXPECT_GE(Forwarded().size(), 2u);
  EXPECT_LT(took, std::chrono::milliseconds(2 * kRebalanceWaitMs) + 2s);
}

TEST_F(ClusterForwardingTest, APlainServerBusyFromTheOwnerIsRelayedNotRetried) {
  const std::string pk = KeyOn(/*peer=*/true);
  Behave([&](const Received& r, size_t) {
    return Answer{Answer::When::kNow, fake::ErrorFrame(r, Status(Code::kServerBusy, "queue full at the owner"))};
  });
  auto reply = Call(Get(pk), ClientId());
  ASSERT_TRUE(reply.has_value()) << "m0 did not answer";
  wire::Header h;
  std::string_view body;
  Status s = wire::DecodeReply(*reply, &h, &body);
  EXPECT_EQ(s.code(), Code::kServerBusy);
  EXPECT_NE(s.message().find("queue full at the owner"), std::string::npos) << s.ToString();
  // A retry would follow within ~20 ms; none comes.
  EXPECT_FALSE(g_suite->fake->WaitForCount(base_ + 2, 500ms));
  EXPECT_EQ(Forwarded().size(), 1u);
}

TEST_F(ClusterForwardingTest, AFanOutPartAnsweredNotOwnerIsAskedAgain) {
  ASSERT_NO_FATAL_FAILURE(CreateTheTable());
  const std::string pk = KeyOn(/*peer=*/true);
  std::vector<char> mask(kShards, 0);
  for (int32_t shard : g_suite->peer_shards) mask[static_cast<size_t>(shard)] = 1;
  const std::string plan = ClusterRouting::PlanWithShards("TableScan", mask);
  Behave([&](const Received& r, size_t index) {
    if (index == 0) return Answer{Answer::When::kNow, NotOwner(r)};
    wire::QueryReply page;
    Entity e;
    e.partition_key = pk;
    e.row_key = "from-the-peer";
    page.entities.push_back(e);
    page.plan = plan;
    std::string body;
    wire::EncodeQuery(page, &body);
    return Answer{Answer::When::kNow, fake::ReplyFrame(r, body)};
  });
  wire::Request q;
  q.id = 9;
  q.op = wire::Op::kQuery;
  q.table = kTable;
  wire::QueryReply merged;
  ASSERT_NO_FATAL_FAILURE(QueryThroughM0(q, &merged));
  ASSERT_EQ(merged.entities.size(), 1u);
  EXPECT_EQ(merged.entities[0].row_key, "from-the-peer");
  EXPECT_EQ(merged.plan, "FanOut(2 sidecars)");
  EXPECT_EQ(Forwarded().size(), 2u);
}

// A fan-out query whose $select leaves out the keys: the merge orders by
// and continues at (PartitionKey, RowKey), so it asks its parts for them
// and projects the merged page itself. Before session 38 the caller's
// $select went to the parts as it was, their rows came back without keys,
// and a page cut at $top continued at ("", ""): a client following the
// continuation read the first page for ever (seen from outside, two real
// members, $select=v, $top=1).
TEST_F(ClusterForwardingTest, AFanOutWithASelectAsksItsPartsForTheKeys) {
  ASSERT_NO_FATAL_FAILURE(CreateTheTable());
  // One row m0 holds, one the peer holds.
  const std::string local_pk = KeyOn(/*peer=*/false), peer_pk = KeyOn(/*peer=*/true);
  {
    wire::Request w;
    w.id = 2;
    w.op = wire::Op::kWrite;
    w.table = kTable;
    Operation op;
    op.kind = OpKind::kInsertOrReplace;
    op.entity.partition_key = local_pk;
    op.entity.row_key = "sel";
    op.entity.Set("v", Value::Int32(1));
    w.ops.push_back(op);
    auto reply = Call(w, ClientId());
    ASSERT_TRUE(reply.has_value());
    wire::Header h;
    std::string_view body;
    Status s = wire::DecodeReply(*reply, &h, &body);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  std::vector<char> mask(kShards, 0);
  for (int32_t shard : g_suite->peer_shards) mask[static_cast<size_t>(shard)] = 1;
  const std::string plan = ClusterRouting::PlanWithShards("TableScan", mask);
  // The peer answers as a member does: its row, projected by the $select it
  // was sent (EncodeQuery leaves out keys that are not selected).
  Behave([&](const Received& r, size_t) {
    wire::Request asked;
    if (!wire::DecodeRequest(r.frame, &asked).ok()) return Answer{Answer::When::kNow, NotOwner(r)};
    wire::QueryReply page;
    page.select = asked.select;
    const int c = asked.next_pk ? CompareOrdinal(peer_pk, *asked.next_pk) : 1;
    if (c > 0 || (c == 0 && CompareOrdinal("sel", asked.next_rk.value_or("")) >= 0)) {
      Entity e;
      e.partition_key = peer_pk;
      e.row_key = "sel";
      e.Set("v", Value::Int32(2));
      page.entities.push_back(e);
    }
    page.plan = plan;
    std::string body;
    wire::EncodeQuery(page, &body);
    return Answer{Answer::When::kNow, fake::ReplyFrame(r, body)};
  });
  auto page = [&](std::optional<std::pair<std::string, std::string>> from, wire::QueryReply* out) {
    wire::Request q;
    q.id = 9;
    q.op = wire::Op::kQuery;
    q.table = kTable;
    q.filter = "RowKey eq 'sel'";
    q.select = {"v"};
    q.top = 1;
    if (from) {
      q.next_pk = from->first;
      q.next_rk = from->second;
    }
    QueryThroughM0(q, out);
  };
  wire::QueryReply first;
  page(std::nullopt, &first);
  ASSERT_EQ(first.entities.size(), 1u);
  EXPECT_EQ(first.entities[0].partition_key, "") << "not selected: not in the reply";
  ASSERT_TRUE(first.next_pk.has_value()) << "two rows, $top 1";
  const bool local_first = CompareOrdinal(local_pk, peer_pk) < 0;
  EXPECT_EQ(*first.next_pk, local_first ? peer_pk : local_pk);
  EXPECT_EQ(first.next_rk.value_or(""), "sel");
  wire::QueryReply second;
  page(std::make_pair(*first.next_pk, first.next_rk.value_or("")), &second);
  ASSERT_EQ(second.entities.size(), 1u);
  EXPECT_FALSE(second.next_pk.has_value());
  const Value* v1 = first.entities[0].Find("v");
  const Value* v2 = second.entities[0].Find("v");
  ASSERT_TRUE(v1 != nullptr && v2 != nullptr);
  EXPECT_FALSE(*v1 == *v2) << "each row once";
  // What the parts were asked for: the keys besides the caller's names.
  ASSERT_FALSE(Forwarded().empty());
  wire::Request asked;
  ASSERT_TRUE(wire::DecodeRequest(Forwarded()[0].frame, &asked).ok());
  EXPECT_EQ(asked.select, (std::vector<std::string>{"PartitionKey", "RowKey", "v"}));
}

// The loop guard (forwarder.h): a request that arrives from a `st-fwd:`
// routing id runs on m0 or is refused NotOwner there, never forwarded on,
// even though m0 would forward the same request from any other client.
TEST_F(ClusterForwardingTest, ARequestFromAForwarderIsNeverForwardedAgain) {
  const std::string pk = KeyOn(/*peer=*/true);
  Behave([&](const Received& r, size_t) { return Answer{Answer::When::kNow, EntityReply(r, pk, "r1")}; });

  auto reply = Call(Get(pk), std::string(kForwardedIdPrefix) + "m9:1");
  ASSERT_TRUE(reply.has_value()) << "m0 did not answer";
  wire::Header h;
  std::string_view body;
  Status s = wire::DecodeReply(*reply, &h, &body);
  EXPECT_EQ(s.code(), Code::kServerBusy) << s.ToString();
  EXPECT_NE(s.message().find(kNotOwnerMessage), std::string::npos) << s.ToString();
  EXPECT_EQ(Forwarded().size(), 0u) << "m0 forwarded a forwarded request";

  // The same request from a client is forwarded: the key is the peer's.
  auto plain = Call(Get(pk), ClientId());
  ASSERT_TRUE(plain.has_value());
  EXPECT_TRUE(wire::DecodeReply(*plain, &h, &body).ok());
  EXPECT_EQ(Forwarded().size(), 1u);
}

}  // namespace
}  // namespace sidetable::sidecar
