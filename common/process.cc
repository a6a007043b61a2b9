#include "common/process.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>

namespace sidetable::common {

void InstallStopSignals(void (*on_stop)(int)) {
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGTERM, on_stop);
  std::signal(SIGINT, on_stop);
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

}  // namespace sidetable::common
