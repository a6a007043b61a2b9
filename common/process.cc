#include "common/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <unistd.h>

#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

namespace sidetable::common {

void InstallStopSignals(void (*on_stop)(int)) {
  std::signal(SIGPIPE, SIG_IGN);
  // The handler serves only a thread that started before this call (it has
  // the signals unblocked); every later thread leaves them to the waiter.
  std::signal(SIGTERM, on_stop);
  std::signal(SIGINT, on_stop);
  // SIGHUP (the terminal or session that started the process went away)
  // stops it the same orderly way: by default it would end the process at
  // once, without draining or a word in the log. There is nothing to reload:
  // the configuration is read at start.
  std::signal(SIGHUP, on_stop);
  // Blocked here, in main() before any other thread starts, so every thread
  // inherits the mask and none is ever interrupted: a blocking ZeroMQ call
  // interrupted by a signal fails with EINTR, which cppzmq throws, and an
  // uncaught throw in a worker thread aborts the process on SIGTERM. One
  // thread takes the signals with sigwait() instead.
  //
  // SIGUSR1, SIGUSR2 and SIGALRM end a process at once by default, with no
  // drain and no word in the log (found from outside by session 39); a
  // log rotation that sends SIGUSR1 "to reopen the log", a stray `kill
  // -USR1`, would have taken the sidecar down. They are taken here too, and
  // only logged: the log goes to stderr, there is nothing to reopen.
  sigset_t taken;
  sigemptyset(&taken);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM}) sigaddset(&taken, s);
  pthread_sigmask(SIG_BLOCK, &taken, nullptr);
  NamedThread("st-signals", [taken, on_stop] {
    for (;;) {
      int sig = 0;
      if (sigwait(&taken, &sig) != 0) continue;
      if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
        on_stop(sig);
      } else {
        spdlog::warn("signal {} ({}) ignored: SIGTERM, SIGINT or SIGHUP stop the process", sig,
                     ::strsignal(sig));
      }
    }
  }).detach();
}

Result<FileLimit> RaiseOpenFileLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    return Status(Code::kInternal,
                  std::string("getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno));
  }
  FileLimit out;
  out.before = out.after = static_cast<uint64_t>(lim.rlim_cur);
  // Linux caps the hard limit at fs.nr_open; "unlimited" is never set there.
  if (lim.rlim_cur == lim.rlim_max || lim.rlim_max == RLIM_INFINITY) return out;
  rlimit raised = lim;
  raised.rlim_cur = lim.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &raised) != 0) {
    return Status(Code::kInternal,
                  std::string("setrlimit(RLIMIT_NOFILE): ") + std::strerror(errno));
  }
  out.after = static_cast<uint64_t>(raised.rlim_cur);
  return out;
}

void RaiseOpenFileLimitLogged() {
  auto limit = RaiseOpenFileLimit();
  if (!limit.ok()) {
    spdlog::warn("open files: {}", limit.status().message());
  } else if (limit->after != limit->before) {
    spdlog::info("open files: soft limit raised from {} to the hard limit, {}", limit->before,
                 limit->after);
  } else {
    spdlog::info("open files: limit {}", limit->after);
  }
}

Result<StackLimit> EnsureStackSize(size_t min_bytes) {
  rlimit lim{};
  if (getrlimit(RLIMIT_STACK, &lim) != 0) {
    return Status(Code::kInternal, std::string("getrlimit(RLIMIT_STACK): ") + std::strerror(errno));
  }
  auto bytes = [](rlim_t v) { return v == RLIM_INFINITY ? uint64_t{0} : static_cast<uint64_t>(v); };
  StackLimit out;
  out.soft_before = out.soft_after = bytes(lim.rlim_cur);
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < min_bytes) {
    if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < min_bytes) {
      return Status(Code::kInvalidInput,
                    "the stack limit (ulimit -s, LimitSTACK=, --ulimit stack=) is " +
                        std::to_string(bytes(lim.rlim_max) >> 10) + " KiB; the sidecar needs " +
                        std::to_string(min_bytes >> 10) +
                        " KiB (a $filter nested to its limit of 64 overflowed less): raise it");
    }
    rlimit raised = lim;
    raised.rlim_cur = min_bytes;
    if (setrlimit(RLIMIT_STACK, &raised) != 0) {
      return Status(Code::kInternal,
                    std::string("setrlimit(RLIMIT_STACK): ") + std::strerror(errno));
    }
    out.soft_after = min_bytes;
  }
  pthread_attr_t attr;
  if (int rc = pthread_getattr_default_np(&attr); rc != 0) {
    return Status(Code::kInternal, std::string("pthread_getattr_default_np: ") + std::strerror(rc));
  }
  size_t size = 0;
  int rc = pthread_attr_getstacksize(&attr, &size);
  if (rc == 0 && size < min_bytes) {
    rc = pthread_attr_setstacksize(&attr, min_bytes);
    if (rc == 0) rc = pthread_setattr_default_np(&attr);
  }
  pthread_attr_destroy(&attr);
  if (rc != 0)
    return Status(Code::kInternal, std::string("thread stack size: ") + std::strerror(rc));
  return out;
}

