// Process-wide logging set-up: spdlog to stderr, text or JSON lines.
#pragma once

#include <string>

#include "engine/status.h"

namespace sidetable::sidecar {

// level: trace|debug|info|warn|error|off; format: text|json.
Status SetupLogging(const std::string& level, const std::string& format);

}  // namespace sidetable::sidecar
