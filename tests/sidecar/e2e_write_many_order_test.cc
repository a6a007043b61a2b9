// A WriteMany's batches run in their partitions' order with the requests
// sent before and after it on the connection, whichever worker thread
// holds those partitions (sidecar/write_many_gather.h). Before, a WriteMany
// ran whole on the worker of its first batch's partition, so its other
// batches could overtake, or be overtaken by, requests of their partitions
// queued on other workers (docs/protocol.md, "Request ids").
#include <chrono>
#include <csignal>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "protocol/wire.h"
#include "tests/sidecar/e2e_fixture.h"
#include "tests/sidecar/e2e_metrics.h"
#include "tests/sidecar/e2e_pipelined.h"

namespace sidetable::testing {
namespace {

// Four workers, and every request above inline_max_bytes, so that each
// waits on its partition's queue. In both durabilities: in fsync the reply
// of a split request waits for its parts' newest LSN (durable_acks.cc).
class WriteManyOrderTest : public SidecarTest, public ::testing::WithParamInterface<const char*> {
 protected:
  std::vector<std::string> ServerArgs() override { return FourQueuedWorkersArgs(GetParam()); }
};

Entity Padded(const std::string& pk, const std::string& rk, int version) {
  Entity e;
  e.partition_key = pk;
  e.row_key = rk;
  e.Set("Age", Value::Int32(version));
  return PadPastInline(e);
}

wire::WriteItem Egt(const std::string& table, OpKind kind, Entity e) {
  wire::WriteItem item;
  item.table = table;
  item.ops.push_back(Operation{kind, std::move(e), kind == OpKind::kUpdate ? "*" : "", 0});
  return item;
}

TEST_P(WriteManyOrderTest, BatchesOnOtherPartitionsRunInTheOrderSent) {
  const std::string table = "Ordered";
  ASSERT_TRUE(client_->CreateTable(table).ok());
  PipelinedConnection<> pipe(server_->endpoint());
  auto send = [&](wire::Request r, const std::string& what) {
    r.table = table;
    r.no_content = true;
    pipe.Send(std::move(r), what);
  };
  constexpr int kRounds = 30, kPartitions = 16;
  int wrong = 0;
  std::string first_wrong;
  for (int round = 0; round < kRounds; round++) {
    pipe.Forget();
    const std::string rk = "r" + std::to_string(round);
    const std::string lead = "lead" + std::to_string(round);
    // Work queued on the lead partition's worker, so that a WriteMany that
    // runs there whole runs late.
    for (int i = 0; i < 8; i++) {
      wire::Request w;
      w.op = wire::Op::kWrite;
      w.ops.push_back(
          Operation{OpKind::kInsert, Padded(lead, "busy" + std::to_string(i), 0), "", 0});
      send(std::move(w), "busy write");
    }
    // A: led by the busy partition, inserts a row in each other partition.
    wire::Request a;
    a.op = wire::Op::kWriteMany;
    a.writes.push_back(Egt(table, OpKind::kInsert, Padded(lead, rk, 1)));
    for (int p = 0; p < kPartitions; p++) {
      a.writes.push_back(Egt(table, OpKind::kInsert, Padded("p" + std::to_string(p), rk, 1)));
    }
    send(std::move(a), "WriteMany A (inserts)");
    // B: sent after A, replaces the rows A inserted (Update needs them).
    wire::Request b;
    b.op = wire::Op::kWriteMany;
    for (int p = 0; p < kPartitions; p++) {
      b.writes.push_back(Egt(table, OpKind::kUpdate, Padded("p" + std::to_string(p), rk, 2)));
    }
    send(std::move(b), "WriteMany B (replaces)");
    // Single writes after both: merge a third version into each row.
    for (int p = 0; p < kPartitions; p++) {
      wire::Request w;
      w.op = wire::Op::kWrite;
      Entity e;
      e.partition_key = "p" + std::to_string(p);
      e.row_key = rk;
      e.Set("Third", Value::Int32(3));
      PadPastInline(e, 'y');
      w.ops.push_back(Operation{OpKind::kMerge, std::move(e), "*", 0});
      send(std::move(w), "merge p" + std::to_string(p));
    }
    for (size_t i = 0; i < pipe.sent(); i++) {
      auto reply = pipe.Receive();
      ASSERT_TRUE(reply.has_value())
          << "round " << round << ": no reply (or one to no request sent)";
      const std::string& what = reply->tag;
      const Status& decoded = reply->decoded;
      std::string problem;
      if (!decoded.ok()) {
        problem = decoded.ToString();
      } else if (reply->header.op == static_cast<uint8_t>(wire::Op::kWriteMany)) {
        std::vector<Result<WriteResult>> results;
        ASSERT_TRUE(wire::DecodeWriteMany(reply->body(), &results).ok());
        const size_t batches =
            what.find(" A ") != std::string::npos ? kPartitions + 1 : kPartitions;
        EXPECT_EQ(results.size(), batches) << what;
        for (size_t k = 0; k < results.size() && problem.empty(); k++) {
          if (!results[k].ok())
            problem = "batch " + std::to_string(k) + ": " + results[k].status().ToString();
        }
      }
      if (!problem.empty() && wrong++ == 0)
        first_wrong = "round " + std::to_string(round) + ": " + what + ": " + problem;
    }
    // Each row holds B's version and the merge's property.
    for (int p = 0; p < kPartitions; p++) {
      auto got = client_->Get(table, "p" + std::to_string(p), rk);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_NE(got->Find("Age"), nullptr);
      EXPECT_EQ(got->Find("Age")->as_int32(), 2) << "round " << round << ", p" << p;
      EXPECT_NE(got->Find("Third"), nullptr) << "round " << round << ", p" << p;
    }
  }
  EXPECT_EQ(wrong, 0) << "requests that ran out of the order sent; the first: " << first_wrong;
  // A and B were split by worker (their partitions are on all four).
  EXPECT_GE(Metric(*server_, "sidetable_write_many_splits_total"), 2u * kRounds);
}

// SIGTERM with no grace while split WriteManys wait on the queues: the
// parts taken off a queue are answered through their request (never a
// reply per part), each request gets exactly one reply, and after a restart
// what was acknowledged is there and what was refused is not.
class WriteManyShutdownTest : public SidecarTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    return {"--durability", "os", "--workers", "4", "--shutdown-grace-ms", "0"};
  }
};

