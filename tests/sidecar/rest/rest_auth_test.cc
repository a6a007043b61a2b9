// Authentication through the REST gateway: SharedKey, SharedKeyLite, SAS
// (service and account) mapped onto the Handler's authorisation; CORS.
// Every refusal is checked to change nothing.
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/sidecar/e2e_metrics.h"
#include "tests/sidecar/rest/rest_fixture.h"

namespace sidetable::testing {
namespace {

std::string IsoIn(int seconds) {
  std::time_t t = std::time(nullptr) + seconds;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

class RestAuthTest : public RestTest {
 protected:
  void SetUp() override {
    RestTest::SetUp();
    ASSERT_EQ(CreateTable("orders").status, 201);
    ASSERT_EQ(InsertJson("orders", R"({"PartitionKey":"m","RowKey":"1","v":1})").status, 201);
  }
  // A table SAS: the query string, signed here.
  std::string TableSas(const std::string& sp, const std::string& se, const std::string& spk = "",
                       const std::string& epk = "", bool tamper = false,
                       const std::string& srk = "", const std::string& erk = "") {
    const std::string sv = "2019-02-02";
    const std::string to_sign = sp + "\n\n" + se + "\n/table/devstoreaccount1/orders\n\n\n\n" + sv +
                                "\n" + spk + "\n" + srk + "\n" + epk + "\n" + erk;
    std::string sig = Hmac(key_, to_sign);
    if (tamper) sig[3] = sig[3] == 'A' ? 'B' : 'A';
    std::string q = "sv=" + sv + "&tn=orders&sp=" + sp + "&se=" + Enc(se) + "&sig=" + Enc(sig);
    if (!spk.empty()) q += "&spk=" + Enc(spk);
    if (!srk.empty()) q += "&srk=" + Enc(srk);
    if (!epk.empty()) q += "&epk=" + Enc(epk);
    if (!erk.empty()) q += "&erk=" + Enc(erk);
    return q;
  }
  std::string AccountSas(const std::string& sp, const std::string& srt) {
    const std::string sv = "2019-02-02", se = IsoIn(3600);
    const std::string to_sign = "devstoreaccount1\n" + sp + "\nt\n" + srt + "\n\n" + se + "\n\n\n" + sv + "\n";
    return "sv=" + sv + "&ss=t&srt=" + srt + "&sp=" + sp + "&se=" + Enc(se) + "&sig=" + Enc(Hmac(key_, to_sign));
  }
  size_t Count() {
    auto page = client_->QueryPage(client::QueryOptions{.table = "orders"});
    return page.ok() ? page->entities.size() : 999;
  }
};

TEST_F(RestAuthTest, SharedKeyLiteIsAccepted) {
  Reply r = Send("GET", KeyPath("orders", "m", "1"), "", {}, Sign::kSharedKeyLite);
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(RestAuthTest, MissingOrWrongCredentialsAre403AndChangeNothing) {
  const uint64_t failed0 =
      Metric(*server_, "sidetable_errors_total{code=\"AuthenticationFailed\"}");
  const std::string body = R"({"PartitionKey":"m","RowKey":"2"})";
  Reply none = Send("POST", "/devstoreaccount1/orders", body, {}, Sign::kNone);
  EXPECT_EQ(none.status, 403);
  EXPECT_EQ(none.ErrorCode(), "AuthenticationFailed");
  Reply wrong = Send("POST", "/devstoreaccount1/orders", body,
                     {{"Authorization", "SharedKey devstoreaccount1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}},
                     Sign::kNone);
  EXPECT_EQ(wrong.status, 403);
  EXPECT_EQ(wrong.ErrorCode(), "AuthenticationFailed");
  Reply other = Send("POST", "/devstoreaccount1/orders", body, {{"Authorization", "SharedKey someone:abc="}}, Sign::kNone);
  EXPECT_EQ(other.status, 403);
  Reply scheme = Send("POST", "/devstoreaccount1/orders", body, {{"Authorization", "Bearer x"}}, Sign::kNone);
  EXPECT_EQ(scheme.status, 403);
  // Signed for another path: the signature covers the resource.
  Reply moved = Send("DELETE", "/devstoreaccount1/Tables('orders')", "",
                     {{"Authorization", "SharedKey devstoreaccount1:" +
                                            Hmac(key_, "DELETE\n\n\n" + HttpDateNow() + "\n/devstoreaccount1/devstoreaccount1/Tables('other')")}},
                     Sign::kNone);
  EXPECT_EQ(moved.status, 403);
  // Another account in the path than the signing one.
  EXPECT_EQ(Send("GET", "/otheraccount/Tables").status, 403);
  // Each refusal is in sidetable_errors_total, as a refused token is on
  // the ZeroMQ side (before session 42 none was).
  const uint64_t failed = Metric(*server_, "sidetable_errors_total{code=\"AuthenticationFailed\"}");
  ASSERT_NE(failed, kNoMetric);
  EXPECT_EQ(failed - (failed0 == kNoMetric ? 0 : failed0), 6u);
  EXPECT_EQ(Count(), 1u);
  EXPECT_TRUE(client_->ListTables().ok());
  EXPECT_EQ(client_->ListTables()->size(), 1u);
}

TEST_F(RestAuthTest, TableSasGrantsItsPermissionsOnly) {
  const std::string read = TableSas("r", IsoIn(3600));
  Reply got = Send("GET", KeyPath("orders", "m", "1") + "?" + read, "", {}, Sign::kNone);
  EXPECT_EQ(got.status, 200) << got.body;
  Reply query = Send("GET", "/devstoreaccount1/orders()?" + read, "", {}, Sign::kNone);
  EXPECT_EQ(query.status, 200) << query.body;
  Reply insert = Send("POST", "/devstoreaccount1/orders?" + read, R"({"PartitionKey":"m","RowKey":"2"})", {}, Sign::kNone);
  EXPECT_EQ(insert.status, 403);
  EXPECT_EQ(insert.ErrorCode(), "AuthorizationPermissionMismatch");
  Reply del = Send("DELETE", KeyPath("orders", "m", "1") + "?" + read, "", {{"If-Match", "*"}}, Sign::kNone);
  EXPECT_EQ(del.status, 403);
  Reply table = Send("DELETE", "/devstoreaccount1/Tables('orders')?" + read, "", {}, Sign::kNone);
  EXPECT_EQ(table.status, 403);
  EXPECT_EQ(Count(), 1u);

  const std::string add = TableSas("ra", IsoIn(3600));
  EXPECT_EQ(Send("POST", "/devstoreaccount1/orders?" + add, R"({"PartitionKey":"m","RowKey":"2"})", {}, Sign::kNone).status, 201);
  EXPECT_EQ(Count(), 2u);
}

TEST_F(RestAuthTest, TableSasKeyRangeConfinesWritesAndQueries) {
  ASSERT_EQ(InsertJson("orders", R"({"PartitionKey":"z","RowKey":"1"})").status, 201);
  const std::string sas = TableSas("rau", IsoIn(3600), "a", "n");
  EXPECT_EQ(Send("POST", "/devstoreaccount1/orders?" + sas, R"({"PartitionKey":"b","RowKey":"1"})", {}, Sign::kNone).status, 201);
  Reply outside = Send("POST", "/devstoreaccount1/orders?" + sas, R"({"PartitionKey":"x","RowKey":"1"})", {}, Sign::kNone);
  EXPECT_EQ(outside.status, 403);
  EXPECT_EQ(outside.ErrorCode(), "AuthorizationFailure");
  EXPECT_EQ(Send("GET", KeyPath("orders", "z", "1") + "?" + sas, "", {}, Sign::kNone).status, 403);
  Reply query = Send("GET", "/devstoreaccount1/orders()?" + sas, "", {}, Sign::kNone);
  ASSERT_EQ(query.status, 200);
  EXPECT_EQ(Json(query.body).Count("value"), 2u);  // m/1 and b/1, not z/1
  EXPECT_EQ(Count(), 3u);
}

// A RowKey bound without its PartitionKey bound used to be dropped, and the
// SAS granted the whole table (the tester wrote RowKey 'a' with srk=m).
TEST_F(RestAuthTest, TableSasWithARowKeyBoundButNoPartitionKeyBoundIsRefused) {
  struct Case {
    const char* what;
    std::string sas;
    const char* why;
  };
  const std::vector<Case> cases = {
      {"srk without spk", TableSas("raud", IsoIn(3600), "", "", false, "m"),
       "srk (startrk) needs spk"},
      {"erk without epk", TableSas("raud", IsoIn(3600), "", "", false, "", "m"),
       "erk (endrk) needs epk"},
      {"srk with epk only", TableSas("raud", IsoIn(3600), "", "z", false, "m"),
       "srk (startrk) needs spk"},
  };
  for (const auto& k : cases) {
    Reply put =
        Send("PUT", KeyPath("orders", "a", "a") + "?" + k.sas, R"({"X":1})", {}, Sign::kNone);
    EXPECT_EQ(put.status, 403) << k.what << ": " << put.body;
    EXPECT_EQ(put.ErrorCode(), "AuthenticationFailed") << k.what;
    EXPECT_NE(put.ErrorMessage().find(k.why), std::string::npos)
        << k.what << ": " << put.ErrorMessage();
    Reply del = Send("DELETE", KeyPath("orders", "m", "1") + "?" + k.sas, "", {{"If-Match", "*"}},
                     Sign::kNone);
    EXPECT_EQ(del.status, 403) << k.what;
    Reply get = Send("GET", KeyPath("orders", "m", "1") + "?" + k.sas, "", {}, Sign::kNone);
    EXPECT_EQ(get.status, 403) << k.what;
    EXPECT_EQ(get.ErrorCode(), "AuthenticationFailed") << k.what;
  }
  EXPECT_EQ(Count(), 1u);  // m/1 only: nothing written, nothing deleted
  // With both bounds the range is served (RowKey within the partitions).
  const std::string both = TableSas("rau", IsoIn(3600), "m", "m", false, "0", "5");
  EXPECT_EQ(Send("GET", KeyPath("orders", "m", "1") + "?" + both, "", {}, Sign::kNone).status, 200);
  EXPECT_EQ(
      Send("PUT", KeyPath("orders", "m", "7") + "?" + both, R"({"X":1})", {}, Sign::kNone).status,
      403);
  EXPECT_EQ(Count(), 1u);
}

// Any captured signed request used to be accepted forever: no date, a date
// of 2001 or "not a date" all authenticated.
TEST_F(RestAuthTest, SharedKeyNeedsAnRfc1123DateWithin15Minutes) {
  const std::string target = "/devstoreaccount1/orders";
  int row = 10;
  auto insert = [&](const RequestDates& dates, Sign sign = Sign::kSharedKey) {
    return SendDated(*http_, "POST", target,
                     R"({"PartitionKey":"d","RowKey":")" + std::to_string(row++) + "\"}", dates, {},
                     sign);
  };
  struct Case {
    const char* what;
    RequestDates dates;
    const char* why;
  };
  const std::vector<Case> refused = {
      {"no date at all", {std::nullopt, std::nullopt}, "neither x-ms-date nor Date"},
      {"2001", {"Mon, 01 Jan 2001 00:00:00 GMT", std::nullopt}, "before the server's time"},
      {"not a date", {"not a date", std::nullopt}, "not in RFC 1123 format"},
      {"ISO 8601", {IsoIn(0), std::nullopt}, "not in RFC 1123 format"},
      {"no zone", {HttpDateNow().substr(0, 25), std::nullopt}, "not in RFC 1123 format"},
      {"31 February", {"Sat, 31 Feb 2026 00:00:00 GMT", std::nullopt}, "not in RFC 1123 format"},
      {"16 minutes ago", {HttpDateNow(-16 * 60), std::nullopt}, "before the server's time"},
      {"16 minutes ahead", {HttpDateNow(16 * 60), std::nullopt}, "after the server's time"},
      {"stale Date only",
       {std::nullopt, "Mon, 01 Jan 2001 00:00:00 GMT"},
       "before the server's time"},
      // x-ms-date wins over Date: a fresh Date does not save a stale x-ms-date.
      {"stale x-ms-date, fresh Date",
       {"Mon, 01 Jan 2001 00:00:00 GMT", HttpDateNow()},
       "before the server's time"},
  };
  for (const auto& k : refused) {
    for (Sign sign : {Sign::kSharedKey, Sign::kSharedKeyLite}) {
      Reply r = insert(k.dates, sign);
      EXPECT_EQ(r.status, 403) << k.what << ": " << r.body;
      EXPECT_EQ(r.ErrorCode(), "AuthenticationFailed") << k.what;
      EXPECT_NE(r.ErrorMessage().find(k.why), std::string::npos)
          << k.what << ": " << r.ErrorMessage();
    }
  }
  Reply read = SendDated(*http_, "GET", KeyPath("orders", "m", "1"), "",
                         {"Mon, 01 Jan 2001 00:00:00 GMT", std::nullopt});
  EXPECT_EQ(read.status, 403);
  EXPECT_EQ(Count(), 1u);  // nothing was written

  // Accepted: x-ms-date or Date alone, within the skew, a one-digit day
  // (Java's RFC_1123_DATE_TIME), and a stale Date beside a fresh x-ms-date.
  EXPECT_EQ(insert({HttpDateNow(), std::nullopt}).status, 201);
  EXPECT_EQ(insert({std::nullopt, HttpDateNow()}).status, 201);
  EXPECT_EQ(insert({HttpDateNow(-10 * 60), std::nullopt}).status, 201);
  EXPECT_EQ(insert({HttpDateNow(10 * 60), std::nullopt}, Sign::kSharedKeyLite).status, 201);
  EXPECT_EQ(insert({HttpDateNow(), "Mon, 01 Jan 2001 00:00:00 GMT"}).status, 201);
  std::string one_digit = HttpDateNow();
  if (one_digit[5] == '0') {
    one_digit.erase(5, 1);
    EXPECT_EQ(insert({one_digit, std::nullopt}).status, 201) << one_digit;
  }
}

TEST_F(RestAuthTest, BadExpiredOrUnsupportedSasIs403) {
  Reply tampered = Send("GET", "/devstoreaccount1/orders()?" + TableSas("r", IsoIn(3600), "", "", true), "", {}, Sign::kNone);
  EXPECT_EQ(tampered.status, 403);
  EXPECT_EQ(tampered.ErrorCode(), "AuthenticationFailed");
  Reply expired = Send("GET", "/devstoreaccount1/orders()?" + TableSas("r", IsoIn(-60)), "", {}, Sign::kNone);
  EXPECT_EQ(expired.status, 403);
  EXPECT_EQ(expired.ErrorCode(), "AuthenticationFailed");
  // Signed for the table "orders", used with a different permission string.
  std::string widened = TableSas("r", IsoIn(3600));
  widened.replace(widened.find("sp=r"), 4, "sp=rd");
  EXPECT_EQ(Send("DELETE", KeyPath("orders", "m", "1") + "?" + widened, "", {{"If-Match", "*"}}, Sign::kNone).status, 403);
  EXPECT_EQ(Count(), 1u);
}

TEST_F(RestAuthTest, AccountSasCoversEveryTableAndCreatesTablesWithContainerScope) {
  const std::string sas = AccountSas("rwdlacu", "sco");
  Reply created = Send("POST", "/devstoreaccount1/Tables?" + sas, R"({"TableName":"more"})", {}, Sign::kNone);
  EXPECT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(Send("POST", "/devstoreaccount1/more?" + sas, R"({"PartitionKey":"a","RowKey":"b"})", {}, Sign::kNone).status, 201);
  EXPECT_EQ(Send("GET", "/devstoreaccount1/Tables?" + sas, "", {}, Sign::kNone).status, 200);
  const std::string objects_only = AccountSas("rwdlacu", "o");
  Reply refused = Send("POST", "/devstoreaccount1/Tables?" + objects_only, R"({"TableName":"none"})", {}, Sign::kNone);
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(refused.ErrorCode(), "AuthorizationResourceTypeMismatch");
  // Tables only (srt c): no entity may be touched, tables may be listed.
  const std::string tables_only = AccountSas("rwdlacu", "c");
  Reply entity = Send("GET", "/devstoreaccount1/more()?" + tables_only, "", {}, Sign::kNone);
  EXPECT_EQ(entity.status, 403);
  EXPECT_EQ(entity.ErrorCode(), "AuthorizationResourceTypeMismatch");
  Reply listed = Send("GET", "/devstoreaccount1/Tables?" + tables_only, "", {}, Sign::kNone);
  ASSERT_EQ(listed.status, 200);
  EXPECT_EQ(Json(listed.body).Count("value"), 2u);
  EXPECT_EQ(client_->ListTables()->size(), 2u);
}

// The service's Delete Table needs d in an account SAS. The gateway's token
// has one letter (m) for creating and deleting tables, which c and w give
// too: before, a SAS that could create tables (sp=rwa, sp=rc) but delete no
// entity deleted a table with its rows.
TEST_F(RestAuthTest, AccountSasWithoutDCannotDeleteATable) {
  for (const char* sp : {"rwa", "rc", "rwlacu"}) {
    SCOPED_TRACE(sp);
    const std::string sas = AccountSas(sp, "sco");
    Reply del = Send("DELETE", "/devstoreaccount1/Tables('orders')?" + sas, "", {}, Sign::kNone);
    EXPECT_EQ(del.status, 403) << del.body;
    EXPECT_EQ(del.ErrorCode(), "AuthorizationPermissionMismatch");
    // Tunnelled through POST: the same.
    Reply tunnelled = Send("POST", "/devstoreaccount1/Tables('orders')?" + sas, "",
                           {{"X-HTTP-Method", "DELETE"}}, Sign::kNone);
    EXPECT_EQ(tunnelled.status, 403) << tunnelled.body;
    EXPECT_EQ(Count(), 1u);
  }
  // It still creates tables, and with d (and srt c) it deletes them.
  EXPECT_EQ(Send("POST", "/devstoreaccount1/Tables?" + AccountSas("rwa", "sco"),
                 R"({"TableName":"more"})", {}, Sign::kNone)
                .status,
            201);
  EXPECT_EQ(Send("DELETE", "/devstoreaccount1/Tables('more')?" + AccountSas("d", "c"), "", {},
                 Sign::kNone)
                .status,
            204);
  EXPECT_EQ(client_->ListTables()->size(), 1u);
}

// Create Table needs c or w in an account SAS (Azurite's table of account
// SAS permissions says the same). d also gives the token's m, so that it may
// delete tables: before, a SAS that could only delete (sp=d, sp=rd) created
// tables too.
TEST_F(RestAuthTest, AccountSasWithoutCOrWCannotCreateATable) {
  for (const char* sp : {"d", "rd", "rdla"}) {
    SCOPED_TRACE(sp);
    Reply created = Send("POST", "/devstoreaccount1/Tables?" + AccountSas(sp, "sco"),
                         R"({"TableName":"more"})", {}, Sign::kNone);
    EXPECT_EQ(created.status, 403) << created.body;
    EXPECT_EQ(created.ErrorCode(), "AuthorizationPermissionMismatch");
    EXPECT_EQ(client_->ListTables()->size(), 1u);
  }
  for (const char* sp : {"c", "w"}) {
    SCOPED_TRACE(sp);
    const std::string name = std::string("made") + sp;
    Reply created = Send("POST", "/devstoreaccount1/Tables?" + AccountSas(sp, "c"),
                         R"({"TableName":")" + name + R"("})", {}, Sign::kNone);
    EXPECT_EQ(created.status, 201) << created.body;
  }
  EXPECT_EQ(client_->ListTables()->size(), 3u);
}

class RestCorsTest : public RestTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    const std::string path = dir_.Sub("cors.yaml");
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("rest:\n  cors:\n    - allowed_origins: [\"http://app.example\"]\n      allowed_methods: [GET, POST]\n"
               "      allowed_headers: [\"x-ms-*\", content-type]\n      exposed_headers: [\"x-ms-request-id\"]\n"
               "      max_age_seconds: 60\n",
               f);
    std::fclose(f);
    return {"--durability", "os", "--rest", "127.0.0.1:0", "--config", path};
  }
};

TEST_F(RestCorsTest, PreflightIsAnsweredFromTheRules) {
  Reply ok = Send("OPTIONS", "/devstoreaccount1/Tables", "",
                  {{"Origin", "http://app.example"}, {"Access-Control-Request-Method", "POST"},
                   {"Access-Control-Request-Headers", "x-ms-date, content-type"}},
                  Sign::kNone);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.Header("Access-Control-Allow-Origin"), "http://app.example");
  EXPECT_EQ(ok.Header("Access-Control-Max-Age"), "60");
  Reply method = Send("OPTIONS", "/devstoreaccount1/Tables", "",
                      {{"Origin", "http://app.example"}, {"Access-Control-Request-Method", "DELETE"}}, Sign::kNone);
  EXPECT_EQ(method.status, 403);
  EXPECT_EQ(method.ErrorCode(), "CorsPreflightFailure");
  Reply origin = Send("OPTIONS", "/devstoreaccount1/Tables", "",
                      {{"Origin", "http://evil.example"}, {"Access-Control-Request-Method", "GET"}}, Sign::kNone);
  EXPECT_EQ(origin.status, 403);
  Reply actual = Send("GET", "/devstoreaccount1/Tables", "", {{"Origin", "http://app.example"}});
  EXPECT_EQ(actual.status, 200);
  EXPECT_EQ(actual.Header("Access-Control-Allow-Origin"), "http://app.example");
  EXPECT_EQ(actual.Header("Access-Control-Expose-Headers"), "x-ms-request-id");
}

}  // namespace
}  // namespace sidetable::testing

