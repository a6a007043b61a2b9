// Runs a shell command line and returns what it printed on stdout, for tests
// that drive a binary (sidetable-cli, python3) and compare its output.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace sidetable::testing {

// `*exit_code` is the command's exit status, or -1 when it did not exit
// normally (a signal) or could not be started.
inline std::string RunShell(const std::string& command, int* exit_code) {
  std::string out;
  *exit_code = -1;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = ::pclose(p);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

}  // namespace sidetable::testing
