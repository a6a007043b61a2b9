// The REST listener's HTTP/1.1 reader and response writer (sidecar/rest/http.h):
// framing by Content-Length and chunks, pipelining, every refusal with its
// status, and the same requests whatever way the bytes are split.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sidecar/rest/http.h"

namespace sidetable::sidecar::rest {
namespace {

using Outcome = HttpRequestReader::Outcome;

struct Read {
  Outcome outcome;
  HttpRequest req;
  size_t consumed = 0;
  int status = 0;
};

Read ReadOne(std::string_view bytes, HttpLimits limits = {}) {
  HttpRequestReader r(limits);
  Read out;
  out.outcome = r.Next(bytes, &out.req, &out.consumed);
  out.status = r.error_status();
  return out;
}

// Feeds `bytes` in pieces of the given sizes (the rest at the end), as a
// connection would receive them; returns every request framed.
std::vector<HttpRequest> Feed(const std::string& bytes, const std::vector<size_t>& cuts, int* error = nullptr,
                              HttpLimits limits = {}) {
  HttpRequestReader r(limits);
  std::vector<HttpRequest> out;
  std::string buf;
  size_t at = 0;
  HttpRequest req;
  auto drain = [&] {
    while (true) {
      size_t consumed = 0;
      const Outcome o = r.Next(buf, &req, &consumed);
      if (o == Outcome::kError) {
        if (error != nullptr) *error = r.error_status();
        return false;
      }
      if (o == Outcome::kNeedMore) return true;
      EXPECT_LE(consumed, buf.size());
      out.push_back(req);
      buf.erase(0, consumed);
    }
  };
  for (size_t cut : cuts) {
    const size_t n = std::min(cut, bytes.size() - at);
    buf.append(bytes, at, n);
    at += n;
    if (!drain()) return out;
  }
  buf.append(bytes, at, std::string::npos);
  drain();
  return out;
}

const char kGet[] = "GET /devstoreaccount1/t(PartitionKey='p',RowKey='r') HTTP/1.1\r\nHost: h\r\nAccept: application/json\r\n\r\n";

TEST(HttpReader, ReadsARequestLineHeadersAndABody) {
  const std::string req = "POST /a/t?x=1 HTTP/1.1\r\nHost: h\r\nContent-Type:  application/json \r\nContent-Length: 7\r\n\r\n{\"a\":1}";
  Read r = ReadOne(req);
  ASSERT_EQ(r.outcome, Outcome::kRequest);
  EXPECT_EQ(r.consumed, req.size());
  EXPECT_EQ(r.req.method, "POST");
  EXPECT_EQ(r.req.target, "/a/t?x=1");
  EXPECT_EQ(r.req.minor_version, 1);
  EXPECT_EQ(r.req.Header("content-type"), "application/json");  // any case, trimmed
  EXPECT_EQ(r.req.Header("X-Absent"), "");
  EXPECT_EQ(r.req.body, "{\"a\":1}");
  EXPECT_TRUE(r.req.keep_alive);
}

TEST(HttpReader, AnIncompleteRequestNeedsMore) {
  const std::string req = "PUT /a/t HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n12345";
  EXPECT_EQ(ReadOne(req).outcome, Outcome::kNeedMore);
  EXPECT_EQ(ReadOne(std::string(kGet).substr(0, 30)).outcome, Outcome::kNeedMore);
  EXPECT_EQ(ReadOne("").outcome, Outcome::kNeedMore);
}

TEST(HttpReader, PipelinedRequestsAreFramedInOrder) {
  const std::string two = std::string(kGet) + "DELETE /a/t(PartitionKey='p',RowKey='r') HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n" + kGet;
  auto got = Feed(two, {});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].method, "GET");
  EXPECT_EQ(got[1].method, "DELETE");
  EXPECT_EQ(got[2].method, "GET");
}

TEST(HttpReader, ChunkedBodiesAreDecoded) {
  const std::string req =
      "POST /a/t HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4\r\n{\"a\"\r\n3;ext=1\r\n:1}\r\n0\r\nTrailer-Field: x\r\n\r\n";
  auto got = Feed(req + kGet, {});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].body, "{\"a\":1}");
  EXPECT_EQ(got[1].method, "GET");
}