namespace {

[[noreturn]] void OnTerminate() {
  std::string what = "no exception (std::terminate called directly)";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::system_error& x) {
      what = std::string("std::system_error: ") + x.what() +
             (x.code() == std::errc::resource_unavailable_try_again
                  ? " (a thread the process could not start: ulimit -u, ulimit -v, or a "
                    "container's pids or memory limit)"
                  : "");
    } catch (const std::bad_alloc&) {
      what =
          "std::bad_alloc (memory the process could not get: ulimit -v, or a container's memory "
          "limit)";
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
      what = "an exception of an unknown type";
    }
  }
  spdlog::critical("stopping on an error nothing handled: {}", what);
  spdlog::default_logger()->flush();
  std::abort();
}

}  // namespace

void LogUnhandledErrorsOnTerminate() { std::set_terminate(OnTerminate); }

void NameAfterExecutable() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return;  // no /proc: keep the kernel's name
  std::string_view exe(path, static_cast<size_t>(n));
  // A binary replaced on disk while it runs reads "<path> (deleted)".
  constexpr std::string_view kDeleted = " (deleted)";
  if (exe.size() > kDeleted.size() && exe.substr(exe.size() - kDeleted.size()) == kDeleted) {
    exe.remove_suffix(kDeleted.size());
  }
  const size_t slash = exe.rfind('/');
  if (slash != std::string_view::npos) exe.remove_prefix(slash + 1);
  if (exe.empty()) return;
  const std::string name(exe.substr(0, 15));  // the kernel's TASK_COMM_LEN, less the NUL
  ::prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
}

void NameThisThread(std::string_view name) {
  const std::string n(name.substr(0, 15));
  ::pthread_setname_np(::pthread_self(), n.c_str());
}

Status WriteReadyFile(const std::string& path, const std::vector<std::pair<std::string, std::string>>& lines) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    for (const auto& [key, value] : lines) out << key << " " << value << "\n";
    out << "pid " << ::getpid() << "\n";
    if (!out) return Status(Code::kInvalidInput, "ready_file: cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status(Code::kInvalidInput, "ready_file: cannot write " + path);
  }
  return Status::OK();
}

void RemoveReadyFile(const std::string& path) {
  if (!path.empty()) ::unlink(path.c_str());
}

Status CloseOnExecFrom(int first_fd) {
  if (first_fd < 0) return Status(Code::kInvalidInput, "CloseOnExecFrom: negative descriptor");
  if (::close_range(static_cast<unsigned>(first_fd), ~0U, CLOSE_RANGE_CLOEXEC) == 0) return Status::OK();
  // Kernels before 5.11 (EINVAL for the flag, ENOSYS for the call).
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return Status(Code::kInternal, "CloseOnExecFrom: cannot list /proc/self/fd");
  const int own = ::dirfd(dir);
  Status result = Status::OK();
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int fd = std::atoi(e->d_name);
    if (fd < first_fd || fd == own) continue;
    const int flags = ::fcntl(fd, F_GETFD);
    // A descriptor closed meanwhile by another thread is no longer ours to mark.
    if (flags < 0) continue;
    if (::fcntl(fd, F_SETFD, flags | FD_CLOEXEC) != 0 && result.ok()) {
      result = Status(Code::kInternal, "CloseOnExecFrom: cannot mark descriptor " + std::to_string(fd));
    }
  }
  ::closedir(dir);
  return result;
}

std::string HeapTunables(const char* existing, bool huge_pages) {
  const std::string have = existing != nullptr ? existing : "";
  // Entries are "name=value" separated by ':'; a name is matched whole.
  auto named = [&](const std::string& name) {
    for (size_t at = 0; at <= have.size();) {
      size_t end = have.find(':', at);
      if (end == std::string::npos) end = have.size();
      const std::string entry = have.substr(at, end - at);
      if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 && entry[name.size()] == '=') {
        return true;
      }
      at = end + 1;
    }
    return false;
  };
  std::string added;
  auto add = [&](const std::string& name, const std::string& value) {
    if (named(name)) return;
    if (!added.empty()) added += ':';
    added += name + "=" + value;
  };
  if (huge_pages) add("glibc.malloc.hugetlb", "1");
  add("glibc.malloc.tcache_count", std::to_string(kHeapTcacheCount));
  if (added.empty()) return "";
  return have.empty() ? added : have + ":" + added;
}

int MallocArenas(const char* env) {
  if (env == nullptr) return kDefaultMallocArenas;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(env, &end, 10);
  if (end == env || *end != '\0' || errno != 0 || n < 1 || n > 64) return kDefaultMallocArenas;
  return static_cast<int>(n);
}

}  // namespace sidetable::common
