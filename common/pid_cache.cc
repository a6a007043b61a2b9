// getpid() answered from memory, for the executables that link it
// (st_pid_cache in cmake/st_library.cmake: the sidecar, the worker, the
// loadgen).
//
// Why: libzmq (built with its fork check, as Debian's is) calls getpid() in
// its signalers, on every wait and every wake-up between its threads, to
// notice that it runs in a forked child. glibc stopped caching the PID in
// 2.25, so each of those is a system call: ~1 per request the sidecar
// serves (strace -c over 20,000 point reads: 20,253 getpid), ~1.15 per
// request in a client's process, and on this project's VMs a system call is
// not cheap (docs/performance.md, sessions 20 and 21).
//
// How: an executable's definition of a function interposes on the shared
// libraries' references to it (the dynamic linker looks in the executable
// first; it exports the definition: -Wl,--export-dynamic-symbol=getpid in
// st_pid_cache). The PID is read with the raw system call once and kept; a
// fork() child forgets it (pthread_atfork runs in the child of fork(), never
// in a vfork() or posix_spawn() child, which only exec). An exec starts over.
// glibc's own internal calls (raise, abort) use its private alias and are
// not affected.
//
// Only executables link this file, never a library: the client library
// does not redefine a libc function in someone else's program. An
// application may link it the same way (client/README.md).
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace {

std::atomic<pid_t> g_pid{0};

void ForgetPidInChild() { g_pid.store(0, std::memory_order_relaxed); }

// Registered before main(), so before any thread could fork.
[[maybe_unused]] const int g_registered = pthread_atfork(nullptr, nullptr, ForgetPidInChild);

}  // namespace

extern "C" pid_t getpid(void) noexcept {
  pid_t pid = g_pid.load(std::memory_order_relaxed);
  if (pid == 0) {
    pid = static_cast<pid_t>(::syscall(SYS_getpid));
    g_pid.store(pid, std::memory_order_relaxed);
  }
  return pid;
}
