// common/pid_cache.cc: getpid() answered from memory. This test binary
// links the same file, as the `sidetable` executable does (st_pid_cache), and
// checks the three things that make it safe: it is the getpid() the shared
// libraries get, it is the process's real PID in every thread, and a fork()
// child gets its own. e2e_hot_path_test checks that libzmq in the real
// binary binds to it.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <thread>
#include <vector>

namespace {

pid_t KernelPid() { return static_cast<pid_t>(::syscall(SYS_getpid)); }

// The dynamic linker's answer for "getpid" is what libzmq's (and every
// library's) calls reach: the executable's own definition, not libc's.
TEST(PidCache, IsTheDefinitionTheLibrariesGet) {
  void* global = dlsym(RTLD_DEFAULT, "getpid");
  void* libc = dlsym(RTLD_NEXT, "getpid");
  ASSERT_NE(global, nullptr);
  ASSERT_NE(libc, nullptr);
  EXPECT_EQ(global, reinterpret_cast<void*>(&::getpid));
  EXPECT_NE(global, libc) << "the libraries get libc's getpid: pid_cache.cc not linked, or getpid not exported (-Wl,--export-dynamic-symbol=getpid)";
}

TEST(PidCache, IsTheKernelsPidInEveryThread) {
  const pid_t pid = KernelPid();
  EXPECT_EQ(::getpid(), pid);
  std::vector<pid_t> seen(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); i++) {
    threads.emplace_back([&seen, i] {
      for (int n = 0; n < 1000; n++) seen[i] = ::getpid();
    });
  }
  for (auto& t : threads) t.join();
  for (pid_t p : seen) EXPECT_EQ(p, pid);
}

// The parent has its PID cached (the calls above, and this one); the child
// of fork() must not answer with it: libzmq's fork check, OpenSSL's and
// libsodium's random generators rely on getpid() changing in a child.
TEST(PidCache, AForkChildGetsItsOwnPid) {
  const pid_t parent = ::getpid();
  ASSERT_EQ(parent, KernelPid());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // 0: right; 1: the parent's PID; 2: some other wrong value.
    const pid_t mine = ::getpid();
    ::_exit(mine == KernelPid() ? 0 : mine == parent ? 1 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the child answered with its parent's PID";
  EXPECT_EQ(::getpid(), parent);  // the parent's cache is untouched
}

// A child of a child: the reset happens in each generation.
TEST(PidCache, AGrandchildGetsItsOwnPidToo) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const pid_t mine = ::getpid();
    const pid_t grandchild = ::fork();
    if (grandchild < 0) ::_exit(3);
    if (grandchild == 0) ::_exit(::getpid() == KernelPid() && ::getpid() != mine ? 0 : 1);
    int status = 0;
    if (::waitpid(grandchild, &status, 0) != grandchild || !WIFEXITED(status)) ::_exit(4);
    ::_exit(WEXITSTATUS(status) == 0 && mine == KernelPid() ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
