// The REST listener over raw sockets (sidecar/rest/http_server.h), on the
// real binary: what an HTTP/1.1 client may send (pipelining, chunks,
// Expect: 100-continue, the MERGE verb) and every bound it must meet
// (limits, timeouts, max_connections, buffered bytes), each answered in
// the service's error form with nothing changed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "tests/sidecar/rest/rest_fixture.h"

namespace sidetable::testing {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

struct RawReply {
  int status = 0;  // 0: closed or timed out before a whole response
  std::string head;
  std::string body;
  std::string Field(const std::string& name) const {
    const std::string key = "\r\n" + name + ": ";
    const size_t at = head.find(key);
    if (at == std::string::npos) return "";
    const size_t from = at + key.size();
    return head.substr(from, head.find("\r\n", from) - from);
  }
};

// One client connection that writes bytes as given and reads responses.
class RawHttp {
 public:
  // `rcvbuf`: a small receive buffer (set before connecting), so that a
  // response the test does not read stays in the server's hands.
  RawHttp(const std::string& host, int port, int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawHttp() { Close(); }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool connected() const { return connected_; }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t w = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (w <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(w));
    }
    return true;
  }

  // The next response (a 100 Continue included), within `timeout_ms`;
  // `head_only`: the response to a HEAD (its Content-Length has no body).
  RawReply Read(int timeout_ms = 10000, bool head_only = false) {
    RawReply r;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    size_t end = std::string::npos;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return r;
    }
    r.head = buf_.substr(0, end + 2);
    const int status = std::atoi(r.head.c_str() + 9);
    size_t length = 0;
    if (const std::string cl = r.Field("Content-Length"); !cl.empty() && !head_only) length = std::stoul(cl);
    while (buf_.size() < end + 4 + length) {
      if (!Fill(deadline)) return r;
    }
    r.body = buf_.substr(end + 4, length);
    buf_.erase(0, end + 4 + length);
    r.status = status;
    return r;
  }

  // True when the server closes the connection within `timeout_ms`
  // (bytes that arrive first are kept for Read).
  bool ClosedWithin(int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!Fill(deadline)) return eof_;
    }
    return eof_;
  }

 private:
  bool Fill(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buf_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string buf_;
};

// The listener's own refusals are in the service's form like every other
// response: they used to have no x-ms-request-id and no RequestId/Time
// lines in the message.
void ExpectServiceForm(const RawReply& r, const std::string& what) {
  const std::string id = r.Field("x-ms-request-id");
  EXPECT_FALSE(id.empty()) << what << "\n" << r.head;
  EXPECT_FALSE(r.Field("x-ms-error-code").empty()) << what << "\n" << r.head;
  EXPECT_FALSE(r.Field("Date").empty()) << what << "\n" << r.head;
  EXPECT_NE(r.body.find("odata.error"), std::string::npos) << what << "\n" << r.body;
  EXPECT_NE(r.body.find("\\nRequestId:" + id + "\\nTime:"), std::string::npos) << what << "\n"
                                                                               << r.body;
}

uint64_t RssBytes(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

class RestListenerTest : public RestTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    const std::string config = dir_.Sub("rest.yaml");
    std::ofstream(config) << "rest:\n"
                          << "  max_body_mb: 1\n"
                          << "  io_threads: 2\n"  // connections over two loops; the other suites use one
                          << "  max_connections: 8\n"
                          << "  max_buffered_mb: 2\n"
                          << "  idle_timeout_ms: 600\n"
                          << "  request_timeout_ms: 600\n";
    return {"--config", config, "--durability", "os", "--rest", "127.0.0.1:0"};
  }

  // A SharedKey-signed request as bytes: the head, and the body unless
  // `chunked` (then the caller writes the chunks).
  std::string Request(const std::string& method, const std::string& target, const std::string& body = "",
                      Fields extra = {}, bool chunked = false) {
    const std::string date = HttpDateNow();
    const std::string content_type = body.empty() && !chunked ? "" : "application/json";
    const std::string path = target.substr(0, target.find('?'));
    const std::string to_sign = method + "\n\n" + content_type + "\n" + date + "\n/" + kAccount + path;
    std::string head = method + " " + target + " HTTP/1.1\r\nHost: " + host_ + ":" + std::to_string(port_) +
                       "\r\nx-ms-date: " + date + "\r\nx-ms-version: 2019-02-02\r\n"
                       "Accept: application/json;odata=nometadata\r\nDataServiceVersion: 3.0\r\n"
                       "Authorization: SharedKey " + kAccount + ":" + Hmac(key_, to_sign) + "\r\n";
    if (!content_type.empty()) head += "Content-Type: " + content_type + "\r\n";
    for (const auto& [k, v] : extra) head += k + ": " + v + "\r\n";
    if (chunked) return head + "Transfer-Encoding: chunked\r\n\r\n";
    return head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  }

  std::string Entities(const std::string& table) { return "/" + std::string(kAccount) + "/" + table; }

  void SetUp() override {
    RestTest::SetUp();
    ASSERT_EQ(CreateTable("raw").status, 201);
  }
};

