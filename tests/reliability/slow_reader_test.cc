// Slow readers (session 35): a connection that sends queries for large
// pages and does not read the replies. A reply used to leave admission once
// it was handed to the ROUTER socket, and a page was bounded by entity count
// only, so libzmq held up to sndhwm (1,000 and more) pages of up to 1 GB for
// such a client: an outside test saw RSS go from 422 MB to 1.2 GB while
// /health said inflight_bytes 0. Now a page ends at 4 MiB and a large reply
// stays charged until libzmq lets go of it: the connection is answered
// ServerBusy (connection_bytes) and the server's memory stays bounded.
// Real process, loopback.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "client/client.h"
#include "client/entity_builder.h"
#include "testing/sidecar_process.h"
#include "testing/temp_dir.h"
#include "tests/reliability/raw_peer.h"
#include "tests/sidecar/e2e_metrics.h"

namespace sidetable::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kMaxRequest = 2 * kMiB;
constexpr uint64_t kMaxInflight = 32 * kMiB;
constexpr uint64_t kPerConnectionBytes = 8 * kMiB;
// 12 entities of ~960 KB: 11.5 MB, one page before the fix; pages of 5
// entities (4.8 MB) under the 4 MiB bound now.
constexpr int kEntities = 12;
// A page's largest size: the bound plus the entity that reaches it.
constexpr uint64_t kLargestPage = 5 * kMiB;

// Polls until `done()` or the deadline; returns done().
template <typename F>
bool WaitFor(F done, std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (!done() && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return done();
}

class SlowReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string config = dir_.Sub("slow.yaml");
    std::ofstream(config)
        << "sidecar:\n"
        << "  workers: 2\n"
        << "  max_request_bytes: " << kMaxRequest << "\n"
        << "  max_inflight_bytes: " << kMaxInflight << "\n"
        << "  max_inflight_bytes_per_connection: " << kPerConnectionBytes << "\n"
        << "storage:\n  durability: os\n  block_cache_mb: 8\n  write_buffer_mb: 4\n";
    server_ = std::make_unique<SidecarProcess>(SIDETABLE_BIN, dir_.Sub("db"),
                                               std::vector<std::string>{"--config", config});
    ASSERT_TRUE(server_->Start()) << server_->Log();
    client::ClientOptions o;
    o.endpoint = server_->endpoint();
    o.timeout = std::chrono::milliseconds(20000);
    auto c = client::Client::Connect(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(c).value();
    ASSERT_TRUE(client_->CreateTable("Big").ok());
    for (int i = 0; i < kEntities; i++) {
      client::EntityBuilder e("p", "r" + std::to_string(10 + i));
      for (int j = 0; j < 15; j++)
        e.Binary("b" + std::to_string(j), std::string(64000, static_cast<char>('a' + j)));
      Batch b("Big");
      b.Insert(e.Build());
      ASSERT_TRUE(client_->Execute(b).ok());
    }
    // Warm up (a reader's pages through every worker) before the baseline.
    for (int i = 0; i < 4; i++) ASSERT_EQ(ReadAll(), static_cast<size_t>(kEntities));
    baseline_ = std::max(ProcStatusBytes(server_->pid(), "VmRSS"),
                         ProcStatusBytes(server_->pid(), "VmHWM"));
    ASSERT_GT(baseline_, 0u);
  }

  void TearDown() override {
    client_.reset();
    if (server_) {
      EXPECT_EQ(server_->Stop(), 0) << server_->Log();
    }
  }

  // Every entity of Big through a client that reads its replies.
  size_t ReadAll() {
    size_t n = 0;
    auto it = client_->Query({.table = "Big"});
    for (Entity e; it.Next(&e);) n++;
    EXPECT_TRUE(it.status().ok()) << it.status().ToString();
    return n;
  }

  TempDir dir_;
  std::unique_ptr<SidecarProcess> server_;
  std::unique_ptr<client::Client> client_;
  uint64_t baseline_ = 0;
};

