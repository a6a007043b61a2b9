// The gateway's pure parts: the path and key parser, the OData JSON codec,
// the $batch multipart parser and response, the SharedKey and SAS
// strings-to-sign, continuation tokens; with malformed and random inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "sidecar/rest/call.h"
#include "sidecar/rest/multipart.h"
#include "sidecar/rest/odata.h"
#include "sidecar/rest/path.h"
#include "sidecar/rest/sas.h"
#include "sidecar/rest/shared_key.h"
#include "tests/sidecar/config_text.h"

namespace sidetable::sidecar::rest {
namespace {

TEST(RestPath, ParsesEveryResource) {
  auto t = ParsePath("/acct/Tables");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->account, "acct");
  EXPECT_EQ(t->resource, Resource::kTables);
  auto one = ParsePath("/acct/Tables('my''table')");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->resource, Resource::kTable);
  EXPECT_EQ(one->table, "my'table");
  for (const char* p : {"/acct/orders", "/acct/orders()"}) {
    auto e = ParsePath(p);
    ASSERT_TRUE(e.ok()) << p;
    EXPECT_EQ(e->resource, Resource::kEntities);
    EXPECT_EQ(e->table, "orders");
  }
  auto k = ParsePath("/acct/orders(PartitionKey='a%27%27b%2C',RowKey='x,)y')");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->resource, Resource::kEntity);
  EXPECT_EQ(k->pk, "a'b,");
  EXPECT_EQ(k->rk, "x,)y");
  auto swapped = ParsePath("/acct/orders(RowKey='r',PartitionKey='p')");
  ASSERT_TRUE(swapped.ok());
  EXPECT_EQ(swapped->pk, "p");
  auto empty = ParsePath("/acct/orders(PartitionKey='',RowKey='')");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->pk, "");
  EXPECT_EQ(ParsePath("/acct/$batch")->resource, Resource::kBatch);
  EXPECT_EQ(ParsePath("/acct")->resource, Resource::kService);
  EXPECT_EQ(ParsePath("/acct/")->resource, Resource::kService);
}

TEST(RestPath, RefusesMalformedPaths) {
  for (const char* p : {"", "acct", "//Tables", "/acct/a/b", "/acct/t(PartitionKey='a')", "/acct/t(PartitionKey='a',RowKey='b'",
                        "/acct/t(PartitionKey='a,RowKey='b')", "/acct/t(PartitionKey=a,RowKey='b')",
                        "/acct/t(PartitionKey='a',PartitionKey='b')", "/acct/t(X='a',RowKey='b')", "/acct/%zz",
                        "/acct/t(PartitionKey='a'RowKey='b')", "/acct/Tables('x')y", "/acct/(PartitionKey='a',RowKey='b')",
                        "/acct/t(PartitionKey='a',RowKey='b',)", "/acct/t%"}) {
    EXPECT_FALSE(ParsePath(p).ok()) << p;
  }
}

TEST(RestPath, RandomInputsNeverCrash) {
  std::mt19937 rng(18);
  const std::string alphabet = "/'(),=%2aAPRKTbles$ ";
  for (int i = 0; i < 20000; i++) {
    std::string s = "/acct/";
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; k++) s += alphabet[rng() % alphabet.size()];
    auto p = ParsePath(s);
    (void)p.ok();
  }
}

TEST(RestPath, QuoteKeyParsesBack) {
  for (std::string key : {"", "plain", "it's", "''", "a b/c?d#e", "\xc3\xa9t\xc3\xa9"}) {
    const std::string path = "/a/t(PartitionKey=" + QuoteKey(key) + ",RowKey=" + QuoteKey(key) + ")";
    auto p = ParsePath(path);
    ASSERT_TRUE(p.ok()) << path;
    EXPECT_EQ(p->pk, key);
    EXPECT_EQ(p->rk, key);
  }
}

TEST(RestOData, AcceptHeaders) {
  EXPECT_EQ(ParseAccept(""), Metadata::kMinimal);
  EXPECT_EQ(ParseAccept("application/json"), Metadata::kMinimal);
  EXPECT_EQ(ParseAccept("application/json;odata=nometadata"), Metadata::kNone);
  EXPECT_EQ(ParseAccept("application/json;odata=FullMetadata"), Metadata::kFull);
  EXPECT_EQ(ParseAccept("*/*"), Metadata::kMinimal);
  EXPECT_FALSE(ParseAccept("application/atom+xml").has_value());
}

