// A change made through REST is recorded in the change log (and so on the
// change stream and in the audit) exactly like the same change made
// through ZeroMQ: same kind, table, caller, client request id, operations
// and images; only the LSN, times and versions differ.
#include "tests/sidecar/rest/rest_fixture.h"

namespace sidetable::testing {
namespace {

class RestChangesTest : public RestTest {
 protected:
  std::unique_ptr<client::Client> AsAccount() {
    client::ClientOptions o;
    o.endpoint = server_->endpoint();
    o.timeout = std::chrono::milliseconds(10000);
    o.caller = "devstoreaccount1";  // what the gateway records for SharedKey
    auto c = client::Client::Connect(o);
    return c.ok() ? std::move(c).value() : nullptr;
  }
  std::vector<ChangeRecord> Since(uint64_t lsn) {
    auto b = client_->ReadChanges(lsn + 1);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? b->records : std::vector<ChangeRecord>{};
  }
  static void ExpectAlike(const ChangeRecord& rest, const ChangeRecord& zmq, const std::string& rest_rk,
                          const std::string& zmq_rk) {
    EXPECT_EQ(rest.kind, zmq.kind);
    EXPECT_EQ(rest.table, zmq.table);
    EXPECT_EQ(rest.table_id, zmq.table_id);
    EXPECT_EQ(rest.partition_key, zmq.partition_key);
    EXPECT_EQ(rest.caller, zmq.caller);
    ASSERT_EQ(rest.ops.size(), zmq.ops.size());
    for (size_t i = 0; i < rest.ops.size(); i++) {
      const ChangeOp &a = rest.ops[i], &b = zmq.ops[i];
      EXPECT_EQ(a.kind, b.kind);
      EXPECT_EQ(a.row_key.substr(0, a.row_key.size() - rest_rk.size()), b.row_key.substr(0, b.row_key.size() - zmq_rk.size()));
      ASSERT_EQ(a.after.has_value(), b.after.has_value());
      if (a.after) {
        EXPECT_EQ(a.after->properties, b.after->properties);
      }
      ASSERT_EQ(a.before.has_value(), b.before.has_value());
      if (a.before) {
        EXPECT_EQ(a.before->properties, b.before->properties);
      }
    }
  }
};

TEST_F(RestChangesTest, RestWritesAreRecordedLikeZeroMqWrites) {
  ASSERT_EQ(CreateTable("log").status, 201);
  auto zmq = AsAccount();
  ASSERT_NE(zmq, nullptr);
  const uint64_t start = client_->Ping()->last_lsn;

  // Insert, merge, delete: once through REST, once through ZeroMQ.
  ASSERT_EQ(InsertJson("log", R"({"PartitionKey":"p","RowKey":"rest","a":1,"b":"x","c":"5","c@odata.type":"Edm.Int64"})",
                       {{"x-ms-client-request-id", "cid-insert"}}).status, 201);
  Entity e = client::EntityBuilder("p", "zmq").Int32("a", 1).String("b", "x").Int64("c", 5).Build();
  Batch insert("log");
  insert.Insert(e).SetClientRequestId("cid-insert-z");
  ASSERT_TRUE(zmq->Execute(insert).ok());
  ASSERT_EQ(Send("PATCH", KeyPath("log", "p", "rest"), R"({"d":true})", {{"If-Match", "*"}}).status, 204);
  ASSERT_TRUE(zmq->Merge("log", client::EntityBuilder("p", "zmq").Boolean("d", true).Build(), "*").ok());
  ASSERT_EQ(Send("DELETE", KeyPath("log", "p", "rest"), "", {{"If-Match", "*"}}).status, 204);
  ASSERT_TRUE(zmq->Delete("log", "p", "zmq", "*").ok());

  std::vector<ChangeRecord> records = Since(start);
  ASSERT_EQ(records.size(), 6u);
  for (size_t i = 0; i < 6; i += 2) {
    SCOPED_TRACE("pair " + std::to_string(i / 2));
    ExpectAlike(records[i], records[i + 1], "rest", "zmq");
    EXPECT_EQ(records[i].caller, "devstoreaccount1");
  }
  EXPECT_EQ(records[0].client_request_id, "cid-insert");
  EXPECT_EQ(records[1].client_request_id, "cid-insert-z");
}

TEST_F(RestChangesTest, ARestRetryWithTheSameClientRequestIdIsAppliedOnce) {
  ASSERT_EQ(CreateTable("once").status, 201);
  const uint64_t start = client_->Ping()->last_lsn;
  httplib::Headers id = {{"x-ms-client-request-id", "retry-1"}};
  ASSERT_EQ(Send("PUT", KeyPath("once", "p", "r"), R"({"n":1})", id).status, 204);
  ASSERT_EQ(Send("PUT", KeyPath("once", "p", "r"), R"({"n":1})", id).status, 204);
  EXPECT_EQ(Since(start).size(), 1u);
  // An id the engine would refuse (spaces, over 128 characters) is no
  // reason to fail the write: it is applied, without the retry guarantee.
  httplib::Headers odd = {{"x-ms-client-request-id", "an id with spaces " + std::string(200, 'x')}};
  ASSERT_EQ(Send("PUT", KeyPath("once", "p", "r2"), R"({"n":1})", odd).status, 204);
  ASSERT_EQ(Send("PUT", KeyPath("once", "p", "r2"), R"({"n":2})", odd).status, 204);
  EXPECT_EQ(Since(start).size(), 3u);
  // The same valid id for a different write is refused (the engine's
  // fingerprint), never answered with the first write's outcome.
  Reply reused = Send("PUT", KeyPath("once", "p", "r3"), R"({"n":9})", id);
  EXPECT_EQ(reused.status, 400);
  EXPECT_EQ(reused.ErrorCode(), "InvalidInput");
  EXPECT_EQ(Since(start).size(), 3u);
}

}  // namespace
}  // namespace sidetable::testing