TEST_F(RestListenerTest, PipelinedRequestsAreAnsweredInOrder) {
  RawHttp c(host_, port_);
  ASSERT_TRUE(c.connected());
  // Three requests in one write: an insert, a read of it, a read of nothing.
  ASSERT_TRUE(c.Send(Request("POST", Entities("raw"), R"({"PartitionKey":"p","RowKey":"a","n":1})") +
                     Request("GET", KeyPath("raw", "p", "a")) + Request("GET", KeyPath("raw", "p", "zz"))));
  RawReply insert = c.Read();
  RawReply found = c.Read();
  RawReply missing = c.Read();
  EXPECT_EQ(insert.status, 201) << insert.head << insert.body;
  EXPECT_EQ(found.status, 200) << found.head;
  EXPECT_NE(found.body.find("\"n\":1"), std::string::npos) << found.body;
  EXPECT_EQ(missing.status, 404) << missing.head;
  EXPECT_EQ(missing.Field("x-ms-error-code"), "ResourceNotFound");
}

TEST_F(RestListenerTest, AChunkedBodyIsStored) {
  RawHttp c(host_, port_);
  const std::string body = R"({"PartitionKey":"p","RowKey":"chunked","s":"hello world"})";
  std::string bytes = Request("POST", Entities("raw"), "", {}, /*chunked=*/true);
  for (size_t at = 0; at < body.size(); at += 9) {
    const std::string piece = body.substr(at, 9);
    char size[16];
    std::snprintf(size, sizeof size, "%zx", piece.size());
    bytes += std::string(size) + "\r\n" + piece + "\r\n";
  }
  bytes += "0\r\n\r\n";
  // In pieces, as a slow client sends them.
  for (size_t at = 0; at < bytes.size(); at += 50) {
    ASSERT_TRUE(c.Send(bytes.substr(at, 50)));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(c.Read().status, 201);
  Reply got = GetEntity("raw", "p", "chunked");
  EXPECT_EQ(got.status, 200);
  EXPECT_NE(got.body.find("hello world"), std::string::npos) << got.body;
}

TEST_F(RestListenerTest, ExpectContinueIsAnsweredBeforeTheBody) {
  RawHttp c(host_, port_);
  const std::string body = R"({"PartitionKey":"p","RowKey":"cont"})";
  const std::string request = Request("POST", Entities("raw"), body, {{"Expect", "100-continue"}});
  ASSERT_TRUE(c.Send(request.substr(0, request.size() - body.size())));
  RawReply interim = c.Read(5000);
  EXPECT_EQ(interim.status, 100) << interim.head;
  ASSERT_TRUE(c.Send(body));
  EXPECT_EQ(c.Read().status, 201);
}

TEST_F(RestListenerTest, ABodyOverTheLimitIsRefusedBeforeItIsSent) {
  RawHttp c(host_, port_);
  const std::string big(2 << 20, 'x');  // rest.max_body_mb is 1
  const std::string request = Request("POST", Entities("raw"), big, {{"Expect", "100-continue"}});
  ASSERT_TRUE(c.Send(request.substr(0, request.size() - big.size())));
  RawReply r = c.Read(5000);
  EXPECT_EQ(r.status, 413) << r.head;
  EXPECT_EQ(r.Field("x-ms-error-code"), "RequestBodyTooLarge");
  ExpectServiceForm(r, "413");
  EXPECT_EQ(r.Field("Connection"), "close");
  EXPECT_TRUE(c.ClosedWithin(3000));
  // Still serving, and nothing was stored.
  Reply q = Send("GET", Entities("raw") + "()");
  EXPECT_EQ(q.status, 200);
  EXPECT_EQ(Json(q.body).Count("value"), 0u) << q.body;
}

TEST_F(RestListenerTest, MalformedBytesGetTheServicesErrorAndClose) {
  struct Case {
    const char* what;
    std::string bytes;
    int status;
  };
  const std::vector<Case> cases = {
      {"garbage", "GARBAGE\r\n\r\n", 400},
      {"no Host", "GET /devstoreaccount1/Tables HTTP/1.1\r\n\r\n", 400},
      {"HTTP/2", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505},
      {"head over 64 KiB", "GET /" + std::string(70000, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n", 431},
      {"both framings",
       "POST /devstoreaccount1/raw HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n"
       "Transfer-Encoding: chunked\r\n\r\n{}",
       400},
      {"gzip body",
       "POST /devstoreaccount1/raw HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"bad chunk size",
       "POST /devstoreaccount1/raw HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
       "zz\r\n{}\r\n0\r\n\r\n",
       400},
      {"bad header line",
       "GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\nno colon here\r\n\r\n", 400},
      {"too many fields",
       [] {
         std::string m = "GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\n";
         for (int i = 0; i < 120; ++i) m += "X-F" + std::to_string(i) + ": v\r\n";
         return m + "\r\n";
       }(),
       431},
  };
  for (const auto& k : cases) {
    RawHttp c(host_, port_);
    ASSERT_TRUE(c.Send(k.bytes)) << k.what;
    RawReply r = c.Read(5000);
    EXPECT_EQ(r.status, k.status) << k.what << "\n" << r.head;
    ExpectServiceForm(r, k.what);
    EXPECT_TRUE(c.ClosedWithin(3000)) << k.what;
  }
  Reply q = Send("GET", Entities("raw") + "()");
  EXPECT_EQ(q.status, 200);
  EXPECT_EQ(Json(q.body).Count("value"), 0u) << q.body;
}

TEST_F(RestListenerTest, TheMergeVerbMerges) {
  ASSERT_EQ(InsertJson("raw", R"({"PartitionKey":"p","RowKey":"m","a":1})").status, 201);
  RawHttp c(host_, port_);
  ASSERT_TRUE(c.Send(Request("MERGE", KeyPath("raw", "p", "m"), R"({"b":2})", {{"If-Match", "*"}})));
  RawReply r = c.Read();
  EXPECT_EQ(r.status, 204) << r.head << r.body;
  Reply got = GetEntity("raw", "p", "m");
  EXPECT_NE(got.body.find("\"a\":1"), std::string::npos) << got.body;
  EXPECT_NE(got.body.find("\"b\":2"), std::string::npos) << got.body;
}

TEST_F(RestListenerTest, HeadAnswersWithoutABody) {
  ASSERT_EQ(InsertJson("raw", R"({"PartitionKey":"p","RowKey":"h"})").status, 201);
  RawHttp c(host_, port_);
  ASSERT_TRUE(c.Send(Request("HEAD", KeyPath("raw", "p", "h")) + Request("GET", KeyPath("raw", "p", "h"))));
  // The HEAD's Content-Length describes a body that is not sent: the GET's
  // response must follow its head directly.
  RawReply head = c.Read(10000, /*head_only=*/true);
  EXPECT_EQ(head.status, 200) << head.head;
  EXPECT_GT(std::stoul(head.Field("Content-Length")), 0u);
  RawReply get = c.Read();
  EXPECT_EQ(get.status, 200) << get.head;
  EXPECT_EQ(get.body.size(), std::stoul(head.Field("Content-Length")));
  EXPECT_NE(get.body.find("\"RowKey\":\"h\""), std::string::npos) << get.body;
}

TEST_F(RestListenerTest, AnIdleConnectionIsClosed) {
  RawHttp c(host_, port_);
  ASSERT_TRUE(c.Send(Request("GET", KeyPath("raw", "p", "none"))));
  EXPECT_EQ(c.Read().status, 404);
  // rest.idle_timeout_ms is 600; the sweep runs every 250 ms.
  EXPECT_TRUE(c.ClosedWithin(5000));
}

TEST_F(RestListenerTest, ARequestTooSlowToArriveGets408) {
  RawHttp c(host_, port_);
  const std::string request = Request("POST", Entities("raw"), R"({"PartitionKey":"p","RowKey":"slow"})");
  ASSERT_TRUE(c.Send(request.substr(0, request.size() - 5)));
  RawReply r = c.Read(5000);
  EXPECT_EQ(r.status, 408) << r.head;
  EXPECT_EQ(r.Field("x-ms-error-code"), "OperationTimedOut");
  ExpectServiceForm(r, "408");
  EXPECT_TRUE(c.ClosedWithin(3000));
  EXPECT_EQ(GetEntity("raw", "p", "slow").status, 404);
}

// A connection past rest.max_connections that sends nothing used to be
// held for rest.request_timeout_ms and then answered 408 OperationTimedOut
// (a timeout of the client's, which it was not) and not counted in
// sidetable_rest_busy_total. It is refused for the bound: 503 ServerBusy.
TEST_F(RestListenerTest, AConnectionOverTheBoundThatSendsNothingGetsServerBusy) {
  std::vector<std::unique_ptr<RawHttp>> held;
  for (int i = 0; i < 8; ++i) {  // with the fixture's own: over the bound of 8
    held.push_back(std::make_unique<RawHttp>(host_, port_));
    ASSERT_TRUE(held.back()->connected());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all let in
  RawHttp silent(host_, port_);
  ASSERT_TRUE(silent.connected());
  const RawReply r = silent.Read(5000);  // the fixture's request_timeout_ms is 600
  EXPECT_EQ(r.status, 503) << r.head;
  EXPECT_EQ(r.Field("x-ms-error-code"), "ServerBusy") << r.head;
  ExpectServiceForm(r, "503 max_connections, nothing sent");
  EXPECT_TRUE(silent.ClosedWithin(3000));
}

TEST_F(RestListenerTest, ConnectionsOverTheBoundGetServerBusy) {
  // The fixture's own client holds one connection (keep-alive); 8 is the bound.
  std::vector<std::unique_ptr<RawHttp>> held;
  for (int i = 0; i < 12; ++i) {
    held.push_back(std::make_unique<RawHttp>(host_, port_));
    ASSERT_TRUE(held.back()->connected());
  }
  int served = 0, busy = 0;
  for (auto& c : held) {
    ASSERT_TRUE(c->Send(Request("GET", KeyPath("raw", "p", "none"))));
    RawReply r = c->Read(5000);
    if (r.status == 404) ++served;
    if (r.status == 503) {
      ++busy;
      EXPECT_EQ(r.Field("x-ms-error-code"), "ServerBusy");
      ExpectServiceForm(r, "503 max_connections");
      EXPECT_TRUE(c->ClosedWithin(3000));
    }
  }
  EXPECT_GE(served, 6);
  EXPECT_LE(served, 8);
  EXPECT_EQ(served + busy, 12);
  // /metrics counts them, and the open connections.
  const std::string& hp = server_->http();
  httplib::Client status_page(hp.substr(0, hp.rfind(':')), std::stoi(hp.substr(hp.rfind(':') + 1)));
  auto metrics = status_page.Get("/metrics");
  ASSERT_TRUE(metrics) << "no /metrics";
  EXPECT_NE(metrics->body.find("sidetable_rest_busy_total " + std::to_string(busy) + "\n"), std::string::npos)
      << metrics->body.substr(metrics->body.find("sidetable_rest"), 600);
  EXPECT_NE(metrics->body.find("sidetable_rest_requests_total{path=\"inline\"}"), std::string::npos);
  // Closing connections frees their places (bounded wait).
  held.clear();
  int status = 0;
  for (int attempt = 0; attempt < 50 && status != 404; ++attempt) {
    RawHttp c(host_, port_);
    c.Send(Request("GET", KeyPath("raw", "p", "none")));
    status = c.Read(2000).status;
    if (status != 404) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 404);
}

TEST_F(RestListenerTest, BufferedBytesOverTheBoundGetServerBusyAndMemoryStaysBounded) {
  const uint64_t before = RssBytes(server_->pid());
  ASSERT_GT(before, 0u);
  // Two connections each hold 900 KB of a 1,000,000-byte body (declared):
  // 1.8 MB buffered of rest.max_buffered_mb's 2 MiB.
  const std::string body(1000000, ' ');
  std::vector<std::unique_ptr<RawHttp>> slow;
  for (int i = 0; i < 2; ++i) {
    slow.push_back(std::make_unique<RawHttp>(host_, port_));
    const std::string r = Request("POST", Entities("raw"), body);
    ASSERT_TRUE(slow.back()->Send(r.substr(0, r.size() - 100000)));
  }
  // Until the listener holds them (a loaded machine reads them late; a
  // third request let in before would wait for its body and time out).
  const std::string& hp = server_->http();
  httplib::Client status(hp.substr(0, hp.rfind(':')), std::stoi(hp.substr(hp.rfind(':') + 1)));
  uint64_t held = 0;
  for (int i = 0; i < 300 && held < 1800000; i++) {
    auto m = status.Get("/metrics");
    const size_t at = m ? m->body.find("\nsidetable_rest_buffered_bytes ") : std::string::npos;
    held = at == std::string::npos ? 0 : std::stoull(m->body.substr(at + 31));
    if (held < 1800000) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GE(held, 1800000u) << "the listener did not hold the two bodies within 6 s";
  // A third body that cannot be held is refused at its head.
  RawHttp third(host_, port_);
  const std::string r = Request("POST", Entities("raw"), body);
  ASSERT_TRUE(third.Send(r.substr(0, r.size() - body.size())));
  RawReply refused = third.Read(5000);
  EXPECT_EQ(refused.status, 503) << refused.head;
  EXPECT_EQ(refused.Field("x-ms-error-code"), "ServerBusy");
  ExpectServiceForm(refused, "503 max_buffered_mb");
  // Bounded: the buffered bytes, not the declared ones, and no leak of them.
  EXPECT_LT(RssBytes(server_->pid()), before + (32ull << 20));
  slow.clear();
  // Their bytes are given back when they close (bounded wait).
  for (int i = 0; i < 300 && held != 0; i++) {
    auto m = status.Get("/metrics");
    const size_t at = m ? m->body.find("\nsidetable_rest_buffered_bytes ") : std::string::npos;
    held = at == std::string::npos ? 1 : std::stoull(m->body.substr(at + 31));
    if (held != 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(held, 0u) << "buffered bytes still counted after their connections closed";
  // Small requests go on being served.
  Reply q = Send("GET", Entities("raw") + "()");
  EXPECT_EQ(q.status, 200);
  EXPECT_EQ(Json(q.body).Count("value"), 0u);
}

TEST_F(RestListenerTest, AFloodOfConnectionsAndPartialBodiesStaysUnderTheCeiling) {
  const uint64_t before = RssBytes(server_->pid());
  // 150 connections (8 allowed, 64 more let in to be told 503, the rest
  // closed at once), each declaring a 1,000,000-byte body and sending 200 KB
  // of it: the bytes held stay within rest.max_buffered_mb (2 MiB).
  std::vector<std::unique_ptr<RawHttp>> flood;
  const std::string r = Request("POST", Entities("raw"), std::string(1000000, ' '));
  const std::string part = r.substr(0, r.size() - 800000);
  for (int i = 0; i < 150; ++i) {
    flood.push_back(std::make_unique<RawHttp>(host_, port_));
    if (flood.back()->connected()) flood.back()->Send(part);
  }
  int busy = 0, closed = 0;
  for (auto& c : flood) {
    RawReply reply = c->Read(300);
    if (reply.status == 503) ++busy;
    else if (reply.status == 0 && c->ClosedWithin(10)) ++closed;
  }
  EXPECT_GE(busy, 60) << "503s for the connections over the bound and the bytes over the budget";
  EXPECT_GE(closed, 50) << "connections far over the bound are closed at once";
  std::cerr << "flood: " << busy << " answered 503, " << closed << " closed unanswered, RSS +"
            << (RssBytes(server_->pid()) - before) / 1024 << " KB\n";
  EXPECT_LT(RssBytes(server_->pid()), before + (48ull << 20)) << "before: " << before;
  flood.clear();
  // Served again once the flood is gone.
  Reply q;
  for (int attempt = 0; attempt < 50; ++attempt) {
    q = Send("GET", Entities("raw") + "()");
    if (q.status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(q.status, 200);
  EXPECT_EQ(Json(q.body).Count("value"), 0u);
}

TEST_F(RestListenerTest, AClientGoneMidRequestLeavesTheServerServing) {
  for (int i = 0; i < 20; ++i) {
    RawHttp c(host_, port_);
    const std::string request = i % 2 ? Request("GET", Entities("raw") + "()")  // a query: on the pool
                                      : Request("POST", Entities("raw"), R"({"PartitionKey":"p","RowKey":"gone"})");
    ASSERT_TRUE(c.Send(request.substr(0, i % 2 ? request.size() : request.size() - 3)));
  }  // each closed at once
  // Until the listener has seen every close, a new connection may be over
  // rest.max_connections (503); a leaked place or charge would stay so.
  Reply q;
  for (int attempt = 0; attempt < 50; ++attempt) {
    q = Send("GET", Entities("raw") + "()");
    if (q.status != 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(q.status, 200);
  EXPECT_EQ(Json(q.body).Count("value"), 0u) << q.body;  // the truncated inserts changed nothing
}

// SIGTERM while keep-alive connections have writes pipelined (fsync: they
// run on the pool, one at a time per connection, so most are still waiting
// when the signal lands). Before, the loops exited at once and each
// connection was closed with its requests unread: the client got a reset
// instead of an answer, for requests that were never executed and for
// none it could tell apart. Now every request is answered: executed (204)
// or refused unexecuted (503 ServerBusy), in order, and then the
// connection is closed; after a restart exactly the 204s are there.
class RestStopTest : public RestListenerTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    const std::string config = dir_.Sub("rest.yaml");
    std::ofstream(config) << "rest:\n  request_timeout_ms: 10000\n";
    return {"--config", config, "--durability", "fsync", "--rest", "127.0.0.1:0"};
  }
};

TEST_F(RestStopTest, SigtermAnswersEveryPipelinedRequestAndExecutesNoneItRefuses) {
  constexpr int kConns = 4;
  constexpr int kEach = 300;
  auto key = [](int c, int i) {
    return "(PartitionKey='p" + std::to_string(c) + "',RowKey='r" + std::to_string(i) + "')";
  };
  std::vector<std::unique_ptr<RawHttp>> conns;
  for (int c = 0; c < kConns; ++c) {
    conns.push_back(std::make_unique<RawHttp>(host_, port_));
    ASSERT_TRUE(conns.back()->connected());
    std::string all;
    for (int i = 0; i < kEach; ++i) {
      all += Request("PUT", Entities("raw") + key(c, i),
                     R"({"PartitionKey":"p)" + std::to_string(c) + R"(","RowKey":"r)" +
                         std::to_string(i) + R"(","v":1})");
    }
    ASSERT_TRUE(conns.back()->Send(all));
  }
  // The first answer on each connection: the stop lands mid-stream.
  std::vector<std::vector<int>> statuses(kConns);
  for (int c = 0; c < kConns; ++c) {
    const RawReply r = conns[c]->Read();
    ASSERT_EQ(r.status, 204) << r.head << r.body;
    statuses[c].push_back(r.status);
  }
  const auto t0 = std::chrono::steady_clock::now();
  int exit_code = -2;
  std::thread stopper([&] { exit_code = server_->Stop(); });
  int refused = 0;
  for (int c = 0; c < kConns; ++c) {
    while (statuses[c].size() < static_cast<size_t>(kEach)) {
      const RawReply r = conns[c]->Read(15000);
      if (r.status == 0) break;  // closed (or reset) before every request was answered
      statuses[c].push_back(r.status);
      if (r.status == 503) {
        ++refused;
        EXPECT_EQ(r.Field("x-ms-error-code"), "ServerBusy") << r.head;
        ExpectServiceForm(r, "shutting down");
      }
    }
    EXPECT_EQ(statuses[c].size(), static_cast<size_t>(kEach))
        << "connection " << c << ": requests unanswered";
    EXPECT_TRUE(conns[c]->ClosedWithin(5000)) << "connection " << c << " left open";
  }
  stopper.join();
  EXPECT_EQ(exit_code, 0) << server_->Log();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(12));
  EXPECT_GT(refused, 0) << "every write finished before the stop: nothing was tested";

  ASSERT_TRUE(server_->Start()) << server_->Log();
  ConnectRest();
  for (int c = 0; c < kConns; ++c) {
    RawHttp q(host_, port_);
    ASSERT_TRUE(q.Send(Request(
        "GET", Entities("raw") + "()?$top=1000&$select=RowKey&$filter=PartitionKey%20eq%20'p" +
                   std::to_string(c) + "'")));
    const RawReply page = q.Read();
    ASSERT_EQ(page.status, 200) << page.body;
    for (size_t i = 0; i < statuses[c].size(); ++i) {
      const bool stored =
          page.body.find("\"RowKey\":\"r" + std::to_string(i) + "\"") != std::string::npos;
      EXPECT_EQ(stored, statuses[c][i] == 204)
          << "connection " << c << " request " << i << " answered " << statuses[c][i];
      if (statuses[c][i] != 204 && statuses[c][i] != 503)
        ADD_FAILURE() << "answered " << statuses[c][i];
    }
  }
}

// Clients that ask for a large query page and do not read it. The pool
// thread that ran the query used to wait for the socket up to
// rest.request_timeout_ms: rest.threads such clients held the whole pool,
// and every request that runs there (queries, $batch, table operations,
// every write in fsync durability) waited that long. Now the loop writes
// what the socket did not take; the pool serves the next request at once,
// and the slow reader still gets its whole page.
class RestSlowReaderTest : public RestListenerTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    const std::string config = dir_.Sub("rest.yaml");
    std::ofstream(config)
        << "rest:\n  threads: 2\n  request_timeout_ms: 20000\n  idle_timeout_ms: 20000\n";
    return {"--config", config, "--durability", "os", "--rest", "127.0.0.1:0"};
  }
};

TEST_F(RestSlowReaderTest, ClientsThatDoNotReadTheirPagesHoldNoPoolThread) {
  constexpr int kRows = 60;  // about 3.6 MB in one page
  RawHttp writer(host_, port_);
  const std::string big(30000, 'x');
  for (int i = 0; i < kRows; ++i) {
    const std::string rk = "r" + std::to_string(i);
    ASSERT_TRUE(
        writer.Send(Request("PUT", Entities("raw") + "(PartitionKey='p',RowKey='" + rk + "')",
                            R"({"PartitionKey":"p","RowKey":")" + rk + R"(","a":")" + big +
                                R"(","b":")" + big + R"("})")));
    ASSERT_EQ(writer.Read().status, 204);
  }
  // As many readers as pool threads, and one more: none reads.
  std::vector<std::unique_ptr<RawHttp>> slow;
  for (int i = 0; i < 3; ++i) {
    slow.push_back(std::make_unique<RawHttp>(host_, port_, 4096));
    ASSERT_TRUE(slow.back()->Send(Request("GET", Entities("raw") + "()")));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // A request that runs on the pool (a table operation) is served now.
  RawHttp other(host_, port_);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(other.Send(
      Request("POST", "/" + std::string(kAccount) + "/Tables", R"({"TableName":"other"})")));
  const RawReply created = other.Read(5000);
  EXPECT_EQ(created.status, 201) << "waited "
                                 << std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::steady_clock::now() - t0)
                                        .count()
                                 << " ms";
  // The slow readers get their whole pages once they read.
  for (auto& c : slow) {
    const RawReply page = c->Read(20000);
    ASSERT_EQ(page.status, 200);
    EXPECT_EQ(Json(page.body).Count("value"), static_cast<size_t>(kRows));
  }
}

// A flood of connections on a sidecar whose descriptor limit is low (1024
// is a common default; 256 here). rest.max_connections alone (1024) let the
// connections take every descriptor: RocksDB could not open its next WAL
// file at a memtable switch, the storage turned `failed`, and every write
// was refused 503 ServiceUnavailable until a restart, also after the
// connections had gone. Now the listener keeps to half of RLIMIT_NOFILE
// (the connections past it are closed at once) and writes go on.
class RestFdLimitTest : public RestListenerTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    const std::string config = dir_.Sub("fd.yaml");
    std::ofstream(config)
        << "storage:\n  write_buffer_mb: 1\n";  // a memtable switch (a new WAL) every MiB
    return {"--config", config, "--durability", "os", "--rest", "127.0.0.1:0"};
  }
  // The sidecar raises its soft limit to the hard one at start
  // (common::RaiseOpenFileLimit), so both are set to 256 for it alone: a
  // shell's `ulimit -n` sets both, then execs the sidecar (same pid).
  std::string Binary() override {
    const std::string wrapper = dir_.Sub("sidetable-256-files");
    std::ofstream(wrapper) << "#!/bin/sh\nulimit -n 256 || exit 97\nexec " << SIDETABLE_BIN
                           << " \"$@\"\n";
    ::chmod(wrapper.c_str(), 0755);
    return wrapper;
  }
  void SetUp() override {
    rlimit mine{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &mine), 0);
    if (mine.rlim_cur < 1024) GTEST_SKIP() << "the test itself needs 1024 descriptors";
    RestListenerTest::SetUp();
  }
};

TEST_F(RestFdLimitTest, AFloodOfConnectionsLeavesTheEngineItsDescriptors) {
  ASSERT_EQ(CreateTable("fds").status, 201);
  RawHttp writer(host_, port_);  // connected before the flood
  ASSERT_TRUE(writer.connected());
  std::vector<std::unique_ptr<RawHttp>> flood;
  for (int i = 0; i < 400; ++i) flood.push_back(std::make_unique<RawHttp>(host_, port_));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // all accepted (or closed)
  const std::string big(20000, 'x');
  const std::string put_prefix = "/" + std::string(kAccount) + "/fds(PartitionKey='p',RowKey='";
  auto write = [&](RawHttp& c, int i) {
    const std::string rk = "r" + std::to_string(i);
    if (!c.Send(Request("PUT", put_prefix + rk + "')", R"({"v":")" + big + R"("})")))
      return RawReply{};
    return c.Read();
  };
  int refused = 0;
  RawReply last;
  for (int i = 0; i < 300; ++i) {  // about 6 MB: several memtable switches
    last = write(writer, i);
    if (last.status != 204) ++refused;
  }
  EXPECT_EQ(refused, 0) << "last: " << last.status << " " << last.body;
  flood.clear();
  RawHttp after(host_, port_);
  const RawReply r = write(after, 1000);
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_NE(server_->Log().find("rest.max_connections 1024 lowered to"), std::string::npos);
}

// fsync durability: writes run on the listener's pool, not its loop.
class RestFsyncListenerTest : public RestTest {
 protected:
  std::vector<std::string> ServerArgs() override { return {"--durability", "fsync", "--rest", "127.0.0.1:0"}; }
};

TEST_F(RestFsyncListenerTest, ConcurrentWritesAndReadsAreAllAnswered) {
  ASSERT_EQ(CreateTable("fsynced").status, 201);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      httplib::Client http(host_, port_);
      http.set_url_encode(false);
      for (int i = 0; i < 10; ++i) {
        // Unsigned requests are refused (403) after the listener framed
        // and answered them: this drives connections, not the engine.
        auto res = http.Get("/devstoreaccount1/Tables");
        if (res && res->status == 403) ok++;
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(InsertJson("fsynced", R"({"PartitionKey":"p","RowKey":"r)" + std::to_string(i) + R"("})").status, 201);
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 80);
  Reply q = Send("GET", "/" + std::string(kAccount) + "/fsynced()");
  EXPECT_EQ(Json(q.body).Count("value"), 20u);
}

}  // namespace
}  // namespace sidetable::testing