TEST(RestOData, EntityBodiesTakeTheUrlKeys) {
  const std::string pk = "p", rk = "r";
  auto e = ParseEntityBody(R"({"a":1})", &pk, &rk);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->partition_key, "p");
  EXPECT_EQ(e->Find("a")->as_int32(), 1);
  auto empty = ParseEntityBody("  { } ", &pk, &rk);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->properties.empty());
  auto only_pk = ParseEntityBody(R"({"PartitionKey":"other","x":"y"})", &pk, &rk);
  ASSERT_TRUE(only_pk.ok()) << only_pk.status().ToString();
  EXPECT_EQ(only_pk->partition_key, "p");  // the URL wins
  EXPECT_EQ(only_pk->row_key, "r");
  auto meta = ParseEntityBody(R"({"PartitionKey":"p","RowKey":"r","odata.etag":"W/\"1\"","odata.metadata":"x","Timestamp":"2020-01-01T00:00:00Z"})",
                              nullptr, nullptr);
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_TRUE(meta->properties.empty());
  EXPECT_TRUE(meta->etag.empty());
  EXPECT_FALSE(ParseEntityBody(R"({"a":1})", nullptr, nullptr).ok());
}

TEST(RestOData, BadBodiesAreInvalidInput) {
  const std::string pk = "p", rk = "r";
  for (const char* b : {"", "{", "[1]", "null", "\"x\"", R"({"a":[1]})", R"({"a":null})", R"({"a":1,"a":2})",
                        R"({"a":"x","a@odata.type":"Edm.Guid"})", R"({"a":"1","a@odata.type":"Edm.Nope"})",
                        R"({"a@odata.type":"Edm.Int64"})", R"({"a":18446744073709551615})"}) {
    auto e = ParseEntityBody(b, &pk, &rk);
    EXPECT_FALSE(e.ok()) << b;
    if (!e.ok()) {
      EXPECT_EQ(e.status().code(), Code::kInvalidInput) << b;
    }
  }
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\":,ab1.@odatype ";
  for (int i = 0; i < 20000; i++) {
    std::string s;
    const int n = static_cast<int>(rng() % 30);
    for (int k = 0; k < n; k++) s += alphabet[rng() % alphabet.size()];
    (void)ParseEntityBody(s, &pk, &rk).ok();
  }
}

TEST(RestOData, WritesTheServiceFormat) {
  Entity e;
  e.partition_key = "p";
  e.row_key = "r";
  e.etag = "W/\"7\"";
  e.timestamp = *ParseDateTime("2020-01-02T03:04:05Z");
  e.Set("i", Value::Int64(-5)).Set("d", Value::Double(1.5)).Set("s", Value::String("x"));
  Links links{"http://h/acct", "t"};
  std::string minimal;
  AppendEntity(e, Metadata::kMinimal, links, true, &minimal);
  EXPECT_EQ(minimal,
            "{\"odata.metadata\":\"http://h/acct/$metadata#t/@Element\",\"odata.etag\":\"W/\\\"7\\\"\","
            "\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"Timestamp\":\"2020-01-02T03:04:05.0000000Z\","
            "\"i@odata.type\":\"Edm.Int64\",\"i\":\"-5\",\"d\":1.5,\"s\":\"x\"}");
  std::string none;
  AppendEntity(e, Metadata::kNone, links, true, &none);
  EXPECT_EQ(none, "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"Timestamp\":\"2020-01-02T03:04:05.0000000Z\",\"i\":\"-5\",\"d\":1.5,\"s\":\"x\"}");
  std::string full;
  AppendEntity(e, Metadata::kFull, links, false, &full);
  EXPECT_NE(full.find("\"odata.id\":\"http://h/acct/t(PartitionKey='p',RowKey='r')\""), std::string::npos) << full;
  EXPECT_NE(full.find("\"d@odata.type\":\"Edm.Double\""), std::string::npos);
  EXPECT_EQ(full.find("odata.metadata"), std::string::npos);
  // $select: keys and Timestamp only when selected (the differential test
  // against Azurite caught "PartitionKey":"" for a select of RowKey).
  std::string selected;
  const std::vector<std::string> select = {"RowKey", "s"};
  Entity partial;
  partial.row_key = "r";
  partial.etag = e.etag;
  partial.timestamp = e.timestamp;
  partial.Set("s", Value::String("x"));
  AppendEntity(partial, Metadata::kNone, links, false, &selected, &select);
  EXPECT_EQ(selected, "{\"RowKey\":\"r\",\"s\":\"x\"}");
  EXPECT_EQ(ErrorBody("Code", "m\"x"),
            "{\"odata.error\":{\"code\":\"Code\",\"message\":{\"lang\":\"en-US\",\"value\":\"m\\\"x\"}}}");
}

