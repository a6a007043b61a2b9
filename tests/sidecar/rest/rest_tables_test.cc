// Tables through the REST gateway: create, query (filter, top,
// continuation), get, delete, and their errors.
#include "tests/sidecar/rest/rest_fixture.h"

namespace sidetable::testing {
namespace {

const std::string kTables = "/devstoreaccount1/Tables";

TEST_F(RestTest, CreateTableAnswers201WithTheTableAnd409WhenItExists) {
  Reply r = CreateTable("orders");
  ASSERT_EQ(r.status, 201) << r.body;
  Json j(r.body);
  ASSERT_TRUE(j.ok) << r.body;
  EXPECT_EQ(j.Str("TableName"), "orders");
  EXPECT_NE(j.Str("odata.metadata").find("$metadata#Tables/@Element"), std::string::npos);
  EXPECT_FALSE(r.Header("x-ms-request-id").empty());
  EXPECT_EQ(r.Header("x-ms-version"), "2019-02-02");
  EXPECT_FALSE(r.Header("Date").empty());

  Reply again = CreateTable("orders");
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.ErrorCode(), "TableAlreadyExists");
  EXPECT_NE(again.ErrorMessage().find("RequestId:"), std::string::npos);
  EXPECT_EQ(again.Header("x-ms-error-code"), "TableAlreadyExists");
}

TEST_F(RestTest, CreateTableWithReturnNoContentAnswers204) {
  Reply r = Send("POST", kTables, "{\"TableName\":\"quiet\"}", {{"Prefer", "return-no-content"}});
  EXPECT_EQ(r.status, 204);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(r.Header("Preference-Applied"), "return-no-content");
  auto tables = client_->ListTables();
  ASSERT_TRUE(tables.ok());
  EXPECT_EQ(*tables, std::vector<std::string>{"quiet"});
}

TEST_F(RestTest, BadTableNamesAndBodiesAreRefusedAndCreateNothing) {
  EXPECT_EQ(CreateTable("1abc").ErrorCode(), "InvalidResourceName");
  EXPECT_EQ(CreateTable("ab").status, 400);
  Reply bad_json = Send("POST", kTables, "{\"TableName\":");
  EXPECT_EQ(bad_json.status, 400);
  EXPECT_EQ(bad_json.ErrorCode(), "InvalidInput");
  EXPECT_EQ(Send("POST", kTables, "{\"Name\":\"x\"}").status, 400);
  auto tables = client_->ListTables();
  ASSERT_TRUE(tables.ok());
  EXPECT_TRUE(tables->empty());
}

TEST_F(RestTest, QueryTablesFiltersPagesAndContinues) {
  for (const char* t : {"alpha", "beta", "gamma", "delta", "epsilon"}) ASSERT_EQ(CreateTable(t).status, 201);
  Reply all = Send("GET", kTables);
  ASSERT_EQ(all.status, 200);
  EXPECT_EQ(Json(all.body).Count("value"), 5u);

  Reply filtered = Send("GET", kTables + "?$filter=" + Enc("TableName eq 'beta'"));
  ASSERT_EQ(filtered.status, 200) << filtered.body;
  EXPECT_EQ(Json(filtered.body).Count("value"), 1u);
  EXPECT_NE(filtered.body.find("\"beta\""), std::string::npos);

  std::vector<std::string> seen;
  std::string next;
  for (int page = 0; page < 10; page++) {
    std::string target = kTables + "?$top=2";
    if (!next.empty()) target += "&NextTableName=" + Enc(next);
    Reply r = Send("GET", target);
    ASSERT_EQ(r.status, 200) << r.body;
    Json j(r.body);
    simdjson::dom::array a;
    ASSERT_FALSE(j.doc["value"].get_array().get(a));
    EXPECT_LE(a.size(), 2u);
    for (auto t : a) seen.emplace_back(std::string_view(t["TableName"].get_string().value()));
    next = r.Header("x-ms-continuation-NextTableName");
    if (next.empty()) break;
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"alpha", "beta", "delta", "epsilon", "gamma"}));
  EXPECT_EQ(Send("GET", kTables + "?$top=0").status, 400);
  EXPECT_EQ(Send("GET", kTables + "?NextTableName=garbage").status, 400);
}

TEST_F(RestTest, GetAndDeleteOneTable) {
  ASSERT_EQ(CreateTable("gone").status, 201);
  Reply got = Send("GET", kTables + "('gone')");
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(Json(got.body).Str("TableName"), "gone");
  EXPECT_EQ(Send("DELETE", kTables + "('gone')").status, 204);
  Reply missing = Send("DELETE", kTables + "('gone')");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.ErrorCode(), "TableNotFound");
  EXPECT_EQ(Send("GET", kTables + "('gone')").ErrorCode(), "TableNotFound");
}

// GET Tables('caset') was 404 for a table created as 'CaseT', though every
// other operation (insert, delete, create again) folds case.
TEST_F(RestTest, GetOneTableIgnoresCaseLikeEveryOtherTableOperation) {
  for (const char* t : {"Alpha", "CaseT", "Zulu"}) ASSERT_EQ(CreateTable(t).status, 201);
  for (const char* asked : {"CaseT", "caset", "CASET", "cAsEt"}) {
    Reply got = Send("GET", kTables + "('" + asked + "')");
    ASSERT_EQ(got.status, 200) << asked << ": " << got.body;
    EXPECT_EQ(Json(got.body).Str("TableName"), "CaseT") << asked;  // as created
  }
  // Neither a neighbour in the listing nor a prefix is the table.
  for (const char* asked : {"case", "casetx", "casex", "Bravo", "zzz", "aaa", "Zulu1"}) {
    Reply missing = Send("GET", kTables + "('" + asked + "')");
    EXPECT_EQ(missing.status, 404) << asked << ": " << missing.body;
    EXPECT_EQ(missing.ErrorCode(), "TableNotFound") << asked;
  }
  EXPECT_EQ(Send("GET", kTables + "('zulu')").status, 200);
  // Nothing changed: the three tables, under their names as created.
  auto tables = client_->ListTables();
  ASSERT_TRUE(tables.ok());
  EXPECT_EQ(*tables, (std::vector<std::string>{"Alpha", "CaseT", "Zulu"}));
  ASSERT_EQ(Send("DELETE", kTables + "('CASET')").status, 204);
  EXPECT_EQ(Send("GET", kTables + "('caset')").ErrorCode(), "TableNotFound");
}