TEST(HttpReader, AnySplitOfTheBytesFramesTheSameRequests) {
  std::string stream;
  for (int i = 0; i < 20; ++i) {
    const std::string body(static_cast<size_t>(i * 37), static_cast<char>('a' + i % 26));
    if (i % 3 == 0) {
      stream += "POST /a/t HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
      for (size_t at = 0; at < body.size(); at += 50) {
        const std::string piece = body.substr(at, 50);
        char size[16];
        std::snprintf(size, sizeof size, "%zx", piece.size());
        stream += std::string(size) + "\r\n" + piece + "\r\n";
      }
      stream += "0\r\n\r\n";
    } else {
      stream += "PUT /a/t" + std::to_string(i) + " HTTP/1.1\r\nHost: h\r\nContent-Length: " + std::to_string(body.size()) +
                "\r\n\r\n" + body;
    }
  }
  const auto whole = Feed(stream, {});
  ASSERT_EQ(whole.size(), 20u);
  std::mt19937 rng(17);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<size_t> cuts;
    for (size_t total = 0; total < stream.size();) {
      cuts.push_back(std::uniform_int_distribution<size_t>(1, trial % 2 ? 3 : 200)(rng));
      total += cuts.back();
    }
    const auto split = Feed(stream, cuts);
    ASSERT_EQ(split.size(), whole.size()) << "trial " << trial;
    for (size_t i = 0; i < whole.size(); ++i) {
      EXPECT_EQ(split[i].method, whole[i].method);
      EXPECT_EQ(split[i].target, whole[i].target);
      EXPECT_EQ(split[i].body, whole[i].body) << "trial " << trial << " request " << i;
    }
  }
}

