// Floods (issue 12, item 3): whatever clients send, the sidecar's memory
// stays under the ceiling docs/operations.md gives for its configuration,
// every request is answered, refusals (ServerBusy) come at once, and one
// flooding connection does not starve another. Real processes, loopback.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "protocol/msgpack.h"
#include "tests/reliability/raw_peer.h"
#include "testing/sidecar_process.h"
#include "testing/temp_dir.h"

namespace sidetable::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;
// Small limits so the flood is quick (written into the config file below).
constexpr uint64_t kMaxRequest = 1 * kMiB;
constexpr uint64_t kMaxInflight = 8 * kMiB;
constexpr uint64_t kPerConnectionRequests = 4;
constexpr uint64_t kPerConnectionBytes = 3 * kMiB;
constexpr uint64_t kWriteBufferMiB = 4;

// docs/operations.md, "Capacity and limits": growth over the idle process
// is at most the in-flight bound plus one request's charge, libzmq's
// per-connection buffer (rcvhwm 8 + 1 frames of at most maxmsgsize, twice
// max_request_bytes), and RocksDB's memtables (3 column families x 2 x
// write_buffer_mb); plus a fixed allowance for the allocator and threads.
uint64_t CeilingGrowth(uint64_t connections) {
  return kMaxInflight + 3 * kMaxRequest + connections * 9 * 2 * kMaxRequest +
         3 * 2 * kWriteBufferMiB * kMiB + 32 * kMiB;
}

class FloodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string config = dir_.Sub("flood.yaml");
    std::ofstream(config) << "sidecar:\n"
                          << "  workers: 2\n"
                          << "  max_request_bytes: " << kMaxRequest << "\n"
                          << "  max_inflight_bytes: " << kMaxInflight << "\n"
                          << "  max_inflight_per_connection: " << kPerConnectionRequests << "\n"
                          << "  max_inflight_bytes_per_connection: " << kPerConnectionBytes << "\n"
                          << "storage:\n  durability: " << Durability() << "\n"
                          << "  block_cache_mb: 8\n  write_buffer_mb: " << kWriteBufferMiB << "\n";
    server_ = std::make_unique<SidecarProcess>(SIDETABLE_BIN, dir_.Sub("db"),
                                               std::vector<std::string>{"--config", config});
    ASSERT_TRUE(server_->Start()) << server_->Log();
    RawPeer admin(ctx_, server_->endpoint());
    admin.Send(1, SimpleFrame(wire::Op::kCreateTable, 1, "Flood"));
    admin.Collect(5000);
    ASSERT_TRUE(admin.all_answered());
    // Warm up (RocksDB, allocator arenas of every worker) before the baseline.
    for (uint64_t i = 2; i < 12; i++) admin.Send(i, WriteFrame(i, "Flood", "warm" + std::to_string(i), "w", 2, 2, 30000));
    admin.Collect(10000);
    ASSERT_TRUE(admin.all_answered());
    baseline_ = std::max(ProcStatusBytes(server_->pid(), "VmRSS"), ProcStatusBytes(server_->pid(), "VmHWM"));
    ASSERT_GT(baseline_, 0u);
  }

  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->Stop(), 0) << server_->Log();
    }
  }

  virtual const char* Durability() { return "os"; }

  uint64_t PeakGrowth() {
    const uint64_t hwm = ProcStatusBytes(server_->pid(), "VmHWM");
    return hwm > baseline_ ? hwm - baseline_ : 0;
  }

  TempDir dir_;
  zmq::context_t ctx_;
  std::unique_ptr<SidecarProcess> server_;
  uint64_t baseline_ = 0;
};