TEST(RestSharedKey, StringToSignAndVerification) {
  EXPECT_EQ(SharedKeyStringToSign("PUT", "", "application/json", "Mon, 01 Jan 2024 00:00:00 GMT",
                                  CanonicalResource("acct", "/acct/t(PartitionKey='a',RowKey='b')", "")),
            "PUT\n\napplication/json\nMon, 01 Jan 2024 00:00:00 GMT\n/acct/acct/t(PartitionKey='a',RowKey='b')");
  EXPECT_EQ(SharedKeyLiteStringToSign("D", CanonicalResource("acct", "/acct/t", "acl")), "D\n/acct/acct/t?comp=acl");
  // RFC 4231 test case 2.
  EXPECT_EQ(HmacSha256Base64("Jefe", "what do ya want for nothing?"), "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM=");
  std::vector<RestAccount> accounts = {{"acct", "secret-key-bytes"}};
  SignedParts parts;
  parts.verb = "GET";
  const std::string d = "Mon, 01 Jan 2024 00:00:00 GMT";
  const int64_t now = *ParseDateTime("2024-01-01T00:05:00Z");
  parts.x_ms_date = d;
  parts.raw_path = "/acct/Tables";
  parts.path_account = "acct";
  const std::string with = HmacSha256Base64(
      "secret-key-bytes", SharedKeyStringToSign("GET", "", "", d, "/acct/acct/Tables"));
  const std::string without =
      HmacSha256Base64("secret-key-bytes", SharedKeyStringToSign("GET", "", "", d, "/acct/Tables"));
  EXPECT_TRUE(VerifySharedKey("SharedKey acct:" + with, parts, accounts, now).ok());
  EXPECT_TRUE(VerifySharedKey("SharedKey acct:" + without, parts, accounts, now).ok());
  EXPECT_EQ(VerifySharedKey("SharedKey acct:" + with.substr(1), parts, accounts, now).code(),
            Code::kAuthenticationFailed);
  EXPECT_EQ(VerifySharedKey("SharedKey other:" + with, parts, accounts, now).code(),
            Code::kAuthenticationFailed);
  EXPECT_EQ(VerifySharedKey("SharedKeyLite acct:" + with, parts, accounts, now).code(),
            Code::kAuthenticationFailed);
  EXPECT_EQ(VerifySharedKey("Basic x", parts, accounts, now).code(), Code::kAuthenticationFailed);
  EXPECT_EQ(VerifySharedKey("SharedKey", parts, accounts, now).code(), Code::kAuthenticationFailed);
  EXPECT_EQ(VerifySharedKey("SharedKey acct", parts, accounts, now).code(),
            Code::kAuthenticationFailed);
  // The right signature at the wrong time: a replay.
  const int64_t minute = 60 * kTicksPerSecond;
  EXPECT_TRUE(VerifySharedKey("SharedKey acct:" + with, parts, accounts, now + 10 * minute).ok());
  EXPECT_TRUE(VerifySharedKey("SharedKey acct:" + with, parts, accounts, now - 20 * minute).ok());
  Status late = VerifySharedKey("SharedKey acct:" + with, parts, accounts, now + 11 * minute);
  EXPECT_EQ(late.code(), Code::kAuthenticationFailed);
  EXPECT_NE(late.message().find("960 s before the server's time"), std::string::npos)
      << late.message();
  Status early = VerifySharedKey("SharedKey acct:" + with, parts, accounts, now - 21 * minute);
  EXPECT_NE(early.message().find("960 s after the server's time"), std::string::npos)
      << early.message();
  // x-ms-date wins over Date; Date alone is the date.
  SignedParts both = parts;
  both.date = "Mon, 01 Jan 2024 00:05:00 GMT";
  EXPECT_TRUE(VerifySharedKey("SharedKey acct:" + with, both, accounts, now).ok());
  SignedParts date_only = parts;
  date_only.x_ms_date = "";
  date_only.date = d;
  EXPECT_TRUE(VerifySharedKey("SharedKey acct:" + with, date_only, accounts, now).ok());
  SignedParts none = parts;
  none.x_ms_date = "";
  const std::string undated = HmacSha256Base64(
      "secret-key-bytes", SharedKeyStringToSign("GET", "", "", "", "/acct/acct/Tables"));
  Status no_date = VerifySharedKey("SharedKey acct:" + undated, none, accounts, now);
  EXPECT_EQ(no_date.code(), Code::kAuthenticationFailed);
  EXPECT_NE(no_date.message().find("neither x-ms-date nor Date"), std::string::npos)
      << no_date.message();
  SignedParts garbage = parts;
  garbage.x_ms_date = "D";
  const std::string signed_d = HmacSha256Base64(
      "secret-key-bytes", SharedKeyStringToSign("GET", "", "", "D", "/acct/acct/Tables"));
  EXPECT_NE(VerifySharedKey("SharedKey acct:" + signed_d, garbage, accounts, now)
                .message()
                .find("RFC 1123"),
            std::string::npos);
}