namespace sidetable::testing {
namespace {

// Acknowledged means durable through the REST listener too: writers insert
// over REST on their own connections while the sidecar is killed; every
// insert answered 201 is there after the restart.
class RestCrashTest : public RestTest {
 protected:
  std::vector<std::string> ServerArgs() override { return {"--durability", Durability(), "--rest", "127.0.0.1:0"}; }
  virtual const char* Durability() const { return "os"; }

  // Inserts from 4 connections until the sidecar gets `sig` ~0.7 s in;
  // returns the RowKeys answered 201.
  std::vector<std::string> InsertUntilSignal(int sig) {
    std::atomic<bool> stop{false};
    std::mutex mu;
    std::vector<std::string> acked;
    std::vector<std::thread> writers;
    for (int t = 0; t < 4; ++t) {
      writers.emplace_back([&, t] {
        httplib::Client http(host_, port_);
        http.set_url_encode(false);
        http.set_read_timeout(5, 0);
        for (int i = 0; !stop.load() && i < 100000; ++i) {
          const std::string rk = "w" + std::to_string(t) + "-" + std::to_string(i);
          const Reply r = SendOn(http, "POST", "/" + std::string(kAccount) + "/crash",
                                 R"({"PartitionKey":"p)" + std::to_string(i % 7) + R"(","RowKey":")" + rk + R"("})",
                                 {{"Prefer", "return-no-content"}}, Sign::kSharedKey, /*quiet=*/true);
          if (r.status == 204) {
            std::lock_guard lock(mu);
            acked.push_back("p" + std::to_string(i % 7) + "/" + rk);
          }
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    if (sig == SIGKILL) {
      server_->Kill();
    } else {
      EXPECT_EQ(server_->Stop(), 0) << server_->Log();
    }
    stop = true;
    for (auto& w : writers) w.join();
    return acked;
  }

  void ExpectAllPresent(const std::vector<std::string>& acked) {
    ASSERT_TRUE(server_->Start()) << server_->Log();
    ConnectRest();
    size_t missing = 0;
    for (const auto& key : acked) {
      const size_t slash = key.find('/');
      if (GetEntity("crash", key.substr(0, slash), key.substr(slash + 1)).status != 200) ++missing;
    }
    EXPECT_EQ(missing, 0u) << "of " << acked.size() << " acknowledged inserts";
  }
};

TEST_F(RestCrashTest, InsertsAcknowledgedOverRestSurviveSigkill) {
  ASSERT_EQ(CreateTable("crash").status, 201);
  const auto acked = InsertUntilSignal(SIGKILL);
  ASSERT_GT(acked.size(), 20u) << "too few inserts to mean anything";
  ExpectAllPresent(acked);
}

// fsync durability: the writes run on the listener's pool; SIGTERM lets
// those executing finish and answer before the sidecar exits 0.
class RestFsyncCrashTest : public RestCrashTest {
 protected:
  const char* Durability() const override { return "fsync"; }
};

TEST_F(RestFsyncCrashTest, InsertsAcknowledgedOverRestSurviveSigtermAndSigkill) {
  ASSERT_EQ(CreateTable("crash").status, 201);
  auto acked = InsertUntilSignal(SIGTERM);
  ASSERT_GT(acked.size(), 20u);
  ExpectAllPresent(acked);
  const auto more = InsertUntilSignal(SIGKILL);
  ASSERT_GT(more.size(), 20u);
  acked.insert(acked.end(), more.begin(), more.end());
  ExpectAllPresent(acked);
}

}  // namespace
}  // namespace sidetable::testing