TEST(HttpReader, ConnectionSemanticsFollowTheVersion) {
  EXPECT_FALSE(ReadOne("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").req.keep_alive);
  EXPECT_FALSE(ReadOne("GET / HTTP/1.0\r\n\r\n").req.keep_alive);
  Read ten = ReadOne("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
  ASSERT_EQ(ten.outcome, Outcome::kRequest);  // no Host needed in 1.0
  EXPECT_TRUE(ten.req.keep_alive);
  EXPECT_EQ(ten.req.minor_version, 0);
}

TEST(HttpReader, AbsoluteFormIsServedAsItsPath) {
  Read r = ReadOne("GET http://127.0.0.1:10002/devstoreaccount1/Tables?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(r.outcome, Outcome::kRequest);
  EXPECT_EQ(r.req.target, "/devstoreaccount1/Tables?x=1");
}

TEST(HttpReader, ExpectContinueIsOfferedOnceTheHeadIsRead) {
  HttpRequestReader r;
  HttpRequest req;
  size_t consumed = 0;
  const std::string head = "PUT /a/t HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n";
  ASSERT_EQ(r.Next(head, &req, &consumed), Outcome::kNeedMore);
  EXPECT_TRUE(r.WantsContinue());
  EXPECT_EQ(r.BodyBytesExpected(), 3u);
  r.ContinueSent();
  EXPECT_FALSE(r.WantsContinue());
  ASSERT_EQ(r.Next(head + "abc", &req, &consumed), Outcome::kRequest);
  EXPECT_EQ(req.body, "abc");
  EXPECT_FALSE(r.WantsContinue());  // reset for the next request
}

struct Refusal {
  const char* what;
  std::string bytes;
  int status;
};

TEST(HttpReader, MalformedAndOversizedRequestsAreRefusedWithTheirStatus) {
  HttpLimits small;
  small.max_head_bytes = 512;
  small.max_headers = 4;
  small.max_body_bytes = 100;
  const std::vector<Refusal> cases = {
      {"no spaces", "GET\r\nHost: h\r\n\r\n", 400},
      {"extra space", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"bad method", "G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"bad version", "GET / HTTX/1.1\r\nHost: h\r\n\r\n", 400},
      {"HTTP/2", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505},
      {"relative target", "GET t HTTP/1.1\r\nHost: h\r\n\r\n", 400},
      {"control in target", std::string("GET /\x01 HTTP/1.1\r\nHost: h\r\n\r\n"), 400},
      {"no Host", "GET / HTTP/1.1\r\nAccept: x\r\n\r\n", 400},
      {"no colon", "GET / HTTP/1.1\r\nHost h\r\n\r\n", 400},
      {"space before colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400},
      {"obs-fold", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", 400},
      {"control in value", std::string("GET / HTTP/1.1\r\nHost: h\r\nX: a\x01\r\n\r\n"), 400},
      {"bad length", "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x\r\n\r\n", 400},
      {"negative length", "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400},
      {"conflicting lengths", "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
      {"length and chunked", "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"gzip coding", "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"chunked twice", "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"chunked in 1.0", "PUT / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
      {"other expectation", "PUT / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n", 417},
      {"bad chunk size", "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"no CRLF after chunk", "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", 400},
      {"head too large", "GET /" + std::string(600, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n", 431},
      {"head never ends", "GET /" + std::string(600, 'a'), 431},
      {"too many fields", "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", 431},
      {"body too large", "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 101\r\n\r\n", 413},
      {"huge length", "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400},
      {"chunks too large", "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + std::string(64, 'x') +
                               "\r\n40\r\n", 413},
      {"huge chunk", "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", 400},
  };
  for (const auto& c : cases) {
    Read r = ReadOne(c.bytes, small);
    EXPECT_EQ(r.outcome, Outcome::kError) << c.what;
    EXPECT_EQ(r.status, c.status) << c.what;
  }
}

TEST(HttpReader, AnErrorIsSticky) {
  HttpRequestReader r;
  HttpRequest req;
  size_t consumed = 0;
  ASSERT_EQ(r.Next("BAD\r\n\r\n", &req, &consumed), Outcome::kError);
  EXPECT_EQ(r.Next(kGet, &req, &consumed), Outcome::kError);
}

TEST(HttpReader, RandomBytesNeverCrashOrOverrun) {
  std::mt19937 rng(5);
  const std::string alphabet = "GET POST/ HTTP/1.1\r\n:Host-Length0123456789abcdefchunked;\t ";
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes = kGet;
    const size_t n = std::uniform_int_distribution<size_t>(0, 300)(rng);
    for (size_t i = 0; i < n; ++i) {
      const size_t at = std::uniform_int_distribution<size_t>(0, bytes.size())(rng);
      const char c = trial % 4 == 0 ? static_cast<char>(rng()) : alphabet[rng() % alphabet.size()];
      bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at), c);
    }
    HttpRequestReader r;
    HttpRequest req;
    std::string buf;
    for (size_t at = 0; at < bytes.size(); at += 7) {
      buf.append(bytes, at, 7);
      size_t consumed = 0;
      const Outcome o = r.Next(buf, &req, &consumed);
      if (o == Outcome::kError) {
        EXPECT_GE(r.error_status(), 400);
        break;
      }
      if (o == Outcome::kRequest) {
        ASSERT_LE(consumed, buf.size());
        buf.erase(0, consumed);
      }
    }
  }
}

TEST(HttpResponseHead, CarriesStatusFieldsLengthAndClose) {
  HttpResponse res;
  res.status = 201;
  res.set_header("ETag", "W/\"x\"");
  res.set_content("{}", "application/json");
  std::string head;
  AppendResponseHead(res, /*close=*/false, &head);
  EXPECT_EQ(head, "HTTP/1.1 201 Created\r\nETag: W/\"x\"\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n");
  EXPECT_EQ(res.get_header_value("etag"), "W/\"x\"");
  EXPECT_TRUE(res.has_header("CONTENT-TYPE"));
  head.clear();
  HttpResponse none;
  none.status = 204;
  AppendResponseHead(none, /*close=*/true, &head);
  EXPECT_EQ(head, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");  // no Content-Length on 204
}

TEST(HttpResponseHead, AValueCannotSplitTheResponse) {
  HttpResponse res;
  res.set_header("x-ms-client-request-id", "a\r\nSet-Cookie: evil");
  std::string head;
  AppendResponseHead(res, false, &head);
  EXPECT_EQ(head.find("\r\nSet-Cookie"), std::string::npos);
  EXPECT_NE(head.find("x-ms-client-request-id: a  Set-Cookie: evil\r\n"), std::string::npos);
}

}  // namespace
}  // namespace sidetable::sidecar::rest
