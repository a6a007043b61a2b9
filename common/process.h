// Process set-up shared by every sidetable binary's main(): the stop signals
// and the ready file.
//
// Thread safety: InstallStopSignals once from main() before other threads
// start; WriteReadyFile and CloseOnExecFrom from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "engine/status.h"

namespace sidetable::common {

// SIGTERM, SIGINT and SIGHUP call `on_stop` from a thread of their own (sigwait),
// never by interrupting another thread: they are blocked in every thread
// started after this call, so no blocking call (a ZeroMQ send or poll, a
// RocksDB write) ever fails with EINTR because of them. Call it from main()
// before starting threads. `on_stop` should still only set a flag or wake a
// loop. SIGPIPE is ignored so that a peer that went away is an error code,
// not the end of the process; SIGUSR1, SIGUSR2 and SIGALRM are logged and
// ignored (by default each would end the process without a drain).
void InstallStopSignals(void (*on_stop)(int));

// Writes "<key> <value>" lines and then "pid <pid>" to `path`, atomically
// (a temporary file renamed over it), so that a script or a test waiting for
// the file never reads it half written.
Status WriteReadyFile(const std::string& path, const std::vector<std::pair<std::string, std::string>>& lines);
// Removes the ready file ("" = none) at the start and the end of a run: one
// left by the last run (kept after a stop, and after a start that failed)
// was taken by a script or a supervisor for this run's, naming a dead pid.
void RemoveReadyFile(const std::string& path);

// Marks every descriptor from `first_fd` up close-on-exec, without closing
// any: for a process that execs itself while other threads still run. Closing
// the descriptors before execv() would pull them from under those threads
// (libzmq aborts when its signaler's eventfd disappears: "Assertion failed:
// pfd.revents & POLLIN"); marked ones stay valid until execv() replaces the
// whole process and closes them in one step. Uses close_range's
// CLOSE_RANGE_CLOEXEC (Linux 5.11) and falls back to fcntl() on each entry of
// /proc/self/fd. A descriptor another thread opens without O_CLOEXEC after
// this call still reaches the new image.
Status CloseOnExecFrom(int first_fd);

// Raises the soft limit on open descriptors (RLIMIT_NOFILE) to the hard
// one. Every client connection (ZeroMQ and REST) holds a descriptor, and
// RocksDB needs one for each new WAL and table file: at a soft limit of
// 1,024 (the usual default) a flood of 1,100 connections left RocksDB unable
// to open its next WAL, which it treats as fatal (writes refused until a
// restart). Servers raise the soft limit as a rule; the hard one is the
// operator's (ulimit -Hn, systemd LimitNOFILE, a container's nofile).
// Descriptors past 1,023 are safe here: nothing in these processes uses
// select() (libzmq and the REST listener use epoll, librdkafka and Debian's
// libcpp-httplib.so poll; checked with nm -D in session 37).
// Returns {soft before, soft after}; an error if the limit cannot be read or
// set (the process then runs with what it has).
struct FileLimit {
  uint64_t before = 0;
  uint64_t after = 0;
};
Result<FileLimit> RaiseOpenFileLimit();
// RaiseOpenFileLimit, logged: "open files: soft limit raised from A to the
// hard limit, B", "open files: limit B", or a warning with the error.
void RaiseOpenFileLimitLogged();

// Makes sure every thread of the process may use at least `min_bytes` of
// stack. The frontend runs on the main thread, whose stack RLIMIT_STACK
// bounds, and glibc sizes every new thread's stack by RLIMIT_STACK too: under
// `ulimit -s 64` a query whose $filter nests 63 levels (the documented limit
// is 64) overflowed the 64 KiB and the sidecar died of SIGSEGV (found from
// outside in session 43). So the soft RLIMIT_STACK is raised to `min_bytes`
// when the hard one allows (the main thread's stack grows up to the limit
// in force when it grows), new threads get at least `min_bytes` (glibc's
// default thread attributes, which std::thread, RocksDB, libzmq and
// librdkafka use), and a hard limit below `min_bytes` is an error, for
// main() to refuse to start with rather than crash on a request later.
// Larger limits are kept. Call it from main() before any thread starts.
inline constexpr size_t kMinStackBytes = size_t{1} << 20;
struct StackLimit {
  uint64_t soft_before = 0;  // 0: unlimited
  uint64_t soft_after = 0;
};
Result<StackLimit> EnsureStackSize(size_t min_bytes = kMinStackBytes);

// Makes an exception nothing caught (std::terminate) say what it was and
// what usually causes it before the process aborts: a thread or memory the
// process could not get under `ulimit -v`, `ulimit -u` or a container's
// limits throws std::system_error ("Resource temporarily unavailable") or
// std::bad_alloc wherever it happens, and ended the sidecar with libstdc++'s
// two bare lines (found from outside in session 43). Still an abort (a core
// for a real bug), after one critical log line. Call it first in main().
void LogUnhandledErrorsOnTerminate();

// Names the process (its comm: `ps`, `top`, `pgrep -x`, the threads it
// starts later) after the file it runs from. A server that execs itself
// through /proc/self/exe (sidecar/main.cc for its heap tunables,
// workers/main.cc onto a restarted Kafka) would otherwise be called "exe"
// by the kernel, which names a process after the path it was exec'd by.
// Call it first thing in main(), before any thread starts. The kernel keeps
// 15 bytes of the name, as it does for any process.
void NameAfterExecutable();

// Names the calling thread (its comm in /proc/<pid>/task, `top -H`, perf,
// gdb): "st-" and what it does. The kernel keeps 15 bytes. The main thread
// keeps the process's name (NameAfterExecutable): ps shows the main
// thread's.
void NameThisThread(std::string_view name);

// A std::thread that names itself (NameThisThread) before it runs `f`.
template <typename F>
std::thread NamedThread(std::string name, F&& f) {
  return std::thread([name = std::move(name), f = std::forward<F>(f)]() mutable {
    NameThisThread(name);
    f();
  });
}

// The GLIBC_TUNABLES a server re-execs itself with (sidecar/main.cc), given
// the caller's (`existing`, null when unset): the caller's own entries first,
// then each of ours the caller did not name: glibc.malloc.hugetlb=1 (when
// `huge_pages`) and glibc.malloc.tcache_count=kHeapTcacheCount. "" when there
// is nothing to add (no exec needed). A caller's entry always wins.
inline constexpr int kHeapTcacheCount = 256;
std::string HeapTunables(const char* existing, bool huge_pages);

// The malloc arenas a server allows (mallopt M_ARENA_MAX), given
// SIDETABLE_MALLOC_ARENAS (`env`, null when unset): a whole number from 1
// to 64, or kDefaultMallocArenas for anything else (unset, empty, "0",
// "4 arenas"). Why four: sidecar/main.cc.
inline constexpr int kDefaultMallocArenas = 4;
int MallocArenas(const char* env);

}  // namespace sidetable::common