TEST(RestSharedKey, HttpDates) {
  EXPECT_EQ(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT"), ParseDateTime("1994-11-06T08:49:37Z"));
  EXPECT_EQ(ParseHttpDate("Tue, 3 Jun 2008 11:05:30 GMT"),
            ParseDateTime("2008-06-03T11:05:30Z"));  // Java's form
  EXPECT_EQ(ParseHttpDate("Thu, 29 Feb 2024 23:59:59 GMT"), ParseDateTime("2024-02-29T23:59:59Z"));
  for (const char* bad :
       {"", "D", "not a date", "2024-01-01T00:00:00Z", "Sun, 06 Nov 1994 08:49:37",
        "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 +0000",
        "06 Nov 1994 08:49:37 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 006 Nov 1994 08:49:37 GMT",
        "Sun, 31 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT ",
        "Sun,06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, 0x Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:3x GMT"}) {
    EXPECT_FALSE(ParseHttpDate(bad).has_value()) << bad;
  }
}

TEST(RestSas, TheLoggedTargetHasNoSignature) {
  EXPECT_EQ(RedactSasSignature("/a/t()?sv=1&sig=abc%2B%3D&sp=r"), "/a/t()?sv=1&sig=REDACTED&sp=r");
  EXPECT_EQ(RedactSasSignature("/a/t()?sig=abc"), "/a/t()?sig=REDACTED");
  EXPECT_EQ(RedactSasSignature("/a/t()?%73ig=abc&x"), "/a/t()?%73ig=REDACTED&x");  // read as sig
  EXPECT_EQ(RedactSasSignature("/a/t()?sig=a&sig=b"), "/a/t()?sig=REDACTED&sig=REDACTED");
  EXPECT_EQ(RedactSasSignature("/a/t()?signal=1&asig=2&$top=3"), "/a/t()?signal=1&asig=2&$top=3");
  EXPECT_EQ(RedactSasSignature("/a/Tables"), "/a/Tables");
  EXPECT_EQ(RedactSasSignature("/a/t()?"), "/a/t()?");
}

TEST(RestSas, StringsToSignAndTokens) {
  QueryParams q = {{"sp", "raud"}, {"se", "2099-01-01T00:00:00Z"}, {"tn", "Orders"}, {"sv", "2019-02-02"},
                   {"spk", "a"}, {"epk", "m"}};
  EXPECT_EQ(ServiceSasStringToSign(q, "acct"), "raud\n\n2099-01-01T00:00:00Z\n/table/acct/orders\n\n\n\n2019-02-02\na\n\nm\n");
  std::vector<RestAccount> accounts = {{"acct", "k"}};
  q["sig"] = HmacSha256Base64("k", ServiceSasStringToSign(q, "acct"));
  auto t = VerifySas(q, "acct", accounts, NowTicks());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->spec.table, "Orders");
  EXPECT_FALSE(t->spec.table_is_prefix);
  EXPECT_EQ(*t->spec.permissions, 0x0f);
  EXPECT_EQ(*t->spec.start_pk, "a");
  EXPECT_FALSE(VerifySas(q, "other", accounts, NowTicks()).ok());
  QueryParams expired = q;
  EXPECT_EQ(VerifySas(q, "acct", accounts, *ParseDateTime("2099-01-01T00:00:01Z")).status().code(), Code::kAuthenticationFailed);
  QueryParams bad = q;
  bad["sp"] = "r";
  EXPECT_EQ(VerifySas(bad, "acct", accounts, NowTicks()).status().code(), Code::kAuthenticationFailed);
  // No permissions at all: refused, not a SAS that permits nothing.
  for (const bool service : {true, false}) {
    QueryParams none =
        service
            ? QueryParams{{"se", "2099-01-01T00:00:00Z"}, {"tn", "Orders"}, {"sv", "2019-02-02"}}
            : QueryParams{
                  {"ss", "t"}, {"srt", "o"}, {"se", "2099-01-01T00:00:00Z"}, {"sv", "2021-06-08"}};
    none["sig"] = HmacSha256Base64("k", service ? ServiceSasStringToSign(none, "acct")
                                                : AccountSasStringToSign(none, "acct", true));
    auto refused = VerifySas(none, "acct", accounts, NowTicks());
    EXPECT_EQ(refused.status().code(), Code::kAuthenticationFailed) << service;
    EXPECT_NE(refused.status().message().find("sp (the permissions) is required"),
              std::string::npos)
        << refused.status().message();
  }
  // A RowKey bound needs its PartitionKey bound, signed or not.
  for (const auto& [rk, pk] : {std::pair<const char*, const char*>{"srk", "spk"}, {"erk", "epk"}}) {
    QueryParams alone = {{"sp", "raud"},
                         {"se", "2099-01-01T00:00:00Z"},
                         {"tn", "Orders"},
                         {"sv", "2019-02-02"},
                         {rk, "m"}};
    alone["sig"] = HmacSha256Base64("k", ServiceSasStringToSign(alone, "acct"));
    auto refused = VerifySas(alone, "acct", accounts, NowTicks());
    EXPECT_EQ(refused.status().code(), Code::kAuthenticationFailed) << rk;
    EXPECT_NE(refused.status().message().find(std::string(rk) + " ("), std::string::npos)
        << refused.status().message();
    alone[pk] = "p";
    alone["sig"] = HmacSha256Base64("k", ServiceSasStringToSign(alone, "acct"));
    EXPECT_TRUE(VerifySas(alone, "acct", accounts, NowTicks()).ok()) << rk;
  }

  QueryParams a = {{"sp", "rl"}, {"ss", "t"}, {"srt", "o"}, {"se", "2099-01-01T00:00:00Z"}, {"sv", "2021-06-08"}};
  EXPECT_EQ(AccountSasStringToSign(a, "acct", true), "acct\nrl\nt\no\n\n2099-01-01T00:00:00Z\n\n\n2021-06-08\n\n");
  a["sig"] = HmacSha256Base64("k", AccountSasStringToSign(a, "acct", true));
  auto at = VerifySas(a, "acct", accounts, NowTicks());
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  EXPECT_TRUE(at->spec.table_is_prefix);
  EXPECT_EQ(*at->spec.permissions, static_cast<uint8_t>(token::Permission::kRead));
  a["ss"] = "b";
  a["sig"] = HmacSha256Base64("k", AccountSasStringToSign(a, "acct", false));
  EXPECT_EQ(VerifySas(a, "acct", accounts, NowTicks()).status().code(), Code::kAuthorizationPermissionMismatch);
  QueryParams si = q;
  si["si"] = "policy";
  EXPECT_FALSE(VerifySas(si, "acct", accounts, NowTicks()).ok());
}