// Several connections pipeline ~600 KB EGTs as fast as the socket takes
// them: memory stays under the ceiling, each request is answered (done or
// 503), and the 503s come back at once instead of after seconds.
TEST_F(FloodTest, LargeEgtsFromSeveralConnectionsStayUnderTheCeiling) {
  constexpr int kConnections = 4, kPerConnection = 100;
  std::vector<std::unique_ptr<RawPeer>> peers;
  for (int c = 0; c < kConnections; c++) peers.push_back(std::make_unique<RawPeer>(ctx_, server_->endpoint()));
  std::vector<std::thread> threads;
  for (int c = 0; c < kConnections; c++) {
    threads.emplace_back([&, c] {
      for (int i = 0; i < kPerConnection; i++) {
        const uint64_t id = static_cast<uint64_t>(c) * 1000 + i + 1;
        // 10 entities x 2 properties x 30,000 characters: ~600 KB.
        peers[c]->Send(id, WriteFrame(id, "Flood", "c" + std::to_string(c) + "p" + std::to_string(i % 5),
                                      "r" + std::to_string(i), 10, 2, 30000));
        peers[c]->Collect(0);
      }
      peers[c]->Collect(30000);
    });
  }
  for (auto& t : threads) t.join();
  size_t ok = 0, busy = 0;
  std::vector<double> busy_ms, ok_ms;
  for (auto& p : peers) {
    EXPECT_TRUE(p->all_answered()) << p->answered() << " of " << p->sent();
    for (const auto& [id, r] : p->replies()) {
      if (r.status / 100 == 2) {
        ok++;
        ok_ms.push_back(r.ms());
      } else {
        EXPECT_EQ(r.code, Code::kServerBusy) << id << ": " << r.message;
        busy++;
        busy_ms.push_back(r.ms());
      }
    }
  }
  const uint64_t growth = PeakGrowth();
  std::printf("flood: %zu ok (p50 %.1f ms), %zu ServerBusy (p50 %.1f ms, p99 %.1f ms, max %.1f ms); "
              "peak RSS growth %.1f MiB (ceiling %.1f MiB)\n",
              ok, Percentile(ok_ms, 0.5), busy, Percentile(busy_ms, 0.5), Percentile(busy_ms, 0.99),
              Percentile(busy_ms, 1.0), growth / double(kMiB), CeilingGrowth(kConnections) / double(kMiB));
  EXPECT_GT(ok, 0u);
  EXPECT_GT(busy, 0u) << "a flood past the in-flight bounds must be refused";
  EXPECT_LE(growth, CeilingGrowth(kConnections));
  // Generous (a 2-core machine shared with compilers): the figures are in
  // docs/reliability.md. Measured from the client's send, so it includes
  // the frames queued ahead in the kernel and libzmq buffers.
  EXPECT_LT(Percentile(busy_ms, 0.99), 2000.0);
}

