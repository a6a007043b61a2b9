// ConnectionLimit's two pure parts (sidecar/connection_limit.h): which
// descriptor may be shut down (IsConnectionOf, with real loopback sockets)
// and the bound fitted to the descriptor limit. The bound itself, against a
// real sidecar, is tests/reliability/connections_test.cc.
#include "sidecar/connection_limit.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "testing/temp_dir.h"

namespace sidetable::sidecar {
namespace {

// A listening TCP socket on 127.0.0.1, an ephemeral port.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 8) != 0) return;
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd); }
  // Connects to it; returns {client side, accepted side}.
  std::pair<int, int> Pair() const {
    const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return {c, -1};
    return {c, ::accept(fd, nullptr, nullptr)};
  }
  std::string Endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port); }
};

TEST(ConnectionLimitTest, AnAcceptedTcpConnectionIsTheListenersAndNothingElseIs) {
  Listener l, other;
  ASSERT_GT(l.port, 0);
  ASSERT_GT(other.port, 0);
  auto [client, accepted] = l.Pair();
  ASSERT_GE(accepted, 0);
  EXPECT_TRUE(IsConnectionOf(accepted, l.Endpoint()));
  EXPECT_TRUE(
      IsConnectionOf(accepted, "tcp://0.0.0.0:" + std::to_string(l.port)));  // a wildcard bind
  EXPECT_FALSE(IsConnectionOf(accepted, other.Endpoint()));                  // another port
  // The client's side has the listener's port only as its peer's.
  EXPECT_FALSE(IsConnectionOf(client, l.Endpoint()));
  // The listening socket itself is not connected.
  EXPECT_FALSE(IsConnectionOf(l.fd, l.Endpoint()));
  // Malformed endpoints and other transports.
  EXPECT_FALSE(IsConnectionOf(accepted, "tcp://127.0.0.1"));
  EXPECT_FALSE(IsConnectionOf(accepted, "tcp://127.0.0.1:99999"));
  EXPECT_FALSE(IsConnectionOf(accepted, "ipc:///tmp/x"));
  EXPECT_FALSE(IsConnectionOf(accepted, "inproc://x"));
  ::close(client);
  ::close(accepted);
  // A closed descriptor, and one reused for a file.
  EXPECT_FALSE(IsConnectionOf(accepted, l.Endpoint()));
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  EXPECT_FALSE(IsConnectionOf(pipe_fds[0], l.Endpoint()));
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST(ConnectionLimitTest, AnAcceptedIpcConnectionIsTheListenersByPath) {
  testing::TempDir dir;
  const std::string path = dir.Sub("s");
  const int lfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const int accepted = ::accept(lfd, nullptr, nullptr);
  ASSERT_GE(accepted, 0);
  EXPECT_TRUE(IsConnectionOf(accepted, "ipc://" + path));
  EXPECT_FALSE(IsConnectionOf(accepted, "ipc://" + path + "-other"));
  EXPECT_FALSE(IsConnectionOf(accepted, "tcp://127.0.0.1:5555"));
  ::close(c);
  ::close(accepted);
  ::close(lfd);
}

TEST(ConnectionLimitTest, TheBoundKeepsToAQuarterOfTheDescriptorLimit) {
  EXPECT_EQ(FitConnectionLimit(1024, 0), 1024u);       // limit unknown or unlimited
  EXPECT_EQ(FitConnectionLimit(1024, 524288), 1024u);  // plenty
  EXPECT_EQ(FitConnectionLimit(1024, 1024), 256u);     // the usual default soft limit
  EXPECT_EQ(FitConnectionLimit(1024, 256), 64u);
  EXPECT_EQ(FitConnectionLimit(10, 256), 10u);    // below the quarter already
  EXPECT_EQ(FitConnectionLimit(1024, 3), 1024u);  // a quarter of 3 is 0: nothing to fit to
  EXPECT_EQ(FitConnectionLimit(0, 1024), 1u);     // at least one
}

}  // namespace
}  // namespace sidetable::sidecar