namespace sidetable::testing {
namespace {

// auth.mode: tokens: ZeroMQ requests need signed tokens; REST requests get
// theirs from SharedKey (the whole account) or from the SAS.
class RestTokensTest : public RestTest {
 protected:
  virtual std::string Quotas() { return ""; }
  // With tokens on, the development account takes an explicit `true`.
  virtual std::string Rest() { return "rest:\n  dev_account: true\n"; }
  std::vector<std::string> ServerArgs() override {
    const std::string key = dir_.Sub("k1.key");
    std::FILE* k = std::fopen(key.c_str(), "w");
    std::fputs("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n", k);
    std::fclose(k);
    ::chmod(key.c_str(), 0600);
    const std::string path = dir_.Sub("tokens.yaml");
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(("auth:\n  mode: tokens\n  keys:\n    - {id: k1, file: " + key + "}\n" + Quotas() + Rest()).c_str(), f);
    std::fclose(f);
    return {"--durability", "os", "--rest", "127.0.0.1:0", "--config", path};
  }
};

TEST_F(RestTokensTest, SharedKeyHasTheWholeAccountAndSasItsScope) {
  // The mode is on: a ZeroMQ request without a token is refused.
  EXPECT_EQ(client_->ListTables().status().code(), Code::kAuthenticationFailed);
  ASSERT_EQ(CreateTable("orders").status, 201);
  ASSERT_EQ(InsertJson("orders", R"({"PartitionKey":"m","RowKey":"1"})").status, 201);
  EXPECT_EQ(GetEntity("orders", "m", "1").status, 200);
  EXPECT_EQ(Json(Send("GET", "/devstoreaccount1/Tables").body).Count("value"), 1u);
  EXPECT_EQ(Send("DELETE", KeyPath("orders", "m", "1"), "", {{"If-Match", "*"}}).status, 204);

  const std::string se = "2099-01-01T00:00:00Z";
  const std::string to_sign = "r\n\n" + se + "\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\n\n\n\n";
  const std::string sas = "sv=2019-02-02&tn=orders&sp=r&se=" + Enc(se) + "&sig=" + Enc(Hmac(key_, to_sign));
  EXPECT_EQ(Send("GET", "/devstoreaccount1/orders()?" + sas, "", {}, Sign::kNone).status, 200);
  Reply insert = Send("POST", "/devstoreaccount1/orders?" + sas, R"({"PartitionKey":"m","RowKey":"2"})", {}, Sign::kNone);
  EXPECT_EQ(insert.status, 403);
  EXPECT_EQ(insert.ErrorCode(), "AuthorizationPermissionMismatch");
  EXPECT_EQ(Json(Send("GET", "/devstoreaccount1/orders()").body).Count("value"), 0u);
}

// auth.mode tokens without rest.dev_account: the well-known development key,
// which anyone can read, opens nothing; a configured account still works.
class RestTokensNoDevAccountTest : public RestTokensTest {
 protected:
  std::string Rest() override {
    return "rest:\n  accounts:\n    - {name: acct1, key: c2VjcmV0LWtleS1ieXRlcy0xMjM0NTY=}\n";
  }
  // A request signed (SharedKey) as acct1.
  Reply AsAcct1(const std::string& method, const std::string& target, const std::string& body) {
    const std::string date = HttpDateNow();
    const std::string type = body.empty() ? "" : "application/json";
    const std::string sig = Hmac("secret-key-bytes-123456",
                                 method + "\n\n" + type + "\n" + date + "\n/acct1" + target);
    return Send(method, target, body, {{"x-ms-date", date}, {"Authorization", "SharedKey acct1:" + sig}},
                Sign::kNone);
  }
};

TEST_F(RestTokensNoDevAccountTest, TheWellKnownKeyIsRefused) {
  Reply create = CreateTable("orders");
  EXPECT_EQ(create.status, 403);
  EXPECT_EQ(create.ErrorCode(), "AuthenticationFailed");
  EXPECT_EQ(Send("GET", "/devstoreaccount1/Tables").status, 403);
  // Nothing was created: the configured account sees no table, then makes one.
  Reply list = AsAcct1("GET", "/acct1/Tables", "");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(Json(list.body).Count("value"), 0u);
  EXPECT_EQ(AsAcct1("POST", "/acct1/Tables", R"({"TableName":"orders"})").status, 201);
  EXPECT_EQ(Json(AsAcct1("GET", "/acct1/Tables", "").body).Count("value"), 1u);
}

// The account's tenant over auth.quotas: 503 ServerBusy, as on ZeroMQ.
class RestQuotaTest : public RestTokensTest {
 protected:
  std::string Quotas() override {
    return "  quotas:\n    tenants:\n      devstoreaccount1: {requests_per_second: 2}\n";
  }
};

TEST_F(RestQuotaTest, ATenantOverItsQuotaGetsServerBusy) {
  int busy = 0, ok = 0;
  for (int i = 0; i < 8; i++) {
    Reply r = Send("GET", "/devstoreaccount1/Tables");
    if (r.status == 503) {
      busy++;
      EXPECT_EQ(r.ErrorCode(), "ServerBusy");
    } else {
      EXPECT_EQ(r.status, 200);
      ok++;
    }
  }
  EXPECT_GE(ok, 1);
  EXPECT_GE(busy, 1);
  const std::string& hp = server_->http();
  httplib::Client http(hp.substr(0, hp.rfind(':')), std::stoi(hp.substr(hp.rfind(':') + 1)));
  auto res = http.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("reason=\"tenant_quota\""), std::string::npos);
}

// The development account's key from an owner-only key_file, beside an
// account whose key is inline in a configuration others may read: the
// requests are verified with the file's key, and the start-up log warns
// about the inline one. Before, key_file was an unknown key (no start).
class RestKeyFileTest : public RestTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    const std::string key = dir_.Sub("dev.key");
    std::ofstream(key) << kAccountKey << "\n";
    ::chmod(key.c_str(), 0600);
    const std::string path = dir_.Sub("keys.yaml");
    std::ofstream(path) << "rest:\n  accounts:\n    - {name: devstoreaccount1, key_file: " << key
                        << "}\n    - {name: acct1, key: c2VjcmV0LWtleS1ieXRlcy0xMjM0NTY=}\n";
    ::chmod(path.c_str(), 0644);
    return {"--durability", "os", "--rest", "127.0.0.1:0", "--config", path};
  }
};

