// WriteManyGather (sidecar/write_many_gather.h): the parts of a WriteMany
// split by worker come back in any order and make one reply with every
// batch's result in the request's order.
#include "sidecar/write_many_gather.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/wire.h"

namespace sidetable::sidecar {
namespace {

Job WholeRequest(uint64_t id) {
  Job job;
  job.request.op = wire::Op::kWriteMany;
  job.request.id = id;
  return job;
}

// A part's reply as the handler makes it: 200 with one result per batch.
std::string PartReply(const std::vector<uint64_t>& lsns, const std::vector<Status>& failures = {}) {
  std::vector<Result<WriteResult>> results;
  for (uint64_t lsn : lsns) {
    WriteResult w;
    w.lsn = lsn;
    w.etags.push_back("W/\"" + std::to_string(lsn) + "\"");
    results.emplace_back(std::move(w));
  }
  for (const Status& s : failures) results.emplace_back(s);
  std::string out;
  wire::AppendHeader(
      &out, wire::Header{wire::kVersion, static_cast<uint8_t>(wire::Op::kWriteMany), 200, 7});
  wire::EncodeWriteMany(results, &out);
  return out;
}

std::string ErrorReply(const Status& s) {
  std::string out;
  wire::EncodeError(wire::Header{wire::kVersion, static_cast<uint8_t>(wire::Op::kWriteMany), 0, 7},
                    s, &out);
  return out;
}

std::vector<Result<WriteResult>> Decode(const WriteManyGather::Answer& a) {
  wire::Header h;
  std::string_view body;
  EXPECT_TRUE(wire::DecodeReply(a.reply, &h, &body).ok());
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.request_id, 41u);
  std::vector<Result<WriteResult>> results;
  EXPECT_TRUE(wire::DecodeWriteMany(body, &results).ok());
  return results;
}

TEST(WriteManyGatherTest, PartsInAnyOrderMakeOneReplyInTheRequestsOrder) {
  WriteManyGather g(WholeRequest(41), 5, 2);
  // Batches 1 and 3 on one worker, 0, 2 and 4 on another; the second part
  // is in first, its last batch failed on its own.
  EXPECT_FALSE(g.Add({1, 3}, Code::kOk, PartReply({20, 21}), 2, 21));
  const bool last =
      g.Add({0, 2, 4}, Code::kOk,
            PartReply({10, 11}, {Status(Code::kEntityAlreadyExists, "there", 0)}), 3, 11);
  ASSERT_TRUE(last);
  WriteManyGather::Answer a = g.Finish();
  EXPECT_EQ(a.code, Code::kOk);
  EXPECT_EQ(a.entities, 5u);
  EXPECT_EQ(a.await_lsn, 21u);  // the newest of all: one wait covers them
  EXPECT_TRUE(a.part_failures.empty());
  auto results = Decode(a);
  ASSERT_EQ(results.size(), 5u);
  const std::vector<uint64_t> lsns = {10, 20, 11, 21};
  for (size_t i = 0; i < 4; i++) {
    ASSERT_TRUE(results[i].ok()) << i << ": " << results[i].status().ToString();
    EXPECT_EQ(results[i]->lsn, lsns[i]) << i;
  }
  ASSERT_FALSE(results[4].ok());
  EXPECT_EQ(results[4].status().code(), Code::kEntityAlreadyExists);
  EXPECT_EQ(g.whole().request.id, 41u);
}

TEST(WriteManyGatherTest, APartThatFailedWholeGivesItsErrorToEachOfItsBatches) {
  WriteManyGather g(WholeRequest(41), 3, 2);
  const Status busy(Code::kServerBusy, "the change stream backlog is full");
  EXPECT_FALSE(g.Add({0, 2}, busy.code(), ErrorReply(busy), 0, 0));
  ASSERT_TRUE(g.Add({1}, Code::kOk, PartReply({30}), 1, 30));
  WriteManyGather::Answer a = g.Finish();
  EXPECT_EQ(a.code, Code::kOk);  // one part ran: a 200 that says per batch
  EXPECT_EQ(a.await_lsn, 30u);
  EXPECT_EQ(a.part_failures, (std::vector<Code>{Code::kServerBusy, Code::kServerBusy}));
  auto results = Decode(a);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].status().code(), Code::kServerBusy);
  EXPECT_NE(results[0].status().message().find("backlog is full"), std::string::npos);
  ASSERT_TRUE(results[1].ok());
  EXPECT_EQ(results[1]->lsn, 30u);
  EXPECT_EQ(results[2].status().code(), Code::kServerBusy);
}

TEST(WriteManyGatherTest, WhenEveryPartFailedWholeTheRequestFailsWithTheFirstError) {
  WriteManyGather g(WholeRequest(41), 2, 2);
  const Status stopping(Code::kServerBusy, "server is shutting down");
  const Status denied(Code::kAuthorizationFailure, "not this table");
  EXPECT_FALSE(g.Add({1}, stopping.code(), ErrorReply(stopping), 0, 0));
  ASSERT_TRUE(g.Add({0}, denied.code(), ErrorReply(denied), 0, 0));
  WriteManyGather::Answer a = g.Finish();
  EXPECT_EQ(a.code, Code::kServerBusy);
  EXPECT_EQ(a.await_lsn, 0u);
  wire::Header h;
  std::string_view body;
  const Status s = wire::DecodeReply(a.reply, &h, &body);
  EXPECT_EQ(s.code(), Code::kServerBusy);
  EXPECT_NE(s.message().find("shutting down"), std::string::npos);
  EXPECT_EQ(h.request_id, 41u);
}

TEST(WriteManyGatherTest, APartAnsweringTheWrongCountFailsItsBatchesNotTheOthers) {
  WriteManyGather g(WholeRequest(41), 3, 2);
  EXPECT_FALSE(g.Add({0, 1}, Code::kOk, PartReply({5}), 1, 5));  // one result for two batches
  ASSERT_TRUE(g.Add({2}, Code::kOk, PartReply({6}), 1, 6));
  auto results = Decode(g.Finish());
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].status().code(), Code::kInternal);
  EXPECT_EQ(results[1].status().code(), Code::kInternal);
  ASSERT_TRUE(results[2].ok());
}

}  // namespace
}  // namespace sidetable::sidecar
