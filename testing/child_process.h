// Small helpers for tests that run the project's binaries as child processes.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace sidetable::testing {

// Starts args[0] with `args` as its argv, stdout and stderr going to
// `log_path` (appended to, or truncated when `append` is false). Returns
// the child's pid, or -1 when fork failed; a child that cannot exec exits 127.
inline pid_t SpawnLogged(std::vector<std::string> args, const std::string& log_path, bool append = true) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (FILE* log = std::fopen(log_path.c_str(), append ? "a" : "w")) {
      ::dup2(fileno(log), STDERR_FILENO);
      ::dup2(fileno(log), STDOUT_FILENO);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Sends `sig` to *pid and waits at most `seconds` for it to exit; then kills
// it. Returns the exit code, 128+signal, or -1 if it had to be killed (or
// there was no process). Clears *pid.
inline int SignalAndWait(pid_t* pid, int sig, int seconds) {
  if (*pid <= 0) return -1;
  kill(*pid, sig);
  for (int i = 0; i < seconds * 100; i++) {
    int status;
    if (waitpid(*pid, &status, WNOHANG) == *pid) {
      *pid = -1;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(*pid, SIGKILL);
  int status;
  waitpid(*pid, &status, 0);
  *pid = -1;
  return -1;
}

// Polls a child's ready file ("<kind> <value>" lines) every 10 ms, at most
// `attempts` times: `on_line(kind, value)` sees every line of each read and
// returns true once the child counts as ready. False when the child exited
// first (*pid is cleared) or time ran out.
inline bool WaitForReadyFile(pid_t* pid, const std::string& path, int attempts,
                             const std::function<bool(const std::string&, const std::string&)>& on_line) {
  for (int i = 0; i < attempts; i++) {
    std::ifstream in(path);
    std::string kind, value;
    bool ready = false;
    while (in >> kind >> value) ready |= on_line(kind, value);
    if (ready) return true;
    int status;
    if (waitpid(*pid, &status, WNOHANG) == *pid) {
      *pid = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace sidetable::testing