TEST_F(RestKeyFileTest, AKeyFileWorksAndAnInlineKeyOthersMayReadIsWarnedAbout) {
  EXPECT_EQ(CreateTable("orders").status, 201);
  EXPECT_EQ(Send("GET", "/devstoreaccount1/Tables").status, 200);
  const std::string log = server_->Log();
  EXPECT_NE(log.find("rest.accounts: " + dir_.Sub("keys.yaml") +
                     " holds account keys and group or others may read it"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("c2VjcmV0LWtleS1ieXRlcy0xMjM0NTY"), std::string::npos);
}

// A tenant over its quota gets a 503 per request; the warning for them is
// written once a second at most, with their number. Before, each refused
// request wrote its own warning (2,000 lines a second from one client).
TEST_F(RestQuotaTest, ServerBusyWarningsAreOneASecond) {
  const auto started = std::chrono::steady_clock::now();
  int busy = 0;
  for (int i = 0; i < 60; i++) busy += Send("GET", "/devstoreaccount1/Tables").status == 503;
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started)
          .count();
  ASSERT_GE(busy, 40);
  const std::string log = server_->Log();
  size_t lines = 0;
  for (size_t at = log.find("-> 503"); at != std::string::npos; at = log.find("-> 503", at + 1))
    lines++;
  EXPECT_GE(lines, 1u) << log;
  EXPECT_LE(lines, static_cast<size_t>(seconds) + 2) << log;
  EXPECT_NE(log.find("answered 5xx since the last warning"), std::string::npos) << log;
  // A last burst, within one second: at most its first is warned about;
  // the rest are logged once the burst is a second old (before session 43,
  // only with the next burst's first warning).
  for (int i = 0; i < 5; i++) Send("GET", "/devstoreaccount1/Tables");
  bool ended = false;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
       !ended && std::chrono::steady_clock::now() < until;) {
    ended = server_->Log().find("more times after the last warning") != std::string::npos;
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(ended) << server_->Log();
}

