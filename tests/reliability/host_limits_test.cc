// Limits of the host a sidecar is started under (session 43, from outside):
// a small stack (`ulimit -s`) and a small address space (`ulimit -v`). The frontend runs on the
// main thread, whose stack RLIMIT_STACK bounds, and glibc sizes every new thread's stack by it too:
// under `ulimit -s 64` a query whose $filter nests 63 levels, within the documented 64, overflowed
// it (SIGSEGV, the sidecar gone, while it had started and served as usual). Now a low soft limit is
// raised to 1 MiB and threads get 1 MiB (common::EnsureStackSize); a hard limit below that is
// refused at start with a message. Real processes, loopback.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "client/client.h"
#include "client/entity_builder.h"
#include "testing/sidecar_process.h"
#include "testing/temp_dir.h"

namespace sidetable::testing {
namespace {

std::unique_ptr<client::Client> Connect(const SidecarProcess& s) {
  client::ClientOptions o;
  o.endpoint = s.endpoint();
  o.timeout = std::chrono::milliseconds(10000);
  o.max_attempts = 1;  // a dead sidecar is the failure, not something to retry
  return client::Client::Connect(o).value();
}

// A shell that sets `ulimit_args` and then execs the sidecar (same pid).
std::string Wrapper(const TempDir& dir, const std::string& ulimit_args) {
  const std::string path = dir.Sub("sidetable-small-stack");
  std::ofstream(path) << "#!/bin/sh\nulimit " << ulimit_args << " || exit 97\nexec "
                      << SIDETABLE_BIN << " \"$@\"\n";
  EXPECT_EQ(::chmod(path.c_str(), 0755), 0);
  return path;
}

std::string Nested(int depth, const std::string& inner) {
  return std::string(depth, '(') + inner + std::string(depth, ')');
}

// The soft limit alone is low (`ulimit -S -s 64`, LimitSTACK=64K:infinity):
// raised, and the filters at the nesting limit are answered.
TEST(HostLimitsTest, ALowSoftStackLimitIsRaisedAndDeepFiltersAreServed) {
  rlimit mine{};
  ASSERT_EQ(getrlimit(RLIMIT_STACK, &mine), 0);
  if (mine.rlim_max != RLIM_INFINITY && mine.rlim_max < (1u << 20)) {
    GTEST_SKIP() << "the hard stack limit here is " << mine.rlim_max << " bytes, below 1 MiB";
  }
  TempDir dir;
  SidecarProcess server(Wrapper(dir, "-S -s 64"), dir.Sub("db"), {"--kafka", "none"});
  ASSERT_TRUE(server.Start()) << server.Log();
  EXPECT_NE(server.Log().find("stack: soft limit raised from 64 KiB to 1024 KiB"),
            std::string::npos)
      << server.Log();
  auto c = Connect(server);
  ASSERT_TRUE(c->CreateTable("Deep").ok());
  ASSERT_TRUE(c->Insert("Deep", client::EntityBuilder("p", "r").String("k", "x").Build()).ok());
  std::string nots;
  for (int i = 0; i < 63; ++i) nots += "not ";
  // Depth 63 of parentheses, and of `not`s: accepted (the limit is 64).
  for (const std::string& filter : {Nested(63, "k eq 'x'"), nots + "k ne 'x'"}) {
    client::QueryOptions q;
    q.table = "Deep";
    q.filter = filter;
    auto page = c->QueryPage(q);
    ASSERT_TRUE(page.ok()) << filter.substr(0, 70) << "...: " << page.status().ToString() << "\n"
                           << server.Log();
    EXPECT_EQ(page->entities.size(), 1u);
  }
  // Past the limit: the parser's error, not a crash.
  client::QueryOptions q;
  q.table = "Deep";
  q.filter = Nested(65, "k eq 'x'");
  EXPECT_EQ(c->QueryPage(q).status().code(), Code::kInvalidInput);
  EXPECT_EQ(server.Stop(), 0) << server.Log();
}

// Both limits low (`ulimit -s 64`, Docker's --ulimit stack=65536:65536):
// nothing can raise them, so the sidecar says so and exits at start instead
// of serving until the first deep filter. Before, it started, and the
// query below killed it.
TEST(HostLimitsTest, ALowHardStackLimitIsRefusedAtStart) {
  TempDir dir;
  SidecarProcess server(Wrapper(dir, "-s 64"), dir.Sub("db"), {"--kafka", "none"});
  if (server.Start()) {
    auto c = Connect(server);
    client::QueryOptions q;
    q.table = "Deep";
    q.filter = Nested(63, "k eq 'x'");
    auto page = c->QueryPage(q);
    ADD_FAILURE() << "started under a 64 KiB hard stack limit; a depth-63 filter then got: "
                  << page.status().ToString() << "\n"
                  << server.Log();
    return;
  }
  EXPECT_NE(server.Log().find("start-up failed: the stack limit (ulimit -s, LimitSTACK=, --ulimit "
                              "stack=) is 64 KiB; the sidecar needs 1024 KiB"),
            std::string::npos)
      << server.Log();
}

// A small address space (`ulimit -v`, a container's memory limit counted
// the same way): a thread or memory the process cannot get throws where
// nothing can answer it. The sidecar may serve or stop, but when it stops it
// says why in one line naming the limits; before session 43 it ended with
// libstdc++'s "terminate called after throwing an instance of
// 'std::system_error'", at start or just after it said it was listening.
TEST(HostLimitsTest, AnAddressSpaceTooSmallStopsWithALineNamingTheLimits) {
  TempDir dir;
  SidecarProcess server(Wrapper(dir, "-v 200000"), dir.Sub("db"), {"--kafka", "none"});
  if (server.Start()) {
    // Enough here after all: then it must serve.
    auto c = Connect(server);
    EXPECT_TRUE(c->CreateTable("Small").ok()) << server.Log();
    EXPECT_EQ(server.Stop(), 0) << server.Log();
    return;
  }
  const std::string log = server.Log();
  EXPECT_NE(log.find("ulimit -v"), std::string::npos) << log;
  EXPECT_EQ(log.find("terminate called"), std::string::npos) << log;
}

}  // namespace
}  // namespace sidetable::testing