TEST(RestTokens, ContinuationTokensRoundTrip) {
  for (std::string key : std::vector<std::string>{"", "a", "it's \xff\n/+=", std::string(300, 'x')}) {
    const std::string t = EncodeToken(key);
    EXPECT_EQ(t.find_first_of("+/=\r\n "), std::string::npos) << t;
    EXPECT_EQ(DecodeToken(t), key);
  }
  EXPECT_FALSE(DecodeToken("garbage").has_value());
  EXPECT_FALSE(DecodeToken("1!*").has_value());
}

const char* kBatch =
    "--batch_1\r\nContent-Type: multipart/mixed; boundary=changeset_2\r\n\r\n"
    "--changeset_2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
    "POST http://127.0.0.1:1/acct/t HTTP/1.1\r\nContent-Type: application/json\r\nPrefer: return-no-content\r\n\r\n"
    "{\"PartitionKey\":\"p\",\"RowKey\":\"1\"}\r\n"
    "--changeset_2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
    "DELETE http://127.0.0.1:1/acct/t(PartitionKey='p',RowKey='2') HTTP/1.1\r\nIf-Match: *\r\n\r\n"
    "\r\n--changeset_2--\r\n--batch_1--\r\n";

TEST(RestMultipart, ParsesAChangeset) {
  auto ops = ParseBatch("multipart/mixed; boundary=batch_1", kBatch);
  ASSERT_TRUE(ops.ok()) << ops.status().ToString();
  ASSERT_EQ(ops->size(), 2u);
  EXPECT_EQ((*ops)[0].method, "POST");
  EXPECT_EQ((*ops)[0].url, "http://127.0.0.1:1/acct/t");
  EXPECT_EQ((*ops)[0].Header("prefer"), "return-no-content");
  EXPECT_EQ((*ops)[0].body, "{\"PartitionKey\":\"p\",\"RowKey\":\"1\"}");
  EXPECT_EQ((*ops)[1].method, "DELETE");
  EXPECT_EQ((*ops)[1].Header("if-match"), "*");
  // Bare LF line ends, as some clients write them.
  std::string lf = kBatch;
  for (size_t at = lf.find("\r\n"); at != std::string::npos; at = lf.find("\r\n", at)) lf.erase(at, 1);
  auto lf_ops = ParseBatch("multipart/mixed; boundary=\"batch_1\"", lf);
  ASSERT_TRUE(lf_ops.ok()) << lf_ops.status().ToString();
  EXPECT_EQ(lf_ops->size(), 2u);
  EXPECT_EQ(BoundaryOf("multipart/mixed; boundary=batch_x; charset=utf-8"), "batch_x");
}