TEST_F(RestTest, FullAndNoMetadataTables) {
  ASSERT_EQ(CreateTable("meta").status, 201);
  Reply full = Send("GET", kTables, "", {{"Accept", "application/json;odata=fullmetadata"}});
  ASSERT_EQ(full.status, 200);
  EXPECT_NE(full.body.find("\"odata.editLink\":\"Tables('meta')\""), std::string::npos) << full.body;
  EXPECT_NE(full.Header("Content-Type").find("fullmetadata"), std::string::npos);
  Reply none = Send("GET", kTables, "", {{"Accept", "application/json;odata=nometadata"}});
  ASSERT_EQ(none.status, 200);
  EXPECT_EQ(none.body, "{\"value\":[{\"TableName\":\"meta\"}]}");
}

TEST_F(RestTest, UnsupportedThingsAnswerClearErrors) {
  ASSERT_EQ(CreateTable("acl").status, 201);
  Reply acl = Send("GET", "/devstoreaccount1/acl?comp=acl");
  EXPECT_EQ(acl.status, 501);
  EXPECT_EQ(acl.ErrorCode(), "NotImplemented");
  EXPECT_EQ(Send("GET", "/devstoreaccount1/?restype=service&comp=properties").status, 501);
  Reply atom = Send("GET", kTables, "", {{"Accept", "application/atom+xml"}});
  EXPECT_EQ(atom.status, 415);
  EXPECT_EQ(Send("PUT", kTables, "{}").status, 405);
  EXPECT_EQ(Send("GET", kTables + "?$callback=f").status, 501);
  // The MERGE verb itself (older clients send it) is an InsertOrMerge
  // without If-Match, as the service serves it.
  Reply merge = Send("MERGE", KeyPath("acl", "p", "r"), "{\"m\":1}");
  EXPECT_EQ(merge.status, 204) << merge.body;
  EXPECT_EQ(GetEntity("acl", "p", "r").status, 200);
}

TEST_F(RestTest, OldVersionsAreRefused) {
  Reply r = Send("GET", kTables, "", {{"x-ms-version", "2015-12-11"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.ErrorCode(), "InvalidHeaderValue");
  EXPECT_EQ(Send("GET", kTables, "", {{"x-ms-version", "2020-12-06"}}).status, 200);
}

// x-ms-version was compared as a string: 'garbage' and '9999-99-99' were
// served (and echoed back) as if understood.
TEST_F(RestTest, VersionsThatAreNotDatesOrOlderThanServedAreRefused) {
  for (const char* v : {"garbage", "9999-99-99", "2019-02-30", "2019-2-2", "2019-02-02x",
                        "2019-02-01", "2015-04-05", "20190202"}) {
    Reply r = Send("POST", kTables, "{\"TableName\":\"versioned\"}", {{"x-ms-version", v}});
    EXPECT_EQ(r.status, 400) << v << ": " << r.body;
    EXPECT_EQ(r.ErrorCode(), "InvalidHeaderValue") << v;
    EXPECT_NE(r.ErrorMessage().find("x-ms-version"), std::string::npos) << v;
    EXPECT_EQ(r.Header("x-ms-version"), "2019-02-02") << v;  // not echoed back
  }
  auto tables = client_->ListTables();
  ASSERT_TRUE(tables.ok());
  EXPECT_TRUE(tables->empty());  // nothing created
  // What the SDKs send: 2019-02-02 (@azure/data-tables, azure-data-tables),
  // 2020-12-06; and later versions than any the code knows, so that an SDK
  // upgrade does not break the sidecar next to it. Echoed back.
  for (const char* v :
       {"2019-02-02", "2019-07-07", "2020-12-06", "2021-12-02", "2025-11-05", "2099-01-01"}) {
    Reply r = Send("GET", kTables, "", {{"x-ms-version", v}});
    EXPECT_EQ(r.status, 200) << v << ": " << r.body;
    EXPECT_EQ(r.Header("x-ms-version"), v);
  }
}

TEST_F(RestTest, ClientRequestIdIsEchoed) {
  Reply r = Send("GET", kTables, "", {{"x-ms-client-request-id", "my-id-42"}});
  EXPECT_EQ(r.Header("x-ms-client-request-id"), "my-id-42");
}

}  // namespace
}  // namespace sidetable::testing

namespace sidetable::testing {
namespace {

TEST_F(RestTest, RestOperationsAreCountedInTheMetrics) {
  ASSERT_EQ(CreateTable("counted").status, 201);
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(InsertJson("counted", R"({"PartitionKey":"p","RowKey":")" + std::to_string(i) + "\"}").status, 201);
  }
  const std::string& hp = server_->http();
  httplib::Client http(hp.substr(0, hp.rfind(':')), std::stoi(hp.substr(hp.rfind(':') + 1)));
  auto res = http.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("sidetable_requests_total{op=\"Write\"} 3"), std::string::npos) << res->body.substr(0, 2000);
  EXPECT_NE(res->body.find("sidetable_requests_total{op=\"CreateTable\"} 1"), std::string::npos);
}

}  // namespace
}  // namespace sidetable::testing
