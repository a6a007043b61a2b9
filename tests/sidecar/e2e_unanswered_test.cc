// A request nobody answers says why (client/connection_watch.h): nothing
// listens, the sidecar is at its connection bound, or the connection is up
// and the sidecar does not answer. The CURVE refusals are in
// e2e_curve_test.cc.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <iostream>

#include "testing/text.h"
#include "tests/sidecar/e2e_fixture.h"

namespace sidetable {
namespace {

using testing::Contains;

// A client that gives up fast: 300 ms an attempt, two attempts.
std::unique_ptr<client::Client> QuickClient(const std::string& endpoint) {
  client::ClientOptions o;
  o.endpoint = endpoint;
  o.timeout = std::chrono::milliseconds(300);
  o.max_attempts = 2;
  return client::Client::Connect(o).value();
}

// A loopback port nobody listens on (bound, read, closed).
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(UnansweredTest, NothingListeningIsSaid) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  Result<client::ServerInfo> r = QuickClient(endpoint)->Ping();
  ASSERT_EQ(r.status().code(), Code::kNoReply) << r.status().ToString();
  EXPECT_TRUE(Contains(r.status().message(), "the connect failed")) << r.status().ToString();
  EXPECT_TRUE(Contains(r.status().message(), "nothing listens at " + endpoint))
      << r.status().ToString();
}

class FullSidecarTest : public testing::SidecarTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    return {"--durability", "os", "--max-connections", "1"};
  }
};

TEST_F(FullSidecarTest, AClientPastTheConnectionBoundIsToldSo) {
  ASSERT_TRUE(client_->Ping().ok());  // the fixture's client holds the one connection
  // The sidecar closes a connection past the bound when its socket monitor
  // hears of it, just after the accept: on a loaded machine a request sent
  // at once may be answered first (connection_limit.h). A new client each
  // time, up to five.
  Result<client::ServerInfo> r = Status(Code::kInternal, "not tried");
  int served = 0;
  for (int attempt = 0; attempt < 5; attempt++) {
    r = QuickClient(server_->endpoint())->Ping();
    if (r.ok()) {
      served++;
      continue;
    }
    break;
  }
  if (served > 0)
    std::cout << "note: " << served << " client(s) past the bound were answered before the close\n";
  ASSERT_EQ(r.status().code(), Code::kNoReply) << r.status().ToString();
  EXPECT_TRUE(Contains(r.status().message(), "closed the connection during the handshake"))
      << r.status().ToString();
  EXPECT_TRUE(Contains(r.status().message(), "sidecar.max_connections")) << r.status().ToString();
  EXPECT_TRUE(Contains(r.status().message(), "it requires CURVE")) << r.status().ToString();
  EXPECT_TRUE(client_->Ping().ok()) << "the first client is still served";
}

class StoppedSidecarTest : public testing::SidecarTest {};

TEST_F(StoppedSidecarTest, AnOpenConnectionToAStoppedSidecarIsToldApart) {
  auto quick = QuickClient(server_->endpoint());
  ASSERT_TRUE(quick->Ping().ok());
  ASSERT_EQ(::kill(server_->pid(), SIGSTOP), 0);
  Result<client::ServerInfo> r = quick->Ping();
  ASSERT_EQ(::kill(server_->pid(), SIGCONT), 0);
  ASSERT_EQ(r.status().code(), Code::kNoReply) << r.status().ToString();
  EXPECT_TRUE(
      Contains(r.status().message(), "the connection is up: the sidecar did not answer in time"))
      << r.status().ToString();
  EXPECT_TRUE(quick->Ping().ok()) << "answered again once it runs";
}

}  // namespace
}  // namespace sidetable