TEST(RestMultipart, RefusesMalformedBodiesAndTruncations) {
  EXPECT_FALSE(ParseBatch("application/json", kBatch).ok());
  EXPECT_FALSE(ParseBatch("multipart/mixed", kBatch).ok());
  EXPECT_FALSE(ParseBatch("multipart/mixed; boundary=other", kBatch).ok());
  const std::string full = kBatch;
  for (size_t n = 0; n < full.size(); n++) {
    (void)ParseBatch("multipart/mixed; boundary=batch_1", full.substr(0, n)).ok();  // never crashes
  }
  std::mt19937 rng(99);
  for (int i = 0; i < 5000; i++) {
    std::string s = full;
    for (int k = 0; k < 4; k++) s[rng() % s.size()] = static_cast<char>(rng() % 256);
    (void)ParseBatch("multipart/mixed; boundary=batch_1", s).ok();
  }
  std::string many = "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n";
  for (int i = 0; i < 101; i++) many += "--c\r\nContent-Type: application/http\r\n\r\nGET /a/t HTTP/1.1\r\n\r\n\r\n";
  many += "--c--\r\n--b--\r\n";
  auto r = ParseBatch("multipart/mixed; boundary=b", many);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("too many"), std::string::npos);
}

TEST(RestMultipart, RefusesAnEncodedPartByName) {
  // A base64 part would otherwise reach the request-line parser as garbage;
  // binary, 7bit and 8bit (any case) are the same bytes and are read as is.
  for (const char* ok : {"binary", "BINARY", "7bit", "8bit"}) {
    std::string b = kBatch;
    for (size_t at = b.find("binary"); at != std::string::npos; at = b.find("binary", at + 1))
      b.replace(at, 6, ok);
    auto ops = ParseBatch("multipart/mixed; boundary=batch_1", b);
    ASSERT_TRUE(ops.ok()) << ok << ": " << ops.status().ToString();
    EXPECT_EQ(ops->size(), 2u);
  }
  std::string b64 = kBatch;
  b64.replace(b64.find("binary"), 6, "base64");
  auto r = ParseBatch("multipart/mixed; boundary=batch_1", b64);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidInput);
  EXPECT_NE(r.status().message().find("Content-Transfer-Encoding 'base64'"), std::string::npos)
      << r.status().message();
}

TEST(RestMultipart, WritesTheResponse) {
  BatchResponsePart a{201, {{"ETag", "W/\"1\""}}, "{}"};
  BatchResponsePart b{204, {}, ""};
  const std::string out = WriteBatchResponse("x", {a, b});
  EXPECT_EQ(out.find("--batchresponse_x\r\nContent-Type: multipart/mixed; boundary=changesetresponse_x\r\n\r\n"), 0u);
  EXPECT_NE(out.find("HTTP/1.1 201 Created\r\nETag: W/\"1\"\r\n\r\n{}\r\n"), std::string::npos);
  EXPECT_NE(out.find("HTTP/1.1 204 No Content\r\n"), std::string::npos);
  EXPECT_NE(out.find("--changesetresponse_x--\r\n--batchresponse_x--\r\n"), std::string::npos);
}

}  // namespace
}  // namespace sidetable::sidecar::rest

