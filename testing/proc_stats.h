// A process's CPU time and memory as the kernel accounts them (/proc), for
// the tests and benches that measure a sidecar from outside.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace sidetable::testing {

// CPU seconds (user + system) in the text of a /proc stat file (a
// process's, or a thread's under /proc/<pid>/task); -1 if malformed.
// *name, when given, gets the command name.
inline double StatCpuSeconds(const std::string& text, std::string* name = nullptr) {
  // Fields after the command name, which may hold spaces: after its ')'.
  const size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return -1;
  if (name != nullptr) *name = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; i++) {
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) stime = std::atof(field.c_str());
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// CPU seconds (user + system) of a process; -1 if it is gone.
inline double ProcessCpuSeconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  return StatCpuSeconds(std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>()));
}

// A "Key:  <n> kB" field of /proc/<pid>/<file> ("status": VmRSS, VmHWM;
// "smaps_rollup": Anonymous, AnonHugePages), in bytes (0 if unreadable).
inline uint64_t ProcKbFieldBytes(pid_t pid, const std::string& file, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file);
  std::string key;
  uint64_t kb = 0;
  while (in >> key) {
    if (key == field + ":") {
      in >> kb;
      return kb * 1024;
    }
    std::getline(in, key);
  }
  return 0;
}

// "VmRSS" or "VmHWM" of a process, in bytes (0 if unreadable).
inline uint64_t ProcStatusBytes(pid_t pid, const std::string& field) {
  return ProcKbFieldBytes(pid, "status", field);
}

}  // namespace sidetable::testing
