// common::CloseOnExecFrom, what the worker calls before it execs itself onto
// a restarted embedded Kafka (workers/main.cc RestartOn). It used to close
// every descriptor from 3 up while its other threads still ran, and libzmq
// aborted on the vanished eventfd ("Assertion failed: pfd.revents & POLLIN",
// exit 134) when the restart landed under load.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "common/process.h"

namespace sidetable {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }
bool IsCloseOnExec(int fd) { return (::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }

TEST(CloseOnExecFromTest, MarksWithoutClosingAndLeavesTheStandardStreams) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);  // no O_CLOEXEC
  ASSERT_FALSE(IsCloseOnExec(p[0]));
  const int std_flags[3] = {::fcntl(0, F_GETFD), ::fcntl(1, F_GETFD), ::fcntl(2, F_GETFD)};

  ASSERT_TRUE(common::CloseOnExecFrom(3).ok());

  EXPECT_TRUE(IsOpen(p[0]));
  EXPECT_TRUE(IsOpen(p[1]));
  EXPECT_TRUE(IsCloseOnExec(p[0]));
  EXPECT_TRUE(IsCloseOnExec(p[1]));
  // Still usable: a byte goes through.
  ASSERT_EQ(::write(p[1], "x", 1), 1);
  char c = 0;
  ASSERT_EQ(::read(p[0], &c, 1), 1);
  EXPECT_EQ(c, 'x');
  for (int fd = 0; fd < 3; ++fd) EXPECT_EQ(::fcntl(fd, F_GETFD), std_flags[fd]) << "fd " << fd;
  ::close(p[0]);
  ::close(p[1]);
}

TEST(CloseOnExecFromTest, AThreadPollingADescriptorKeepsIt) {
  const int efd = ::eventfd(0, 0);
  ASSERT_GE(efd, 3);
  std::atomic<int> revents{-1};
  std::thread poller([&] {
    pollfd pfd{efd, POLLIN, 0};
    const int n = ::poll(&pfd, 1, 10000);  // bounded: 10 s at most
    revents = n == 1 ? pfd.revents : -2;
  });
  ASSERT_TRUE(common::CloseOnExecFrom(3).ok());
  const uint64_t one = 1;
  ASSERT_EQ(::write(efd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  poller.join();
  // Closed under the poller, poll() would report POLLNVAL (or the write
  // above would fail with EBADF).
  EXPECT_EQ(revents.load(), POLLIN);
  ::close(efd);
}

TEST(CloseOnExecFromTest, MarkedDescriptorsDoNotReachTheNewImage) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // High numbers, so that ls's own descriptor for the directory (3) cannot
    // be mistaken for them.
    int p[2];
    if (::pipe(p) != 0 || ::dup2(p[0], 100) < 0 || ::dup2(p[1], 101) < 0) ::_exit(10);
    if (::dup2(out[1], 1) < 0) ::_exit(11);
    if (!common::CloseOnExecFrom(3).ok()) ::_exit(12);
    ::execl("/bin/ls", "ls", "/proc/self/fd", static_cast<char*>(nullptr));
    ::_exit(13);
  }
  ::close(out[1]);
  std::string listing;
  char buf[256];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) listing.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << listing;
  EXPECT_NE(listing.find("\n1\n"), std::string::npos) << listing;  // stdout survived the exec
  EXPECT_EQ(listing.find("100"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("101"), std::string::npos) << listing;
}

TEST(CloseOnExecFromTest, ANegativeFirstDescriptorIsRefused) {
  const Status s = common::CloseOnExecFrom(-1);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
}

}  // namespace
}  // namespace sidetable