#include <sys/stat.h>

#include <fstream>

#include "sidecar/config.h"
#include "testing/temp_dir.h"

namespace sidetable::sidecar::rest {
namespace {

// An account key may live in an owner-only file (key_file), as auth.keys'
// do; an inline key in a configuration group or others may read is named
// for the gateway's start-up warning. Before, only inline keys existed and
// nothing said a world-readable config handed out every table.
TEST(RestConfigFile, AccountKeysFromAnOwnerOnlyFile) {
  testing::TempDir dir;
  const std::string key = dir.Sub("acct1.key");
  std::ofstream(key) << "  c2VjcmV0LWtleS1ieXRlcy0xMjM0NTY=\n";
  ::chmod(key.c_str(), 0600);
  const std::string config = dir.Sub("c.yaml");
  std::ofstream(config) << "rest:\n  accounts:\n    - {name: acct1, key_file: " << key << "}\n";
  ::chmod(config.c_str(), 0644);
  ServerConfig c;
  Status s = LoadConfigFile(config, &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(c.rest.accounts.size(), 1u);
  EXPECT_EQ(c.rest.accounts[0].key, "secret-key-bytes-123456");
  EXPECT_EQ(c.rest.exposed_keys_file, "");  // the key is not in the config

  // Readable by group: refused, naming the key and the file.
  ::chmod(key.c_str(), 0640);
  ServerConfig loose;
  s = LoadConfigFile(config, &loose);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("rest.accounts[0].key_file"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("chmod 600"), std::string::npos) << s.ToString();
  ::chmod(key.c_str(), 0600);

  // An inline key in a config others may read is named; in an owner-only one not.
  std::ofstream(config)
      << "rest:\n  accounts:\n    - {name: acct1, key: c2VjcmV0LWtleS1ieXRlcy0xMjM0NTY=}\n";
  ServerConfig inline_key;
  ASSERT_TRUE(LoadConfigFile(config, &inline_key).ok());
  EXPECT_EQ(inline_key.rest.exposed_keys_file, config);
  ::chmod(config.c_str(), 0600);
  ServerConfig owner_only;
  ASSERT_TRUE(LoadConfigFile(config, &owner_only).ok());
  EXPECT_EQ(owner_only.rest.exposed_keys_file, "");

  for (const char* yaml :
       {"rest:\n  accounts:\n    - {name: acct1}\n",
        "rest:\n  accounts:\n    - {name: acct1, key: c2VjcmV0LWtleS1ieXRlcy0xMjM0NTY=, "
        "key_file: /nonexistent}\n",
        "rest:\n  accounts:\n    - {name: acct1, key_file: /nonexistent/acct1.key}\n"}) {
    ServerConfig bad;
    s = LoadConfigText(yaml, &bad);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << yaml;
    EXPECT_NE(s.message().find("rest.accounts[0]"), std::string::npos) << s.ToString();
  }
}

TEST(RestConfigFile, TheSectionLoadsAndItsErrorsNameTheKey) {
  ServerConfig c;
  ASSERT_TRUE(LoadConfigText("rest:\n  address: 127.0.0.1:0\n  accounts:\n    - {name: acct1, key: c2VjcmV0LWtleS1ieXRlcy0xMjM0NTY=}\n"
                       "  max_body_mb: 2\n  threads: 4\n  dev_account: false\n"
                       "  io_threads: 3\n  max_connections: 10\n  max_buffered_mb: 3\n  idle_timeout_ms: 1500\n  request_timeout_ms: 2500\n"
                       "  cors:\n    - {allowed_origins: ['*'], allowed_methods: [get]}\n",
                       &c)
                  .ok());
  EXPECT_EQ(c.rest.address, "127.0.0.1:0");
  ASSERT_EQ(c.rest.accounts.size(), 1u);
  EXPECT_EQ(c.rest.accounts[0].key, "secret-key-bytes-123456");
  EXPECT_EQ(c.rest.max_body_bytes, size_t{2} << 20);
  EXPECT_EQ(c.rest.io_threads, 3);
  EXPECT_EQ(c.rest.max_connections, 10u);
  EXPECT_EQ(c.rest.max_buffered_bytes, uint64_t{3} << 20);
  EXPECT_EQ(c.rest.idle_timeout_ms, 1500);
  EXPECT_EQ(c.rest.request_timeout_ms, 2500);
  EXPECT_EQ(c.rest.cors.at(0).allowed_methods.at(0), "GET");
  EXPECT_EQ(EffectiveAccounts(c.rest, true, false).size(), 1u);  // dev_account: false
  c.rest.dev_account = true;
  EXPECT_EQ(EffectiveAccounts(c.rest, true, false).size(), 2u);
  EXPECT_EQ(EffectiveAccounts(c.rest, true, true).size(), 2u);   // said explicitly: also with tokens
  EXPECT_EQ(EffectiveAccounts(c.rest, false, false).size(), 1u);  // never off loopback
  // Unset: on while auth is off, off with auth.mode tokens (its key is public).
  c.rest.dev_account.reset();
  EXPECT_EQ(EffectiveAccounts(c.rest, true, false).size(), 2u);
  EXPECT_EQ(EffectiveAccounts(c.rest, true, true).size(), 1u);
  EXPECT_TRUE(ValidateConfig(c).ok());

  struct Case {
    const char* yaml;
    const char* key;
  } cases[] = {{"rest:\n  adress: x\n", "rest.adress"},
               {"rest:\n  accounts:\n    - {name: acct1, key: '***'}\n", "rest.accounts[0].key"},
               {"rest:\n  accounts:\n    - {name: a, key: c2VjcmV0LWtleS1ieXRlcy0xMjM0NTY=}\n", "rest.accounts[0].name"},
               {"rest:\n  threads: 0\n", "rest.threads"},
               {"rest:\n  max_body_mb: 100\n", "rest.max_body_mb"},
               {"rest:\n  max_connections: 0\n", "rest.max_connections"},
               {"rest:\n  io_threads: 0\n", "rest.io_threads"},
               {"rest:\n  max_buffered_mb: 0\n", "rest.max_buffered_mb"},
               {"rest:\n  idle_timeout_ms: 5\n", "rest.idle_timeout_ms"},
               {"rest:\n  request_timeout_ms: 99999999\n", "rest.request_timeout_ms"},
               {"rest:\n  dev_account: yes\n", "rest.dev_account"},
               {"rest:\n  cors:\n    - {allowed_origins: ['*']}\n", "rest.cors[0]"}};
  for (const auto& k : cases) {
    ServerConfig bad;
    Status s = LoadConfigText(k.yaml, &bad);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << k.yaml;
    EXPECT_NE(s.message().find(k.key), std::string::npos) << s.message();
  }
}

TEST(RestConfigFile, BeyondLoopbackNeedsInsecure) {
  ServerConfig c;
  c.rest.address = "0.0.0.0:10002";
  Status s = ValidateConfig(c);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("rest.address"), std::string::npos);
  c.security.insecure = true;
  EXPECT_TRUE(ValidateConfig(c).ok());
  for (const char* bad : {"nonsense", "127.0.0.1:", ":80", "127.0.0.1:99999", "127.0.0.1:x"}) {
    c.rest.address = bad;
    Status s2 = ValidateConfig(c);
    EXPECT_EQ(s2.code(), Code::kInvalidInput) << bad;
    EXPECT_NE(s2.message().find("rest.address"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace sidetable::sidecar::rest

namespace sidetable::sidecar::rest {
namespace {

// Edm.Double values written as strings (events/ accepts JSON number text,
// never "nan" or "inf" that strtod would also read).
TEST(RestOData, DoublesAsStrings) {
  const std::string pk = "p", rk = "r";
  auto e = ParseEntityBody(R"({"z":"-0","z@odata.type":"Edm.Double","h":"1.5e3","h@odata.type":"Edm.Double"})", &pk, &rk);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(std::signbit(e->Find("z")->as_double()));
  EXPECT_EQ(e->Find("h")->as_double(), 1500.0);
  for (const char* bad : {"nan", "inf", "-inf", "1.", ".5", "1e", "+1", "0x10", " 1", "1 "}) {
    const std::string body = std::string(R"({"x":")") + bad + R"(","x@odata.type":"Edm.Double"})";
    EXPECT_FALSE(ParseEntityBody(body, &pk, &rk).ok()) << bad;
  }
}

}  // namespace
}  // namespace sidetable::sidecar::rest
