// Runs the real `sidetable-worker` binary for end-to-end tests: found
// through its ready file; every wait bounded; the destructor kills it.
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

class WorkerProcess {
 public:
  WorkerProcess(std::string binary, std::string config, std::string scratch)
      : binary_(std::move(binary)), config_(std::move(config)), scratch_(std::move(scratch)) {}
  ~WorkerProcess() { Kill(); }

  // Starts and waits (at most 15 s) for the ready file.
  bool Start() {
    const std::string ready = scratch_ + ".ready";
    ::unlink(ready.c_str());
    std::vector<std::string> args = {binary_, "--config", config_, "--ready-file", ready, "--http", "127.0.0.1:0"};
    pid_ = SpawnLogged(std::move(args), scratch_ + ".log");
    return WaitForReadyFile(&pid_, ready, 1500, [&](const std::string& kind, const std::string& value) {
      if (kind == "http") http_ = value;
      return kind == "pid";
    });
  }

  // SIGTERM and wait: the exit code, 128+signal, or -1 if it had to be killed.
  int Stop(int seconds = 20) { return SignalAndWait(SIGTERM, seconds); }
  int Kill() { return SignalAndWait(SIGKILL, 10); }
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const std::string& http() const { return http_; }
  std::string Log() const { return ReadWholeFile(scratch_ + ".log"); }

 private:
  int SignalAndWait(int sig, int seconds) { return testing::SignalAndWait(&pid_, sig, seconds); }

  std::string binary_, config_, scratch_;
  pid_t pid_ = -1;
  std::string http_;
};

}  // namespace sidetable::testing
