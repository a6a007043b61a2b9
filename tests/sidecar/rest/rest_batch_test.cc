// $batch through the REST gateway: one changeset as one EGT, the
// multipart response, and a failing operation's index with nothing applied.
#include "tests/sidecar/rest/rest_fixture.h"

namespace sidetable::testing {
namespace {

struct Op {
  std::string method, path, body;
  httplib::Headers headers;
};

std::string BatchBody(const std::string& host, const std::vector<Op>& ops) {
  std::string b = "--batch_b1\r\nContent-Type: multipart/mixed; boundary=changeset_c1\r\n\r\n";
  for (const auto& op : ops) {
    b += "--changeset_c1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n";
    b += op.method + " http://" + host + op.path + " HTTP/1.1\r\n";
    b += "Accept: application/json;odata=minimalmetadata\r\nContent-Type: application/json\r\n";
    for (const auto& [k, v] : op.headers) b += k + ": " + v + "\r\n";
    b += "\r\n" + op.body + "\r\n";
  }
  b += "--changeset_c1--\r\n--batch_b1--\r\n";
  return b;
}

class RestBatchTest : public RestTest {
 protected:
  void SetUp() override {
    RestTest::SetUp();
    ASSERT_EQ(CreateTable("orders").status, 201);
  }
  Reply Batch(const std::vector<Op>& ops) {
    return Send("POST", "/devstoreaccount1/$batch", BatchBody(server_->rest(), ops),
                {{"Content-Type", "multipart/mixed; boundary=batch_b1"}});
  }
  size_t Count() {
    auto page = client_->QueryPage(client::QueryOptions{.table = "orders"});
    return page.ok() ? page->entities.size() : 999;
  }
};

TEST_F(RestBatchTest, AChangesetCommitsEveryOperationAndAnswersEach) {
  ASSERT_EQ(InsertJson("orders", R"({"PartitionKey":"p","RowKey":"upd","v":1})").status, 201);
  ASSERT_EQ(InsertJson("orders", R"({"PartitionKey":"p","RowKey":"del","v":1})").status, 201);
  ASSERT_EQ(InsertJson("orders", R"({"PartitionKey":"p","RowKey":"mrg","v":1})").status, 201);
  const uint64_t before = client_->Ping()->last_lsn;
  Reply r = Batch({
      {"POST", "/devstoreaccount1/orders", R"({"PartitionKey":"p","RowKey":"new","v":2})", {}},
      {"POST", "/devstoreaccount1/orders", R"({"PartitionKey":"p","RowKey":"quiet"})", {{"Prefer", "return-no-content"}}},
      {"PUT", "/devstoreaccount1/orders(PartitionKey='p',RowKey='upd')", R"({"v":3})", {{"If-Match", "*"}}},
      {"MERGE", "/devstoreaccount1/orders(PartitionKey='p',RowKey='mrg')", R"({"w":4})", {{"If-Match", "*"}}},
      {"DELETE", "/devstoreaccount1/orders(PartitionKey='p',RowKey='del')", "", {{"If-Match", "*"}}},
      {"PUT", "/devstoreaccount1/orders(PartitionKey='p',RowKey='ups')", R"({"v":5})", {}},
      {"PATCH", "/devstoreaccount1/orders(PartitionKey='p',RowKey='upm')", R"({"v":6})", {}},
  });
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_NE(r.Header("Content-Type").find("multipart/mixed; boundary=batchresponse_"), std::string::npos);
  EXPECT_NE(r.body.find("HTTP/1.1 201 Created"), std::string::npos) << r.body;
  size_t no_content = 0;
  for (size_t at = r.body.find("HTTP/1.1 204"); at != std::string::npos; at = r.body.find("HTTP/1.1 204", at + 1)) no_content++;
  EXPECT_EQ(no_content, 6u) << r.body;
  EXPECT_NE(r.body.find("\"RowKey\":\"new\""), std::string::npos);
  // SDKs match sub-responses to entities by the URL in Location/DataServiceId.
  EXPECT_NE(r.body.find("DataServiceId: http://" + server_->rest() + "/devstoreaccount1/orders(PartitionKey='p',RowKey='quiet')"),
            std::string::npos) << r.body;
  // One commit: one LSN for all seven operations.
  EXPECT_EQ(client_->Ping()->last_lsn, before + 1);
  EXPECT_EQ(client_->Get("orders", "p", "upd")->Find("v")->as_int32(), 3);
  EXPECT_EQ(client_->Get("orders", "p", "mrg")->Find("v")->as_int32(), 1);
  EXPECT_EQ(client_->Get("orders", "p", "mrg")->Find("w")->as_int32(), 4);
  EXPECT_FALSE(client_->Get("orders", "p", "del").ok());
  EXPECT_TRUE(client_->Get("orders", "p", "ups").ok());
  EXPECT_TRUE(client_->Get("orders", "p", "upm").ok());
  EXPECT_EQ(Count(), 6u);
}

TEST_F(RestBatchTest, AFailingOperationFailsTheChangesetWithItsIndexAndAppliesNothing) {
  ASSERT_EQ(InsertJson("orders", R"({"PartitionKey":"p","RowKey":"dup"})").status, 201);
  const uint64_t before = client_->Ping()->last_lsn;
  Reply r = Batch({
      {"POST", "/devstoreaccount1/orders", R"({"PartitionKey":"p","RowKey":"a"})", {}},
      {"POST", "/devstoreaccount1/orders", R"({"PartitionKey":"p","RowKey":"b"})", {}},
      {"POST", "/devstoreaccount1/orders", R"({"PartitionKey":"p","RowKey":"dup"})", {}},
  });
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_NE(r.body.find("HTTP/1.1 409 Conflict"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"code\":\"EntityAlreadyExists\""), std::string::npos);
  EXPECT_NE(r.body.find("\"value\":\"2:"), std::string::npos) << r.body;
  EXPECT_EQ(client_->Ping()->last_lsn, before);
  EXPECT_EQ(Count(), 1u);
}

TEST_F(RestBatchTest, ConditionsDifferentPartitionsAndBadOperationsFailWhole) {
  ASSERT_EQ(InsertJson("orders", R"({"PartitionKey":"p","RowKey":"x"})").status, 201);
  Reply stale = Batch({
      {"POST", "/devstoreaccount1/orders", R"({"PartitionKey":"p","RowKey":"a"})", {}},
      {"PUT", "/devstoreaccount1/orders(PartitionKey='p',RowKey='x')", R"({"v":1})", {{"If-Match", "W/\"999999\""}}},
  });
  EXPECT_NE(stale.body.find("HTTP/1.1 412"), std::string::npos) << stale.body;
  EXPECT_NE(stale.body.find("\"value\":\"1:"), std::string::npos) << stale.body;
  Reply partitions = Batch({
      {"POST", "/devstoreaccount1/orders", R"({"PartitionKey":"p","RowKey":"a"})", {}},
      {"POST", "/devstoreaccount1/orders", R"({"PartitionKey":"q","RowKey":"a"})", {}},
  });
  EXPECT_NE(partitions.body.find("CommandsInBatchActOnDifferentPartitions"), std::string::npos) << partitions.body;
  Reply bad_json = Batch({
      {"POST", "/devstoreaccount1/orders", R"({"PartitionKey":"p","RowKey":"a"})", {}},
      {"POST", "/devstoreaccount1/orders", R"({"PartitionKey":"p",)", {}},
  });
  EXPECT_NE(bad_json.body.find("HTTP/1.1 400"), std::string::npos) << bad_json.body;
  EXPECT_NE(bad_json.body.find("\"value\":\"1:"), std::string::npos) << bad_json.body;
  Reply twice = Batch({
      {"POST", "/devstoreaccount1/orders", R"({"PartitionKey":"p","RowKey":"a"})", {}},
      {"PUT", "/devstoreaccount1/orders(PartitionKey='p',RowKey='a')", R"({})", {}},
  });
  EXPECT_NE(twice.body.find("InvalidDuplicateRow"), std::string::npos) << twice.body;
  Reply missing = Batch({{"DELETE", "/devstoreaccount1/orders(PartitionKey='p',RowKey='none')", "", {{"If-Match", "*"}}}});
  EXPECT_NE(missing.body.find("ResourceNotFound"), std::string::npos) << missing.body;
  Reply table = Batch({{"POST", "/devstoreaccount1/nosuch", R"({"PartitionKey":"p","RowKey":"a"})", {}}});
  EXPECT_NE(table.body.find("TableNotFound"), std::string::npos) << table.body;
  EXPECT_EQ(Count(), 1u);
}

// A DELETE in a changeset without If-Match used to delete unconditionally
// (read as If-Match: *), where a single DELETE is 400 MissingRequiredHeader.
TEST_F(RestBatchTest, ADeleteWithoutIfMatchFailsTheChangesetLikeASingleDelete) {
  ASSERT_EQ(InsertJson("orders", R"({"PartitionKey":"p","RowKey":"keep","v":1})").status, 201);
  ASSERT_EQ(InsertJson("orders", R"({"PartitionKey":"p","RowKey":"old","v":1})").status, 201);
  const uint64_t before = client_->Ping()->last_lsn;
  Reply single = Send("DELETE", "/devstoreaccount1/orders(PartitionKey='p',RowKey='keep')");
  EXPECT_EQ(single.status, 400);
  EXPECT_EQ(single.ErrorCode(), "MissingRequiredHeader");
  Reply r = Batch({
      {"POST", "/devstoreaccount1/orders", R"({"PartitionKey":"p","RowKey":"new"})", {}},
      {"MERGE", "/devstoreaccount1/orders(PartitionKey='p',RowKey='old')", R"({"w":2})", {}},
      {"DELETE", "/devstoreaccount1/orders(PartitionKey='p',RowKey='keep')", "", {}},
  });
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_NE(r.body.find("HTTP/1.1 400"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"code\":\"MissingRequiredHeader\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"value\":\"2:"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("If-Match"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("HTTP/1.1 204"), std::string::npos) << r.body;
  // Nothing was written: no LSN, 'keep' still there, no 'new', 'old' unmerged.
  EXPECT_EQ(client_->Ping()->last_lsn, before);
  EXPECT_TRUE(client_->Get("orders", "p", "keep").ok());
  EXPECT_FALSE(client_->Get("orders", "p", "new").ok());
  auto old = client_->Get("orders", "p", "old");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->Find("w"), nullptr);
  EXPECT_EQ(Count(), 2u);

  // The documented semantics stay: without If-Match, PUT and MERGE are
  // upserts (of an existing and of a new entity); DELETE with * deletes.
  Reply ok = Batch({
      {"MERGE", "/devstoreaccount1/orders(PartitionKey='p',RowKey='old')", R"({"w":2})", {}},
      {"PUT", "/devstoreaccount1/orders(PartitionKey='p',RowKey='fresh')", R"({"v":3})", {}},
      {"PATCH", "/devstoreaccount1/orders(PartitionKey='p',RowKey='patched')", R"({"v":4})", {}},
      {"DELETE",
       "/devstoreaccount1/orders(PartitionKey='p',RowKey='keep')",
       "",
       {{"If-Match", "*"}}},
  });
  ASSERT_EQ(ok.status, 202) << ok.body;
  EXPECT_EQ(ok.body.find("odata.error"), std::string::npos) << ok.body;
  auto merged = client_->Get("orders", "p", "old");
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  ASSERT_NE(merged->Find("v"), nullptr);
  ASSERT_NE(merged->Find("w"), nullptr);
  EXPECT_EQ(merged->Find("v")->as_int32(), 1);
  EXPECT_EQ(merged->Find("w")->as_int32(), 2);
  auto fresh = client_->Get("orders", "p", "fresh");
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  ASSERT_NE(fresh->Find("v"), nullptr);
  EXPECT_EQ(fresh->Find("v")->as_int32(), 3);
  EXPECT_TRUE(client_->Get("orders", "p", "patched").ok());
  EXPECT_FALSE(client_->Get("orders", "p", "keep").ok());
}

TEST_F(RestBatchTest, MalformedBatchesAre400AndTooManyOperationsAreRefused) {
  EXPECT_EQ(Send("POST", "/devstoreaccount1/$batch", "not multipart", {{"Content-Type", "multipart/mixed; boundary=batch_b1"}}).status, 400);
  EXPECT_EQ(Send("POST", "/devstoreaccount1/$batch", "x", {{"Content-Type", "application/json"}}).status, 400);
  std::vector<Op> ops;
  for (int i = 0; i < 101; i++) {
    ops.push_back({"POST", "/devstoreaccount1/orders", R"({"PartitionKey":"p","RowKey":")" + std::to_string(i) + "\"}", {}});
  }
  Reply r = Batch(ops);
  EXPECT_TRUE(r.status == 400 || r.body.find("HTTP/1.1 400") != std::string::npos) << r.status;
  EXPECT_EQ(Count(), 0u);
  ops.resize(100);
  Reply hundred = Batch(ops);
  EXPECT_EQ(hundred.status, 202);
  EXPECT_EQ(Count(), 100u);
}

}  // namespace
}  // namespace sidetable::testing