TEST_F(SlowReaderTest, AConnectionThatDoesNotReadGetsServerBusyAndMemoryStaysBounded) {
  constexpr int kQueries = 20;
  const uint64_t queries_before = Metric(*server_, "sidetable_requests_total{op=\"Query\"}");
  ASSERT_NE(queries_before, kNoMetric);
  zmq::context_t ctx;
  zmq::socket_t slow(ctx, zmq::socket_type::dealer);
  slow.set(zmq::sockopt::linger, 0);
  // As little as possible read ahead on this side: the replies stay queued
  // at the server.
  slow.set(zmq::sockopt::rcvhwm, 1);
  slow.set(zmq::sockopt::rcvbuf, 4096);
  slow.connect(server_->endpoint());
  for (int i = 1; i <= kQueries; i++) {
    wire::Request r;
    r.id = static_cast<uint64_t>(i);
    r.op = wire::Op::kQuery;
    r.table = "Big";
    r.top = 1000;
    std::string frame;
    wire::EncodeRequest(r, &frame);
    ASSERT_TRUE(slow.send(zmq::buffer(frame), zmq::send_flags::none));
  }
  // Every query answered as far as the server goes (its reply queued, or refused).
  ASSERT_TRUE(WaitFor(
      [&] {
        return Metric(*server_, "sidetable_requests_total{op=\"Query\"}") >=
               queries_before + kQueries;
      },
      std::chrono::seconds(60)));
  // The replies that wait are counted, and no more than the connection's
  // bound and the one reply that found it under the bound.
  const uint64_t waiting = Metric(*server_, "sidetable_inflight_reply_bytes");
  EXPECT_GT(waiting, 0u) << "the replies waiting for the slow reader must be counted";
  EXPECT_LE(waiting, kPerConnectionBytes + kLargestPage);
  EXPECT_GE(Metric(*server_, "sidetable_inflight_bytes_peak"), waiting);
  // Another client, one that reads, is served meanwhile.
  EXPECT_EQ(ReadAll(), static_cast<size_t>(kEntities));
  const uint64_t hwm = ProcStatusBytes(server_->pid(), "VmHWM");
  const uint64_t growth = hwm > baseline_ ? hwm - baseline_ : 0;

  // Now the slow reader reads: every query was answered, some of them
  // ServerBusy instead of another page held for it.
  slow.set(zmq::sockopt::rcvtimeo, 20000);
  int ok = 0, busy = 0;
  for (int i = 0; i < kQueries; i++) {
    zmq::message_t m;
    ASSERT_TRUE(slow.recv(m)) << "reply " << i << " of " << kQueries << " missing";
    wire::Header h;
    std::string_view body;
    Status s = wire::DecodeReply(std::string_view(static_cast<const char*>(m.data()), m.size()), &h,
                                 &body);
    if (s.ok()) {
      wire::QueryReply page;
      ASSERT_TRUE(wire::DecodeQuery(body, &page).ok());
      EXPECT_LE(m.size(), kLargestPage);
      EXPECT_TRUE(page.next_pk.has_value());  // a short page: 12 entities do not fit in one
      ok++;
    } else {
      EXPECT_EQ(s.code(), Code::kServerBusy) << s.ToString();
      EXPECT_NE(s.message().find("connection_bytes"), std::string::npos) << s.message();
      busy++;
    }
  }
  std::printf(
      "slow reader: %d pages, %d ServerBusy; %.1f MiB of replies waited; peak RSS growth %.1f "
      "MiB\n",
      ok, busy, waiting / double(kMiB), growth / double(kMiB));
  EXPECT_GE(ok, 1);
  EXPECT_GE(busy, 1) << "a connection that does not read its replies must be refused";
  // docs/operations.md, "RSS ceiling": the connection's bound and one page
  // over it, the page the prefetch holds and the one being built, and a
  // fixed allowance for the allocator. Before: ~18 pages of 11.5 MB.
  EXPECT_LE(growth, kPerConnectionBytes + 3 * kLargestPage + 32 * kMiB);
  // Read, the replies are released (libzmq's free callback).
  EXPECT_TRUE(WaitFor([&] { return Metric(*server_, "sidetable_inflight_reply_bytes") == 0; },
                      std::chrono::seconds(10)));
  EXPECT_TRUE(WaitFor([&] { return Metric(*server_, "sidetable_inflight_bytes") == 0; },
                      std::chrono::seconds(10)));
}

}  // namespace
}  // namespace sidetable::testing