TEST_F(WriteManyShutdownTest, PartsRefusedAtShutdownAreAnsweredThroughTheirRequest) {
  ASSERT_TRUE(client_->CreateTable("Stop").ok());
  auto writer = Connect(/*max_attempts=*/1);
  constexpr int kRequests = 120, kPartitions = 16;
  std::map<int, std::vector<Status>> answers;  // request -> each batch's outcome
  int whole_failures = 0, mixed = 0;
  for (int n = 0; n < kRequests; n++) {
    std::vector<Batch> batches;
    for (int p = 0; p < kPartitions; p++) {
      batches.emplace_back("Stop");
      batches.back().Insert(Padded("p" + std::to_string(p), "n" + std::to_string(n), n));
    }
    writer->SendWriteMany(batches, [&, n](Result<std::vector<Result<WriteResult>>> r) {
      EXPECT_EQ(answers.count(n), 0u) << "request " << n << " answered twice";
      auto& outcome = answers[n];
      if (!r.ok()) {
        whole_failures++;
        outcome.assign(kPartitions, r.status());
        return;
      }
      EXPECT_EQ(r->size(), static_cast<size_t>(kPartitions));
      int busy = 0;
      for (const auto& one : *r) {
        outcome.push_back(one.ok() ? Status::OK() : one.status());
        busy += !one.ok() && one.status().code() == Code::kServerBusy;
      }
      mixed += busy > 0 && busy < kPartitions;
    });
  }
  // Every request is on its way: stop while parts wait on the queues (and
  // the frontend refuses what it has not read yet).
  ASSERT_EQ(::kill(server_->pid(), SIGTERM), 0);
  writer->Drain();
  ASSERT_EQ(answers.size(), static_cast<size_t>(kRequests));
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
  ASSERT_TRUE(server_->Start()) << server_->Log();
  client_ = Connect();
  int written = 0, refused = 0;
  for (const auto& [n, outcome] : answers) {
    ASSERT_EQ(outcome.size(), static_cast<size_t>(kPartitions)) << n;
    for (int p = 0; p < kPartitions; p++) {
      auto got = client_->Get("Stop", "p" + std::to_string(p), "n" + std::to_string(n));
      if (outcome[p].ok()) {
        written++;
        EXPECT_TRUE(got.ok()) << "acknowledged and lost: request " << n << ", p" << p;
      } else {
        refused++;
        // Refused means not executed (a connection lost before its reply
        // says nothing either way: not sent here with max_attempts 1 but
        // possible, so only ServerBusy is held to it).
        if (outcome[p].code() == Code::kServerBusy) {
          EXPECT_EQ(got.status().code(), Code::kResourceNotFound)
              << "answered ServerBusy yet written: request " << n << ", p" << p;
        }
      }
    }
  }
  EXPECT_EQ(written + refused, kRequests * kPartitions);
  // How the stop fell among the requests is up to the scheduler: say so
  // when it missed the case this test is about (the checks above held
  // anyway; WriteManyGatherTest covers the mixed reply without timing).
  if (mixed == 0) std::cout << "note: no request had parts both run and refused this time\n";
  std::cout << "note: " << written << " batches written, " << refused << " refused; "
            << whole_failures << " requests failed whole, " << mixed
            << " answered 200 with some parts refused\n";
}

INSTANTIATE_TEST_SUITE_P(Durability, WriteManyOrderTest, ::testing::Values("os", "fsync"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace sidetable::testing
