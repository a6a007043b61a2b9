// Process-wide logging set-up: spdlog to stderr, text or JSON lines. Shared
// by the sidecar and the workers (library sidetable::common).
#pragma once

#include <string>

#include "engine/status.h"

namespace sidetable::common {

// level: trace|debug|info|warn|error|off; format: text|json; `name` is the
// default logger's name (the "logger" field of each line).
Status SetupLogging(const std::string& level, const std::string& format,
                    const std::string& name = "sidetable");

}  // namespace sidetable::common