// A SAS is a bearer credential: the request log (every request at debug,
// every 5xx at warn, so at the default level too) names the request without
// its signature. Before, a SAS over its account's quota wrote a warning with
// the whole SAS in it, usable by whoever reads the logs until it expired.
class RestSasLogTest : public RestQuotaTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    auto args = RestQuotaTest::ServerArgs();
    args.insert(args.end(), {"--log-level", "debug"});
    return args;
  }
};

TEST_F(RestSasLogTest, TheLogNeverHoldsTheSignature) {
  const std::string se = "2099-01-01T00:00:00Z";
  const std::string sig =
      Hmac(key_, "r\n\n" + se + "\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\n\n\n\n");
  const std::string sas = "sv=2019-02-02&tn=orders&sp=r&se=" + Enc(se) + "&sig=" + Enc(sig);
  int busy = 0;
  for (int i = 0; i < 8; i++)
    busy += Send("GET", "/devstoreaccount1/orders()?" + sas, "", {}, Sign::kNone).status == 503;
  ASSERT_GE(busy, 1);  // so a warning was written
  const std::string log = server_->Log();
  EXPECT_NE(log.find("-> 503"), std::string::npos) << log;
  EXPECT_NE(log.find("sp=r&se="), std::string::npos) << log;  // the requests are logged
  EXPECT_NE(log.find("&sig=REDACTED"), std::string::npos) << log;
  EXPECT_EQ(log.find(Enc(sig)), std::string::npos) << log;
  EXPECT_EQ(log.find(sig), std::string::npos) << log;
}

}  // namespace
}  // namespace sidetable::testing
