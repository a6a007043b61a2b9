// Runs the real `sidetable` binary for end-to-end tests: in a scratch data
// directory, on ephemeral loopback ports, found through its ready file.
// Every wait is bounded; the destructor kills what is left.
#pragma once

#include "testing/child_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace sidetable::testing {

class SidecarProcess {
 public:
  // `binary` is the sidetable executable; `data_dir` persists across restarts.
  SidecarProcess(std::string binary, std::string data_dir, std::vector<std::string> extra_args = {})
      : binary_(std::move(binary)), data_dir_(std::move(data_dir)), extra_(std::move(extra_args)) {}
  ~SidecarProcess() { Kill(); }

  // Starts the process and waits (at most 20 s) for its ready file.
  bool Start() {
    ready_file_ = data_dir_ + ".ready";
    ::unlink(ready_file_.c_str());
    log_file_ = data_dir_ + ".log";
    std::vector<std::string> args = {binary_, "--data", data_dir_, "--ready-file", ready_file_,
                                     "--http", "127.0.0.1:0"};
    // Defaults the test's own flags may replace.
    auto has = [&](const char* flag) {
      for (const auto& a : extra_) if (a == flag) return true;
      return false;
    };
    if (!has("--listen")) {
      args.push_back("--listen");
      args.push_back("tcp://127.0.0.1:*");
    }
    if (!has("--log-level")) {
      args.push_back("--log-level");
      args.push_back("info");
    }
    args.insert(args.end(), extra_.begin(), extra_.end());
    pid_ = SpawnLogged(std::move(args), log_file_);
    // The sidecar writes its ready file whole (rename), "pid" last.
    endpoints_.clear();
    return WaitForReadyFile(&pid_, ready_file_, 2000, [&](const std::string& kind, const std::string& value) {
      if (kind == "zmq") endpoints_.push_back(value);
      if (kind == "http") http_ = value;
      if (kind == "rest") rest_ = value;
      return kind == "pid" && !endpoints_.empty();
    });
  }

  // SIGTERM, then waits (at most `seconds`); returns the exit code, or -1
  // if it did not exit by itself (it is then killed), or 128+signal.
  int Stop(int seconds = 30) { return SignalAndWait(SIGTERM, seconds); }
  int Kill() { return SignalAndWait(SIGKILL, 10); }
  // Any signal, then waits as Stop() does.
  int SignalAndWait(int sig, int seconds) { return testing::SignalAndWait(&pid_, sig, seconds); }

  const std::string& endpoint() const { return endpoints_.at(0); }
  const std::vector<std::string>& endpoints() const { return endpoints_; }
  const std::string& http() const { return http_; }
  // The REST gateway's "host:port" ("" when not started with --rest).
  const std::string& rest() const { return rest_; }
  pid_t pid() const { return pid_; }
  std::string Log() const { return ReadWholeFile(log_file_); }

 private:
  std::string binary_, data_dir_;
  std::vector<std::string> extra_;
  std::string ready_file_, log_file_;
  pid_t pid_ = -1;
  std::vector<std::string> endpoints_;
  std::string http_;
  std::string rest_;
};

}  // namespace sidetable::testing
