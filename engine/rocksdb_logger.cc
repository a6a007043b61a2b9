#include "engine/internal/rocksdb_logger.h"

#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstdio>
#include <string>

namespace sidetable::internal {
namespace {

spdlog::level::level_enum LevelOf(rocksdb::InfoLogLevel level) {
  switch (level) {
    case rocksdb::DEBUG_LEVEL: return spdlog::level::trace;
    case rocksdb::INFO_LEVEL: return spdlog::level::debug;
    case rocksdb::WARN_LEVEL: return spdlog::level::warn;
    case rocksdb::ERROR_LEVEL: return spdlog::level::err;
    case rocksdb::FATAL_LEVEL: return spdlog::level::critical;
    case rocksdb::HEADER_LEVEL: return spdlog::level::debug;
    default: return spdlog::level::info;
  }
}

class SpdlogRocksDbLogger final : public rocksdb::Logger {
 public:
  // RocksDB filters by its own level before formatting; DEBUG lets every
  // line through to the check against spdlog's level below, which can change
  // at run time.
  SpdlogRocksDbLogger() : rocksdb::Logger(rocksdb::DEBUG_LEVEL) {}

  void Logv(const char* format, va_list ap) override { Logv(rocksdb::INFO_LEVEL, format, ap); }

  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    const auto to = LevelOf(level);
    if (!spdlog::should_log(to)) return;   // most INFO lines stop here, unformatted
    char stack[512];
    va_list copy;
    va_copy(copy, ap);
    const int n = std::vsnprintf(stack, sizeof stack, format, copy);
    va_end(copy);
    if (n < 0) return;
    if (static_cast<size_t>(n) < sizeof stack) {
      spdlog::log(to, "rocksdb: {}", std::string_view(stack, static_cast<size_t>(n)));
      return;
    }
    // The options dump and compaction summaries can be long.
    std::string line(static_cast<size_t>(n) + 1, '\0');
    std::vsnprintf(line.data(), line.size(), format, ap);
    line.pop_back();
    spdlog::log(to, "rocksdb: {}", line);
  }
};

}  // namespace

std::shared_ptr<rocksdb::Logger> MakeRocksDbLogger() {
  return std::make_shared<SpdlogRocksDbLogger>();
}

}  // namespace sidetable::internal