// Frames that declare millions of properties or operations: refused at
// decoding, before anything is allocated for them.
TEST_F(FloodTest, HugeDeclaredCountsGetErrorsWithoutMemory) {
  auto frame = [](uint64_t id, bool many_ops) {
    std::string out;
    wire::AppendHeader(&out, wire::Header{wire::kVersion, static_cast<uint8_t>(wire::Op::kWrite), 0, id});
    msgpack::Writer w(&out);
    w.MapHeader(2);
    w.Str("table");
    w.Str("Flood");
    w.Str("ops");
    const size_t room = kMaxRequest - 200;
    if (many_ops) {
      // Declares room/4 operations (what the old bound let through), each an empty map.
      w.ArrayHeader(static_cast<uint32_t>(room / 4));
      out.append(room / 4, '\x80');
      return out;
    }
    w.ArrayHeader(1);
    w.MapHeader(2);
    w.Str("op");
    w.Str("Insert");
    w.Str("entity");
    w.MapHeader(3);
    w.Str("pk");
    w.Str("p");
    w.Str("rk");
    w.Str("r");
    w.Str("props");
    // room/2 properties of two bytes each: "" = 0.
    w.MapHeader(static_cast<uint32_t>(room / 2));
    for (size_t i = 0; i < room / 2; i++) out.append("\xa0\x00", 2);
    return out;
  };
  constexpr int kConnections = 2, kFrames = 40;
  std::vector<std::thread> threads;
  std::atomic<int> answered{0}, refused{0};
  for (int c = 0; c < kConnections; c++) {
    threads.emplace_back([&, c] {
      RawPeer peer(ctx_, server_->endpoint());
      for (int i = 0; i < kFrames; i++) {
        const uint64_t id = static_cast<uint64_t>(c) * 1000 + i + 1;
        peer.Send(id, frame(id, i % 2 == 1));
      }
      peer.Collect(30000);
      for (const auto& [id, r] : peer.replies()) {
        answered += r.status != 0;
        refused += r.status == 400 || r.status == 503;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(answered.load(), kConnections * kFrames);
  EXPECT_EQ(refused.load(), kConnections * kFrames);
  const uint64_t growth = PeakGrowth();
  std::printf("huge counts: %d answered, peak RSS growth %.1f MiB\n", answered.load(), growth / double(kMiB));
  // Each frame is ~1 MiB and none is decoded into more than a few bytes:
  // well under the general ceiling, and far under one decoded frame of the
  // old code (~40 MiB of Property objects).
  EXPECT_LE(growth, 48 * kMiB);
  // Still serving.
  RawPeer after(ctx_, server_->endpoint());
  after.Send(1, SimpleFrame(wire::Op::kPing, 1, ""));
  after.Collect(5000);
  EXPECT_EQ(after.replies().at(1).status, 200);
}

class FairnessTest : public FloodTest {
 protected:
  // fsync makes each large EGT slow, so a flood outpaces the workers.
  const char* Durability() override { return "fsync"; }
};

// One connection floods large EGTs over many partitions; another one's
// small writes and reads keep succeeding with bounded latency.
TEST_F(FairnessTest, OneFloodingConnectionDoesNotStarveAnother) {
  std::atomic<bool> done{false};
  std::thread flooder([&] {
    RawPeer peer(ctx_, server_->endpoint());
    // Built once, so the flood goes as fast as the socket takes it; the
    // same rows again are a legal batch too (InsertOrReplace).
    std::vector<std::string> frames;
    for (int p = 0; p < 20; p++) {
      frames.push_back(WriteFrame(0, "Flood", "f" + std::to_string(p), "r", 10, 2, 30000, OpKind::kInsertOrReplace));
    }
    for (int i = 0; i < 600 && !done.load(); i++) {
      const uint64_t id = static_cast<uint64_t>(i) + 1;
      std::string& frame = frames[i % frames.size()];
      wire::SetRequestId(&frame, id);
      peer.Send(id, frame);
      peer.Collect(0);
    }
    peer.Collect(30000);
  });
  // Let the flood build up first.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  RawPeer victim(ctx_, server_->endpoint());
  std::vector<double> ms;
  int ok = 0;
  for (uint64_t i = 1; i <= 40; i++) {
    const std::string rk = "v" + std::to_string(i);
    victim.Send(i, i % 2 ? WriteFrame(i, "Flood", "victim", rk, 1, 1, 100)
                         : SimpleFrame(wire::Op::kGet, i, "Flood", "victim", "v" + std::to_string(i - 1) + "-0"));
    victim.Collect(10000);
    const Reply& r = victim.replies().at(i);
    ok += r.status / 100 == 2;
    EXPECT_EQ(r.status / 100, 2) << i << ": " << r.message;
    ms.push_back(r.ms());
  }
  done = true;
  flooder.join();
  std::printf("victim beside a flood: %d of 40 ok, p50 %.1f ms, max %.1f ms\n", ok, Percentile(ms, 0.5),
              Percentile(ms, 1.0));
  EXPECT_EQ(ok, 40);
  EXPECT_LT(Percentile(ms, 1.0), 1000.0);
}

}  // namespace
}  // namespace sidetable::testing
