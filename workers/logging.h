// Process-wide logging of the worker: spdlog to stderr, text or JSON lines,
// logger name "worker". Lines about an event carry "lsn=<n>".
#pragma once

#include <string>

#include "engine/status.h"

namespace sidetable::workers {

// level: trace|debug|info|warn|error|critical|off; format: text|json.
Status SetupWorkerLogging(const std::string& level, const std::string& format);

}  // namespace sidetable::workers
